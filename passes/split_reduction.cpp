// split-reduction: a long reduction into few outputs (a full sum, a column sum of a tall
// matrix) would run on a handful of workgroups; it becomes two reductions instead. The
// reduced elements are laid out last (transpose), flattened, padded with the operation's
// identity to kParts equal chunks, and each output first reduces its chunks in parallel,
// then the kParts partial results. The transposes, reshapes and pads are index mappings,
// so fusion folds them (and x's producers) into the first reduction's kernel. The partial
// results keep the type the kernels accumulate in (partial_type), so that a split sum rounds
// to its type once, as an unsplit one does (docs/numerics.md).
//
// A dot with a long contraction into few outputs (a convolution's weight gradient, whose
// contraction runs over the batch and the image) is split the same way: one contracted
// axis, or chunks of it, becomes a batch axis of the dot, whose partial products a sum
// over that axis adds. Its tiles then fill the device instead of a few workgroups each
// walking the whole contraction.
#include <algorithm>
#include <set>

#include "ir/ops.h"
#include "passes/pass.h"
#include "passes/rewrite.h"
#include "passes/split_contraction.h"

namespace nxv::passes {
namespace {

using ir::DType;
using ir::Graph;
using ir::Node;
using ir::NodeId;

constexpr int64_t kMinExtent = 1 << 16;   // shorter reductions are fast enough in one pass
constexpr int64_t kMaxOutputs = 4096;     // more outputs already occupy the device
constexpr int64_t kParts = 1024;          // partial results per output

// Dots: split where the contraction is at least this long and the outputs this few; the
// parts are as many as bring the partial products to kDotSplitOutputs elements, while
// each part still contracts kDotMinPart or more.
constexpr int64_t kDotMinContraction = 4096;
constexpr int64_t kDotMaxOutputs = 1 << 18;
constexpr int64_t kDotSplitOutputs = 1 << 20;
constexpr int64_t kDotMinPart = 512;

// The dot's contraction split in parts (split_contraction): the contracted axis giving the
// most parts up to what brings the partial products to kDotSplitOutputs, each part still
// contracting kDotMinPart or more. False where the dot is left as it is.
bool split_dot(const Graph& g, const Node& n, bool f32_in_f64, NodeId& next, std::vector<Node>& out) {
  const ir::TensorType& a = g.node(n.args[0]).type();
  const ContractionAxes ax = ContractionAxes::of(n);
  if (ax.c1.size() != ax.c2.size() || ax.b1.size() != ax.b2.size()) return false;  // the verifier names it
  int64_t contraction = 1;
  for (int64_t x : ax.c1) contraction *= a.shape.at(x);
  const int64_t outputs = n.type().num_elements();
  if (contraction < kDotMinContraction || outputs > kDotMaxOutputs || outputs == 0) return false;
  const int64_t want = std::min((kDotSplitOutputs + outputs - 1) / outputs, contraction / kDotMinPart);
  // A whole axis needs no reshape, so it wins a tie, then the outermost.
  size_t pick = 0;
  int64_t parts = 0;
  bool whole = false;
  for (size_t i = 0; i < ax.c1.size(); ++i) {
    const int64_t extent = a.shape[ax.c1[i]];
    int64_t p = std::max<int64_t>(1, std::min(extent, want));
    while (extent % p) --p;
    if (p > parts || (p == parts && p == extent && !whole)) pick = i, parts = p, whole = p == extent;
  }
  if (parts < 4) return false;
  split_contraction(g, n, pick, parts, f32_in_f64, next, out);
  return true;
}

// The reduced axes of x laid out last: the permutation, the kept extents, and how many
// elements each output reduces.
struct ReducedLayout {
  std::vector<int64_t> perm;
  ir::Shape kept;
  int64_t extent = 1, outputs = 1;

