#include "nif/nif_functions.h"
#include "nif/resources.h"
#include "nif/terms.h"
#include "nif/transfers.h"

namespace nxv::nif {

// upload(device, type, shape, binary)
ERL_NIF_TERM upload(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  return guarded(env, [&] {
    auto& device = get_resource<DeviceResource>(env, argv[0], "device").device;
    ir::TensorType type = get_tensor_type(env, argv[1], argv[2], "upload");
    runtime::Upload u = binary_upload(env, type, argv[3], "upload");
    auto buffer = device->upload(u.type, u.data, u.bytes);
    return ok(env, make_resource(env, std::make_unique<BufferResource>(device, std::move(buffer))));
  });
}

ERL_NIF_TERM download(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  return guarded(env, [&] {
    auto& resource = get_resource<BufferResource>(env, argv[0], "buffer");
    return ok(env, download_binaries(env, *resource.device(), {resource.get()}).at(0));
  });
}

ERL_NIF_TERM buffer_info(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  return guarded(env, [&] {
    return ok(env, make_tensor_type(env, get_resource<BufferResource>(env, argv[0], "buffer").type()));
  });
}

ERL_NIF_TERM free_buffer(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  return guarded(env, [&] {
    bool was_live = get_resource<BufferResource>(env, argv[0], "buffer").free();
    return ok(env, atom(env, was_live ? "ok" : "already_deallocated"));
  });
}

}  // namespace nxv::nif
