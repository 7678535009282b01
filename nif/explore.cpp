// explore(device, json, pipeline, precision, emulate): what `nxv explore` shows (cli/main.cpp), as terms:
// the graph as read, the graph after each pass, each kernel's launch, SPIR-V disassembly
// and GLSL view, and the number of dispatches. Used by Nx.Vulkan.explain/3.
#include "codegen/kernel.h"
#include "ir/json.h"
#include "nif/nif_functions.h"
#include "nif/resources.h"
#include "nif/terms.h"
#include "passes/pass.h"

namespace nxv::nif {

namespace {
ERL_NIF_TERM list(ErlNifEnv* env, const std::vector<ERL_NIF_TERM>& items) {
  return enif_make_list_from_array(env, items.data(), static_cast<unsigned>(items.size()));
}

// Kernels of `g` and of its regions (while/cond bodies), depth first.
void collect_kernels(ErlNifEnv* env, const ir::Graph& g, const codegen::DeviceCaps& caps,
                     std::vector<ERL_NIF_TERM>& out) {
  for (const auto& n : g.nodes) {
    for (const auto& [name, region] : n.regions) {
      if (n.op != "kernel" && region) collect_kernels(env, *region, caps, out);
    }
    if (n.op != "kernel") continue;
    codegen::KernelBinary k = codegen::compile_kernel(n, g, caps);
    std::vector<ERL_NIF_TERM> fused;
    for (auto id : k.fused_nodes) fused.push_back(enif_make_int64(env, static_cast<int64_t>(id)));
    std::string invalid = codegen::validate(k.spirv, caps.api_version);
    out.push_back(make_map(env, {
                                    {"name", binary(env, k.name)},
                                    {"fused", list(env, fused)},
                                    {"launch", binary(env, k.launch)},
                                    {"spirv", binary(env, codegen::disassemble(k.spirv))},
                                    {"glsl", binary(env, codegen::to_glsl(k.spirv))},
                                    {"validation", binary(env, invalid.empty() ? "ok" : invalid)},
                                }));
  }
}
}  // namespace

ERL_NIF_TERM explore(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  return guarded(env, [&] {
    auto& device = get_resource<DeviceResource>(env, argv[0], "device").device;
    std::string json = get_string(env, argv[1], "json");
    std::vector<std::string> pipeline;
    for (ERL_NIF_TERM pass : get_list(env, argv[2], "pipeline")) pipeline.push_back(get_string(env, pass, "pass"));
    if (pipeline.empty()) pipeline = passes::default_pipeline();

    ir::Graph g = ir::parse_graph(json);
    ERL_NIF_TERM source = binary(env, ir::write_graph(g));
    std::vector<ERL_NIF_TERM> stages;
    runtime::CompileOptions opts;
    opts.precision = codegen::parse_precision(get_string(env, argv[3], "precision"));
    opts.emulate = get_string(env, argv[4], "emulate");
    const codegen::DeviceCaps caps = runtime::compile_caps(device->info(), opts);
    passes::PassManager pm(pipeline, codegen::kernel_bounds(caps));
    pm.set_observer([&](const std::string& pass, const ir::Graph& after) {
      stages.push_back(enif_make_tuple2(env, binary(env, pass), binary(env, ir::write_graph(after))));
    });
    pm.run(g);

    std::vector<ERL_NIF_TERM> kernels;
    collect_kernels(env, g, caps, kernels);
    return ok(env, make_map(env, {
                                     {"source", source},
                                     {"passes", list(env, stages)},
                                     {"lowered", binary(env, ir::write_graph(g))},
                                     {"kernels", list(env, kernels)},
                                     {"dispatches", enif_make_uint64(env, kernels.size())},
                                 }));
  });
}

}  // namespace nxv::nif
