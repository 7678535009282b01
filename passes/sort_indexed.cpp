// sort-indexed: an indexed_add/put of many updates becomes its sorted form (docs/ir.md): each
// update row's key (its linear position on the indexed axes; the count of positions where
// an index is out of range, which no element has), a stable argsort of the keys, the keys
// gathered in that order, and the op reading (target, indices, updates, sorted_key, perm),
// whose elements each find their run of rows by binary search: O(N log^2 N) for the
// (bitonic) sort and O(log N + run) per target element, against O(N) per element for the
// fold over all N rows. Where the device ends an invocation's loops after a number of steps, a run could
// outlast them: the sorted rows are then applied in chunks that keep the search and walk
// within KernelBounds::max_loop_steps (half the device's limit; the kernel's position loop
// takes the rest), each chunk's op updating the previous one's result, each its own kernel
// (fuse counts the walk's steps against the same bound). A float indexed_add then rounds
// once per chunk rather than once (docs/ir.md).
#include <algorithm>
#include <cmath>
#include <map>

#include "ir/ops.h"
#include "passes/pass.h"
#include "passes/rewrite.h"

namespace nxv::passes {
namespace {

using ir::DType;
using ir::Node;
using ir::NodeId;
using ir::Shape;
using ir::TensorType;

// When the fold costs more: it takes N row steps per target element (T N in all), the
// bitonic argsort (passes/split-sort) about log2(N)^2 / 2 comparator steps per row, each a
// few times a row step's cost (on lavapipe 100000 rows sorted in about the time 150 target
// elements fold them). So the sorted form from T >= log2(N)^2 / 2 target elements: 64
// bins fold, 300 sort at 100000 updates. Below a few hundred updates the fold costs less
// than the dispatches the sorted form adds; with one position on the indexed axes every
// row aims at every element and a sort orders nothing.
constexpr int64_t kMinUpdates = 256;
constexpr int64_t kMinPositions = 2;
bool sorting_pays(int64_t updates, int64_t target_elements) {
  const double log_n = std::log2(double(updates));
  return updates >= kMinUpdates && double(target_elements) >= log_n * log_n / 2;
}
// The sorted op binds target, indices, updates, sorted_key, perm and its result: devices of
// fewer storage buffers per kernel (4: Mali, vulkan-minimum) keep the fold.
constexpr size_t kSortedBindings = 6;
// Loop steps a chunk leaves to its binary search (at most 32 trips over s32 positions) and
// its loops' last tests, within KernelBounds::max_loop_steps.
constexpr int64_t kSearchSteps = 64;

struct Builder : NodeAppender {
  NodeId constant(DType t, int64_t v) { return add("constant", {}, t, {}, {{"value", v}}); }
  NodeId slice(NodeId v, DType t, std::vector<int64_t> start, Shape lengths) {
    const std::vector<int64_t> strides(lengths.size(), 1);
    return add("slice", {v}, t, lengths, {{"start", start}, {"lengths", lengths}, {"strides", strides}});
  }
};

// Whether value v of integer type t can be represented in t.
bool fits(DType t, int64_t v) {
  const int bits = 8 * ir::dtype_bytes(t) - (ir::is_signed_int(t) ? 1 : 0);
  return bits >= 63 || v < (int64_t(1) << bits);
}

// The s32 key of each of the N rows of indices (type it, {N, depth}) addressing `dims`:
// sum_j indices[:, j] * stride_j, or the number of positions where a component is negative
// or past its axis (tested in the indices' own type, before the s32 conversion could wrap).
NodeId row_keys(Builder& b, NodeId indices, DType it, int64_t count, const std::vector<int64_t>& dims) {
  const int64_t depth = int64_t(dims.size());
  int64_t positions = 1;
  for (int64_t d : dims) positions *= d;
  NodeId key = -1, bad = -1;
  int64_t stride = positions;
  for (int64_t j = 0; j < depth; ++j) {
    stride /= dims[j];
    const NodeId whole = depth == 1 ? indices : b.slice(indices, it, {0, j}, {count, 1});
    const NodeId column = b.add("reshape", {whole}, it, {count});
    std::vector<NodeId> outside;
    if (ir::is_signed_int(it)) outside.push_back(b.add("less", {column, b.constant(it, 0)}, DType::U8, {count}));
    if (fits(it, dims[j])) outside.push_back(b.add("greater_equal", {column, b.constant(it, dims[j])}, DType::U8, {count}));
    for (NodeId o : outside) bad = bad < 0 ? o : b.add("logical_or", {bad, o}, DType::U8, {count});
    NodeId term = it == DType::S32 ? column : b.add("as_type", {column}, DType::S32, {count});
    if (stride != 1) term = b.add("multiply", {term, b.constant(DType::S32, stride)}, DType::S32, {count});
    key = key < 0 ? term : b.add("add", {key, term}, DType::S32, {count});
  }
  return bad < 0 ? key : b.add("select", {bad, b.constant(DType::S32, positions), key}, DType::S32, {count});
}

// n in its sorted form, the sorted rows applied `chunk` at a time: each chunk's op reads
// slices of both lines and updates the previous chunk's result.
NodeId apply_sorted(Builder& b, const Node& n, NodeId sorted_key, NodeId perm, int64_t count, int64_t chunk) {
  nlohmann::json attrs = n.attrs.is_object() ? n.attrs : nlohmann::json::object();
  attrs["sorted"] = true;
  NodeId result = n.args[0];
  for (int64_t start = 0; start < count; start += chunk) {
    const int64_t length = std::min(chunk, count - start);
    NodeId k = sorted_key, p = perm;
    if (length < count) {
      k = b.slice(sorted_key, DType::S32, {start}, {length});
      p = b.slice(perm, DType::S32, {start}, {length});
    }
    result = b.add(n.op, {result, n.args[1], n.args[2], k, p}, n.type().dtype, n.type().shape, attrs);
  }
  return result;
}

class SortIndexed : public Pass {
 public:
  std::string name() const override { return "sort-indexed"; }

