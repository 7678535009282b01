#include "nif/transfers.h"

#include <new>

#include "nif/resources.h"
#include "nif/terms.h"

namespace nxv::nif {

runtime::Upload binary_upload(ErlNifEnv* env, const ir::TensorType& type, ERL_NIF_TERM data, const std::string& what) {
  ErlNifBinary bin = get_binary(env, data, what.c_str());
  if (static_cast<int64_t>(bin.size) != type.byte_size())
    throw BadArg(what + ": " + ir::to_string(type) + " needs " + std::to_string(type.byte_size()) + " bytes, got " +
                 std::to_string(bin.size));
  return {type, bin.data, bin.size};
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

std::vector<runtime::BufferPtr> get_inputs(ErlNifEnv* env, const std::vector<ERL_NIF_TERM>& terms,
                                           const std::shared_ptr<runtime::Device>& device,
                                           const std::vector<ir::TensorType>& expected) {
  std::vector<runtime::BufferPtr> inputs(terms.size());
  std::vector<runtime::Upload> uploads;
  std::vector<size_t> uploaded;  // the inputs `uploads` become, in order
  for (size_t i = 0; i < terms.size(); ++i) {
    std::string what = "input " + std::to_string(i);
    auto check = [&](const ir::TensorType& got) {
      if (!expected.empty() && !(got == expected.at(i)))
        throw BadArg(what + ": expected " + ir::to_string(expected[i]) + ", got " + ir::to_string(got));
    };
    int arity;
    const ERL_NIF_TERM* parts;
    if (const BufferResource* resource = find_resource<BufferResource>(env, terms[i])) {
      check(resource->type());
      inputs[i] = on_device(*resource, device);
      continue;
    }
    if (!enif_get_tuple(env, terms[i], &arity, &parts) || arity != 3)
      throw BadArg(what + ": expected a buffer or {type, shape, binary}");
    ir::TensorType type = get_tensor_type(env, parts[0], parts[1], what.c_str());
    check(type);
    uploads.push_back(binary_upload(env, type, parts[2], what));
    uploaded.push_back(i);
  }
  if (!uploads.empty()) {
    auto buffers = device->upload_all(uploads);
    for (size_t k = 0; k < uploaded.size(); ++k) inputs[uploaded[k]] = std::move(buffers[k]);
  }
  return inputs;
}

std::vector<ERL_NIF_TERM> download_binaries(ErlNifEnv* env, runtime::Device& device,
                                            const std::vector<runtime::BufferPtr>& buffers) {
  std::vector<ERL_NIF_TERM> terms(buffers.size());
  std::vector<runtime::Download> downloads;
  for (size_t i = 0; i < buffers.size(); ++i) {
    size_t bytes = static_cast<size_t>(buffers[i]->type().byte_size());
    unsigned char* data = enif_make_new_binary(env, bytes, &terms[i]);
    if (!data) throw std::bad_alloc();
    downloads.push_back({buffers[i].get(), data, bytes});
  }
  device.download_all(downloads);
  return terms;
}

}  // namespace nxv::nif
