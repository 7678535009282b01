// narrow-operands: a concatenate or stack of more values than a kernel can bind becomes a
// tree of them, each at most half as wide as a kernel may bind buffers. Both are associative
// along their axis: concatenating (or stacking) groups and concatenating the groups' results
// along the same axis gives the same tensor. Every kernel then fits the device's storage-buffer limit
// (KernelBounds::max_bindings), which fuse keeps for the regions it forms.
#include <algorithm>
#include <map>
#include <set>

#include "passes/fusion_cost.h"
#include "passes/pass.h"
#include "passes/rewrite.h"

namespace nxv::passes {
namespace {

using ir::Node;
using ir::NodeId;


class NarrowOperands : public Pass {
 public:
  std::string name() const override { return "narrow-operands"; }

  void run(ir::Graph& g) override {
    // Leaves room in a kernel for the result and for a few more inputs fused in beside.
    const size_t max_operands = std::max<size_t>(2, bounds_.max_bindings / 2);
    std::set<NodeId> all;
    for (const auto& n : g.nodes) all.insert(n.id);
    std::vector<Node> out;
    NodeId next = g.next_id();
    for (Node n : g.nodes) {  // copies: the groups' operand types are looked up in g
      // A value read several times, or a literal, takes no binding of its own; nor do the
      // operands of a stack of slices of one value (a window's elements), which the kernel
      // reads from that value.
      std::set<NodeId> read;
      for (NodeId a : n.args)
        if (g.node(a).op != "constant") read.insert(a);
      if ((n.op != "concatenate" && n.op != "stack") || read.size() <= max_operands || common_source(n, g, all)) {
        out.push_back(std::move(n));
        continue;
      }
      const int64_t axis = n.attrs.value("axis", int64_t(0));
      std::vector<NodeId> level = n.args;
      std::map<NodeId, ir::TensorType> types;
      for (NodeId a : level) types[a] = g.node(a).type();
      bool stacked = n.op == "stack";
      while (level.size() > max_operands) {
        std::vector<NodeId> groups;
        for (size_t i = 0; i < level.size(); i += max_operands) {
          std::vector<NodeId> args(level.begin() + i, level.begin() + std::min(level.size(), i + max_operands));
          if (args.size() == 1 && !stacked) {  // a value left over joins the next level as it is
            groups.push_back(args[0]);
            continue;
          }
          ir::Shape s = types[args[0]].shape;
          // Operands of mixed types are merged as Nx merges them; a group of integers among
          // floats stays integer until the join above it.
          ir::DType t = types[args[0]].dtype;
          for (NodeId a : args) t = ir::merge_types(t, types[a].dtype);
          if (stacked) {
            s.insert(s.begin() + axis, int64_t(args.size()));
          } else {
            s[size_t(axis)] = 0;
            for (NodeId a : args) s[size_t(axis)] += types[a].shape[size_t(axis)];
          }
          Node m;
          m.id = next++;
          m.op = stacked ? "stack" : "concatenate";
          m.args = std::move(args);
          m.results = {{t, s}};
          m.attrs = {{"axis", axis}};
          types[m.id] = {t, s};
          groups.push_back(m.id);
          out.push_back(std::move(m));
        }
        level = std::move(groups);
        stacked = false;  // the groups are joined along the axis they now have
      }
      n.op = stacked ? "stack" : "concatenate";
      n.args = std::move(level);
      out.push_back(std::move(n));
    }
    g.nodes = std::move(out);
    g.reindex();
  }
};

NXV_REGISTER_PASS(NarrowOperands, "narrow-operands");

}  // namespace
}  // namespace nxv::passes
