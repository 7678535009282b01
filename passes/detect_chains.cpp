// detect-chains: a kernel body that repeats one computation K times over carried values —
// an unrolled integrator such as 32 leapfrog steps — becomes a `repeat` node: the step
// once, as a region, run K times in a loop inside the kernel with the carried values in
// registers. The code shrinks by K and the compiler's work with it.
//
// Nx traces an unrolled loop step after step, so the body's nodes (constants and
// parameters aside) are periodic: block b+1 has block b's ops, reading its own nodes
// where block b read its own, block b's where block b read block b-1's (the carried
// values), and the same outside values (loop invariants). The first block reads the
// initial values where the others read their predecessor.
//
// The step is computed at the element being produced, its carried values in registers
// (codegen/emit_repeat.cpp), so a block may hold elementwise ops only: an index map or a
// reduction would read other elements of a carried value, which the loop does not have.
// (An unrolled complex loop repeats slices of each value's parts.)
#include <map>
#include <optional>
#include <set>

#include "ir/ops.h"
#include "passes/pass.h"
#include "passes/rewrite.h"

namespace nxv::passes {
namespace {

using ir::Graph;
using ir::Node;
using ir::NodeId;

constexpr size_t kMaxPeriod = 512;
constexpr int64_t kMinRepeats = 3;  // below this a loop saves nothing

struct Window {
  size_t start = 0, period = 0;  // positions in the sequence of computing nodes
  int64_t count = 0;
};

class DetectChains : public Pass {
 public:
  std::string name() const override { return "detect-chains"; }

  void run(Graph& g) override {
    for (auto& n : g.nodes)
      if (n.op == "kernel" && n.regions.count("body")) rewrite(*n.regions["body"]);
  }

 private:
  // How a block's node refers to an argument, relative to its own block.
  struct Rel {
    enum Kind { Internal, Prev, External } kind;
    int64_t value;  // offset in the block, or the node id for External
    bool operator==(const Rel&) const = default;
  };

  std::vector<NodeId> seq_;               // computing nodes in order
  std::map<NodeId, size_t> pos_;          // node id → position in seq_
  std::vector<std::string> sig_;          // op, attrs and types of each
  std::vector<bool> elementwise_;         // whether each may be in a step
  std::map<NodeId, NodeId> same_constant_;  // constant → the first constant of equal type and value

  Rel rel(NodeId a, size_t block_start, size_t period) const {
    auto it = pos_.find(a);
    if (it != pos_.end()) {
      if (it->second >= block_start && it->second < block_start + period) return {Rel::Internal, int64_t(it->second - block_start)};
      if (block_start >= period && it->second >= block_start - period && it->second < block_start)
        return {Rel::Prev, int64_t(it->second - (block_start - period))};
    }
    auto c = same_constant_.find(a);
    return {Rel::External, c == same_constant_.end() ? a : c->second};
  }

  // Does block b (>= 2) relate to its predecessor as block 1 relates to block 0?
  bool same_relation(const Graph& body, const Window& w, int64_t b) const {
    const size_t s1 = w.start + w.period, sb = w.start + size_t(b) * w.period;
    for (size_t j = 0; j < w.period; ++j) {
      if (sig_[s1 + j] != sig_[sb + j] || !elementwise_[sb + j]) return false;
      const auto &n1 = body.node(seq_[s1 + j]), &nb = body.node(seq_[sb + j]);
      for (size_t k = 0; k < n1.args.size(); ++k)
        if (!(rel(n1.args[k], s1, w.period) == rel(nb.args[k], sb, w.period))) return false;
    }
    return true;
  }

