// fuse: forms one `kernel` per fusible region, before lower-to-kernels wraps what is left.
//
// The code generator is elemental (a value is computed from an output index), so a region
// needs no intermediate buffers: every elementwise or index-mapping producer can be
// evaluated inside its consumer. A node is *materialised* (gets a buffer, ends a region)
// only when something outside the elemental world must read it: a graph output, a user
// that cannot inline it (a reduction result feeding anything, control flow), or a
// producer shared by several kernels whose cone is too big to recompute in each. A dot
// roots a region of its own (its inlined producers are its tiles' prologue) unless its one
// user is elementwise over its shape: then it is inlined there (the epilogue). An
// attention roots a region of its own too, its producers' index maps and casts its
// prologue, and has no epilogue (its kernel writes rows it normalises last). A scan
// (cumulative_*) always roots a single-result region, its producers its prologue. Fan-out
// alone does not count: users in one kernel share one evaluation. Everything else is inlined into every region that reads
// it; inside one region the emitter computes each node once per element and index, so
// diamonds and long chains (an unrolled leapfrog) cost no recomputation. A value read at
// several indices (through slices, concatenates, pads) is computed once per index, and a
// tree of such reads grows exponentially with its depth: the cost model (fusion_cost.h)
// estimates each region's work per element, code size and loop steps, and a region past
// the target's bounds is split by materialising the member that brings it furthest back.
// Regions with the same output shape that share work are then merged into one
// multi-output kernel, before reduction fusion and again after it, until neither changes
// anything: a row kernel that reads a sibling only inside its row-level values (softmax's
// gradient reads the probabilities in a row sum) takes it as another result.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "ir/dot_epilogue.h"
#include "ir/ops.h"
#include "passes/fusion_cost.h"
#include "passes/pass.h"
#include "passes/rewrite.h"
#include "passes/split_contraction.h"

namespace nxv::passes {
namespace {

using ir::Graph;
using ir::Node;
using ir::NodeId;

bool is_reduction(const Node& n) {
  const auto f = ir::op_family(n.op);
  return f == ir::OpFamily::Reduction || f == ir::OpFamily::ArgReduction;
}
// indexed_add/put: each element loops over all the updates, so like a reduction its result
// gets a buffer rather than being recomputed wherever it is read.
bool is_indexed_update(const Node& n) { return ir::op_family(n.op) == ir::OpFamily::Scatter; }
// cumulative_*: a scan kernel of its own (codegen/scan.h), which walks its lines; its
// producers are its prologue (computed once per element), its users read its buffer.
bool is_scan(const Node& n) { return ir::op_family(n.op) == ir::OpFamily::Scan; }
// Inlinable: computed per element from its operands' elements. Slices with dynamic starts
// read scalars from other values, which the emitter supports, so slices qualify too; so does
// gather, an index map whose index comes from its indices operand (one element each).
bool inlinable(const Node& n) {
  if (n.is_tuple()) return false;
  const auto f = ir::op_family(n.op);
  if (f == ir::OpFamily::Source) return n.op == "constant" || n.op == "iota" || n.op == "eye";
  return ir::is_elementwise(f) || f == ir::OpFamily::IndexMap || f == ir::OpFamily::Gather;
}
// dot and attention read their operands in tiles, each element once per tile of the output.
bool is_tiled(const Node& n) { return n.op == "dot" || n.op == "attention"; }
// Can root a region: anything inlinable, reductions, indexed updates, scans, dots and
// attention (their producers are evaluated inside their loops: a dot's are its tiles' prologue).
bool can_root(const Node& n) {
  return inlinable(n) || is_reduction(n) || is_indexed_update(n) || is_scan(n) || is_tiled(n);
}

class Fuse : public Pass {
 public:
  std::string name() const override { return "fuse"; }