  void run(ir::Graph& g) override {
    std::map<NodeId, TensorType> types;  // before expand_nodes moves the nodes
    for (const auto& n : g.nodes)
      if (n.results.size() == 1) types[n.id] = n.type();
    expand_nodes(g, [&](Node& n, NodeId& next, std::vector<Node>& out) -> std::optional<std::vector<NodeId>> {
      if (ir::op_family(n.op) != ir::OpFamily::Scatter || ir::is_sorted_indexed(n) || n.args.size() != 3 || n.results.size() != 1)
        return std::nullopt;
      const TensorType& indices = types.at(n.args[1]);
      const Shape& ts = n.type().shape;
      const int64_t count = indices.shape.at(0);
      std::vector<int64_t> dims;
      int64_t positions = 1;
      for (int64_t a : ir::indexed_axes(n, ts.size(), indices.shape.at(1)).indexed) {
        dims.push_back(ts[a]);
        positions *= ts[a];
      }
      // Keys are s32, the count of positions among them.
      if (!sorting_pays(count, n.type().num_elements()) || positions < kMinPositions || positions >= (int64_t(1) << 31) - 1 ||
          bounds_.max_bindings < kSortedBindings)
        return std::nullopt;
      Builder b{{next, out}};
      const NodeId key = row_keys(b, n.args[1], indices.dtype, count, dims);
      const NodeId perm = b.add("argsort", {key}, DType::S32, {count}, {{"axis", 0}, {"direction", "asc"}});
      const NodeId sorted_key =
          b.add("gather", {key, b.add("reshape", {perm}, DType::S32, {count, 1})}, DType::S32, {count});
      const int64_t chunk = bounds_.max_loop_steps > 0 ? std::max<int64_t>(int64_t(bounds_.max_loop_steps) - kSearchSteps, 1) : count;
      return std::vector<NodeId>{apply_sorted(b, n, sorted_key, perm, count, chunk)};
    });
  }
};

NXV_REGISTER_PASS(SortIndexed, "sort-indexed");

}  // namespace
}  // namespace nxv::passes
