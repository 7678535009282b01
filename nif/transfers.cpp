#include "nif/transfers.h"

#include <new>

#include "nif/resources.h"
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

namespace {
runtime::BufferPtr on_device(const BufferResource& input, const std::shared_ptr<runtime::Device>& device) {
  runtime::BufferPtr buffer = input.get();
  if (input.device() == device) return buffer;
  std::vector<uint8_t> host(static_cast<size_t>(input.type().byte_size()));
  input.device()->download(*buffer, host.data(), host.size());
  return device->upload(input.type(), host.data(), host.size());
}
}  // namespace

runtime::BufferPtr get_input(ErlNifEnv* env, ERL_NIF_TERM term, const std::shared_ptr<runtime::Device>& device,
                             const ir::TensorType* expected, size_t i) {
  std::string what = "input " + std::to_string(i);
  auto check = [&](const ir::TensorType& got) {
    if (expected && !(got == *expected))
      throw BadArg(what + ": expected " + ir::to_string(*expected) + ", got " + ir::to_string(got));
  };
  int arity;
  const ERL_NIF_TERM* parts;
  if (const BufferResource* resource = find_resource<BufferResource>(env, term)) {
    check(resource->type());
    return on_device(*resource, device);
  }
  if (enif_get_tuple(env, term, &arity, &parts) && arity == 3) {
    ir::TensorType type = get_tensor_type(env, parts[0], parts[1], what.c_str());
    check(type);
    return upload_binary(env, *device, type, parts[2], what);
  }
  throw BadArg(what + ": expected a buffer or {type, shape, binary}");
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
