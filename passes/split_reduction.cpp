// split-reduction: a long reduction into few outputs (a full sum, a column sum of a tall
// matrix) would run on a handful of workgroups; it becomes two reductions instead. The
// reduced elements are laid out last (transpose), flattened, padded with the operation's
// identity to kParts equal chunks, and each output first reduces its chunks in parallel,
// then the kParts partial results. The transposes, reshapes and pads are index mappings,
// so fusion folds them (and x's producers) into the first reduction's kernel.
#include <algorithm>
#include <limits>
#include <set>

#include "passes/pass.h"

namespace nxv::passes {
namespace {

using ir::DType;
using ir::Graph;
using ir::Node;
using ir::NodeId;

constexpr int64_t kMinExtent = 1 << 16;   // shorter reductions are fast enough in one pass
constexpr int64_t kMaxOutputs = 4096;     // more outputs already occupy the device
constexpr int64_t kParts = 1024;          // partial results per output

nlohmann::json identity(const std::string& op, DType t) {
  const bool fl = ir::is_float(t), sgn = ir::is_signed_int(t);
  const int bits = ir::dtype_bits(t);
  if (op == "sum" || op == "any") return 0;
  if (op == "product" || op == "all") return 1;
  if (op == "reduce_max") {
    if (fl) return "-inf";
    return sgn ? nlohmann::json(bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t(1) << (bits - 1))) : nlohmann::json(0);
  }
  if (fl) return "inf";  // reduce_min
  if (sgn) return bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t(1) << (bits - 1)) - 1;
  return bits == 64 ? nlohmann::json(std::numeric_limits<uint64_t>::max()) : nlohmann::json((uint64_t(1) << bits) - 1);
}

class SplitReduction : public Pass {
 public:
  std::string name() const override { return "split-reduction"; }

  void run(Graph& g) override {
    std::vector<Node> out;
    NodeId next = g.next_id();
    // Nodes are copied, not moved: later nodes still look up their operands in g.
    for (Node n : g.nodes) {
      static const std::set<std::string> ops = {"sum", "product", "reduce_max", "reduce_min", "all", "any"};
      if (!ops.count(n.op)) {
        out.push_back(n);
        continue;
      }
      const ir::TensorType& x = g.node(n.args[0]).type();
      std::vector<int64_t> axes;
      if (!n.attrs.contains("axes") || n.attrs["axes"].is_null())
        for (size_t i = 0; i < x.shape.size(); ++i) axes.push_back(int64_t(i));
      else
        axes = n.attrs["axes"].get<std::vector<int64_t>>();
      std::sort(axes.begin(), axes.end());
      int64_t extent = 1, outputs = 1;
      ir::Shape kept;
      std::vector<int64_t> perm;
      for (size_t i = 0; i < x.shape.size(); ++i)
        if (!std::binary_search(axes.begin(), axes.end(), int64_t(i))) {
          kept.push_back(x.shape[i]);
          perm.push_back(int64_t(i));
          outputs *= x.shape[i];
        }
      for (int64_t a : axes) extent *= x.shape[a], perm.push_back(a);
      if (extent < kMinExtent || outputs > kMaxOutputs) {
        out.push_back(n);
        continue;
      }
      auto add = [&](const std::string& op, std::vector<NodeId> args, DType t, ir::Shape shape, nlohmann::json attrs) {
        Node m;
        m.id = next++;
        m.op = op;
        m.args = std::move(args);
        m.results = {{t, std::move(shape)}};
        m.attrs = std::move(attrs);
        out.push_back(m);
        return m.id;
      };
      NodeId v = n.args[0];
      bool identity_perm = true;
      for (size_t i = 0; i < perm.size(); ++i) identity_perm &= perm[i] == int64_t(i);
      ir::Shape permuted;
      for (int64_t a : perm) permuted.push_back(x.shape[a]);
      if (!identity_perm) v = add("transpose", {v}, x.dtype, permuted, {{"axes", perm}});
      ir::Shape flat = kept;
      flat.push_back(extent);
      v = add("reshape", {v}, x.dtype, flat, nlohmann::json::object());
      const int64_t chunk = (extent + kParts - 1) / kParts;
      if (chunk * kParts != extent) {
        NodeId pad_value = add("constant", {}, x.dtype, {}, {{"value", identity(n.op, x.dtype)}});
        nlohmann::json config = nlohmann::json::array();
        for (size_t i = 0; i < kept.size(); ++i) config.push_back({0, 0, 0});
        config.push_back({0, chunk * kParts - extent, 0});
        flat.back() = chunk * kParts;
        v = add("pad", {v, pad_value}, x.dtype, flat, {{"config", config}});
      }
      ir::Shape chunks = kept;
      chunks.push_back(kParts);
      chunks.push_back(chunk);
      v = add("reshape", {v}, x.dtype, chunks, nlohmann::json::object());
      ir::Shape partial = kept;
      partial.push_back(kParts);
      const DType t = n.type().dtype;
      v = add(n.op, {v}, t, partial, {{"axes", {int64_t(kept.size()) + 1}}});
      if (kept == n.type().shape) {
        // The second stage takes the original node's id, so its users need no rewiring.
        n.args = {v};
        n.attrs = {{"axes", {int64_t(kept.size())}}};
        out.push_back(n);
      } else {
        v = add(n.op, {v}, t, kept, {{"axes", {int64_t(kept.size())}}});
        n.op = "reshape";
        n.args = {v};
        n.attrs = nlohmann::json::object();
        out.push_back(n);
      }
    }
    g.nodes = std::move(out);
    g.reindex();
  }
};

NXV_REGISTER_PASS(SplitReduction, "split-reduction");

}  // namespace
}  // namespace nxv::passes
