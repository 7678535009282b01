// fuse-attention: softmax attention as Nx graphs spell it, dot(softmax(dot(q, k) [scaled]
// [+ bias] [masked]), v), becomes one `attention` node (ir/attention.h), which codegen runs
// as one kernel that never writes the sequence-squared scores. Only where the target's
// kernel holds a row of q, k and v in shared memory (KernelBounds::attention_row_bytes),
// only the max-subtracted softmax (the naive one overflows where this one does not), and
// only where no other node reads an intermediate, and not where the target runs it faster
// unfused (KernelBounds::separate_attention_keys). q, k and v may come in any layout the
// dots accept: transposes bring them to [B..., S, D]. A mask that is a causal one (a literal,
// or computed from iotas and constants alone) becomes attrs.causal and is not read at all.
// An `attention` node given on input that the target's kernel cannot run (a head dim wider
// than its shared memory holds) becomes the unfused graph it stands for.
#include <algorithm>
#include <cmath>
#include <map>
#include <functional>
#include <numeric>
#include <set>

#include "ir/attention.h"
#include "ir/interpreter.h"
#include "ir/literal.h"
#include "ir/ops.h"
#include "passes/pass.h"
#include "passes/rewrite.h"

namespace nxv::passes {
namespace {

using ir::DType;
using ir::Graph;
using ir::Node;
using ir::NodeId;
using ir::Shape;
using nlohmann::json;

// A mask computed at compile time is evaluated up to this many elements per node.
constexpr int64_t kMaxEvaluated = int64_t(1) << 22;

// Bytes of the longest row of q, k and v (head dims d and dv) as the fused kernel holds it in
// shared memory: f64 natively, every other type widened to f32.
int64_t kernel_row_bytes(int64_t d, int64_t dv, DType t) { return std::max(d, dv) * (t == DType::F64 ? 8 : 4); }

std::vector<int64_t> ints(const Node& n, const char* key) {
  const json& v = n.attrs.value(key, json::array());
  if (v.is_number_integer()) return {v.get<int64_t>()};
  return v.is_array() ? v.get<std::vector<int64_t>>() : std::vector<int64_t>{};
}

std::vector<int64_t> iota_list(size_t n, int64_t from = 0) {
  std::vector<int64_t> r(n);
  std::iota(r.begin(), r.end(), from);
  return r;
}

// The value of a `constant` as attrs.value of a T constant, where T holds it exactly (so
// that the attention's T constant equals it), else nothing.
std::optional<json> constant_in(const Node& c, DType t) {
  if (c.op != "constant" || !c.attrs.contains("value")) return std::nullopt;
  ir::Literal own{{c.type().dtype, {}}, {}}, in_t{{t, {}}, {}};
  own.data.resize(size_t(ir::dtype_bytes(own.type.dtype)));
  in_t.data.resize(size_t(ir::dtype_bytes(t)));
  ir::set_element(own, 0, ir::parse_scalar(c.attrs["value"]));
  ir::Scalar v;
  v.f = ir::get_f64(own, 0);
  ir::set_element(in_t, 0, v);
  const double back = ir::get_f64(in_t, 0);
  if (!(back == v.f || (std::isnan(back) && std::isnan(v.f))) || std::signbit(back) != std::signbit(v.f)) return std::nullopt;
  return ir::literal_to_json(in_t)["data"][0];
}

// The offset c with mask[..., i, j] != 0 exactly where j <= i + c, the same at every
// position of the mask's leading axes (each of its two last axes [sq, sk] or 1, broadcast).
// The closest to 0 where several are (a row all kept or all masked allows a range).
// kept(b, i, j): whether slice b of the mask keeps key j for query i.
std::optional<int64_t> causal_offset(const std::function<bool(int64_t, int64_t, int64_t)>& kept, int64_t slices,
                                     int64_t sq, int64_t sk) {
  int64_t lo = -sq, hi = sk;  // every offset outside keeps all keys or none
  for (int64_t i = 0; i < sq; ++i) {
    int64_t c = 0;
    while (c < sk && kept(0, i, c)) ++c;
    for (int64_t j = c; j < sk; ++j)
      if (kept(0, i, j)) return std::nullopt;
    if (c > 0) lo = std::max(lo, c == sk ? sk - 1 - i : c - 1 - i);
    if (c < sk) hi = std::min(hi, c - 1 - i);
  }
  if (lo > hi) return std::nullopt;
  for (int64_t b = 1; b < slices; ++b)
    for (int64_t i = 0; i < sq; ++i)
      for (int64_t j = 0; j < sk; ++j)
        if (kept(b, i, j) != kept(0, i, j)) return std::nullopt;
  return std::clamp<int64_t>(0, lo, hi);
}

std::optional<int64_t> causal_offset(const ir::Literal& mask, int64_t sq, int64_t sk) {
  const Shape& s = mask.type.shape;
  const int64_t dq = s.size() >= 2 ? s[s.size() - 2] : 1, dk = s.empty() ? 1 : s.back();
  const int64_t slices = mask.type.num_elements() / std::max<int64_t>(dq * dk, 1);
  return causal_offset(
      [&](int64_t b, int64_t i, int64_t j) { return ir::get_i64(mask, (b * dq + (dq == 1 ? 0 : i)) * dk + (dk == 1 ? 0 : j)) != 0; },
      slices, sq, sk);
}

// What one match rewrites into: the canonical operands and the attention's attrs.
struct Operand {
  NodeId id = -1;
  Shape shape;
  std::vector<int64_t> perm;  // to [B..., S, D]
  int64_t head_dim() const { return shape[perm.back()]; }
};
struct Match {
  Operand q, k, v;
  std::optional<NodeId> mask, bias;
  json attrs = json::object();
};

class Matcher {
 public:
  Matcher(const Graph& g, const KernelBounds& bounds) : g_(g), bounds_(bounds) {
    for (const auto& n : g.nodes)
      for (NodeId a : n.args) users_[a].insert(n.id);
    outputs_.insert(g.outputs.begin(), g.outputs.end());
  }