  // Block 0 reads the initial values where block 1 reads block 0; returns them by offset.
  std::optional<std::map<int64_t, NodeId>> initial_values(const Graph& body, const Window& w) const {
    std::map<int64_t, NodeId> init;
    const size_t s0 = w.start, s1 = w.start + w.period;
    for (size_t j = 0; j < w.period; ++j) {
      if (sig_[s0 + j] != sig_[s1 + j] || !elementwise_[s0 + j] || !elementwise_[s1 + j]) return std::nullopt;
      const auto &n0 = body.node(seq_[s0 + j]), &n1 = body.node(seq_[s1 + j]);
      for (size_t k = 0; k < n1.args.size(); ++k) {
        Rel r1 = rel(n1.args[k], s1, w.period), r0 = rel(n0.args[k], s0, w.period);
        if (r1.kind == Rel::Prev) {
          if (r0.kind != Rel::External) return std::nullopt;
          // The carried value must have its initial value's type: a first step that converts
          // (logical_not of f32 gives u8, then u8 to u8) is not the loop's step.
          if (body.node(n0.args[k]).type() != body.node(seq_[s0 + size_t(r1.value)]).type()) return std::nullopt;
          auto [it, fresh] = init.emplace(r1.value, n0.args[k]);
          if (!fresh && it->second != n0.args[k]) return std::nullopt;
        } else if (!(r0 == r1)) {
          return std::nullopt;
        }
      }
    }
    return init;
  }

  std::optional<Window> find(const Graph& body) const {
    std::optional<Window> best;
    const size_t n = seq_.size();
    for (size_t p = 1; p <= std::min(kMaxPeriod, n / 2); ++p) {
      for (size_t s = 0; s + 2 * p <= n; ++s) {
        Window w{s, p, 2};
        if (!initial_values(body, w)) continue;
        while (w.start + size_t(w.count + 1) * p <= n && same_relation(body, w, w.count)) ++w.count;
        if (w.count >= kMinRepeats && (!best || w.count * int64_t(p) > best->count * int64_t(best->period))) best = w;
        if (w.count >= kMinRepeats) s += size_t(w.count) * p - 1;  // no overlapping windows
      }
    }
    return best;
  }

  // The body's computing nodes in order, with their signatures; equal literals share one id.
  void index(const Graph& body) {
    seq_.clear();
    pos_.clear();
    sig_.clear();
    elementwise_.clear();
    same_constant_.clear();
    std::map<std::string, NodeId> constants;
    for (const auto& n : body.nodes) {
      if (n.op == "constant")  // each unrolled step may carry its own copy of a literal
        same_constant_[n.id] = constants.emplace(ir::to_string(n.type()) + n.attrs.dump(), n.id).first->second;
      if (n.op == "constant" || n.op == "parameter") continue;
      pos_[n.id] = seq_.size();
      seq_.push_back(n.id);
      std::string sig = n.op + n.attrs.dump();
      for (const auto& r : n.results) sig += ir::to_string(r);
      sig_.push_back(sig);
      elementwise_.push_back(ir::is_elementwise(ir::op_family(n.op)) || n.op == "metadata");
    }
  }

  // The step runs at the element being produced (codegen/emit_repeat.cpp): what it computes
  // and what it reads from outside (literals aside) must all have one shape, or be scalars.
  // An invariant that broadcasts (s8[64,1,64,2] into s8[64,2,64,2]) has no element there.
  bool one_element_shape(const Graph& body, const Window& w) const {
    std::optional<ir::Shape> shape;
    auto fits = [&](const ir::TensorType& t) {
      if (t.shape.empty()) return true;
      if (!shape) shape = t.shape;
      return *shape == t.shape;
    };
    const size_t s1 = w.start + w.period;
    for (size_t j = 0; j < w.period; ++j) {
      const Node& n = body.node(seq_[s1 + j]);
      for (const auto& r : n.results)
        if (!fits(r)) return false;
      for (NodeId a : n.args)
        if (rel(a, s1, w.period).kind == Rel::External && body.node(a).op != "constant" && !fits(body.node(a).type())) return false;
    }
    return true;
  }

  // Whether nothing after the window reads its nodes other than the last block's carried
  // values, which are all the loop gives back.
  bool only_carried_read_after(const Graph& body, const std::set<NodeId>& in_window, const std::set<NodeId>& carried_out) const {
    for (const auto& n : body.nodes)
      if (!in_window.count(n.id) && n.op != "constant" && n.op != "parameter")
        for (NodeId a : n.args)
          if (in_window.count(a) && !carried_out.count(a)) return false;
    for (NodeId o : body.outputs)
      if (in_window.count(o) && !carried_out.count(o)) return false;
    return true;
  }

  static Node parameter(NodeId id, const ir::TensorType& type, size_t index) {
    Node p;
    p.id = id;
    p.op = "parameter";
    p.results = {type};
    p.attrs = {{"index", int64_t(index)}};
    return p;
  }

