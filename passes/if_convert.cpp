// if-convert: a `cond` whose branches are small and loop-free becomes all of its branches,
// inlined, and a `select` per result. The runtime drives a cond from the host: it reads the
// predicate, then submits the branch it names, so a cond inside a while costs every
// iteration a round trip and extra submits (Scholar's DBSCAN and NNDescent loops, with
// conds in their bodies, made ~100k submits). Computing every branch is cheaper than that
// while the branches are small, and it is safe: kernels are total (indices clamp, integer
// division by zero has a defined result), so the branches not taken have no effect but
// their cost. A branch holding a `while` stays host-driven: the loop the predicate would
// have skipped might never end.
#include <map>
#include <memory>
#include <string>

#include "ir/ops.h"
#include "passes/pass.h"
#include "passes/rewrite.h"

namespace nxv::passes {
namespace {

using ir::Graph;
using ir::Node;
using ir::NodeId;

// Elements all branches of one cond may read and write together and still be computed
// speculatively: on lavapipe about what one submit costs, on a GPU far less.
constexpr int64_t kMaxSpeculatedElements = int64_t(1) << 16;

int64_t elements(const Node& n) {
  int64_t total = 0;
  for (const auto& r : n.results) total += r.num_elements();
  return total;
}

// Elements the branch's nodes read and write: a rough measure of its cost.
int64_t work(const Graph& branch) {
  int64_t total = 0;
  for (const auto& n : branch.nodes) {
    if (n.op == "parameter" || n.op == "constant") continue;
    total += elements(n);
    for (NodeId a : n.args) total += elements(branch.node(a));
  }
  return total;
}

std::string branch_name(size_t k) { return "branch" + std::to_string(k); }

bool convertible(const Node& cond) {
  int64_t total = 0;
  for (const auto& [name, branch] : cond.regions) {
    for (const auto& n : branch->nodes)
      if (ir::op_family(n.op) == ir::OpFamily::Control) return false;
    total += work(*branch);
  }
  return total <= kMaxSpeculatedElements;
}

class IfConvert : public Pass {
 public:
  std::string name() const override { return "if-convert"; }

  void run(Graph& g) override {
    expand_nodes(g, [&](Node& n, NodeId& next, std::vector<Node>& out) -> std::optional<std::vector<NodeId>> {
      if (n.op != "cond") return std::nullopt;
      convert_inner(n);
      if (!convertible(n)) return std::nullopt;
      return inline_branches(n, next, out);
    });
  }

 private:
  // Inner conds first: a branch is loop-free once they are gone. The regions may be shared
  // with the graph's other copies (the source an executable keeps), so they are replaced,
  // not edited.
  void convert_inner(Node& cond) {
    for (auto& [name, branch] : cond.regions) {
      auto copy = std::make_shared<Graph>(*branch);
      run(*copy);
      branch = std::move(copy);
    }
  }

  // Appends every branch's nodes, with fresh ids and parameters read as the captured
  // arguments they stand for, then one select chain per result: the first branch whose
  // predicate holds, as the cond takes.
  static std::vector<NodeId> inline_branches(const Node& cond, NodeId& next, std::vector<Node>& out) {
    const size_t preds = cond.regions.size() - 1;
    std::vector<std::vector<NodeId>> outputs;
    const std::vector<NodeId> captured(cond.args.begin() + preds, cond.args.end());
    for (size_t k = 0; k <= preds; ++k)
      outputs.push_back(inline_region(*cond.regions.at(branch_name(k)), captured, next, out));
    std::vector<NodeId> results;
    for (size_t j = 0; j < cond.results.size(); ++j) {
      NodeId value = outputs[preds][j];
      for (size_t k = preds; k-- > 0;) {
        Node s;
        s.id = next++;
        s.op = "select";
        s.args = {cond.args[k], outputs[k][j], value};
        s.results = {cond.results[j]};
        out.push_back(std::move(s));
        value = out.back().id;
      }
      results.push_back(value);
    }
    return results;
  }
};

NXV_REGISTER_PASS(IfConvert, "if-convert");

}  // namespace
}  // namespace nxv::passes
