// Host <-> device copies shared by the buffer functions and run().
#pragma once

#include <erl_nif.h>

#include "runtime/runtime.h"

namespace nxv::nif {

// `data` (a binary term) to upload as a tensor of `type`; BadArg naming `what` when its size is wrong.
runtime::Upload binary_upload(ErlNifEnv* env, const ir::TensorType& type, ERL_NIF_TERM data, const std::string& what);

// The inputs: each a buffer resource (of another device: copied through the host) or
// {type, shape, binary}, the binaries uploaded together (Device::upload_all); BadArg naming
// input i when it is neither or not of type expected[i] (`expected` empty: any type).
std::vector<runtime::BufferPtr> get_inputs(ErlNifEnv* env, const std::vector<ERL_NIF_TERM>& terms,
                                           const std::shared_ptr<runtime::Device>& device,
                                           const std::vector<ir::TensorType>& expected);

// New binaries holding the buffers' contents, downloaded together (Device::download_all).
std::vector<ERL_NIF_TERM> download_binaries(ErlNifEnv* env, runtime::Device& device,
                                            const std::vector<runtime::BufferPtr>& buffers);

}  // namespace nxv::nif
