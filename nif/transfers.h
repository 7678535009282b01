// Host <-> device copies shared by the buffer functions and run().
#pragma once

#include <erl_nif.h>

#include "runtime/runtime.h"

namespace nxv::nif {

// Uploads `data` (a binary term) as a tensor of `type`; BadArg naming `what` when its size is wrong.
runtime::BufferPtr upload_binary(ErlNifEnv* env, runtime::Device& device, const ir::TensorType& type,
                                 ERL_NIF_TERM data, const std::string& what);

// An input: a buffer resource (of another device: copied through the host) or
// {type, shape, binary}; BadArg naming input `i` when it is neither or not of type `expected`.
runtime::BufferPtr get_input(ErlNifEnv* env, ERL_NIF_TERM term, const std::shared_ptr<runtime::Device>& device,
                             const ir::TensorType* expected, size_t i);

// A new binary holding the buffer's contents.
ERL_NIF_TERM download_binary(ErlNifEnv* env, runtime::Device& device, const runtime::Buffer& buffer);

}  // namespace nxv::nif