  void run(Graph& g) override {
    std::map<NodeId, std::vector<NodeId>> users;
    for (const auto& n : g.nodes)
      for (NodeId a : n.args) users[a].push_back(n.id);
    std::set<NodeId> outputs(g.outputs.begin(), g.outputs.end());
    std::set<NodeId> forced;  // materialised for their cost, or a dot's or a binding limit's sake
    std::map<NodeId, std::string> cuts;  // of those, the ones the cost model cut, and why

    auto materialised = [&](const Node& n) {
      if (n.op == "constant") return false;  // a scalar literal: copied into every region
      if (n.op == "dot" && !outputs.count(n.id) && !forced.count(n.id)) return !epilogue_fits(g, n, users);
      if (!inlinable(n) || outputs.count(n.id) || forced.count(n.id)) return true;
      if (!cheap_prologue(n) && tiled_reader(g, n.id, users)) return true;
      if (pad_before_product(g, n, users)) return true;
      for (NodeId u : users[n.id])
        if (!can_root(g.node(u))) return true;
      return false;
    };

    // Region of each materialised root: the root plus its inlined producers. Fan-out alone
    // never materialises a value: users that end up in one kernel share one evaluation.
    std::vector<Region> regions;
    for (;;) {
      regions.clear();
      for (const auto& n : g.nodes) {
        if (!can_root(n) || n.op == "constant" || !materialised(n)) continue;
        Region r;
        r.roots = {n.id};
        collect(g, n.id, materialised, r);
        regions.push_back(std::move(r));
      }
      merge_siblings(g, regions);
      auto costly = costly_duplicates(g, regions, materialised, cuts);
      for (const auto& r : regions) {
        if (auto m = narrowing_split(g, r)) costly.push_back(*m);
        if (auto d = dot_off_its_output(g, r)) costly.push_back(*d);
        if (auto c = cost_cut(g, r, cuts)) costly.push_back(*c);
        if (auto h = costly_epilogue(g, r, cuts)) costly.push_back(*h);
      }
      if (costly.empty()) break;
      forced.insert(costly.begin(), costly.end());
    }
    // A row kernel may now read a sibling's result inside its row-level values (softmax's
    // gradient reads the probabilities in a row sum): merged, the probabilities become one more
    // result of it, and the row statistics both read become row-level values of the one kernel.
    while (fuse_rows(g, regions, outputs, users) && merge_siblings(g, regions)) {
    }
    // Reasons first: emitting rewrites the nodes they describe.
    std::map<NodeId, std::string> reasons;
    for (const auto& r : regions)
      for (NodeId in : r.inputs)
        reasons.emplace(in, cuts.count(in) ? cuts[in] : boundary_reason(g, g.node(in), outputs, forced, users));
    for (const auto& r : regions) emit(g, r, reasons);
    sort_topologically(g);  // kernels were appended at the end
    remove_dead(g);  // inlined producers no longer have users at the top level
  }

 private:
  struct Region {
    std::vector<NodeId> roots;      // become the kernel's results, in order
    std::set<NodeId> members;       // roots and inlined producers
    std::set<NodeId> inputs;        // values read from outside
    int64_t row_split = -1;         // >= 0: a row kernel (see fuse_rows)
  };

  // A dot's epilogue: its one user, elementwise over the dot's shape, may compute it in
  // registers (codegen/matmul.h tiles the product and applies the user to each tile).
  // The user's own users must be elementwise of the same shape too (or none), or the user
  // gets a buffer anyway (read by another dot): inlined into a reduction, the user would
  // take the dot along. Moves of the product's elements come first where each is the one
  // user of the one before and keeps the innermost axis innermost (a convolution's output
  // put back to channels first): the tiles store each element where the moves put it, along
  // the rows as before, where a transpose kernel of its own would copy the whole product.
  bool epilogue_fits(const Graph& g, const Node& dot, std::map<NodeId, std::vector<NodeId>>& users) const {
    NodeId last = dot.id;
    while (users[last].size() == 1 && keeps_rows(g.node(users[last][0]))) last = users[last][0];
    const ir::Shape& shape = g.node(last).type().shape;
    auto keeps_element = [&](NodeId id) {
      const Node& u = g.node(id);
      return ir::is_elementwise(ir::op_family(u.op)) && u.type().shape == shape;
    };
    const auto& us = users[last];
    if (last != dot.id && us.empty()) return true;
    if (us.size() != 1 || !keeps_element(us[0])) return false;
    const auto& next = users[us[0]];
    return std::all_of(next.begin(), next.end(), keeps_element) || tiled_reader(g, us[0], users);
  }

  // A move whose result's rows are runs of its operand's: a reshape, or a transpose that
  // keeps the last axis last.
  static bool keeps_rows(const Node& n) {
    if (!ir::moves_elements(n)) return false;
    if (n.op != "transpose") return true;
    const auto axes = n.attrs.value("axes", std::vector<int64_t>{});
    return axes.empty() || axes.back() == int64_t(axes.size()) - 1;
  }