  // The attention whose last dot is `out`, or nothing.
  std::optional<Match> match(const Node& out) {
    if (out.op != "dot" || out.is_tuple() || !ir::is_float(out.type().dtype)) return std::nullopt;
    t_ = out.type().dtype;
    inner_.clear();
    Match m;
    if (!probabilities_dot(out, m) || !softmax(out.args[0]) || !scores(m) || !fits(m) || !private_intermediates(out))
      return std::nullopt;
    return m;
  }

 private:
  const Graph& g_;
  const KernelBounds& bounds_;
  std::map<NodeId, std::set<NodeId>> users_;
  std::set<NodeId> outputs_;
  DType t_ = DType::F32;
  Shape scores_;               // [B..., Sq, Sk]
  NodeId s_ = -1;              // the scores the softmax reads
  std::set<NodeId> inner_;     // the intermediates the attention node replaces

  const Node& node(NodeId id) const { return g_.node(id); }
  bool is(NodeId id, const std::string& op, const Shape& shape) const {
    const Node& n = node(id);
    return n.op == op && !n.is_tuple() && n.type().dtype == t_ && n.type().shape == shape;
  }
  size_t nb() const { return scores_.size() - 2; }
  Shape rows(bool keep) const {
    Shape r(scores_.begin(), scores_.end() - 1);
    if (keep) r.push_back(1);
    return r;
  }

  // out = dot(p, v'): p's last axis against one axis of v', batch axes p's leading ones.
  bool probabilities_dot(const Node& out, Match& m) {
    const Node &p = node(out.args.at(0)), &v = node(out.args.at(1));
    if (p.is_tuple() || v.is_tuple() || p.type().dtype != t_ || v.type().dtype != t_) return false;
    scores_ = p.type().shape;
    const size_t rank = scores_.size();
    if (rank < 2 || v.type().shape.size() != rank) return false;
    const auto c2 = ints(out, "contract_axes2"), b2 = ints(out, "batch_axes2");
    if (ints(out, "contract_axes1") != std::vector<int64_t>{int64_t(rank) - 1} || ints(out, "batch_axes1") != iota_list(nb()) ||
        c2.size() != 1 || b2.size() != nb())
      return false;
    m.v = {v.id, v.type().shape, layout(b2, c2[0], rank)};
    return true;
  }

