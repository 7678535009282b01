// GraphWriter: builds the benchmark workloads' IR graphs node by node, and the layers they
// share (a dense layer, a last-axis softmax).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "ir/json.h"

namespace nxv::bench {

// Appends nodes with explicit result types; the verifier re-checks them when compiled.
class GraphWriter {
 public:
  explicit GraphWriter(std::string name) { g_.name = std::move(name); }

  ir::NodeId node(const std::string& op, std::vector<ir::NodeId> args, ir::DType t, ir::Shape s, nlohmann::json attrs = nlohmann::json::object()) {
    ir::Node n;
    n.id = static_cast<ir::NodeId>(g_.nodes.size());
    n.op = op;
    n.args = std::move(args);
    n.results = {ir::TensorType{t, std::move(s)}};
    n.attrs = std::move(attrs);
    g_.nodes.push_back(std::move(n));
    return g_.nodes.back().id;
  }
  ir::NodeId param(int index, ir::DType t, ir::Shape s) { return node("parameter", {}, t, std::move(s), {{"index", index}}); }
  ir::NodeId scalar(double v, ir::DType t) { return node("constant", {}, t, {}, {{"value", v}}); }
  const ir::Shape& shape(ir::NodeId id) const { return g_.nodes[id].results[0].shape; }
  // Same-shape (or scalar-broadcast) elementwise op: the result takes the larger shape.
  ir::NodeId ew(const std::string& op, std::vector<ir::NodeId> args, ir::DType t) {
    ir::Shape s;
    for (ir::NodeId a : args)
      if (shape(a).size() > s.size()) s = shape(a);
    return node(op, std::move(args), t, s);
  }
  ir::Graph finish(std::vector<ir::NodeId> outputs) {
    g_.outputs = std::move(outputs);
    g_.reindex();
    return std::move(g_);
  }

 private:
  ir::Graph g_;
};

// Softmax over the last axis, max-subtracted as Nx's users write it.
ir::NodeId last_axis_softmax(GraphWriter& w, ir::NodeId x, ir::DType t);

// One dense layer x·w + b of a batch of rows, as Nx.Defn.Expr gives it: `dot` contracting
// x's last axis with w's first, the bias broadcast over the batch.
ir::NodeId dense(GraphWriter& w, ir::NodeId x, ir::NodeId weight, ir::NodeId bias, ir::DType t);

}  // namespace nxv::bench
