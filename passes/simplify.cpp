// simplify: algebraic identities that Nx graphs are full of (autodiff multiplies by 1 and
// adds 0, layout code stacks transposes and reshapes). Only rewrites that are exact in
// Nx's semantics: x + 0 is not x for floats (-0.0 + 0.0 = +0.0), so floats only drop
// x + (-0.0) and x - 0. A dot's transpose that swaps its operands' axes is the swapped dot.
// x / 2^k is x * 2^-k.
#include <cmath>
#include <map>

#include "passes/pass.h"
#include "passes/rewrite.h"
#include "passes/split_contraction.h"

namespace nxv::passes {
namespace {

using ir::Graph;
using ir::Node;
using ir::NodeId;

class Simplify : public Pass {
 public:
  std::string name() const override { return "simplify"; }

  void run(Graph& g) override {
    multiply_by_reciprocals(g);
    std::map<NodeId, int> uses;
    for (const auto& n : g.nodes)
      for (NodeId a : n.args) ++uses[a];
    for (NodeId o : g.outputs) ++uses[o];
    std::map<NodeId, NodeId> replaced;
    for (auto& n : g.nodes) {
      for (auto& a : n.args)
        if (auto it = replaced.find(a); it != replaced.end()) --uses[a], ++uses[it->second], a = it->second;
      if (n.op == "transpose" && uses[n.args[0]] == 1) swap_transposed_dot(g, n);
      if (auto to = rewrite(g, n); to && *to != n.id) replaced[n.id] = *to;
    }
    apply_replacements(g, replaced);
  }

 private:
  // The value of a numeric constant (constants are scalars broadcast lazily, so any shape).
  static std::optional<double> const_value(const Graph& g, NodeId id) {
    const Node& c = g.node(id);
    if (c.op != "constant" || !c.attrs.contains("value") || !c.attrs["value"].is_number()) return std::nullopt;
    return c.attrs["value"].get<double>();
  }
  // A numeric constant equal to v.
  static bool is_const(const Graph& g, NodeId id, double v, bool negative_zero = false) {
    const auto x = const_value(g, id);
    return x && *x == v && (v != 0 || std::signbit(*x) == negative_zero);
  }
  static bool same_type(const Graph& g, const Node& n, NodeId id) { return !n.is_tuple() && g.node(id).results == n.results; }

  // The node that `n` equals, or nullopt; may rewrite `n` in place instead.
  static std::optional<NodeId> rewrite(const Graph& g, Node& n) {
    const std::string& op = n.op;
    auto keep = [&](size_t i) -> std::optional<NodeId> {
      if (same_type(g, n, n.args[i])) return n.args[i];
      return std::nullopt;
    };
    const bool fl = !n.is_tuple() && ir::is_float(n.type().dtype);
    if (op == "multiply") {
      if (is_const(g, n.args[1], 1)) return keep(0);
      if (is_const(g, n.args[0], 1)) return keep(1);
    } else if (op == "divide" && is_const(g, n.args[1], 1)) {
      return keep(0);
    } else if (op == "add") {
      for (size_t i : {0, 1})
        if (is_const(g, n.args[1 - i], 0, fl)) return keep(i);
    } else if (op == "subtract" && is_const(g, n.args[1], 0)) {
      return keep(0);
    } else if (op == "negate" && g.node(n.args[0]).op == "negate") {
      return keep_arg_of(g, n, n.args[0]);
    } else if ((op == "as_type" || op == "bitcast" || op == "reshape") && same_type(g, n, n.args[0])) {
      return n.args[0];
    } else if (op == "reshape" && g.node(n.args[0]).op == "reshape") {
      n.args[0] = g.node(n.args[0]).args[0];  // only the final shape matters
      if (same_type(g, n, n.args[0])) return n.args[0];  // a round trip (a unit axis added and dropped)
    } else if (op == "transpose") {
      auto axes = n.attrs["axes"].get<std::vector<int64_t>>();
      const Node& inner = g.node(n.args[0]);
      if (inner.op == "transpose") {
        auto first = inner.attrs["axes"].get<std::vector<int64_t>>();
        for (auto& a : axes) a = first[a];
        n.args[0] = inner.args[0];
        n.attrs["axes"] = axes;
      }
      bool identity = true;
      for (size_t i = 0; i < axes.size(); ++i) identity &= axes[i] == int64_t(i);
      if (identity) return keep(0);
    } else if (auto pred = op == "select" ? const_value(g, n.args[0]) : std::nullopt) {
      return keep(*pred != 0 ? 1 : 2);
    } else if (op == "select" && n.args[1] == n.args[2]) {
      return keep(1);  // a cond whose branches pass one value on (if-convert makes these)
    }
    // Layout ops of a constant are the constant at the new shape (constants broadcast lazily).
    if ((op == "broadcast" || op == "reshape" || op == "transpose" || op == "squeeze") &&
        g.node(n.args[0]).op == "constant") {
      n.attrs = {{"value", g.node(n.args[0]).attrs["value"]}};
      n.op = "constant";
      n.args.clear();
    }
    return std::nullopt;
  }

