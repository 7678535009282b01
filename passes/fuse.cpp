// fuse: forms one `kernel` per fusible region, before lower-to-kernels wraps what is left.
//
// The code generator is elemental (a value is computed from an output index), so a region
// needs no intermediate buffers: every elementwise or index-mapping producer can be
// evaluated inside its consumer. A node is *materialised* (gets a buffer, ends a region)
// only when something outside the elemental world must read it: a graph output, a user
// that cannot inline it (dot, a reduction result feeding anything, control flow), or a
// fan-out too wide to recompute. Everything else is inlined into every region that reads
// it; inside one region the emitter computes each node once per element, so diamonds and
// long chains (an unrolled leapfrog) cost no recomputation. Regions with the same output
// shape that share work are then merged into one multi-output kernel.
#include <algorithm>
#include <map>
#include <set>

#include "passes/pass.h"

namespace nxv::passes {
namespace {

using ir::Graph;
using ir::Node;
using ir::NodeId;

const std::set<std::string> kIndexOps = {"broadcast", "reshape", "squeeze", "transpose", "reverse",
                                         "pad",       "concatenate", "stack", "iota",   "eye"};
const std::set<std::string> kReductions = {"sum", "product", "reduce_max", "reduce_min", "all", "any",
                                           "argmax", "argmin"};
const std::set<std::string> kNotElemental = {"parameter", "tensor", "dot", "elem", "while", "cond",
                                             "kernel",    "put_slice", "metadata"};

// Inlinable: computed per element from its operands' elements. Slices with dynamic starts
// read scalars from other values, which the emitter supports, so slices qualify too.
bool inlinable(const Node& n) {
  return !n.is_tuple() && !kNotElemental.count(n.op) && !kReductions.count(n.op);
}
// Can root a region: anything inlinable, and reductions (their producers are evaluated
// inside the reduction loop).
bool can_root(const Node& n) { return inlinable(n) || kReductions.count(n.op); }
bool is_reduction(const Node& n) { return kReductions.count(n.op) > 0; }

// Beyond this many users a producer gets its own buffer rather than being recomputed.
constexpr size_t kMaxInlineUsers = 2;

class Fuse : public Pass {
 public:
  std::string name() const override { return "fuse"; }

  void run(Graph& g) override {
    std::map<NodeId, std::vector<NodeId>> users;
    for (const auto& n : g.nodes)
      for (NodeId a : n.args) users[a].push_back(n.id);
    std::set<NodeId> outputs(g.outputs.begin(), g.outputs.end());

    auto materialised = [&](const Node& n) {
      if (n.op == "constant") return false;  // a scalar literal: copied into every region
      if (!inlinable(n) || outputs.count(n.id)) return true;
      const auto& us = users[n.id];
      std::set<NodeId> distinct(us.begin(), us.end());
      if (distinct.size() > kMaxInlineUsers) return true;
      for (NodeId u : distinct)
        if (!can_root(g.node(u))) return true;
      return false;
    };

    // Region of each materialised root: the root plus its inlined producers.
    std::vector<Region> regions;
    for (const auto& n : g.nodes) {
      if (!can_root(n) || n.op == "constant" || !materialised(n)) continue;
      Region r;
      r.roots = {n.id};
      collect(g, n.id, materialised, r);
      regions.push_back(std::move(r));
    }
    merge_siblings(g, regions);
    for (const auto& r : regions) emit(g, r);
    sort_topologically(g);
    // Inlined producers no longer have users at the top level.
    std::set<NodeId> live(g.outputs.begin(), g.outputs.end());
    for (auto it = g.nodes.rbegin(); it != g.nodes.rend(); ++it)
      if (live.count(it->id))
        for (NodeId a : it->args) live.insert(a);
    std::erase_if(g.nodes, [&](const Node& n) { return !live.count(n.id) && n.op != "parameter"; });
    g.reindex();
  }

 private:
  struct Region {
    std::vector<NodeId> roots;      // become the kernel's results, in order
    std::set<NodeId> members;       // roots and inlined producers
    std::set<NodeId> inputs;        // values read from outside
  };

  template <class Pred>
  void collect(const Graph& g, NodeId id, const Pred& materialised, Region& r) {
    if (!r.members.insert(id).second) return;
    for (NodeId a : g.node(id).args) {
      const Node& p = g.node(a);
      if (p.op == "constant" || (inlinable(p) && !materialised(p))) collect(g, a, materialised, r);
      else r.inputs.insert(a);
    }
  }

  // Elementwise regions of one output shape that share inlined work become one kernel with
  // several results, unless one reads the other (that would need the other's buffer first).
  void merge_siblings(const Graph& g, std::vector<Region>& regions) {
    for (size_t i = 0; i < regions.size(); ++i) {
      for (size_t j = i + 1; j < regions.size();) {
        Region &a = regions[i], &b = regions[j];
        const auto& ta = g.node(a.roots[0]).type();
        const auto& tb = g.node(b.roots[0]).type();
        bool elementwise = !is_reduction(g.node(a.roots[0])) && !is_reduction(g.node(b.roots[0]));
        bool shares = std::any_of(b.members.begin(), b.members.end(), [&](NodeId m) {
          return a.members.count(m) && g.node(m).op != "constant";
        });
        bool independent = !depends(g, a, b, regions) && !depends(g, b, a, regions);
        if (elementwise && ta.shape == tb.shape && shares && independent) {
          a.roots.insert(a.roots.end(), b.roots.begin(), b.roots.end());
          a.members.insert(b.members.begin(), b.members.end());
          a.inputs.insert(b.inputs.begin(), b.inputs.end());
          for (NodeId root : a.roots) a.inputs.erase(root);
          regions.erase(regions.begin() + j);
        } else {
          ++j;
        }
      }
    }
  }

