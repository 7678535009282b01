// split-scan: a scan along an axis longer than kBlock becomes a scan within blocks of at
// most kBlock elements (the axis padded with the fold's identity to whole blocks where no
// block size divides it, and reshaped to [blocks, block]); the blocks' totals (each block's
// last prefix, its first with reverse) shifted by one block, the identity first; their
// scan, the exclusive prefix of each block (split again while longer than kBlock); and
// that prefix folded into every element of its block by an elementwise op broadcast along
// the block. All ordinary ops: the code generator's scan kernels walk lines of kBlock or
// fewer, and the lines give the device its parallelism (a single line of 10^7 becomes 10^4
// lines of 1000, then 10 of 1000, then 1 of 10). O(n) work.
#include "ir/ops.h"
#include "passes/pass.h"
#include "passes/rewrite.h"

namespace nxv::passes {
namespace {

using ir::DType;
using ir::Node;
using ir::NodeId;
using ir::Shape;

// Long enough for a line's loop to hide its start, short enough that an invocation walking
// it stays far within lavapipe's 65535 loop steps and a workgroup's tile covers it in one
// or few rounds.
constexpr int64_t kBlock = 1024;

// Blocks of the largest size in [kBlock / 2, kBlock] that divides the axis, so that no
// padding (and no slice off the result) is needed, which keeps the final fold a plain
// elementwise kernel over the output (10^7 = 10^4 blocks of 1000); else kBlock, padded.
int64_t block_size(int64_t length) {
  for (int64_t b = kBlock; b >= kBlock / 2; --b)
    if (length % b == 0) return b;
  return kBlock;
}

struct Builder {
  NodeId& next;
  std::vector<Node>& out;
  NodeId add(const std::string& op, std::vector<NodeId> args, DType t, Shape shape, nlohmann::json attrs = nlohmann::json::object()) {
    return append_node(out, next, op, std::move(args), t, std::move(shape), std::move(attrs));
  }
};

const char* fold_of(const std::string& scan) {
  if (scan == "cumulative_sum") return "sum";
  if (scan == "cumulative_product") return "product";
  return scan == "cumulative_max" ? "reduce_max" : "reduce_min";
}
const char* combine_of(const std::string& scan) {
  if (scan == "cumulative_sum") return "add";
  if (scan == "cumulative_product") return "multiply";
  return scan == "cumulative_max" ? "max" : "min";
}

// Pads axis `axis` of v (shape s) with `low` and `high` identities.
NodeId pad(Builder& b, NodeId v, Shape& s, int64_t axis, int64_t low, int64_t high, DType t, NodeId identity) {
  nlohmann::json config = nlohmann::json::array();
  for (size_t k = 0; k < s.size(); ++k) config.push_back({int64_t(k) == axis ? low : 0, int64_t(k) == axis ? high : 0, 0});
  s[axis] += low + high;
  return b.add("pad", {v, identity}, t, s, {{"config", config}});
}

NodeId slice(Builder& b, NodeId v, Shape& s, int64_t axis, int64_t start, int64_t length, DType t) {
  std::vector<int64_t> starts(s.size(), 0);
  starts[axis] = start;
  s[axis] = length;
  return b.add("slice", {v}, t, s, {{"start", starts}, {"lengths", s}, {"strides", std::vector<int64_t>(s.size(), 1)}});
}

// The scan `op` of v (shape s, type t) along `axis`, as nodes appended through b; returns its value.
NodeId scan(Builder& b, const std::string& op, NodeId v, const Shape& s, int64_t axis, bool reverse, DType t) {
  const int64_t length = s[axis];
  nlohmann::json attrs = {{"axis", axis}, {"reverse", reverse}};
  if (length <= kBlock) return b.add(op, {v}, t, s, attrs);
  const std::string fold = fold_of(op);
  const NodeId identity = b.add("constant", {}, t, {}, {{"value", fold == "sum" && ir::is_float(t) ? nlohmann::json("-0.0") : reduction_identity(fold, t)}});
  const int64_t block = block_size(length), blocks = (length + block - 1) / block;
  Shape padded = s;
  if (blocks * block != length) v = pad(b, v, padded, axis, 0, blocks * block - length, t, identity);
  Shape split = padded;  // [..., blocks, block, ...]
  split[axis] = block;
  split.insert(split.begin() + axis, blocks);
  v = b.add("reshape", {v}, t, split);
  attrs["axis"] = axis + 1;
  const NodeId within = b.add(op, {v}, t, split, attrs);
  Shape one = split;
  const NodeId last = slice(b, within, one, axis + 1, reverse ? 0 : block - 1, 1, t);
  Shape totals = one;
  totals.erase(totals.begin() + axis + 1);
  // Exclusive: block j gets the totals of the blocks before it (after it with reverse). The
  // totals are shifted before they are scanned, so the shift is the scan's prologue (once
  // per block) and the final fold reads the scan's result at each element.
  Shape shifted = totals;
  NodeId prefix = pad(b, b.add("reshape", {last}, t, totals), shifted, axis, reverse ? 0 : 1, reverse ? 1 : 0, t, identity);
  prefix = slice(b, prefix, shifted, axis, reverse ? 1 : 0, blocks, t);
  prefix = scan(b, op, prefix, totals, axis, reverse, t);
  prefix = b.add("reshape", {prefix}, t, one);
  v = b.add(combine_of(op), {prefix, within}, t, split);
  v = b.add("reshape", {v}, t, padded);
  if (padded != s) v = slice(b, v, padded, axis, 0, length, t);
  return v;
}

class SplitScan : public Pass {
 public:
  std::string name() const override { return "split-scan"; }

  void run(ir::Graph& g) override {
    expand_nodes(g, [](Node& n, NodeId& next, std::vector<Node>& out) -> std::optional<std::vector<NodeId>> {
      if (ir::op_family(n.op) != ir::OpFamily::Scan || n.results.size() != 1) return std::nullopt;
      const Shape& s = n.type().shape;
      const int64_t axis = n.attrs.value("axis", int64_t(-1));
      if (axis < 0 || axis >= int64_t(s.size()) || s[axis] <= kBlock) return std::nullopt;  // the verifier names a bad axis
      Builder b{next, out};
      return std::vector<NodeId>{scan(b, n.op, n.args.at(0), s, axis, n.attrs.value("reverse", false), n.type().dtype)};
    });
  }
};

NXV_REGISTER_PASS(SplitScan, "split-scan");

}  // namespace
}  // namespace nxv::passes
