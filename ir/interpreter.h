// A plain C++ evaluator of the IR with Nx's semantics (Nx.BinaryBackend / Nx.Defn.Evaluator,
// and the integer conventions stated in docs/ir.md). It is the reference every device
// result is tested against, and constant folding evaluates with it.
#pragma once

#include <set>
#include <vector>

#include "ir/ir.h"

namespace nxv::ir {

struct InterpretOptions {
  // Float types whose subnormal results every node flushes to a zero of its sign, as a device
  // that keeps no denormals does (nxv_fuzz_diff's second opinion on such a device). Each
  // node still computes in double, so only what crosses between nodes is flushed.
  std::set<DType> flush_subnormals;
};

// Evaluates `graph` (which must verify) on `inputs` (one per parameter, by index) and returns
// its outputs. Throws IrError naming the node for anything it cannot evaluate.
std::vector<Literal> interpret(const Graph& graph, const std::vector<Literal>& inputs, const InterpretOptions& options = {});

// Evaluates a single node whose arguments are already known.
std::vector<Literal> interpret_node(const Node& node, const std::vector<const Literal*>& args);

}  // namespace nxv::ir
