// libFuzzer target: code generation for every kernel the pass pipeline makes of an input
// that verifies, for one of the vendor targets (picked by the input's size), each module
// checked by spirv-val in-process. An unsupported kernel is an IrError; an invalid module
// is a finding.
#include <string>

#include "codegen/kernel.h"
#include "fuzz/fuzz_common.h"
#include "passes/pass.h"

namespace {
using namespace nxv;

void compile_all(const ir::Graph& g, const codegen::DeviceCaps& caps, const ir::Graph& input) {
  for (const auto& n : g.nodes) {
    for (const auto& [name, region] : n.regions)
      if (n.op != "kernel" && region) compile_all(*region, caps, input);
    if (n.op != "kernel") continue;
    codegen::KernelBinary k;
    try {
      k = codegen::compile_kernel(n, g, caps);
    } catch (const ir::IrError&) {
      continue;
    } catch (const std::exception& e) {
      fuzz::finding("codegen threw a non-IrError for %" + std::to_string(n.id) + " on " + caps.name + ": " + e.what(),
                    &input);
    }
    const std::string invalid = codegen::validate(k.spirv, caps.api_version);
    if (!invalid.empty())
      fuzz::finding("kernel " + k.name + " for " + caps.name + " fails spirv-val: " + invalid + "\n" +
                        codegen::disassemble(k.spirv),
                    &input);
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto g = fuzz::read_verified(data, size);
  if (!g || fuzz::total_elements(*g) > (int64_t(1) << 20)) return 0;
  const ir::Graph input = *g;
  try {
    passes::PassManager(passes::default_pipeline()).run(*g);
  } catch (const std::exception&) {
    return 0;  // fuzz_passes tells the pipeline's findings
  }
  static const char* kTargets[] = {"generic", "nvidia", "amd", "lavapipe"};
  compile_all(*g, codegen::target_caps(kTargets[size % 4]), input);
  return 0;
}