  // The dots and attentions that read `id`'s elements, directly or through a cheap prologue
  // (not through a pad that gets a buffer before its product: its kernel computes what it
  // reads), each once, in the order the walk meets them (so that explore's reasons are stable).
  std::vector<const Node*> tiled_readers(const Graph& g, NodeId id, std::map<NodeId, std::vector<NodeId>>& users) const {
    std::vector<const Node*> readers;
    std::set<NodeId> seen;
    std::vector<NodeId> todo{id};
    while (!todo.empty()) {
      const NodeId at = todo.back();
      todo.pop_back();
      for (NodeId u : users[at]) {
        const Node& un = g.node(u);
        if (!seen.insert(u).second) continue;
        if (is_tiled(un)) readers.push_back(&un);
        else if (cheap_prologue(un) && !pad_before_product(g, un, users)) todo.push_back(u);
      }
    }
    return readers;
  }
  const Node* tiled_reader(const Graph& g, NodeId id, std::map<NodeId, std::vector<NodeId>>& users) const {
    const auto readers = tiled_readers(g, id, users);
    return readers.empty() ? nullptr : readers.front();
  }

  // A pad of edges alone (a convolution's) that one product reads through index maps, where
  // the target keeps such padding in memory (KernelBounds::pad_product_types, _work).
  bool pad_before_product(const Graph& g, const Node& n, std::map<NodeId, std::vector<NodeId>>& users) const {
    if (n.op != "pad" || !bounds_.pad_product_types.count(n.type().dtype)) return false;
    for (const auto& c : n.attrs.at("config"))
      if (c[0].get<int64_t>() < 0 || c[1].get<int64_t>() < 0 || c[2].get<int64_t>() != 0) return false;
    const auto readers = tiled_readers(g, n.id, users);
    if (readers.size() != 1 || readers[0]->op != "dot") return false;
    const Node& dot = *readers[0];
    const ContractionAxes ax = ContractionAxes::of(dot);
    // The parts of a split product (split-dot's batch axis after the dot's own, summed).
    for (NodeId u : users[dot.id]) {
      const auto axes = g.node(u).attrs.value("axes", std::vector<int64_t>{});
      if (g.node(u).op == "sum" && !ax.b1.empty() && std::count(axes.begin(), axes.end(), int64_t(ax.b1.size()) - 1))
        return false;
    }
    double work = double(dot.type().num_elements());
    for (int64_t a : ax.c1) work *= double(g.node(dot.args.at(0)).type().shape.at(a));
    return work >= double(bounds_.pad_product_work);
  }

  // A dot inlined where it is not computed at the region's one output position (the region
  // ended as a reduction, a row kernel or one of several results), or beside another dot:
  // materialise it, so that it keeps its tiles rather than a loop per element read.
  static std::optional<NodeId> dot_off_its_output(const Graph& g, const Region& r) {
    // One dot per kernel: of several (one read in another's epilogue, a conv's output
    // beside the gradient that masks by it), the first gets a buffer, tiled on its own.
    std::vector<NodeId> dots;
    for (const auto& n : g.nodes)
      if (n.op == "dot" && r.members.count(n.id)) dots.push_back(n.id);
    if (dots.size() > 1) return dots.front();
    for (NodeId m : r.members) {
      const Node& dot = g.node(m);
      if (dot.op != "dot" || std::find(r.roots.begin(), r.roots.end(), m) != r.roots.end()) continue;
      // Every member downstream of the dot keeps its element or moves it (ir/dot_epilogue.h).
      if (r.roots.size() != 1 || !ir::dot_epilogue(g, m, r.roots[0], [&](NodeId id) { return r.members.count(id) > 0; }))
        return m;
    }
    return std::nullopt;
  }

  template <class Pred>
  void collect(const Graph& g, NodeId id, const Pred& materialised, Region& r) {
    if (!r.members.insert(id).second) return;
    for (NodeId a : g.node(id).args) {
      const Node& p = g.node(a);
      if (p.op == "constant" || ((inlinable(p) || p.op == "dot") && !materialised(p))) collect(g, a, materialised, r);
      else r.inputs.insert(a);
    }
  }