  // The permutation to [batch..., free, contracted] (q and k: [B..., S, D]), or where not
  // `contracted_last` to [batch..., contracted, free] (v: its keys, then its head dim).
  static std::vector<int64_t> layout(const std::vector<int64_t>& batch, int64_t contracted, size_t rank,
                                     bool contracted_last = false) {
    std::vector<int64_t> perm = batch;
    int64_t free = -1;
    for (size_t a = 0; a < rank; ++a)
      if (int64_t(a) != contracted && !std::count(batch.begin(), batch.end(), int64_t(a))) free = int64_t(a);
    if (contracted_last) perm.insert(perm.end(), {free, contracted});
    else perm.insert(perm.end(), {contracted, free});
    return perm;
  }

  // p = exp(s - max) / sum(exp(s - max)) over the last axis.
  bool softmax(NodeId p) {
    if (!is(p, "divide", scores_)) return false;
    const Node& div = node(p);
    const NodeId e = div.args[0];
    if (!is(e, "exp", scores_) || !is(node(e).args[0], "subtract", scores_)) return false;
    const Node& x = node(node(e).args[0]);
    s_ = x.args[0];
    inner_.insert({p, e, x.id});
    return row_value(div.args[1], "sum", e) && row_value(x.args[1], "reduce_max", s_);
  }

  // A value equal along the last axis to reduction `op` of `of` over it: kept as an axis of
  // 1 (read through broadcasting), or reshaped and broadcast back along it.
  bool row_value(NodeId id, const char* op, NodeId of) {
    const Shape kept = rows(true), dropped = rows(false);
    if (node(id).is_tuple() || (node(id).type().shape != kept && node(id).type().shape != scores_)) return false;
    for (;;) {
      const Node& n = node(id);
      if (n.is_tuple() || n.type().dtype != t_) return false;
      inner_.insert(id);
      const Shape& shape = n.type().shape;
      if (n.op == op)
        return n.args[0] == of && ints(n, "axes") == std::vector<int64_t>{int64_t(scores_.size()) - 1} &&
               (shape == kept || shape == dropped);
      if (n.op == "reshape" && (shape == kept || shape == dropped)) {
        const Shape& from = node(n.args[0]).type().shape;
        if (from != kept && from != dropped) return false;
      } else if (n.op == "broadcast" && shape == scores_) {
        const Shape& from = node(n.args[0]).type().shape;
        const auto axes = ints(n, "axes");
        if (!(from == dropped && axes == iota_list(nb() + 1)) && !(from == kept && axes == iota_list(nb() + 2))) return false;
      } else {
        return false;
      }
      id = n.args[0];
    }
  }

  // s = select(mask, scaled + bias, fill) back to dot(q', k'), each step optional.
  bool scores(Match& m) {
    NodeId cur = s_;
    if (is(cur, "select", scores_)) {
      if (!mask(node(cur), m)) return false;
      inner_.insert(cur);
      cur = node(cur).args[1];
    }
    if (is(cur, "add", scores_)) {
      const Node& add = node(cur);
      const size_t chain = product_chain(add.args[0]) ? 0 : 1;
      const Node& bias = node(add.args[1 - chain]);
      if (bias.is_tuple() || bias.type().dtype != t_) return false;
      m.bias = bias.id;
      m.attrs["bias"] = true;
      inner_.insert(cur);
      cur = add.args[chain];
    }
    if (is(cur, "multiply", scores_) || is(cur, "divide", scores_)) {
      const Node& op = node(cur);
      const size_t c = op.op == "multiply" && node(op.args[0]).op == "constant" ? 0 : 1;
      auto scale = constant_in(node(op.args[c]), t_);
      if (!scale || !scale->is_number()) return false;
      m.attrs["scale"] = *scale;
      m.attrs["scale_op"] = op.op;
      inner_.insert(cur);
      cur = op.args[1 - c];
    }
    return is(cur, "dot", scores_) && scores_dot(node(cur), m);
  }

