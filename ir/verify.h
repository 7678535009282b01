// The verifier: re-infers every node's result types from its operands and attributes with
// Nx's rules and rejects any graph whose stated types disagree, or that is malformed in a
// way the JSON reader cannot see (unknown op, wrong arity, axes out of range, bad regions).
#pragma once

#include "ir/ir.h"

namespace nxv::ir {

// Throws IrError naming the first offending node.
void verify(const Graph& graph);

}  // namespace nxv::ir
