// Helpers the rewriting passes share.
#pragma once

#include <map>

#include "ir/ir.h"

namespace nxv::passes {

// Redirects every argument and output through `replaced` (old id → new id, applied
// transitively), then drops nodes nothing needs any more.
void apply_replacements(ir::Graph& g, const std::map<ir::NodeId, ir::NodeId>& replaced);

// Restores an order in which every value is defined before its first use, keeping the
// existing order wherever it already is valid. Throws IrError on a cycle.
void sort_topologically(ir::Graph& g);

// Removes nodes no output depends on. Parameters stay: they define the graph's inputs.
void remove_dead(ir::Graph& g);

}  // namespace nxv::passes
