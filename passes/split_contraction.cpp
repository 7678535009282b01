// Cutting a dot's contraction into parts that a sum adds (passes/split_contraction.h).
#include "passes/split_contraction.h"

#include <algorithm>

#include "passes/rewrite.h"

namespace nxv::passes {

using ir::DType;
using ir::Node;
using ir::NodeId;

DType partial_type(const std::string& op, DType t, bool f32_in_f64) {
  if (op != "sum" && op != "product" && op != "dot") return t;
  if ((t == DType::F16 || t == DType::BF16) && op != "dot") return DType::F32;
  return t == DType::F32 && f32_in_f64 ? DType::F64 : t;
}

ContractionAxes ContractionAxes::of(const Node& n) {
  auto list = [&](const char* k) {
    return n.attrs.contains(k) ? n.attrs[k].get<std::vector<int64_t>>() : std::vector<int64_t>{};
  };
  return {list("contract_axes1"), list("contract_axes2"), list("batch_axes1"), list("batch_axes2")};
}

void split_contraction(const ir::Graph& g, const Node& n, size_t pick, int64_t parts, bool f32_in_f64, NodeId& next,
                       std::vector<Node>& out) {
  NodeAppender add{next, out};
  ContractionAxes ax = ContractionAxes::of(n);
  const DType t = n.type().dtype, partial_t = partial_type("dot", t, f32_in_f64);
  // An operand of a widened dot: converted to the dot's type first, as its kernel would.
  auto widen = [&](std::pair<NodeId, ir::TensorType> operand) {
    auto [id, type] = operand;
    if (partial_t == t) return id;
    if (type.dtype != t) id = add.add("as_type", {id}, t, type.shape);
    return add.add("as_type", {id}, partial_t, type.shape);
  };
  // Operand axis `axis` as (parts, chunk): the parts become a batch axis. Returns the operand
  // so laid out and its type.
  auto split = [&](NodeId operand, ir::TensorType type, int64_t axis, std::vector<int64_t>& contract,
                   std::vector<int64_t>& batch) {
    const int64_t extent = type.shape[axis];
    if (extent == parts) {
      contract.erase(std::find(contract.begin(), contract.end(), axis));
      batch.push_back(axis);
      return std::pair{operand, type};
    }
    const int64_t chunk = (extent + parts - 1) / parts;
    if (chunk * parts != extent) {
      nlohmann::json config = nlohmann::json::array();
      for (size_t i = 0; i < type.shape.size(); ++i) config.push_back({0, int64_t(i) == axis ? chunk * parts - extent : 0, 0});
      const NodeId zero = add.add("constant", {}, type.dtype, {}, {{"value", 0}});
      type.shape[axis] = chunk * parts;
      operand = add.add("pad", {operand, zero}, type.dtype, type.shape, {{"config", config}});
    }
    // The axis itself stays contracted, as the chunks' axis after the parts.
    for (auto* axes : {&contract, &batch})
      for (int64_t& x : *axes)
        if (x >= axis) ++x;
    batch.push_back(axis);
    ir::Shape s = type.shape;
    s[axis] = chunk;
    s.insert(s.begin() + axis, parts);
    return std::pair{add.add("reshape", {operand}, type.dtype, s), ir::TensorType{type.dtype, s}};
  };
  Node d = n;
  const ir::TensorType a = g.node(n.args[0]).type(), b = g.node(n.args[1]).type();
  d.args = {widen(split(n.args[0], a, ax.c1[pick], ax.c1, ax.b1)), widen(split(n.args[1], b, ax.c2[pick], ax.c2, ax.b2))};
  d.attrs["contract_axes1"] = ax.c1;
  d.attrs["contract_axes2"] = ax.c2;
  d.attrs["batch_axes1"] = ax.b1;
  d.attrs["batch_axes2"] = ax.b2;
  // The dot's result is [batch..., free1..., free2...]: the parts follow the old batch axes.
  ir::Shape s = n.type().shape;
  const int64_t at = int64_t(ax.b1.size()) - 1;
  s.insert(s.begin() + at, parts);
  d.results = {{partial_t, s}};
  d.id = next++;
  out.push_back(std::move(d));
  const NodeId partial = out.back().id;
  Node sum = n;
  sum.op = "sum";
  sum.args = {partial};
  sum.attrs = {{"axes", {at}}};
  // Integer partials sum in the dot's own type, not Nx's 64-bit aggregate (which a device
  // may lack): they wrap as the dot's own arithmetic does. Widened partials are converted back.
  if (partial_t == t) {
    out.push_back(std::move(sum));
    return;
  }
  sum.results = {{partial_t, n.type().shape}};
  sum.id = next++;
  out.push_back(std::move(sum));
  Node narrow = n;
  narrow.op = "as_type";
  narrow.args = {out.back().id};
  narrow.attrs = nlohmann::json::object();
  out.push_back(std::move(narrow));
}

}  // namespace nxv::passes
