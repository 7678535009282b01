// plan-buffers: kernel results that live only between kernels share device buffers by
// liveness. Each such result gets a slot (attrs.buffers[i]); a slot is free again once
// the last kernel reading its value has been recorded, because the runtime puts a full
// barrier between consecutive kernels. Values that leave the kernel world keep buffers of
// their own (-1): graph outputs (handed to the caller) and values passed to while/cond.
// Values that live only in registers never reach this pass: fusion removed them.
#include <map>
#include <set>

#include "passes/pass.h"

namespace nxv::passes {
namespace {

using ir::NodeId;

class PlanBuffers : public Pass {
 public:
  std::string name() const override { return "plan-buffers"; }

  void run(ir::Graph& g) override {
    // A value is (kernel id, result index); elems are names for one of them.
    using Value = std::pair<NodeId, int64_t>;
    std::map<NodeId, Value> name_of;
    std::map<Value, size_t> last_use;
    std::set<Value> pinned;
    for (size_t pos = 0; pos < g.nodes.size(); ++pos) {
      const auto& n = g.nodes[pos];
      if (n.op == "kernel" && n.results.size() == 1) name_of[n.id] = {n.id, 0};
      if (n.op == "elem" && g.node(n.args[0]).op == "kernel") name_of[n.id] = {n.args[0], n.attrs.value("index", int64_t(0))};
      if (n.op == "elem") continue;
      for (NodeId a : n.args) {
        auto it = name_of.find(a);
        if (it == name_of.end()) continue;
        if (n.op == "kernel") last_use[it->second] = pos;
        else pinned.insert(it->second);  // control flow receives it as a tensor of its own
      }
    }
    for (NodeId o : g.outputs)
      if (auto it = name_of.find(o); it != name_of.end()) pinned.insert(it->second);

    std::vector<uint64_t> slot_bytes;
    std::multimap<size_t, int64_t> frees_after;  // position → slot released after it
    std::vector<int64_t> free_slots;
    for (size_t pos = 0; pos < g.nodes.size(); ++pos) {
      auto& n = g.nodes[pos];
      if (n.op != "kernel") continue;
      // Slots whose last reader came before this kernel.
      for (auto it = frees_after.begin(); it != frees_after.end() && it->first < pos;) {
        free_slots.push_back(it->second);
        it = frees_after.erase(it);
      }
      nlohmann::json buffers = nlohmann::json::array();
      for (size_t i = 0; i < n.results.size(); ++i) {
        Value v{n.id, int64_t(i)};
        auto use = last_use.find(v);
        if (pinned.count(v) || use == last_use.end()) {
          buffers.push_back(-1);
          continue;
        }
        const uint64_t bytes = uint64_t(n.results[i].byte_size());
        int64_t slot = pick(free_slots, slot_bytes, bytes);
        slot_bytes[slot] = std::max(slot_bytes[slot], bytes);
        frees_after.emplace(use->second, slot);
        buffers.push_back(slot);
      }
      n.attrs["buffers"] = buffers;
    }
  }

 private:
  // The smallest free slot that holds `bytes`, else the largest free one (it grows), else a new one.
  static int64_t pick(std::vector<int64_t>& free_slots, std::vector<uint64_t>& slot_bytes, uint64_t bytes) {
    auto best = free_slots.end();
    for (auto it = free_slots.begin(); it != free_slots.end(); ++it) {
      const uint64_t s = slot_bytes[*it];
      if (best == free_slots.end()) {
        best = it;
        continue;
      }
      const uint64_t b = slot_bytes[*best];
      if ((s >= bytes && (b < bytes || s < b)) || (s < bytes && b < bytes && s > b)) best = it;
    }
    if (best == free_slots.end()) {
      slot_bytes.push_back(0);
      return int64_t(slot_bytes.size()) - 1;
    }
    int64_t slot = *best;
    free_slots.erase(best);
    return slot;
  }
};

NXV_REGISTER_PASS(PlanBuffers, "plan-buffers");

}  // namespace
}  // namespace nxv::passes
