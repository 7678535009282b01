// The `attention` op: attrs, result type, and the unfused graph that defines it.
#include "ir/attention.h"

#include <algorithm>
#include <set>

namespace nxv::ir {

using nlohmann::json;

AttentionAttrs attention_attrs(const Node& n) {
  AttentionAttrs a;
  auto flag = [&](const char* key) {
    if (!n.attrs.contains(key) || n.attrs[key].is_null()) return false;
    if (!n.attrs[key].is_boolean()) throw IrError(n, std::string("attrs.") + key + " must be true or false, got " + n.attrs[key].dump());
    return n.attrs[key].get<bool>();
  };
  a.mask = flag("mask");
  a.bias = flag("bias");
  if (n.attrs.contains("scale") && !n.attrs["scale"].is_null()) {
    const json& s = n.attrs["scale"];
    if (!s.is_number()) throw IrError(n, "attrs.scale must be a number, got " + s.dump());
    a.scale = s.get<double>();
    const json op = n.attrs.value("scale_op", json());
    if (op != "multiply" && op != "divide")
      throw IrError(n, "attrs.scale_op must be \"multiply\" or \"divide\" where attrs.scale is given, got " + op.dump());
    a.divide = op == "divide";
  }
  if (n.attrs.contains("causal") && !n.attrs["causal"].is_null()) {
    if (!n.attrs["causal"].is_number_integer()) throw IrError(n, "attrs.causal must be an integer, got " + n.attrs["causal"].dump());
    if (a.mask) throw IrError(n, "attrs.causal and attrs.mask exclude each other");
    a.causal = n.attrs["causal"].get<int64_t>();
  }
  if (n.attrs.contains("masked")) {
    static const std::set<std::string> specials = {"nan", "inf", "-inf", "-0.0"};
    const json& m = n.attrs["masked"];
    if (!m.is_number() && !(m.is_string() && specials.count(m.get<std::string>())))
      throw IrError(n, "attrs.masked must be a number or one of \"nan\", \"inf\", \"-inf\", \"-0.0\", got " + m.dump());
    a.masked = m;
  }
  return a;
}

namespace {

Shape batch_dims(const Shape& s) { return Shape(s.begin(), s.end() - 2); }

// Nx's broadcasting of `from` to exactly `to`: right-aligned, 1s stretch.
bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  for (size_t k = 0; k < from.size(); ++k) {
    const int64_t d = from[from.size() - 1 - k];
    if (d != 1 && d != to[to.size() - 1 - k]) return false;
  }
  return true;
}

}  // namespace

TensorType attention_type(const Node& n, const std::vector<TensorType>& operands) {
  const AttentionAttrs a = attention_attrs(n);
  if (operands.size() != a.operands()) {
    const std::string names = std::string("q, k, v") + (a.mask ? ", mask" : "") + (a.bias ? ", bias" : "");
    throw IrError(n, "expects " + std::to_string(a.operands()) + " argument(s) (" + names + ", as attrs.mask and attrs.bias say), got " +
                         std::to_string(operands.size()));
  }
  const TensorType &q = operands[0], &k = operands[1], &v = operands[2];
  if (!is_float(q.dtype) || k.dtype != q.dtype || v.dtype != q.dtype)
    throw IrError(n, "q, k and v must have one float type, got " + to_string(q) + ", " + to_string(k) + ", " + to_string(v));
  if (q.shape.size() < 2 || k.shape.size() != q.shape.size() || v.shape.size() != q.shape.size())
    throw IrError(n, "q, k and v must have one rank of at least 2 ([batch..., seq, dim]), got " + to_string(q) + ", " +
                         to_string(k) + ", " + to_string(v));
  const size_t rank = q.shape.size();
  const Shape batch = batch_dims(q.shape);
  for (const auto& [name, t] : {std::pair{"k", &k}, {"v", &v}})
    if (batch_dims(t->shape) != batch)
      throw IrError(n, std::string(name) + "'s batch dims " + shape_string(batch_dims(t->shape)) + " differ from q's " + shape_string(batch));
  if (k.shape[rank - 1] != q.shape[rank - 1])
    throw IrError(n, "k's head dim " + std::to_string(k.shape[rank - 1]) + " differs from q's " + std::to_string(q.shape[rank - 1]));
  if (v.shape[rank - 2] != k.shape[rank - 2])
    throw IrError(n, "v's " + std::to_string(v.shape[rank - 2]) + " keys differ from k's " + std::to_string(k.shape[rank - 2]));
  Shape scores = batch;
  scores.push_back(q.shape[rank - 2]);
  scores.push_back(k.shape[rank - 2]);
  if (a.mask) {
    const TensorType& m = operands[a.mask_operand()];
    if (m.dtype != DType::U8) throw IrError(n, "the mask must be u8, got " + to_string(m));
    if (!broadcasts_to(m.shape, scores))
      throw IrError(n, "the mask " + to_string(m) + " does not broadcast to the scores' " + shape_string(scores));
  }
  if (a.bias) {
    const TensorType& b = operands[a.bias_operand()];
    if (b.dtype != q.dtype) throw IrError(n, "the bias must have q's type " + std::string(dtype_name(q.dtype)) + ", got " + to_string(b));
    if (!broadcasts_to(b.shape, scores))
      throw IrError(n, "the bias " + to_string(b) + " does not broadcast to the scores' " + shape_string(scores));
  }
  Shape out = batch;
  out.push_back(q.shape[rank - 2]);
  out.push_back(v.shape[rank - 1]);
  return {q.dtype, out};
}

