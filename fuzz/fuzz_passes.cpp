// libFuzzer target: the default pass pipeline on every input that verifies. A pass may
// decline a graph with an IrError, but never produce one the verifier rejects, and never
// crash.
#include <string>

#include "fuzz/fuzz_common.h"
#include "passes/pass.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto g = nxv::fuzz::read_verified(data, size);
  // Constant folding materialises literals: bound what one input may allocate.
  if (!g || nxv::fuzz::total_elements(*g) > (int64_t(1) << 20)) return 0;
  const nxv::ir::Graph input = *g;
  try {
    // fuse-attention forms attention only under a target's bound (0 by default): a GPU's.
    nxv::passes::KernelBounds bounds;
    bounds.attention_row_bytes = 1024;
    nxv::passes::PassManager(nxv::passes::default_pipeline(), bounds).run(*g);
  } catch (const nxv::ir::IrError& e) {
    const std::string what = e.what();
    if (what.find("produced an invalid graph") != std::string::npos) nxv::fuzz::finding(what, &input);
  } catch (const std::exception& e) {
    nxv::fuzz::finding(std::string("a pass threw a non-IrError: ") + e.what(), &input);
  }
  return 0;
}