  // Reduction fusion. A region whose results are "row-shaped" relative to a consumer's
  // shape S — S with trailing axes [p, rank) reduced away or kept as 1s, like the row max
  // and row sum of a softmax — is computed inside the consumer, once per row: the consumer
  // becomes a row kernel (row_split = p) whose row-level values the code generator hoists
  // out of the loop over the row's elements. A consumer that is itself a reduction over
  // exactly those axes already runs once per row and needs no split. Only when every
  // reader of the producer is the consumer, reading at the row's elements.
  // Returns whether it fused any.
  bool fuse_rows(const Graph& g, std::vector<Region>& regions, const std::set<NodeId>& outputs,
                 std::map<NodeId, std::vector<NodeId>>& users) {
    bool any = false;
    for (bool changed = true; changed; any |= changed) {
      changed = false;
      for (size_t c = 0; c < regions.size() && !changed; ++c) {
        // A row kernel would lose the tiles of a dot or attention, the scan's lines.
        if (holds_tiled(g, regions[c]) || is_scan(g.node(regions[c].roots[0]))) continue;
        auto frame = row_frame(g, regions[c]);
        if (!frame) continue;
        for (size_t a = 0; a < regions.size() && !changed; ++a) {
          std::optional<int64_t> p;
          if (a == c || holds_tiled(g, regions[a]) || is_scan(g.node(regions[a].roots[0])) ||
              !(p = row_producer(g, regions[a], regions[c], *frame, regions, outputs, users)))
            continue;
          Region& rc = regions[c];
          const Region& ra = regions[a];
          std::set<NodeId> inputs = joined_inputs(rc, ra);
          if (inputs.size() + rc.roots.size() > bounds_.max_bindings) continue;
          rc.members.insert(ra.members.begin(), ra.members.end());
          rc.inputs = std::move(inputs);
          if (!frame->reduction) rc.row_split = *p;
          regions.erase(regions.begin() + a);
          changed = true;
        }
      }
    }
    return any;
  }

  struct RowFrame {
    ir::Shape shape;         // S: the elements a row-level value is broadcast over
    int64_t p = -1;          // fixed split, or -1 while any p >= 1 may be chosen
    bool reduction = false;  // the consumer reduces [p, rank) itself
  };

  static std::vector<int64_t> axes_of(const Node& n, size_t rank) {
    const auto& a = n.attrs.contains("axes") ? n.attrs["axes"] : n.attrs.value("axis", nlohmann::json());
    std::vector<int64_t> axes;
    if (a.is_null())
      for (size_t i = 0; i < rank; ++i) axes.push_back(int64_t(i));
    else if (a.is_number_integer())
      axes.push_back(a.get<int64_t>());
    else
      axes = a.get<std::vector<int64_t>>();
    std::sort(axes.begin(), axes.end());
    return axes;
  }

  // The consumer's frame. Reductions over trailing axes [p, rank) of inputs of shape S run
  // once per row, and so does anything of their result shape beside them; without such a
  // reduction, elementwise roots of one shape S may become a row kernel with any split.
  static std::optional<RowFrame> row_frame(const Graph& g, const Region& r) {
    std::optional<RowFrame> f;
    for (NodeId id : r.roots) {
      const Node& root = g.node(id);
      if (!is_reduction(root)) continue;
      if (root.op == "argmax" || root.op == "argmin") return std::nullopt;
      RowFrame mine{g.node(root.args[0]).type().shape, -1, true};
      auto axes = axes_of(root, mine.shape.size());
      if (axes.empty() || axes.back() + 1 != int64_t(mine.shape.size())) return std::nullopt;
      for (size_t k = 0; k < axes.size(); ++k)
        if (axes[k] != axes.front() + int64_t(k)) return std::nullopt;
      mine.p = axes.front();
      if (mine.p < 1 || (f && (f->shape != mine.shape || f->p != mine.p))) return std::nullopt;
      f = mine;
    }
    const ir::Shape& first = g.node(r.roots[0]).type().shape;
    for (NodeId id : r.roots)
      if (g.node(id).type().shape != first) return std::nullopt;
    if (!f) f = RowFrame{first, r.row_split, false};
    if (f->shape.size() < 2) return std::nullopt;
    return f;
  }

