// GraphWriter: builds an IR graph node by node in C++, for the benchmarks' workloads and the
// tests that make graphs from op, type and shape tables.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "ir/literal.h"

namespace nxv::ir {

// Appends nodes with explicit result types; the verifier re-checks them when the graph is
// compiled. `scalar` takes any double, ±inf, NaN and -0.0 included, spelled as JSON text
// spells them (float_json), for any type: an integer type wraps it as docs/ir.md says.
// Nodes given other values must spell them so too.
class GraphWriter {
 public:
  explicit GraphWriter(std::string name) { g_.name = std::move(name); }

  NodeId node(const std::string& op, std::vector<NodeId> args, DType t, Shape s, nlohmann::json attrs = nlohmann::json::object()) {
    return append_node(g_.nodes, next_, op, std::move(args), t, std::move(s), std::move(attrs));
  }
  NodeId param(int index, DType t, Shape s) { return node("parameter", {}, t, std::move(s), {{"index", index}}); }
  NodeId scalar(double v, DType t) { return node("constant", {}, t, {}, {{"value", float_json(v)}}); }
  const Shape& shape(NodeId id) const { return g_.nodes[size_t(id)].results[0].shape; }
  // Same-shape (or scalar-broadcast) elementwise op: the result takes the larger shape.
  NodeId ew(const std::string& op, std::vector<NodeId> args, DType t) {
    Shape s;
    for (NodeId a : args)
      if (shape(a).size() > s.size()) s = shape(a);
    return node(op, std::move(args), t, s);
  }
  // Equal-shape nodes stacked along a new leading axis.
  NodeId stack(std::vector<NodeId> xs, DType t) {
    Shape s = shape(xs.at(0));
    s.insert(s.begin(), int64_t(xs.size()));
    return node("stack", std::move(xs), t, std::move(s), {{"axis", 0}});
  }
  Graph finish(std::vector<NodeId> outputs) {
    g_.outputs = std::move(outputs);
    g_.reindex();
    return std::move(g_);
  }

 private:
  Graph g_;
  NodeId next_ = 0;
};

}  // namespace nxv::ir
