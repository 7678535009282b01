// cse: a node that computes exactly what an earlier node computes (same op, arguments,
// attributes, result types and regions) is replaced by it. Nx's tracer emits such
// duplicates freely (grad graphs recompute forward values), and every duplicate left in
// would be evaluated again per element inside a fused kernel.
#include <map>
#include <string>

#include "ir/json.h"
#include "passes/pass.h"
#include "passes/rewrite.h"

namespace nxv::passes {
namespace {

std::string key_of(const ir::Node& n) {
  nlohmann::json k = {n.op, n.args, n.attrs};
  for (const auto& r : n.results) k.push_back(ir::to_string(r));
  for (const auto& [name, region] : n.regions) k.push_back({name, ir::graph_to_json(*region)});
  return k.dump();
}

class Cse : public Pass {
 public:
  std::string name() const override { return "cse"; }
  void run(ir::Graph& g) override {
    std::map<std::string, ir::NodeId> seen;
    std::map<ir::NodeId, ir::NodeId> replaced;
    for (auto& n : g.nodes) {
      // Earlier replacements first, so that chains of duplicates collapse in one sweep.
      for (auto& a : n.args)
        if (auto it = replaced.find(a); it != replaced.end()) a = it->second;
      if (n.op == "parameter") continue;
      auto [it, fresh] = seen.emplace(key_of(n), n.id);
      if (!fresh) replaced[n.id] = it->second;
    }
    apply_replacements(g, replaced);
  }
};

NXV_REGISTER_PASS(Cse, "cse");

}  // namespace
}  // namespace nxv::passes