  ReducedLayout(const ir::TensorType& x, const Node& n) {
    const std::vector<int64_t> axes = ir::reduced_axes(n, "axes", x);
    for (size_t i = 0; i < x.shape.size(); ++i)
      if (!std::binary_search(axes.begin(), axes.end(), int64_t(i))) {
        kept.push_back(x.shape[i]);
        perm.push_back(int64_t(i));
        outputs *= x.shape[i];
      }
    for (int64_t a : axes) extent *= x.shape[a], perm.push_back(a);
  }
};

// The reduction n in two stages; false where it is left as it is. The last node takes n's
// id, so its users need no rewiring: the second stage, or the conversion back from the
// partials' type, or keep_axes' reshape.
bool split_reduce(const Graph& g, Node n, bool f32_in_f64, NodeId& next, std::vector<Node>& out) {
  const ir::TensorType& x = g.node(n.args[0]).type();
  const ReducedLayout r(x, n);
  if (r.extent < kMinExtent || r.outputs > kMaxOutputs) return false;
  auto add = [&](const std::string& op, std::vector<NodeId> args, DType t, ir::Shape shape, nlohmann::json attrs) {
    return append_node(out, next, op, std::move(args), t, std::move(shape), std::move(attrs));
  };
  NodeId v = n.args[0];
  bool identity_perm = true;
  for (size_t i = 0; i < r.perm.size(); ++i) identity_perm &= r.perm[i] == int64_t(i);
  ir::Shape permuted;
  for (int64_t a : r.perm) permuted.push_back(x.shape[a]);
  if (!identity_perm) v = add("transpose", {v}, x.dtype, permuted, {{"axes", r.perm}});
  ir::Shape flat = r.kept;
  flat.push_back(r.extent);
  v = add("reshape", {v}, x.dtype, flat, nlohmann::json::object());
  const int64_t chunk = (r.extent + kParts - 1) / kParts;
  if (chunk * kParts != r.extent) {
    NodeId pad_value = add("constant", {}, x.dtype, {}, {{"value", reduction_identity(n.op, x.dtype)}});
    nlohmann::json config = nlohmann::json::array();
    for (size_t i = 0; i < r.kept.size(); ++i) config.push_back({0, 0, 0});
    config.push_back({0, chunk * kParts - r.extent, 0});
    flat.back() = chunk * kParts;
    v = add("pad", {v, pad_value}, x.dtype, flat, {{"config", config}});
  }
  ir::Shape chunks = r.kept;
  chunks.push_back(kParts);
  chunks.push_back(chunk);
  v = add("reshape", {v}, x.dtype, chunks, nlohmann::json::object());
  ir::Shape partial = r.kept;
  partial.push_back(kParts);
  const DType t = n.type().dtype, partial_t = partial_type(n.op, t, f32_in_f64);
  if (partial_t != t) v = add("as_type", {v}, partial_t, chunks, nlohmann::json::object());
  v = add(n.op, {v}, partial_t, partial, {{"axes", {int64_t(r.kept.size()) + 1}}});
  const nlohmann::json second = {{"axes", {int64_t(r.kept.size())}}};
  const bool narrow = partial_t != t, reshape = r.kept != n.type().shape;
  if (narrow || reshape) {
    v = add(n.op, {v}, partial_t, r.kept, second);
    if (narrow && reshape) v = add("as_type", {v}, t, r.kept, nlohmann::json::object());
  }
  n.op = narrow && !reshape ? "as_type" : reshape ? "reshape" : n.op;
  n.args = {v};
  n.attrs = narrow || reshape ? nlohmann::json::object() : second;
  out.push_back(n);
  return true;
}

class SplitReduction : public Pass {
 public:
  std::string name() const override { return "split-reduction"; }

  void run(Graph& g) override {
    static const std::set<std::string> reductions = {"sum", "product", "reduce_max", "reduce_min", "all", "any"};
    const bool f32_in_f64 = bounds_.f32_accumulates_in_f64;
    std::vector<Node> out;
    NodeId next = g.next_id();
    // Nodes are copied, not moved: later nodes still look up their operands in g.
    for (const Node& n : g.nodes) {
      if (n.op == "dot" && split_dot(g, n, f32_in_f64, next, out)) continue;
      if (reductions.count(n.op) && split_reduce(g, n, f32_in_f64, next, out)) continue;
      out.push_back(n);
    }
    g.nodes = std::move(out);
    g.reindex();
  }
};

NXV_REGISTER_PASS(SplitReduction, "split-reduction");

}  // namespace
}  // namespace nxv::passes
