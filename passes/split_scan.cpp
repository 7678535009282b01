// split-scan: a scan along an axis longer than the target's block (KernelBounds::scan_block)
// becomes reduce, then scan, then rescan: each block's total by a reduction along the
// axis reshaped to [blocks, block] (padded with the fold's identity to whole blocks); the
// totals shifted by one block (the identity first) and scanned (split again while longer
// than a block): each block's carry; and the scan again, each block of the axis a segment
// folded from its carry (the scan's second operand). Where a workgroup scans each block and
// the blocks are few (KernelBounds::scan_fold_totals), the rescan takes the totals instead
// (attrs.carry_totals), each block folding the totals before it: one dispatch fewer. The
// input is read twice and the output written once, against four passes over it for a scan
// within blocks whose totals are added back afterwards; the reduction reads at the
// reduction kernels' bandwidth. No dispatch waits on another workgroup of its own (Vulkan
// promises no forward progress between workgroups). O(n) work.
#include <algorithm>

#include "ir/ops.h"
#include "passes/pass.h"
#include "passes/rewrite.h"

namespace nxv::passes {
namespace {

using ir::DType;
using ir::Node;
using ir::NodeId;
using ir::Shape;

const char* fold_of(const std::string& scan) {
  if (scan == "cumulative_sum") return "sum";
  if (scan == "cumulative_product") return "product";
  return scan == "cumulative_max" ? "reduce_max" : "reduce_min";
}

// Pads axis `axis` of v (shape s) with `low` and `high` identities.
NodeId pad(NodeAppender& b, NodeId v, Shape& s, int64_t axis, int64_t low, int64_t high, DType t, NodeId identity) {
  nlohmann::json config = nlohmann::json::array();
  for (size_t k = 0; k < s.size(); ++k) config.push_back({int64_t(k) == axis ? low : 0, int64_t(k) == axis ? high : 0, 0});
  s[axis] += low + high;
  return b.add("pad", {v, identity}, t, s, {{"config", config}});
}

NodeId slice(NodeAppender& b, NodeId v, Shape& s, int64_t axis, int64_t start, int64_t length, DType t) {
  std::vector<int64_t> starts(s.size(), 0);
  starts[axis] = start;
  s[axis] = length;
  return b.add("slice", {v}, t, s, {{"start", starts}, {"lengths", s}, {"strides", std::vector<int64_t>(s.size(), 1)}});
}

// The scan `op` of v (shape s, type t) along `axis`, as nodes appended through b; returns its value.
NodeId scan(NodeAppender& b, const std::string& op, NodeId v, const Shape& s, int64_t axis, bool reverse, DType t,
            int64_t block, int64_t fold_totals) {
  const int64_t length = s[axis];
  nlohmann::json attrs = {{"axis", axis}, {"reverse", reverse}};
  if (length <= block) return b.add(op, {v}, t, s, attrs);
  const std::string fold = fold_of(op);
  const NodeId identity = b.add("constant", {}, t, {}, {{"value", fold == "sum" && ir::is_float(t) ? nlohmann::json("-0.0") : reduction_identity(fold, t)}});
  const int64_t blocks = (length + block - 1) / block;
  Shape split = s;  // [..., blocks, block, ...]
  NodeId blocked = blocks * block == length ? v : pad(b, v, split, axis, 0, blocks * block - length, t, identity);
  split[axis] = block;
  split.insert(split.begin() + axis, blocks);
  blocked = b.add("reshape", {blocked}, t, split);
  Shape totals = split;
  totals.erase(totals.begin() + axis + 1);
  // In t, integers too: t's arithmetic wraps, as the scan's own does.
  NodeId total = b.add(fold, {blocked}, t, totals, {{"axes", {axis + 1}}, {"keep_axes", false}});
  attrs["segment"] = block;
  // Lines along the innermost axis are a workgroup's each; with few enough blocks, each
  // folds its carry from the totals itself.
  const bool innermost = std::all_of(s.begin() + axis + 1, s.end(), [](int64_t d) { return d == 1; });
  if (innermost && blocks <= fold_totals) {
    attrs["carry_totals"] = true;
    return b.add(op, {v, total}, t, s, attrs);
  }
  // Exclusive: block j starts from the totals of the blocks before it (after it with
  // reverse). The shift is an index map, so fusion makes it the totals' scan's prologue.
  Shape shifted = totals;
  NodeId carries = pad(b, total, shifted, axis, reverse ? 0 : 1, reverse ? 1 : 0, t, identity);
  carries = slice(b, carries, shifted, axis, reverse ? 1 : 0, blocks, t);
  carries = scan(b, op, carries, totals, axis, reverse, t, block, fold_totals);
  return b.add(op, {v, carries}, t, s, attrs);
}

class SplitScan : public Pass {
 public:
  std::string name() const override { return "split-scan"; }

  void run(ir::Graph& g) override {
    expand_nodes(g, [this](Node& n, NodeId& next, std::vector<Node>& out) -> std::optional<std::vector<NodeId>> {
      if (ir::op_family(n.op) != ir::OpFamily::Scan || n.results.size() != 1) return std::nullopt;
      const Shape& s = n.type().shape;
      const int64_t axis = n.attrs.value("axis", int64_t(-1));
      // The verifier names a bad axis; a scan with a carry is one this pass made.
      const int64_t block = std::max<int64_t>(bounds_.scan_block, 2);
      if (axis < 0 || axis >= int64_t(s.size()) || s[axis] <= block || n.args.size() != 1)
        return std::nullopt;
      NodeAppender b{next, out};
      return std::vector<NodeId>{scan(b, n.op, n.args.at(0), s, axis, n.attrs.value("reverse", false), n.type().dtype, block,
                                    bounds_.scan_fold_totals)};
    });
  }
};

NXV_REGISTER_PASS(SplitScan, "split-scan");

}  // namespace
}  // namespace nxv::passes