  // Does region `a` read (transitively, through other regions) a result of region `b`?
  bool depends(const Graph& g, const Region& a, const Region& b, const std::vector<Region>& all) {
    std::set<NodeId> b_roots(b.roots.begin(), b.roots.end());
    std::set<NodeId> seen;
    std::vector<NodeId> work(a.inputs.begin(), a.inputs.end());
    while (!work.empty()) {
      NodeId v = work.back();
      work.pop_back();
      if (!seen.insert(v).second) continue;
      if (b_roots.count(v)) return true;
      bool in_region = false;
      for (const auto& r : all)
        if (std::find(r.roots.begin(), r.roots.end(), v) != r.roots.end()) {
          work.insert(work.end(), r.inputs.begin(), r.inputs.end());
          in_region = true;
          break;
        }
      if (!in_region)
        for (NodeId x : g.node(v).args) work.push_back(x);
    }
    return false;
  }

  // Replaces the first root by a kernel node computing the whole region; other roots become
  // `elem`s of it.
  void emit(Graph& g, const Region& r) {
    auto body = std::make_shared<Graph>();
    body->name = g.name;
    std::vector<NodeId> args(r.inputs.begin(), r.inputs.end());
    NodeId next = std::max(g.next_id(), NodeId(0));
    std::map<NodeId, NodeId> param_of;
    for (size_t i = 0; i < args.size(); ++i) {
      Node p;
      p.id = next + NodeId(i);
      p.op = "parameter";
      p.results = {g.node(args[i]).type()};
      p.attrs = {{"index", int64_t(i)}};
      param_of[args[i]] = p.id;
      body->nodes.push_back(std::move(p));
    }
    std::vector<NodeId> fused;
    for (const auto& n : g.nodes)  // topological order is kept
      if (r.members.count(n.id)) {
        Node copy = n;
        for (auto& a : copy.args)
          if (param_of.count(a)) a = param_of[a];
        body->nodes.push_back(std::move(copy));
        if (n.op != "constant") fused.push_back(n.id);
      }
    body->outputs = r.roots;
    body->reindex();

    Node k;
    // A single-result kernel takes its root's id, so users need no rewiring; with several
    // results every root becomes an `elem` of a kernel with a fresh id.
    bool multi = r.roots.size() > 1;
    k.id = multi ? g.next_id() : r.roots[0];
    k.op = "kernel";
    k.args = args;
    for (NodeId root : r.roots) k.results.push_back(g.node(root).type());
    const Node& first = g.node(r.roots[0]);
    k.attrs = {{"kind", first.op == "argmax" || first.op == "argmin" ? "argreduce"
                        : is_reduction(first)                       ? "reduce"
                                                                    : "elementwise"},
               {"fused_nodes", fused}};
    k.regions["body"] = body;

    std::vector<Node> replacement{std::move(k)};
    for (size_t i = 0; multi && i < r.roots.size(); ++i) {
      Node e;
      e.id = r.roots[i];
      e.op = "elem";
      e.args = {replacement[0].id};
      e.results = {g.node(r.roots[i]).type()};
      e.attrs = {{"index", int64_t(i)}};
      replacement.push_back(std::move(e));
    }
    std::set<NodeId> roots(r.roots.begin(), r.roots.end());
    std::erase_if(g.nodes, [&](const Node& n) { return roots.count(n.id) > 0; });
    g.nodes.insert(g.nodes.end(), replacement.begin(), replacement.end());
    g.reindex();
  }

  // Kernels were appended at the end; restore an order in which every value is defined
  // before its first use, keeping the original order wherever it already was valid.
  static void sort_topologically(Graph& g) {
    std::vector<Node> sorted;
    std::set<NodeId> defined;
    std::vector<bool> placed(g.nodes.size(), false);
    while (sorted.size() < g.nodes.size()) {
      size_t before = sorted.size();
      for (size_t i = 0; i < g.nodes.size(); ++i) {
        if (placed[i]) continue;
        const Node& n = g.nodes[i];
        if (std::all_of(n.args.begin(), n.args.end(), [&](NodeId a) { return defined.count(a) > 0; })) {
          placed[i] = true;
          defined.insert(n.id);
          sorted.push_back(n);
        }
      }
      if (sorted.size() == before) throw ir::IrError("fuse: the fused graph has a cycle (a bug in fusion)");
    }
    g.nodes = std::move(sorted);
    g.reindex();
  }
};

NXV_REGISTER_PASS(Fuse, "fuse");

}  // namespace
}  // namespace nxv::passes
