// A plain C++ evaluator of the IR with Nx's semantics (Nx.BinaryBackend / Nx.Defn.Evaluator,
// and the integer conventions stated in docs/ir.md). It is the reference every device
// result is tested against, and constant folding evaluates with it.
#pragma once

#include <vector>

#include "ir/ir.h"

namespace nxv::ir {

// Evaluates `graph` (which must verify) on `inputs` (one per parameter, by index) and returns
// its outputs. Throws IrError naming the node for anything it cannot evaluate.
std::vector<Literal> interpret(const Graph& graph, const std::vector<Literal>& inputs);

// Evaluates a single node whose arguments are already known.
std::vector<Literal> interpret_node(const Node& node, const std::vector<const Literal*>& args);

}  // namespace nxv::ir
