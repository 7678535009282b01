// split-sort: an argsort along an axis longer than a workgroup sorts in shared memory
// (KernelBounds::sort_block, half of it for 8-byte elements) becomes the stages of a bitonic
// sort of the axis padded to a power of two P: the blocks sorted each in one dispatch (an
// argsort with attrs.block), then for every merge size from 2 blocks to P, the comparators
// whose partners lie a block or more apart one dispatch each (an argsort_merge of one
// stride) and the rest in shared memory (one argsort_merge down to stride 1). The padding
// is logical: the network's comparators all put the earlier element first, so the padding,
// greater than every element, never moves and the buffers stay as long as the axis.
// O(n log^2 n) work, log(P / block) (log(P / block) + 3) / 2 + 1 dispatches.
#include <algorithm>
#include <bit>
#include <map>

#include "ir/ops.h"
#include "passes/pass.h"
#include "passes/rewrite.h"

namespace nxv::passes {
namespace {

using ir::DType;
using ir::Node;
using ir::NodeId;

class SplitSort : public Pass {
 public:
  std::string name() const override { return "split-sort"; }

  void run(ir::Graph& g) override {
    std::map<NodeId, DType> types;  // before expand_nodes moves the nodes
    for (const auto& n : g.nodes)
      if (n.results.size() == 1) types[n.id] = n.type().dtype;
    expand_nodes(g, [&](Node& n, NodeId& next, std::vector<Node>& out) -> std::optional<std::vector<NodeId>> {
      if (n.op != "argsort" || n.args.size() != 1 || n.results.size() != 1 || n.attrs.contains("block")) return std::nullopt;
      const ir::Shape& s = n.type().shape;
      const int64_t axis = n.attrs.value("axis", int64_t(-1));
      if (axis < 0 || axis >= int64_t(s.size())) return std::nullopt;  // the verifier names it
      const NodeId x = n.args[0];
      const int64_t block = sort_block(ir::dtype_bytes(types.count(x) ? types[x] : DType::F32));
      const int64_t length = s[axis];
      if (length <= block) return std::nullopt;
      // A power of two past the block (itself one): the network's width.
      const int64_t padded = int64_t(std::bit_ceil(uint64_t(length)));
      nlohmann::json attrs = {{"axis", axis}, {"direction", n.attrs.value("direction", std::string("asc"))}};
      nlohmann::json first = attrs;
      first["block"] = block;
      NodeId order = append_node(out, next, "argsort", {x}, DType::S32, s, first);
      for (int64_t merge = 2 * block; merge <= padded; merge *= 2) {
        auto stage = [&](int64_t stride, int64_t last) {
          nlohmann::json a = attrs;
          a["merge"] = merge, a["stride"] = stride, a["last_stride"] = last;
          const DType t = merge == padded && last == 1 ? n.type().dtype : DType::S32;
          order = append_node(out, next, "argsort_merge", {x, order}, t, s, a);
        };
        for (int64_t stride = merge / 2; stride >= block; stride /= 2) stage(stride, stride);
        stage(block / 2, 1);
      }
      return std::vector<NodeId>{order};
    });
  }

 private:
  int64_t sort_block(int bytes) const { return std::max<int64_t>(bounds_.sort_block / (bytes > 4 ? 2 : 1), 2); }
};

NXV_REGISTER_PASS(SplitSort, "split-sort");

}  // namespace
}  // namespace nxv::passes
