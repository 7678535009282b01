#include "nif/nif_functions.h"
#include "nif/resources.h"
#include "nif/terms.h"
#include "nif/transfers.h"

#include "ir/json.h"

namespace nxv::nif {

namespace {
ERL_NIF_TERM make_type_list(ErlNifEnv* env, const std::vector<ir::TensorType>& types) {
  std::vector<ERL_NIF_TERM> terms;
  for (const auto& t : types) terms.push_back(make_tensor_type(env, t));
  return enif_make_list_from_array(env, terms.data(), static_cast<unsigned>(terms.size()));
}

// A buffer of another device (opened with other options) goes through the host.
runtime::BufferPtr on_device(const BufferResource& input, const std::shared_ptr<runtime::Device>& device) {
  runtime::BufferPtr buffer = input.get();
  if (input.device() == device) return buffer;
  std::vector<uint8_t> host(static_cast<size_t>(input.type().byte_size()));
  input.device()->download(*buffer, host.data(), host.size());
  return device->upload(input.type(), host.data(), host.size());
}

// An input is a buffer resource or {type, shape, binary}.
runtime::BufferPtr get_input(ErlNifEnv* env, ERL_NIF_TERM term, const std::shared_ptr<runtime::Device>& device,
                             const ir::TensorType& expected, size_t i) {
  std::string what = "input " + std::to_string(i);
  auto check = [&](const ir::TensorType& got) {
    if (!(got == expected))
      throw BadArg(what + ": expected " + ir::to_string(expected) + ", got " + ir::to_string(got));
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
}  // namespace

// compile(device, json, pipeline)
ERL_NIF_TERM compile(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  return guarded(env, [&] {
    auto& device = get_resource<DeviceResource>(env, argv[0], "device").device;
    std::string json = get_string(env, argv[1], "json");
    runtime::CompileOptions opts;
    for (ERL_NIF_TERM pass : get_list(env, argv[2], "pipeline")) opts.pipeline.push_back(get_string(env, pass, "pass"));
    ir::Graph graph = ir::parse_graph(json);
    auto executable = runtime::Executable::compile(device, graph, opts);
    return ok(env, make_resource(env, std::make_unique<ExecutableResource>(ExecutableResource{executable})));
  });
}

ERL_NIF_TERM executable_info(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  return guarded(env, [&] {
    const auto& exe = *get_resource<ExecutableResource>(env, argv[0], "executable").executable;
    return ok(env, make_map(env, {
                                     {"inputs", make_type_list(env, exe.input_types())},
                                     {"outputs", make_type_list(env, exe.output_types())},
                                     {"kernels", enif_make_uint64(env, exe.kernels().size())},
                                     {"lowered", binary(env, ir::write_graph(exe.lowered()))},
                                 }));
  });
}

// kernel_sources(executable, :spirv | :glsl) -> [{name, text}]
ERL_NIF_TERM kernel_sources(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  return guarded(env, [&] {
    const auto& exe = *get_resource<ExecutableResource>(env, argv[0], "executable").executable;
    bool glsl = enif_is_identical(argv[1], atom(env, "glsl"));
    if (!glsl && !enif_is_identical(argv[1], atom(env, "spirv")))
      throw BadArg("kernel_sources: the form must be :spirv or :glsl");
    std::vector<ERL_NIF_TERM> sources;
    for (const auto& k : exe.kernels()) {
      std::string text = glsl ? codegen::to_glsl(k.spirv) : codegen::disassemble(k.spirv);
      sources.push_back(enif_make_tuple2(env, binary(env, k.name), binary(env, text)));
    }
    return ok(env, enif_make_list_from_array(env, sources.data(), static_cast<unsigned>(sources.size())));
  });
}

// run(executable, inputs, :buffers | :binaries)
ERL_NIF_TERM run(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  return guarded(env, [&] {
    auto& exe = *get_resource<ExecutableResource>(env, argv[0], "executable").executable;
    const auto device = exe.device();
    bool binaries = enif_is_identical(argv[2], atom(env, "binaries"));
    if (!binaries && !enif_is_identical(argv[2], atom(env, "buffers")))
      throw BadArg("run: mode must be :buffers or :binaries");

    std::vector<ERL_NIF_TERM> terms = get_list(env, argv[1], "inputs");
    const auto& expected = exe.input_types();
    if (terms.size() != expected.size())
      throw BadArg("run: the executable takes " + std::to_string(expected.size()) + " inputs, got " +
                   std::to_string(terms.size()));
    std::vector<runtime::BufferPtr> inputs;
    for (size_t i = 0; i < terms.size(); ++i) inputs.push_back(get_input(env, terms[i], device, expected[i], i));

    runtime::RunStats stats;
    std::vector<runtime::BufferPtr> outputs = exe.run(inputs, &stats);

    std::vector<ERL_NIF_TERM> results;
    for (auto& out : outputs) {
      if (binaries)
        results.push_back(download_binary(env, *device, *out));
      else
        results.push_back(make_resource(env, std::make_unique<BufferResource>(device, std::move(out))));
    }
    ERL_NIF_TERM stats_map = make_map(env, {
                                               {"wall_ms", enif_make_double(env, stats.wall_ms)},
                                               {"device_ms", enif_make_double(env, stats.device_ms)},
                                               {"dispatches", enif_make_int(env, stats.dispatches)},
                                               {"submits", enif_make_int(env, stats.submits)},
                                           });
    ERL_NIF_TERM list = enif_make_list_from_array(env, results.data(), static_cast<unsigned>(results.size()));
    return ok(env, enif_make_tuple2(env, list, stats_map));
  });
}

}  // namespace nxv::nif