  // Can `ra` be computed per row inside `rc`? Returns the row split when it can.
  std::optional<int64_t> row_producer(const Graph& g, const Region& ra, const Region& rc, const RowFrame& frame,
                    const std::vector<Region>& all, const std::set<NodeId>& outputs,
                    std::map<NodeId, std::vector<NodeId>>& users) {
    const ir::Shape& s = frame.shape;
    const int64_t rank = int64_t(s.size());
    int64_t p = frame.p;
    std::set<NodeId> roots(ra.roots.begin(), ra.roots.end());
    for (NodeId root : ra.roots) {
      if (outputs.count(root)) return std::nullopt;
      // Row-shaped: S[:q] or S[:q] followed by ones.
      const ir::Shape& t = g.node(root).type().shape;
      int64_t q = int64_t(t.size());
      if (q == rank)
        while (q > 0 && t[q - 1] == 1 && s[q - 1] != 1) --q;
      if (q < 1 || q >= rank || !std::equal(t.begin(), t.begin() + q, s.begin())) return std::nullopt;
      if (p >= 0 && q != p) return std::nullopt;
      p = q;
      // Every reader is in the consumer and reads at the row's elements, directly or through
      // other row-level values.
      std::vector<NodeId> work{root};
      std::set<NodeId> row_level;
      while (!work.empty()) {
        NodeId v = work.back();
        work.pop_back();
        if (!row_level.insert(v).second) continue;
        for (NodeId u : users[v]) {
          const Node& un = g.node(u);
          if (!rc.members.count(u) || roots.count(u)) return std::nullopt;
          const bool elementwise = ir::is_elementwise(ir::op_family(un.op));
          if (elementwise && un.type().shape == t) {
            work.push_back(u);
            continue;
          }
          bool broadcast = un.op == "broadcast" && un.type().shape == s && int64_t(t.size()) == q;
          if (broadcast)
            for (int64_t k = 0; k < q; ++k) broadcast &= un.attrs["axes"][k].get<int64_t>() == k;
          // An elementwise op broadcasts implicitly from the right: only the form with the
          // reduced axes kept as 1s lines up with the row's axes. A rank-q value there is
          // read along the trailing axes (a column sum subtracted from every row), per element.
          const bool aligned = elementwise && un.type().shape == s && int64_t(t.size()) == rank;
          if (!aligned && !broadcast) return std::nullopt;
        }
      }
      for (const auto& other : all)
        if (&other != &ra && &other != &rc && other.inputs.count(root)) return std::nullopt;
    }
    if (depends(g, ra, rc, all) || reads_at_same_index(g, ra, rc)) return std::nullopt;
    return p;
  }

  // Producers inlined into more than one region whose cone is too costly to recompute in
  // each (KernelBounds::max_recompute_work): the latest of each shared chain (materialising
  // it makes the rest of its cone single-use).
  template <class Pred>
  std::vector<NodeId> costly_duplicates(const Graph& g, const std::vector<Region>& regions, const Pred& materialised,
                                        std::map<NodeId, std::string>& cuts) {
    std::map<NodeId, int> copies;
    for (const auto& r : regions)
      for (NodeId m : r.members)
        if (g.node(m).op != "constant" && std::find(r.roots.begin(), r.roots.end(), m) == r.roots.end()) ++copies[m];
    std::vector<NodeId> picked;
    std::set<NodeId> covered;
    for (auto it = g.nodes.rbegin(); it != g.nodes.rend(); ++it) {
      if (copies[it->id] < 2 || covered.count(it->id)) continue;
      Region cone;
      collect(g, it->id, materialised, cone);
      // A dot inlined elsewhere is dot_off_its_output's to cut (its loop is no recomputation
      // of elementwise work): counted as a buffer.
      std::erase_if(cone.members, [&](NodeId m) { return g.node(m).op == "dot"; });
      if (it->op == "dot") continue;
      const double work = estimate(g, cone.members, {it->id}).work;
      if (work <= bounds_.max_recompute_work) continue;
      cuts[it->id] = "cost model: shared by kernels of different shapes, each of which would recompute its " +
                     number(work) + " instructions of work per element (bound " + number(bounds_.max_recompute_work) + ")";
      picked.push_back(it->id);
      covered.insert(cone.members.begin(), cone.members.end());
    }
    return picked;
  }

  // The members of `r` that its roots still reach when `cut` is read from a buffer (all of
  // them for cut -1), or those that `cut` reaches.
  static std::set<NodeId> reached(const Graph& g, const Region& r, const std::vector<NodeId>& from, NodeId cut) {
    std::set<NodeId> seen;
    std::vector<NodeId> work(from.begin(), from.end());
    while (!work.empty()) {
      NodeId v = work.back();
      work.pop_back();
      if (!r.members.count(v) || !seen.insert(v).second) continue;
      for (NodeId a : g.node(v).args)
        if (a != cut) work.push_back(a);
    }
    return seen;
  }

