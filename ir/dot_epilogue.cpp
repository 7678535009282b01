// dot_epilogue.h's analysis: which layout each node after a dot computes its elements in.
#include "ir/dot_epilogue.h"

#include <map>

#include "ir/ops.h"

namespace nxv::ir {

bool moves_elements(const Node& n) {
  return n.args.size() == 1 && !n.is_tuple() && (n.op == "transpose" || n.op == "reshape" || n.op == "squeeze");
}

std::optional<DotEpilogue> dot_epilogue(const Graph& g, NodeId dot, NodeId result,
                                        const std::function<bool(NodeId)>& member) {
  DotEpilogue ep;
  std::map<NodeId, size_t> layout{{dot, 0}};
  std::vector<const Shape*> shapes{&g.node(dot).type().shape};
  for (const Node& n : g.nodes) {
    if (n.id == dot || !member(n.id)) continue;
    std::optional<size_t> l;
    for (NodeId a : n.args) {
      auto it = layout.find(a);
      if (it == layout.end()) continue;
      if (l && *l != it->second) return std::nullopt;  // two layouts of the product meet
      l = it->second;
    }
    if (!l) continue;
    if (moves_elements(n)) {
      ep.from.push_back(*l);
      shapes.push_back(&n.type().shape);
      l = ep.from.size() - 1;
    } else if (n.op != "metadata" && !(is_elementwise(op_family(n.op)) && !n.is_tuple() && n.type().shape == *shapes[*l])) {
      return std::nullopt;
    }
    layout[n.id] = *l;
    ep.steps.push_back({n.id, *l});
  }
  auto it = layout.find(result);
  if (it == layout.end()) return std::nullopt;
  ep.layout_of_result = it->second;
  return ep;
}

}  // namespace nxv::ir