  // transpose(dot(a, b)) that puts b's free axes before a's is dot(b, a): the same products
  // (multiplication commutes exactly) summed in the same order, without the transpose's
  // pass over the result (Nx.Defn.grad writes dV = (dOᵀ·P)ᵀ this way). Only where the dot
  // has no other use, so that no product is computed twice.
  static void swap_transposed_dot(const Graph& g, Node& n) {
    const Node& dot = g.node(n.args[0]);
    if (dot.op != "dot" || dot.is_tuple()) return;
    const ContractionAxes ax = ContractionAxes::of(dot);
    const int64_t nb = int64_t(ax.b1.size()), rank = int64_t(dot.type().shape.size());
    const int64_t fa = int64_t(g.node(dot.args[0]).type().shape.size()) - nb - int64_t(ax.c1.size()), fb = rank - nb - fa;
    const auto axes = n.attrs["axes"].get<std::vector<int64_t>>();
    if (fa == 0 || fb == 0 || int64_t(axes.size()) != rank) return;
    for (int64_t i = 0; i < rank; ++i) {
      const int64_t want = i < nb ? i : i < nb + fb ? nb + fa + (i - nb) : nb + (i - nb - fb);
      if (axes[size_t(i)] != want) return;
    }
    nlohmann::json attrs = dot.attrs;
    attrs["contract_axes1"] = ax.c2;
    attrs["batch_axes1"] = ax.b2;
    attrs["contract_axes2"] = ax.c1;
    attrs["batch_axes2"] = ax.b1;
    n.op = "dot";
    n.args = {dot.args[1], dot.args[0]};
    n.attrs = std::move(attrs);
  }

  // x / c for a power of two c whose reciprocal is a normal number of the type is x * (1 / c):
  // the reciprocal is exact, so the product rounds the same quotient, ±0, infinities, NaN
  // and subnormals included. A multiplication where a division takes a reciprocal and a
  // correction on most GPUs (codegen's emit_binary), in every element of a scaled softmax.
  static void multiply_by_reciprocals(Graph& g) {
    // Each reciprocal with its divisor's shape, which may be what broadcasts x to the
    // quotient's (x[17,1] / 0.5[17,2]).
    std::map<NodeId, std::pair<double, ir::Shape>> reciprocal;
    for (const auto& n : g.nodes)
      if (auto r = exact_reciprocal(g, n)) reciprocal[n.id] = {*r, g.node(n.args[1]).type().shape};
    if (reciprocal.empty()) return;
    expand_nodes(g, [&](Node& n, NodeId& next, std::vector<Node>& out) -> std::optional<std::vector<NodeId>> {
      auto it = reciprocal.find(n.id);
      if (it == reciprocal.end()) return std::nullopt;
      NodeAppender add{next, out};
      const ir::DType t = n.type().dtype;
      const auto& [value, shape] = it->second;
      NodeId c = add.add("constant", {}, t, shape, {{"value", value}});
      return std::vector<NodeId>{add.add("multiply", {n.args[0], c}, t, n.type().shape)};
    });
  }

  static std::optional<double> exact_reciprocal(const Graph& g, const Node& n) {
    if (n.op != "divide" || n.is_tuple()) return std::nullopt;
    const ir::DType t = n.type().dtype;
    // The largest |k| for which 2^k and 2^-k are both normal numbers of the type.
    const int most = t == ir::DType::F16 ? 14 : t == ir::DType::BF16 || t == ir::DType::F32 ? 126 : t == ir::DType::F64 ? 1022 : 0;
    const auto v = const_value(g, n.args[1]);
    if (!most || !v || g.node(n.args[1]).type().dtype != t) return std::nullopt;
    int e = 0;
    if (!std::isfinite(*v) || std::fabs(std::frexp(*v, &e)) != 0.5 || std::abs(e - 1) > most) return std::nullopt;
    return std::ldexp(std::copysign(1.0, *v), 1 - e);
  }

  static std::optional<NodeId> keep_arg_of(const Graph& g, const Node& n, NodeId inner) {
    NodeId x = g.node(inner).args[0];
    if (same_type(g, n, x)) return x;
    return std::nullopt;
  }
};

NXV_REGISTER_PASS(Simplify, "simplify");

}  // namespace
}  // namespace nxv::passes