  // Whether `id` is the scores' dot, or the dot scaled: the side of the add that is not the bias.
  bool product_chain(NodeId id) const {
    const Node& n = node(id);
    if (n.op == "dot") return true;
    if (n.op != "multiply" && n.op != "divide") return false;
    return node(n.args[0]).op == "dot" || (n.op == "multiply" && node(n.args[1]).op == "dot");
  }

  // s0 = dot(q', k'): one contracted axis each (the head dim), batch axes paired, a free axis each.
  bool scores_dot(const Node& dot, Match& m) {
    const Node &q = node(dot.args[0]), &k = node(dot.args[1]);
    const size_t rank = scores_.size();
    if (q.is_tuple() || k.is_tuple() || q.type().dtype != t_ || k.type().dtype != t_ || q.type().shape.size() != rank ||
        k.type().shape.size() != rank)
      return false;
    const auto c1 = ints(dot, "contract_axes1"), c2 = ints(dot, "contract_axes2");
    const auto b1 = ints(dot, "batch_axes1"), b2 = ints(dot, "batch_axes2");
    if (c1.size() != 1 || c2.size() != 1 || b1.size() != nb() || b2.size() != nb()) return false;
    m.q = {q.id, q.type().shape, layout(b1, c1[0], rank, true)};
    m.k = {k.id, k.type().shape, layout(b2, c2[0], rank, true)};
    inner_.insert(dot.id);
    return true;
  }

  // select(mask, s, fill): a u8 mask, a constant fill T holds.
  bool mask(const Node& select, Match& m) {
    const Node& mask = node(select.args[0]);
    auto fill = constant_in(node(select.args[2]), t_);
    if (!fill || mask.is_tuple() || mask.type().dtype != DType::U8) return false;
    m.attrs["masked"] = *fill;
    const NodeId source = aligned_source(mask.id);
    const int64_t sq = scores_[nb()], sk = scores_[nb() + 1];
    auto offset = comparison_causal_offset(source, sq, sk);
    if (!offset)
      if (auto value = compile_time_value(source)) offset = causal_offset(*value, sq, sk);
    if (offset) {
      m.attrs["causal"] = *offset;
    } else {
      m.mask = source;
      m.attrs["mask"] = true;
    }
    return true;
  }

  // The mask before broadcasts and reshapes that only add or stretch leading axes: Nx's
  // implicit broadcasting, which the attention's mask operand gets.
  NodeId aligned_source(NodeId id) const {
    for (;;) {
      const Node& n = node(id);
      const size_t out = n.type().shape.size();
      if (n.op != "broadcast" && n.op != "reshape") return id;
      const Shape& in = node(n.args[0]).type().shape;
      if (n.op == "broadcast" && ints(n, "axes") != iota_list(in.size(), int64_t(out - in.size()))) return id;
      if (n.op == "reshape") {
        const Shape& s = n.type().shape;
        if (s.size() < in.size() || !std::equal(in.begin(), in.end(), s.end() - in.size()) ||
            std::any_of(s.begin(), s.end() - in.size(), [](int64_t d) { return d != 1; }))
          return id;
      }
      id = n.args[0];
    }
  }

