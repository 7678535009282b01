#include "passes/rewrite.h"

#include <set>

namespace nxv::passes {

void apply_replacements(ir::Graph& g, const std::map<ir::NodeId, ir::NodeId>& replaced) {
  if (replaced.empty()) return;
  auto resolve = [&](ir::NodeId id) {
    for (auto it = replaced.find(id); it != replaced.end(); it = replaced.find(id)) id = it->second;
    return id;
  };
  for (auto& n : g.nodes)
    for (auto& a : n.args) a = resolve(a);
  for (auto& o : g.outputs) o = resolve(o);
  remove_dead(g);
}

void remove_dead(ir::Graph& g) {
  std::set<ir::NodeId> live(g.outputs.begin(), g.outputs.end());
  for (auto it = g.nodes.rbegin(); it != g.nodes.rend(); ++it)
    if (live.count(it->id))
      for (ir::NodeId a : it->args) live.insert(a);
  std::erase_if(g.nodes, [&](const ir::Node& n) { return !live.count(n.id) && n.op != "parameter"; });
  g.reindex();
}

}  // namespace nxv::passes
