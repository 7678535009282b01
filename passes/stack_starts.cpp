// stack-starts: a slice or put_slice whose scalar dynamic starts, a buffer each, would make its
// kernel bind more buffers than the device allows reads them stacked into one vector instead
// ({"arg": k, "element": i}). With 4 storage buffers per kernel (Mali, the spec's minimum) a
// put_slice of a matrix has one binding left for its two starts.
#include <map>
#include <set>

#include "passes/pass.h"
#include "passes/rewrite.h"

namespace nxv::passes {
namespace {

using ir::Node;
using ir::NodeId;

class StackStarts : public Pass {
 public:
  std::string name() const override { return "stack-starts"; }

  void run(ir::Graph& g) override {
    std::vector<Node> out;
    NodeId next = g.next_id();
    for (Node n : g.nodes) {  // copies: the starts' types are looked up in g
      if ((n.op == "slice" || n.op == "put_slice") && too_wide(g, n)) stack(g, n, next, out);
      out.push_back(std::move(n));
    }
    g.nodes = std::move(out);
    g.reindex();
  }

 private:
  // A literal takes no binding of its own, nor does a value read twice.
  bool too_wide(const ir::Graph& g, const Node& n) const {
    std::set<NodeId> read;
    for (NodeId a : n.args)
      if (g.node(a).op != "constant") read.insert(a);
    return read.size() + n.results.size() > bounds_.max_bindings;
  }

  static bool scalar_start(const nlohmann::json& s) { return s.is_object() && s.contains("arg") && !s.contains("element"); }

  // Rewrites n's starts: the scalar ones of each integer type (two or more, literals left
  // out) become elements of one stack of them, appended to `out` before n.
  void stack(const ir::Graph& g, Node& n, NodeId& next, std::vector<Node>& out) const {
    const size_t first_dynamic = n.op == "slice" ? 1 : 2;
    auto& starts = n.attrs["start"];
    std::map<ir::DType, std::vector<NodeId>> values;  // distinct start values by type, in order of use
    for (const auto& s : starts) {
      if (!scalar_start(s)) continue;
      const Node& v = g.node(n.args.at(s["arg"].get<size_t>()));
      auto& of_type = values[v.type().dtype];
      if (v.op != "constant" && std::find(of_type.begin(), of_type.end(), v.id) == of_type.end()) of_type.push_back(v.id);
    }
    std::map<ir::DType, NodeId> stacked;
    for (const auto& [t, vs] : values)
      if (vs.size() >= 2)
        stacked[t] = append_node(out, next, "stack", vs, t, {int64_t(vs.size())}, {{"axis", 0}});
    if (stacked.empty()) return;
    std::vector<NodeId> args(n.args.begin(), n.args.begin() + first_dynamic);
    auto arg_of = [&](NodeId v) {
      auto it = std::find(args.begin() + first_dynamic, args.end(), v);
      if (it != args.end()) return int64_t(it - args.begin());
      args.push_back(v);
      return int64_t(args.size() - 1);
    };
    for (auto& s : starts) {
      if (!s.is_object() || !s.contains("arg")) continue;
      const Node& v = g.node(n.args.at(s["arg"].get<size_t>()));
      auto st = stacked.find(v.type().dtype);
      if (scalar_start(s) && v.op != "constant" && st != stacked.end()) {
        const auto& vs = values[v.type().dtype];
        s = {{"arg", arg_of(st->second)}, {"element", int64_t(std::find(vs.begin(), vs.end(), v.id) - vs.begin())}};
      } else {
        s["arg"] = arg_of(v.id);
      }
    }
    n.args = std::move(args);
  }
};

NXV_REGISTER_PASS(StackStarts, "stack-starts");

}  // namespace
}  // namespace nxv::passes
