#include "codegen/targets/launch.h"
#include "nif/nif_functions.h"
#include "nif/resources.h"
#include "nif/terms.h"

namespace nxv::nif {

namespace {
ERL_NIF_TERM make_device_info(ErlNifEnv* env, const runtime::DeviceInfo& d) {
  const codegen::DeviceCaps& c = d.caps;
  auto flag = [&](bool b) { return atom(env, b ? "true" : "false"); };
  ERL_NIF_TERM caps = make_map(env, {
      {"vendor_id", enif_make_uint(env, c.vendor_id)},
      {"api_version", enif_make_uint(env, c.api_version)},
      {"float64", flag(c.float64)},
      {"float16", flag(c.float16)},
      {"int64", flag(c.int64)},
      {"int16", flag(c.int16)},
      {"int8", flag(c.int8)},
      {"subgroup_arithmetic", flag(c.subgroup_arithmetic)},
      {"subgroup_shuffle", flag(c.subgroup_shuffle)},
      {"subgroup_ballot", flag(c.subgroup_ballot)},
      {"cooperative_matrix", flag(!c.cooperative_matrix_shapes.empty())},
      {"subgroup_size", enif_make_uint(env, c.subgroup_size)},
      {"max_workgroup_invocations", enif_make_uint(env, c.max_workgroup_invocations)},
      {"max_shared_memory_bytes", enif_make_uint(env, c.max_shared_memory_bytes)},
      {"max_storage_buffer_range", enif_make_uint64(env, c.max_storage_buffer_range)},
      {"max_memory_allocation_bytes", enif_make_uint64(env, c.max_memory_allocation_bytes)},
      {"max_heap_bytes", enif_make_uint64(env, c.max_heap_bytes)},
      {"max_storage_buffers", enif_make_uint(env, c.max_storage_buffers)},
      {"computes_f32_in_f64", flag(codegen::computes_f32_in_f64(c))},
      {"emulate_f64", flag(c.emulate_f64)},
      {"emulate_i64", flag(c.emulate_i64)},
  });
  std::vector<ERL_NIF_TERM> unmet;
  for (const auto& u : d.unmet) unmet.push_back(binary(env, u));
  return make_map(env, {
      {"index", enif_make_int(env, d.index)},
      {"name", binary(env, d.name)},
      {"type", binary(env, d.type)},
      {"driver", binary(env, d.driver)},
      {"caps", caps},
      {"profile", binary(env, d.profile)},
      {"unmet", enif_make_list_from_array(env, unmet.data(), unsigned(unmet.size()))},
  });
}
}  // namespace

ERL_NIF_TERM list_devices(ErlNifEnv* env, int, const ERL_NIF_TERM[]) {
  return guarded(env, [&] {
    std::vector<ERL_NIF_TERM> infos;
    for (const auto& d : runtime::list_devices()) infos.push_back(make_device_info(env, d));
    return ok(env, enif_make_list_from_array(env, infos.data(), static_cast<unsigned>(infos.size())));
  });
}

// open_device(device, cache_dir, timeout_ms, robust_buffer_access, profile, emulate)
ERL_NIF_TERM open_device(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  return guarded(env, [&] {
    runtime::RuntimeOptions opts;
    opts.device = get_string(env, argv[0], "device");
    opts.cache_dir = get_string(env, argv[1], "cache_dir");
    opts.timeout_ms = get_u64(env, argv[2], "timeout");
    opts.robust_buffer_access = enif_is_identical(argv[3], atom(env, "true"));
    opts.profile = get_string(env, argv[4], "profile");
    opts.emulate = get_string(env, argv[5], "emulate");
    if (!opts.robust_buffer_access && !enif_is_identical(argv[3], atom(env, "false")))
      throw BadArg("robust_buffer_access: expected a boolean");
    auto resource = std::make_unique<DeviceResource>(DeviceResource{runtime::Device::open(opts)});
    return ok(env, make_resource(env, std::move(resource)));
  });
}

ERL_NIF_TERM device_info(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  return guarded(env, [&] {
    return ok(env, make_device_info(env, get_resource<DeviceResource>(env, argv[0], "device").device->info()));
  });
}

ERL_NIF_TERM bytes_in_use(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  return guarded(env, [&] {
    return ok(env, enif_make_uint64(env, get_resource<DeviceResource>(env, argv[0], "device").device->bytes_in_use()));
  });
}

ERL_NIF_TERM trim(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  return guarded(env, [&] {
    get_resource<DeviceResource>(env, argv[0], "device").device->trim();
    return ok(env, atom(env, "ok"));
  });
}

}  // namespace nxv::nif
