// fold-conds: a `cond` whose predicates are literals (after constant-fold) becomes the
// branch they select, inlined. Such conds come from options Nx code tests with `if` on a
// tensor, or that propagate-invariants has made literals: left in place, each would be
// driven from the host (a predicate read and a submit per branch taken), and a branch
// holding loops would keep its whole while body off the device.
#include <map>
#include <optional>

#include "ir/literal.h"
#include "passes/pass.h"
#include "passes/rewrite.h"

namespace nxv::passes {
namespace {

using ir::Graph;
using ir::Node;
using ir::NodeId;

// The branch a cond takes, when its predicates decide it at compile time: the first whose
// predicate is true, the last (else) when all are false. Undecided as soon as a predicate
// before the one that holds is not a literal.
std::optional<size_t> taken_branch(const Graph& g, const Node& cond) {
  const size_t preds = cond.regions.size() - 1;
  for (size_t k = 0; k < preds; ++k) {
    const Node& p = g.node(cond.args[k]);
    if (!ir::is_literal(p)) return std::nullopt;
    if (ir::get_i64(ir::literal_of(p), 0) != 0) return k;
  }
  return preds;
}

class FoldConds : public Pass {
 public:
  std::string name() const override { return "fold-conds"; }

  void run(Graph& g) override {
    std::map<NodeId, size_t> taken;  // (decided before nodes move)
    for (const auto& n : g.nodes)
      if (n.op == "cond")
        if (auto k = taken_branch(g, n)) taken[n.id] = *k;
    if (taken.empty()) return;
    expand_nodes(g, [&](Node& n, NodeId& next, std::vector<Node>& out) -> std::optional<std::vector<NodeId>> {
      auto it = taken.find(n.id);
      if (it == taken.end()) return std::nullopt;
      const size_t preds = n.regions.size() - 1;
      const std::vector<NodeId> captured(n.args.begin() + long(preds), n.args.end());
      return inline_region(*n.regions.at("branch" + std::to_string(it->second)), captured, next, out);
    });
  }
};

NXV_REGISTER_PASS(FoldConds, "fold-conds");

}  // namespace
}  // namespace nxv::passes
