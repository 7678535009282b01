// Layers the benchmark workloads share, written into an ir::GraphWriter: a dense layer and a
// last-axis softmax, as Nx.Defn.Expr gives them.
#pragma once

#include "ir/graph_writer.h"

namespace nxv::bench {

using ir::GraphWriter;

// Softmax over the last axis, max-subtracted as Nx's users write it.
ir::NodeId last_axis_softmax(GraphWriter& w, ir::NodeId x, ir::DType t);

// One dense layer x·w + b of a batch of rows, as Nx.Defn.Expr gives it: `dot` contracting
// x's last axis with w's first, the bias broadcast over the batch.
ir::NodeId dense(GraphWriter& w, ir::NodeId x, ir::NodeId weight, ir::NodeId bias, ir::DType t);

}  // namespace nxv::bench
