#include "nif/transfers.h"

#include <new>

#include "nif/terms.h"

namespace nxv::nif {

runtime::BufferPtr upload_binary(ErlNifEnv* env, runtime::Device& device, const ir::TensorType& type,
                                 ERL_NIF_TERM data, const std::string& what) {
  ErlNifBinary bin = get_binary(env, data, what.c_str());
  if (static_cast<int64_t>(bin.size) != type.byte_size())
    throw BadArg(what + ": " + ir::to_string(type) + " needs " + std::to_string(type.byte_size()) + " bytes, got " +
                 std::to_string(bin.size));
  return device.upload(type, bin.data, bin.size);
}

ERL_NIF_TERM download_binary(ErlNifEnv* env, runtime::Device& device, const runtime::Buffer& buffer) {
  size_t bytes = static_cast<size_t>(buffer.type().byte_size());
  ERL_NIF_TERM term;
  unsigned char* data = enif_make_new_binary(env, bytes, &term);
  if (!data) throw std::bad_alloc();
  device.download(buffer, data, bytes);
  return term;
}

}  // namespace nxv::nif