  // A region past the target's bounds (KernelBounds): the member that, read from a buffer,
  // brings the region and its own kernel furthest back within them (the most a region may
  // still pass them by after the cut decides). Nothing when the region fits, or no cut
  // improves it by a tenth. Regions with a dot or attention keep their tiles' rules.
  std::optional<NodeId> cost_cut(const Graph& g, const Region& r, std::map<NodeId, std::string>& cuts) {
    if (holds_tiled(g, r)) return std::nullopt;
    const Estimate e = estimate(g, r.members, r.roots);
    const double over = excess(e, bounds_);
    if (over <= 1) return std::nullopt;
    std::vector<NodeId> candidates;
    for (const auto& n : g.nodes)
      if (r.members.count(n.id) && n.op != "constant" && inlinable(n) &&
          std::find(r.roots.begin(), r.roots.end(), n.id) == r.roots.end())
        candidates.push_back(n.id);
    // Spread over the region in topological order where there are many: each trial costs
    // two estimates of the region.
    constexpr size_t kMaxTrials = 64;
    const size_t step = std::max<size_t>(1, (candidates.size() + kMaxTrials - 1) / kMaxTrials);
    std::optional<NodeId> best;
    double best_over = over * 0.9;
    for (size_t i = 0; i < candidates.size(); i += step) {
      const NodeId c = candidates[i];
      const double rest = excess(estimate(g, reached(g, r, r.roots, c), r.roots), bounds_);
      const double own = excess(estimate(g, reached(g, r, {c}, -1), {c}), bounds_);
      if (std::max(rest, own) < best_over) best_over = std::max(rest, own), best = c;
    }
    if (best) cuts[*best] = cut_reason(e);
    return best;
  }

  // A product on the target's cooperative matrices whose region also computes an epilogue
  // of more work per element than KernelBounds::max_cooperative_epilogue_work: the product,
  // to be materialised.
  std::optional<NodeId> costly_epilogue(const Graph& g, const Region& r, std::map<NodeId, std::string>& cuts) const {
    if (bounds_.max_cooperative_epilogue_work <= 0) return std::nullopt;
    for (NodeId id : r.members) {
      const Node& dot = g.node(id);
      if (dot.op != "dot" || !bounds_.cooperative_epilogue_types.count(dot.type().dtype) ||
          std::find(r.roots.begin(), r.roots.end(), id) != r.roots.end())
        continue;
      // The epilogue: what the roots reach with the product read from a buffer.
      const double work = estimate(g, reached(g, r, r.roots, id), r.roots).work;
      if (work <= bounds_.max_cooperative_epilogue_work) continue;
      cuts[id] = "cost model: its epilogue would do " + number(work) + " instructions of work per element in the " +
                 "product's cooperative-matrix kernel (bound " + number(bounds_.max_cooperative_epilogue_work) + ")";
      return id;
    }
    return std::nullopt;
  }

  // Why the cost model cut a region: the bound it passed, with the estimate (`nxv explore`).
  static std::string number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, v < 100 ? "%.3g" : "%.0f", v);
    return buf;
  }

  std::string cut_reason(const Estimate& e) const {
    const auto num = number;
    std::string why = "cost model: the kernel reading it would ";
    if (const double steps = invocation_loop_steps(e, bounds_); bounds_.max_loop_steps > 0 && steps > bounds_.max_loop_steps)
      return why + "take " + num(steps) + " loop steps per " + (e.walk > 1 ? "invocation walking its scan's line" : "element") +
             " (bound " + num(bounds_.max_loop_steps) + ")";
    if (bounds_.max_code > 0 && e.code > bounds_.max_code)
      return why + "be " + num(e.code) + " instructions long (bound " + num(bounds_.max_code) + ")";
    return why + "do " + num(e.work) + " instructions of work per element, " + num(e.duplication()) +
           "x what it needs (bound " + num(bounds_.max_duplication) + "x)";
  }

  static size_t bindings(const Region& r) { return r.inputs.size() + r.roots.size(); }

  static bool holds_tiled(const Graph& g, const Region& r) {
    return std::any_of(r.members.begin(), r.members.end(), [&](NodeId m) { return is_tiled(g.node(m)); });
  }