NodeId append_unfused_attention(const Node& n, const std::vector<NodeId>& operands,
                                const std::vector<TensorType>& types, NodeId& next, std::vector<Node>& out) {
  const TensorType result = attention_type(n, types);
  const AttentionAttrs a = attention_attrs(n);
  const DType t = result.dtype;
  auto add = [&](const std::string& op, std::vector<NodeId> args, DType type, Shape shape, json attrs = json::object()) {
    return append_node(out, next, op, std::move(args), type, std::move(shape), std::move(attrs));
  };
  const size_t rank = result.shape.size(), nb = rank - 2;
  json batch = json::array();
  for (size_t d = 0; d < nb; ++d) batch.push_back(d);
  const int64_t sq = types[0].shape[nb], sk = types[1].shape[nb];
  Shape scores = batch_dims(result.shape), rows = scores;
  scores.insert(scores.end(), {sq, sk});
  rows.insert(rows.end(), {sq, 1});

  NodeId s = add("dot", {operands[0], operands[1]}, t, scores,
                 {{"contract_axes1", {nb + 1}}, {"batch_axes1", batch}, {"contract_axes2", {nb + 1}}, {"batch_axes2", batch}});
  if (a.scale) s = add(a.divide ? "divide" : "multiply", {s, add("constant", {}, t, {}, {{"value", *a.scale}})}, t, scores);
  if (a.bias) s = add("add", {s, operands[a.bias_operand()]}, t, scores);
  std::optional<NodeId> keep;
  if (a.mask) keep = operands[a.mask_operand()];
  if (a.causal) {
    // Beyond these bounds every key is kept (or none is): clamping leaves the mask as it
    // is and keeps i + offset within s64.
    const int64_t offset = std::clamp<int64_t>(*a.causal, -sq, sk);
    const NodeId i = add("iota", {}, DType::S64, {sq, sk}, {{"axis", 0}});
    const NodeId j = add("iota", {}, DType::S64, {sq, sk}, {{"axis", 1}});
    const NodeId last = add("add", {i, add("constant", {}, DType::S64, {}, {{"value", offset}})}, DType::S64, {sq, sk});
    keep = add("less_equal", {j, last}, DType::U8, {sq, sk});
  }
  if (keep) s = add("select", {*keep, s, add("constant", {}, t, {}, {{"value", a.masked}})}, t, scores);

  const json last_axis = {{"axes", {nb + 1}}, {"keep_axes", true}};
  const NodeId max = add("reduce_max", {s}, t, rows, last_axis);
  const NodeId e = add("exp", {add("subtract", {s, max}, t, scores)}, t, scores);
  const NodeId p = add("divide", {e, add("sum", {e}, t, rows, last_axis)}, t, scores);
  return add("dot", {p, operands[2]}, t, result.shape,
             {{"contract_axes1", {nb + 1}}, {"batch_axes1", batch}, {"contract_axes2", {nb}}, {"batch_axes2", batch}});
}

Graph unfused_attention(const Node& n, const std::vector<TensorType>& types) {
  Graph g;
  std::vector<NodeId> params;
  for (size_t i = 0; i < types.size(); ++i) {
    Node p;
    p.id = NodeId(i);
    p.op = "parameter";
    p.results = {types[i]};
    p.attrs = {{"index", int64_t(i)}};
    params.push_back(p.id);
    g.nodes.push_back(std::move(p));
  }
  NodeId next = NodeId(types.size());
  g.outputs = {append_unfused_attention(n, params, types, next, g.nodes)};
  g.reindex();
  return g;
}

}  // namespace nxv::ir