  // A mask compare(row [.., sq, 1], column [.., 1, sk]) whose operands are computed at compile
  // time (iotas and constants): its causal offset, from the operands alone, however long
  // the sequences (the mask itself is not evaluated; at 4096 queries it has 2^24 elements).
  std::optional<int64_t> comparison_causal_offset(NodeId id, int64_t sq, int64_t sk) const {
    static const std::set<std::string> compares = {"greater_equal", "greater", "less_equal", "less"};
    const Node& n = node(id);
    if (!compares.count(n.op) || n.args.size() != 2) return std::nullopt;
    auto vector_of = [&](NodeId a, int64_t along) -> std::optional<std::pair<ir::Literal, bool>> {
      const Shape& s = node(a).type().shape;  // [1.., sq, 1] (rows) or [1.., 1, sk] (keys)
      if (s.size() < 2 || std::any_of(s.begin(), s.end() - 2, [](int64_t d) { return d != 1; })) return std::nullopt;
      const bool rows = s[s.size() - 2] == along && s.back() == 1;
      if (!rows && !(s[s.size() - 2] == 1 && s.back() == along)) return std::nullopt;
      auto v = compile_time_value(a);
      if (!v) return std::nullopt;
      return std::pair{*v, rows};
    };
    auto x = vector_of(n.args[0], sq), y = vector_of(n.args[1], sk);
    if (!x || !y || !x->second || y->second) {
      x = vector_of(n.args[0], sk), y = vector_of(n.args[1], sq);
      if (!x || !y || x->second || !y->second) return std::nullopt;
    }
    const bool first_rows = x->second;
    auto at = [](const ir::Literal& l, int64_t k) { return ir::is_float(l.type.dtype) ? ir::get_f64(l, k) : double(ir::get_i64(l, k)); };
    return causal_offset(
        [&](int64_t, int64_t i, int64_t j) {
          const double a = at(x->first, first_rows ? i : j), b = at(y->first, first_rows ? j : i);
          return n.op == "greater_equal" ? a >= b : n.op == "greater" ? a > b : n.op == "less_equal" ? a <= b : a < b;
        },
        1, sq, sk);
  }

  // A value computed from literals and iotas alone, evaluated; nothing for anything else.
  std::optional<ir::Literal> compile_time_value(NodeId id) const {
    const Node& n = node(id);
    if (n.op == "constant") {
      Node scalar = n;
      scalar.results = {{n.type().dtype, {}}};
      auto v = ir::literal_of(scalar);
      v.type.shape = Shape(n.type().shape.size(), 1);
      return v;
    }
    if (n.op == "tensor") return ir::literal_of(n);
    std::set<NodeId> cone;
    std::vector<NodeId> work{id};
    while (!work.empty()) {
      const Node& c = node(work.back());
      work.pop_back();
      if (!cone.insert(c.id).second) continue;
      const auto f = ir::op_family(c.op);
      const bool computable = (f == ir::OpFamily::Source && c.op != "parameter") || f == ir::OpFamily::IndexMap ||
                              (ir::is_elementwise(f) && !c.is_tuple());
      if (!computable || c.is_tuple() || c.type().num_elements() > kMaxEvaluated) return std::nullopt;
      work.insert(work.end(), c.args.begin(), c.args.end());
    }
    Graph sub;
    for (const auto& c : g_.nodes)
      if (cone.count(c.id)) sub.nodes.push_back(c);
    sub.outputs = {id};
    sub.reindex();
    return ir::interpret(sub, {}).at(0);
  }

  // Rows of q, k and v that the target's kernel holds, in the type it computes in; its
  // operands and result within the buffers a kernel may bind (4 on Mali and the
  // `vulkan-minimum` profile, where mask and bias together leave it unfused); f64 computed
  // natively (emulated, the unfused kernels' smaller modules).
  bool fits(const Match& m) const {
    const int64_t d = m.q.head_dim(), dv = m.v.head_dim();
    const size_t buffers = 4 + m.mask.has_value() + m.bias.has_value();
    return ir::num_elements(scores_) > 0 && d > 0 && dv > 0 && kernel_row_bytes(d, dv, t_) <= bounds_.attention_row_bytes &&
           buffers <= bounds_.max_bindings && !(t_ == DType::F64 && bounds_.emulated_f64_code > 1) && !separate(m);
  }