  // What one kernel made of a and b reads from outside: neither's roots.
  static std::set<NodeId> joined_inputs(const Region& a, const Region& b) {
    std::set<NodeId> inputs = a.inputs;
    inputs.insert(b.inputs.begin(), b.inputs.end());
    for (const Region* r : {&a, &b})
      for (NodeId root : r->roots) inputs.erase(root);
    return inputs;
  }

  // A region that reads more buffers than a kernel can bind: the member whose inlined cone
  // reads the most of its inputs while still fitting a kernel of its own. Materialising it
  // replaces those inputs by one. Nothing when the region fits (or no member helps).
  std::optional<NodeId> narrowing_split(const Graph& g, const Region& r) {
    if (bindings(r) <= bounds_.max_bindings) return std::nullopt;
    std::map<NodeId, std::set<NodeId>> reads;
    std::function<const std::set<NodeId>&(NodeId)> cone = [&](NodeId m) -> const std::set<NodeId>& {
      if (auto it = reads.find(m); it != reads.end()) return it->second;
      std::set<NodeId> s;
      for (NodeId a : g.node(m).args) {
        if (!r.members.count(a)) s.insert(a);
        else if (g.node(a).op != "constant") s.merge(std::set<NodeId>(cone(a)));
      }
      return reads[m] = std::move(s);
    };
    std::optional<NodeId> best;
    size_t most = 1;
    for (NodeId m : r.members) {
      if (g.node(m).op == "constant" || std::find(r.roots.begin(), r.roots.end(), m) != r.roots.end()) continue;
      const size_t n = cone(m).size();
      if (n > most && n < bounds_.max_bindings) most = n, best = m;
    }
    return best;
  }

  // Elementwise regions of one output shape that share inlined work, or where one reads the
  // other's result at the same element (the next leapfrog half-step reads the position just
  // updated), become one kernel with several results: the value read is then a register.
  // Returns whether it merged any.
  bool merge_siblings(const Graph& g, std::vector<Region>& regions) {
    bool any = false;
    for (size_t i = 0; i < regions.size(); ++i) {
      for (size_t j = i + 1; j < regions.size();) {
        Region &a = regions[i], &b = regions[j];
        if (mergeable(g, a, b, regions)) {
          a.roots.insert(a.roots.end(), b.roots.begin(), b.roots.end());
          a.members.insert(b.members.begin(), b.members.end());
          a.inputs = joined_inputs(a, b);
          a.row_split = std::max(a.row_split, b.row_split);
          regions.erase(regions.begin() + j);
          j = i + 1;  // the grown region may now absorb one it could not before
          any = true;
        } else {
          ++j;
        }
      }
    }
    return any;
  }

  bool mergeable(const Graph& g, const Region& a, const Region& b, const std::vector<Region>& all) {
    const Node &ra = g.node(a.roots[0]), &rb = g.node(b.roots[0]);
    if (ra.type().shape != rb.type().shape) return false;
    if (holds_tiled(g, a) || holds_tiled(g, b)) return false;  // a dot's or attention's kernel has one result
    if (is_scan(ra) || is_scan(rb)) return false;              // so has a scan's (codegen/scan.h)
    // A row kernel's split is fixed by its row-level values; a reduction's region runs per row
    // of its own result, not per element of the row kernel's.
    if (a.row_split >= 0 && b.row_split >= 0 && a.row_split != b.row_split) return false;
    if ((a.row_split >= 0 && is_reduction(rb)) || (b.row_split >= 0 && is_reduction(ra))) return false;
    if (joined_inputs(a, b).size() + a.roots.size() + b.roots.size() > bounds_.max_bindings) return false;
    const bool a_reads_b = reads_at_same_index(g, a, b), b_reads_a = reads_at_same_index(g, b, a);
    if (a_reads_b && b_reads_a) return false;
    if (depends(g, a, b, all) || depends(g, b, a, all)) return false;  // through a third region
    // A reduction read at the same element is computed where it is read (log of a row sum).
    if (!(a_reads_b || b_reads_a)) {
      if (is_reduction(ra) || is_reduction(rb)) return false;
      if (std::none_of(b.members.begin(), b.members.end(),
                       [&](NodeId m) { return a.members.count(m) && g.node(m).op != "constant"; }))
        return false;
    }
    return within_bounds_merged(g, a, b);
  }

