// propagate-invariants: a `while` state entry that the body passes on unchanged and that
// starts as a literal is that literal in every iteration; its reads in the condition and
// the body become the literal. Nx code threads options through loop state (Scholar's MDS
// carries `metric` and `normalized_stress` flags into its SMACOF loop, and `n_init` into
// the loop around it): as parameters they are data, so a cond on them is driven from the
// host with its loops, and a trip count compared with them is unknown. As literals the
// conds fold (fold-conds) and the trip counts are constant (unroll).
#include <map>
#include <memory>

#include "ir/literal.h"
#include "passes/pass.h"
#include "passes/rewrite.h"

namespace nxv::passes {
namespace {

using ir::Graph;
using ir::Node;
using ir::NodeId;

// Literals no larger than this are copied into the regions; larger ones would be a second
// copy of the data for little gain (folding needs scalars).
constexpr int64_t kMaxCopiedElements = 1 << 10;

bool copyable_literal(const Node& n) {
  return ir::is_literal(n) && !n.is_tuple() && n.type().num_elements() <= kMaxCopiedElements;
}

// State entries the body returns as it received them: entry i's output is its parameter i.
std::vector<size_t> invariant_entries(const Graph& g, const Node& w) {
  const Graph& body = *w.regions.at("body");
  std::vector<size_t> entries;
  for (size_t i = 0; i < body.outputs.size() && i < w.args.size(); ++i) {
    const Node& out = body.node(body.outputs[i]);
    if (out.op == "parameter" && out.attrs.value("index", size_t(0)) == i && copyable_literal(g.node(w.args[i])))
      entries.push_back(i);
  }
  return entries;
}

// A copy of `region` in which parameter i reads `literals[i]` instead.
std::shared_ptr<Graph> with_literals(const Graph& region, const std::map<size_t, const Node*>& literals) {
  auto copy = std::make_shared<Graph>(region);
  NodeId next = copy->next_id();
  std::map<NodeId, NodeId> replaced;
  std::vector<Node> added;
  for (const auto& n : copy->nodes) {
    if (n.op != "parameter") continue;
    auto it = literals.find(n.attrs.value("index", size_t(0)));
    if (it == literals.end()) continue;
    Node lit = *it->second;
    lit.id = next++;
    replaced[n.id] = lit.id;
    added.push_back(std::move(lit));
  }
  if (added.empty()) return copy;
  copy->nodes.insert(copy->nodes.begin(), added.begin(), added.end());
  copy->reindex();
  apply_replacements(*copy, replaced);
  return copy;
}

class PropagateInvariants : public Pass {
 public:
  std::string name() const override { return "propagate-invariants"; }

  void run(Graph& g) override {
    for (auto& n : g.nodes) {
      if (n.op != "while") continue;
      std::map<size_t, const Node*> literals;
      for (size_t i : invariant_entries(g, n)) literals[i] = &g.node(n.args[i]);
      if (literals.empty()) continue;
      // The regions may be shared with the graph's other copies: replaced, not edited.
      for (auto& [name, region] : n.regions) region = with_literals(*region, literals);
    }
  }
};

NXV_REGISTER_PASS(PropagateInvariants, "propagate-invariants");

}  // namespace
}  // namespace nxv::passes