  // Whether the target runs this attention faster as its products and softmax
  // (KernelBounds::separate_attention_keys, separate_attention_work).
  bool separate(const Match& m) const {
    const int64_t keys = bounds_.separate_attention_keys, work = bounds_.separate_attention_work;
    const int64_t scores = ir::num_elements(scores_);
    const bool long_rows = keys > 0 && scores_.back() >= keys;
    const bool large = work > 0 && scores * (m.q.head_dim() + m.v.head_dim()) >= work;
    return t_ == DType::F32 && (long_rows || large) && !m.bias && !m.attrs.contains("masked") &&
           scores * 4 <= bounds_.separate_attention_bytes;
  }

  // No intermediate is read outside the pattern, nor is an operand one of them.
  bool private_intermediates(const Node& out) const {
    for (NodeId id : inner_) {
      if (outputs_.count(id)) return false;
      for (NodeId u : users_.at(id))
        if (u != out.id && !inner_.count(u)) return false;
    }
    return true;
  }
};

class FuseAttention : public Pass {
 public:
  std::string name() const override { return "fuse-attention"; }

  void run(Graph& g) override {
    unfuse_unrunnable(g);
    if (bounds_.attention_row_bytes <= 0) return;
    std::map<NodeId, Match> matches;
    Matcher matcher(g, bounds_);
    for (const auto& n : g.nodes)
      if (auto m = matcher.match(n)) matches[n.id] = std::move(*m);
    if (matches.empty()) return;
    expand_nodes(g, [&](Node& n, NodeId& next, std::vector<Node>& out) -> std::optional<std::vector<NodeId>> {
      auto it = matches.find(n.id);
      if (it == matches.end()) return std::nullopt;
      return std::vector<NodeId>{rewrite(n, it->second, NodeAppender{next, out})};
    });
  }

 private:
  static NodeId rewrite(const Node& out, const Match& m, NodeAppender b) {
    const DType t = out.type().dtype;
    auto canonical = [&](const Operand& o) {
      if (o.perm == iota_list(o.perm.size())) return o.id;
      Shape shape;
      for (int64_t a : o.perm) shape.push_back(o.shape[a]);
      return b.add("transpose", {o.id}, t, shape, {{"axes", o.perm}});
    };
    std::vector<NodeId> args = {canonical(m.q), canonical(m.k), canonical(m.v)};
    if (m.mask) args.push_back(*m.mask);
    if (m.bias) args.push_back(*m.bias);
    return b.add("attention", args, t, out.type().shape, m.attrs);
  }

  // An attention node given on input whose rows the target's kernel cannot hold
  // (KernelBounds::attention_kernel_row_bytes), or whose buffers it cannot bind, becomes the
  // unfused graph it stands for, which every target runs.
  void unfuse_unrunnable(Graph& g) const {
    std::map<NodeId, std::vector<ir::TensorType>> unrunnable;  // node -> its operands' types
    for (const auto& n : g.nodes) {
      if (n.op != "attention") continue;
      std::vector<ir::TensorType> types;
      for (NodeId a : n.args) types.push_back(g.node(a).type());
      const int64_t row = kernel_row_bytes(types[0].shape.back(), types[2].shape.back(), n.type().dtype);
      const int64_t most = bounds_.attention_kernel_row_bytes;
      if ((most > 0 && row > most) || n.args.size() + 1 > bounds_.max_bindings) unrunnable[n.id] = std::move(types);
    }
    if (unrunnable.empty()) return;
    expand_nodes(g, [&](Node& n, NodeId& next, std::vector<Node>& out) -> std::optional<std::vector<NodeId>> {
      auto it = unrunnable.find(n.id);
      if (it == unrunnable.end()) return std::nullopt;
      return std::vector<NodeId>{ir::append_unfused_attention(n, n.args, it->second, next, out)};
    });
  }
};

NXV_REGISTER_PASS(FuseAttention, "fuse-attention");

}  // namespace
}  // namespace nxv::passes
