#include "passes/rewrite.h"

#include <algorithm>
#include <limits>
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

std::map<ir::NodeId, ir::NodeId> result_replacements(const ir::Graph& g,
                                                     const std::map<ir::NodeId, std::vector<ir::NodeId>>& values) {
  std::map<ir::NodeId, ir::NodeId> replaced;
  for (const auto& [id, results] : values)
    if (results.size() == 1) replaced[id] = results[0];
  for (const auto& n : g.nodes) {
    if (n.op != "elem") continue;
    auto it = values.find(n.args.at(0));
    if (it != values.end()) replaced[n.id] = it->second.at(n.attrs.value("index", size_t(0)));
  }
  return replaced;
}

void expand_nodes(ir::Graph& g, const Expansion& expand) {
  ir::NodeId next = g.next_id();
  std::vector<ir::Node> nodes;
  std::map<ir::NodeId, std::vector<ir::NodeId>> values;  // replaced node → the value of each result
  for (auto& n : g.nodes) {
    if (auto v = expand(n, next, nodes))
      values[n.id] = std::move(*v);
    else
      nodes.push_back(std::move(n));
  }
  g.nodes = std::move(nodes);
  g.reindex();
  apply_replacements(g, result_replacements(g, values));
}

std::vector<ir::NodeId> inline_region(const ir::Graph& region, const std::vector<ir::NodeId>& arguments,
                                      ir::NodeId& next, std::vector<ir::Node>& out) {
  std::map<ir::NodeId, ir::NodeId> id_of;
  for (const auto& n : region.nodes) {
    if (n.op == "parameter") {
      id_of[n.id] = arguments.at(n.attrs.value("index", size_t(0)));
      continue;
    }
    ir::Node copy = n;
    copy.id = next++;
    for (auto& a : copy.args) a = id_of.at(a);
    id_of[n.id] = copy.id;
    out.push_back(std::move(copy));
  }
  std::vector<ir::NodeId> outputs;
  for (ir::NodeId o : region.outputs) outputs.push_back(id_of.at(o));
  return outputs;
}

void remove_dead(ir::Graph& g) {
  std::set<ir::NodeId> live(g.outputs.begin(), g.outputs.end());
  for (auto it = g.nodes.rbegin(); it != g.nodes.rend(); ++it)
    if (live.count(it->id))
      for (ir::NodeId a : it->args) live.insert(a);
  std::erase_if(g.nodes, [&](const ir::Node& n) { return !live.count(n.id) && n.op != "parameter"; });
  g.reindex();
}

void sort_topologically(ir::Graph& g) {
  std::vector<ir::Node> sorted;
  std::set<ir::NodeId> defined;
  std::vector<bool> placed(g.nodes.size(), false);
  while (sorted.size() < g.nodes.size()) {
    size_t before = sorted.size();
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (placed[i]) continue;
      const ir::Node& n = g.nodes[i];
      if (std::all_of(n.args.begin(), n.args.end(), [&](ir::NodeId a) { return defined.count(a) > 0; })) {
        placed[i] = true;
        defined.insert(n.id);
        sorted.push_back(n);
      }
    }
    if (sorted.size() == before) throw ir::IrError("the graph has a cycle (a bug in the pass that rewrote it)");
  }
  g.nodes = std::move(sorted);
  g.reindex();
}

nlohmann::json reduction_identity(const std::string& op, ir::DType t) {
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

}  // namespace nxv::passes
