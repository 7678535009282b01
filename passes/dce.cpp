// dce: removes nodes no output depends on. Parameters stay: they define the graph's inputs.
#include <set>

#include "passes/pass.h"

namespace nxv::passes {
namespace {

class Dce : public Pass {
 public:
  std::string name() const override { return "dce"; }
  void run(ir::Graph& g) override {
    std::set<ir::NodeId> live(g.outputs.begin(), g.outputs.end());
    for (auto it = g.nodes.rbegin(); it != g.nodes.rend(); ++it)
      if (live.count(it->id))
        for (ir::NodeId a : it->args) live.insert(a);
    std::erase_if(g.nodes, [&](const ir::Node& n) { return !live.count(n.id) && n.op != "parameter"; });
    g.reindex();
  }
};

NXV_REGISTER_PASS(Dce, "dce");

}  // namespace
}  // namespace nxv::passes
