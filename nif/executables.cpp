#include "nif/nif_functions.h"
#include "nif/resources.h"
#include "nif/terms.h"
#include "nif/transfers.h"

#include <cstring>

#include "ir/json.h"

namespace nxv::nif {

namespace {
ERL_NIF_TERM make_type_list(ErlNifEnv* env, const std::vector<ir::TensorType>& types) {
  std::vector<ERL_NIF_TERM> terms;
  for (const auto& t : types) terms.push_back(make_tensor_type(env, t));
  return enif_make_list_from_array(env, terms.data(), static_cast<unsigned>(terms.size()));
}

}  // namespace

// compile(device, json, pipeline, precision, emulate): precision "highest", "high" or
// "default" (codegen::Precision); emulate "", "f64", "i64" or "f64,i64" (CompileOptions)
ERL_NIF_TERM compile(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  return guarded(env, [&] {
    auto& device = get_resource<DeviceResource>(env, argv[0], "device").device;
    std::string json = get_string(env, argv[1], "json");
    runtime::CompileOptions opts;
    for (ERL_NIF_TERM pass : get_list(env, argv[2], "pipeline")) opts.pipeline.push_back(get_string(env, pass, "pass"));
    opts.precision = codegen::parse_precision(get_string(env, argv[3], "precision"));
    opts.emulate = get_string(env, argv[4], "emulate");
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

namespace {
bool binaries_mode(ErlNifEnv* env, ERL_NIF_TERM mode) {
  bool binaries = enif_is_identical(mode, atom(env, "binaries"));
  if (!binaries && !enif_is_identical(mode, atom(env, "buffers"))) throw BadArg("mode must be :buffers or :binaries");
  return binaries;
}

// {:ok, {outputs, stats}}, the outputs as binaries or buffer resources.
ERL_NIF_TERM run_result(ErlNifEnv* env, const std::shared_ptr<runtime::Device>& device,
                        std::vector<runtime::BufferPtr> outputs, bool binaries, const runtime::RunStats& stats) {
  std::vector<ERL_NIF_TERM> results;
  if (binaries)
    results = download_binaries(env, *device, outputs);
  else
    for (auto& out : outputs) results.push_back(make_resource(env, std::make_unique<BufferResource>(device, std::move(out))));
  ERL_NIF_TERM stats_map = make_map(env, {
                                             {"wall_ms", enif_make_double(env, stats.wall_ms)},
                                             {"device_ms", enif_make_double(env, stats.device_ms)},
                                             {"dispatches", enif_make_int(env, stats.dispatches)},
                                             {"submits", enif_make_int(env, stats.submits)},
                                         });
  ERL_NIF_TERM list = enif_make_list_from_array(env, results.data(), static_cast<unsigned>(results.size()));
  return ok(env, enif_make_tuple2(env, list, stats_map));
}
}  // namespace

// run(executable, inputs, :buffers | :binaries)
ERL_NIF_TERM run(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  return guarded(env, [&] {
    auto& exe = *get_resource<ExecutableResource>(env, argv[0], "executable").executable;
    const auto device = exe.device();
    const bool binaries = binaries_mode(env, argv[2]);
    std::vector<ERL_NIF_TERM> terms = get_list(env, argv[1], "inputs");
    const auto& expected = exe.input_types();
    if (terms.size() != expected.size())
      throw BadArg("run: the executable takes " + std::to_string(expected.size()) + " inputs, got " +
                   std::to_string(terms.size()));
    std::vector<runtime::BufferPtr> inputs = get_inputs(env, terms, device, expected);
    runtime::RunStats stats;
    auto outputs = exe.run(inputs, &stats);
    return run_result(env, device, std::move(outputs), binaries, stats);
  });
}

// run_spirv(device, spirv, inputs, [{type, shape}], push_constants, {x, y, z}, :buffers | :binaries)
ERL_NIF_TERM run_spirv(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  return guarded(env, [&] {
    auto& device = get_resource<DeviceResource>(env, argv[0], "device").device;
    ErlNifBinary module = get_binary(env, argv[1], "spirv");
    if (module.size == 0 || module.size % 4) throw BadArg("spirv: a SPIR-V module is a non-empty whole number of 32-bit words");
    std::vector<uint32_t> words(module.size / 4);
    std::memcpy(words.data(), module.data, module.size);
    std::vector<runtime::BufferPtr> inputs = get_inputs(env, get_list(env, argv[2], "inputs"), device, {});
    std::vector<ir::TensorType> outputs;
    for (ERL_NIF_TERM t : get_list(env, argv[3], "outputs")) {
      int arity;
      const ERL_NIF_TERM* parts;
      if (!enif_get_tuple(env, t, &arity, &parts) || arity != 2) throw BadArg("outputs: each must be {type, shape}");
      outputs.push_back(get_tensor_type(env, parts[0], parts[1], "output"));
    }
    runtime::SpirvLaunch launch;
    ErlNifBinary push = get_binary(env, argv[4], "push_constants");
    launch.push_constants.assign(push.data, push.data + push.size);
    int arity;
    const ERL_NIF_TERM* groups;
    if (!enif_get_tuple(env, argv[5], &arity, &groups) || arity != 3) throw BadArg("groups: expected {x, y, z}");
    for (int d = 0; d < 3; ++d) {
      uint64_t g = get_u64(env, groups[d], "group count");
      if (g > UINT32_MAX) throw BadArg("groups: " + std::to_string(g) + " is not a 32-bit count");
      launch.group_count[d] = uint32_t(g);
    }
    const bool binaries = binaries_mode(env, argv[6]);
    runtime::RunStats stats;
    auto results = runtime::run_spirv(device, words, inputs, outputs, launch, &stats);
    return run_result(env, device, std::move(results), binaries, stats);
  });
}

}  // namespace nxv::nif