  // The repeat node whose step region is block 1, reading the carried values and the
  // invariants as parameters; `carried_offsets` gets each carried value's offset in a block.
  Node repeat_node(const Graph& body, const Window& w, const std::map<int64_t, NodeId>& init,
                   std::vector<int64_t>& carried_offsets) const {
    auto step = std::make_shared<Graph>();
    step->name = body.name;
    NodeId next = body.next_id();
    std::map<NodeId, NodeId> param_for_prev, param_for_outer;
    Node rep;
    rep.id = next++;
    rep.op = "repeat";
    for (const auto& [off, id] : init) {
      const NodeId first = seq_[w.start + size_t(off)];
      Node p = parameter(next++, body.node(first).type(), rep.args.size());
      param_for_prev[first] = p.id;
      rep.args.push_back(id);
      rep.results.push_back(p.results[0]);
      carried_offsets.push_back(off);
      step->nodes.push_back(std::move(p));
    }
    const size_t s1 = w.start + w.period;
    for (size_t j = 0; j < w.period; ++j) {
      Node copy = body.node(seq_[s1 + j]);
      for (auto& a : copy.args) {
        Rel r = rel(a, s1, w.period);
        if (r.kind == Rel::Prev) {
          a = param_for_prev.at(seq_[w.start + size_t(r.value)]);
        } else if (r.kind == Rel::External) {
          const Node& outer = body.node(a);
          if (outer.op == "constant") {  // a literal: copied, not passed in
            if (!step->has_node(a)) {
              step->nodes.insert(step->nodes.begin(), outer);
              step->reindex();
            }
            continue;
          }
          if (!param_for_outer.count(a)) {
            Node p = parameter(next++, outer.type(), rep.args.size());
            param_for_outer[a] = p.id;
            rep.args.push_back(a);
            step->nodes.push_back(std::move(p));
            step->reindex();
          }
          a = param_for_outer[a];
        }
      }
      step->nodes.push_back(std::move(copy));
      step->reindex();
    }
    for (int64_t off : carried_offsets) step->outputs.push_back(seq_[s1 + size_t(off)]);
    step->reindex();
    rep.attrs = {{"count", w.count}};
    rep.regions["step"] = step;
    return rep;
  }

  // Replaces the window by the repeat and an elem per carried value, named as the last
  // block's nodes so that readers after the window need no rewiring.
  void splice(Graph& body, const std::set<NodeId>& in_window, const Node& rep, const std::vector<int64_t>& carried_offsets,
              size_t last) const {
    std::vector<Node> out;
    bool placed = false;
    for (auto& n : body.nodes) {
      if (!in_window.count(n.id)) {
        out.push_back(std::move(n));
        continue;
      }
      if (placed) continue;
      placed = true;
      out.push_back(rep);
      for (size_t i = 0; i < carried_offsets.size(); ++i) {
        Node e;
        e.id = seq_[last + size_t(carried_offsets[i])];
        e.op = "elem";
        e.args = {rep.id};
        e.results = {rep.results[i]};
        e.attrs = {{"index", int64_t(i)}};
        out.push_back(std::move(e));
      }
    }
    body.nodes = std::move(out);
    sort_topologically(body);  // an init value may be defined between window nodes
    remove_dead(body);         // constants only the window read now live in the step
  }

  void rewrite(Graph& body) {
    index(body);
    auto w = find(body);
    if (!w) return;
    auto init = *initial_values(body, *w);
    const size_t end = w->start + size_t(w->count) * w->period;
    const size_t last = end - w->period;
    std::set<NodeId> carried_out;
    for (const auto& [off, id] : init) carried_out.insert(seq_[last + size_t(off)]);
    std::set<NodeId> in_window(seq_.begin() + long(w->start), seq_.begin() + long(end));
    if (!only_carried_read_after(body, in_window, carried_out) || !one_element_shape(body, *w)) return;
    std::vector<int64_t> carried_offsets;
    const Node rep = repeat_node(body, *w, init, carried_offsets);
    splice(body, in_window, rep, carried_offsets, last);
  }
};

NXV_REGISTER_PASS(DetectChains, "detect-chains");

}  // namespace
}  // namespace nxv::passes
