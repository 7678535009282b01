// The stable text form of a graph that lit tests check: one line per node,
//   %3 = add(%1, %2) : f32[2,3] {attrs as compact JSON, keys sorted}
// with regions indented beneath their node.
#pragma once

#include <string>

#include "ir/ir.h"

namespace nxv::ir {
std::string print_graph(const Graph& g, int indent = 0);
}