  // Whether one kernel of a and b stays within the bounds (or no further past them than
  // either is): the cost model may have cut them apart.
  bool within_bounds_merged(const Graph& g, const Region& a, const Region& b) const {
    std::set<NodeId> members = a.members;
    members.insert(b.members.begin(), b.members.end());
    std::vector<NodeId> roots = a.roots;
    roots.insert(roots.end(), b.roots.begin(), b.roots.end());
    const double merged = excess(estimate(g, members, roots), bounds_);
    return merged <= 1 || merged <= std::max(excess(estimate(g, a.members, a.roots), bounds_),
                                             excess(estimate(g, b.members, b.roots), bounds_));
  }

  // Does `r` read a root of `from` directly, and only through elementwise ops of the
  // output's shape (so each element reads the same element of that root)? Throws no
  // verdict on indirect reads; `depends` covers those.
  bool reads_at_same_index(const Graph& g, const Region& r, const Region& from) {
    std::set<NodeId> roots(from.roots.begin(), from.roots.end());
    bool reads = false;
    for (NodeId m : r.members)
      for (NodeId a : g.node(m).args)
        if (roots.count(a)) reads = true;
    if (!reads) return false;
    // Every member on a path to such a root must preserve the index.
    const ir::Shape& shape = g.node(r.roots[0]).type().shape;
    std::map<NodeId, bool> reaches;
    for (const auto& n : g.nodes) {
      if (!r.members.count(n.id)) continue;
      bool hit = false;
      for (NodeId a : n.args) hit |= roots.count(a) > 0 || reaches[a];
      reaches[n.id] = hit;
      if (hit && (!ir::is_elementwise(ir::op_family(n.op)) || n.type().shape != shape)) return false;
    }
    return true;
  }

  // Does region `a` read (transitively, through other regions) a result of region `b`?
  // Direct reads of `b` are left to reads_at_same_index.
  bool depends(const Graph& g, const Region& a, const Region& b, const std::vector<Region>& all) {
    std::set<NodeId> b_roots(b.roots.begin(), b.roots.end());
    std::set<NodeId> seen;
    std::vector<NodeId> work;
    for (NodeId in : a.inputs)
      if (!b_roots.count(in)) work.push_back(in);
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

  // Why the region reads `n` from a buffer instead of computing it in registers; `nxv explore`
  // shows it so that a missed fusion can be traced to its cause.
  std::string boundary_reason(const Graph& g, const Node& n, const std::set<NodeId>& outputs,
                                     const std::set<NodeId>& forced, std::map<NodeId, std::vector<NodeId>>& users) {
    if (n.op == "parameter") return "graph input";
    if (n.op == "tensor") return "literal tensor";
    if (is_reduction(n)) return "reduction result";
    if (is_indexed_update(n)) return n.op + " result";
    if (!inlinable(n)) return n.op + " is computed by a kernel of its own";
    if (outputs.count(n.id)) return "graph output";
    // Forced but not cut by the cost model: for the binding limit (narrowing_split).
    if (forced.count(n.id))
      return "its inputs, read directly, would make the kernel reading it bind more than " +
             std::to_string(bounds_.max_bindings) + " buffers";
    for (NodeId u : users[n.id])
      if (!can_root(g.node(u))) return "read by " + g.node(u).op + " %" + std::to_string(u) + ", which cannot inline it";
    if (pad_before_product(g, n, users)) return "padding kept in memory for the product that reads it";
    if (const Node* reader = cheap_prologue(n) ? nullptr : tiled_reader(g, n.id, users))
      return "arithmetic read by " + std::string(reader->op == "dot" ? "a dot" : "an attention") +
             ", which inlines only index maps and casts";
    return "materialised";
  }

  // Replaces the first root by a kernel node computing the whole region; other roots become
  // `elem`s of it.
  void emit(Graph& g, const Region& r, const std::map<NodeId, std::string>& reasons) {
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
                        : is_indexed_update(first)                  ? "indexed"
                        : is_scan(first)                            ? "scan"
                        : first.op == "attention"                   ? "attention"
                        : holds_tiled(g, r)                         ? "dot"
                                                                    : "elementwise"},
               {"fused_nodes", fused}};
    if (r.row_split >= 0) k.attrs["row_split"] = r.row_split;
    for (NodeId a : args) k.attrs["reads"][std::to_string(a)] = reasons.at(a);
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

};

NXV_REGISTER_PASS(Fuse, "fuse");

}  // namespace
}  // namespace nxv::passes
