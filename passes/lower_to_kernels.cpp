// lower-to-kernels: every compute op left after fusion becomes a one-op `kernel`.
// Scalar constants are copied into the bodies that read them (they are literals in the
// emitted code, not buffers); a constant that is a graph output gets a kernel that writes
// its buffer. One that control flow receives as a value (a loop counter's initial 0)
// becomes a `tensor`, uploaded once with the executable: a kernel would cost a dispatch
// per run, and make the host, which follows such a counter, wait for a submit first.
#include <set>

#include "ir/literal.h"
#include "ir/ops.h"
#include "passes/pass.h"

namespace nxv::passes {
namespace {

using ir::Graph;
using ir::Node;
using ir::NodeId;

const std::set<std::string> kTopLevel = {"parameter", "tensor", "elem", "kernel", "while", "cond", "constant"};

std::string kind_of(const std::string& op) {
  switch (ir::op_family(op)) {
    case ir::OpFamily::Reduction: return "reduce";
    case ir::OpFamily::ArgReduction: return "argreduce";
    case ir::OpFamily::Dot: return "dot";
    case ir::OpFamily::Attention: return "attention";
    case ir::OpFamily::Scatter: return "indexed";
    case ir::OpFamily::Scan: return "scan";
    case ir::OpFamily::Sort: return "sort";
    default: return "elementwise";
  }
}

class LowerToKernels : public Pass {
 public:
  std::string name() const override { return "lower-to-kernels"; }

  void run(Graph& g) override {
    std::set<NodeId> outputs(g.outputs.begin(), g.outputs.end()), control_args;
    for (const auto& n : g.nodes)
      if (n.op == "while" || n.op == "cond") control_args.insert(n.args.begin(), n.args.end());
    for (auto& n : g.nodes) {
      const bool constant = n.op == "constant";
      if (constant && control_args.count(n.id) && !outputs.count(n.id) && n.type().num_elements() <= kMaxUploaded)
        ir::set_tensor_literal(n, ir::literal_of(n));
      else if (!kTopLevel.count(n.op) || (constant && (outputs.count(n.id) || control_args.count(n.id))))
        n = wrap_in_kernel(g, n);
    }
    g.reindex();
  }

 private:
  // Beyond this a broadcast constant's data would cost more memory than its kernel's time.
  static constexpr int64_t kMaxUploaded = 1 << 16;

  static Node wrap_in_kernel(const Graph& g, const Node& op) {
    auto body = std::make_shared<Graph>();
    body->name = g.name;
    NodeId next = g.next_id();
    Node inner = op;
    Node k;
    k.id = op.id;
    k.op = "kernel";
    k.results = op.results;
    k.attrs = {{"kind", kind_of(op.op)}, {"fused_nodes", std::vector<NodeId>{op.id}}};
    std::vector<NodeId> mapped;
    for (NodeId a : op.args) {
      const Node& arg = g.node(a);
      if (arg.op == "constant") {  // a literal inside the kernel
        Node c = arg;
        c.id = next++;
        body->nodes.push_back(c);
        mapped.push_back(c.id);
        continue;
      }
      // One parameter per distinct argument.
      NodeId pid = -1;
      for (size_t i = 0; i < k.args.size(); ++i)
        if (k.args[i] == a) pid = body->parameters()[i]->id;
      if (pid < 0) {
        Node p;
        p.id = next++;
        p.op = "parameter";
        p.results = {arg.type()};
        p.attrs = {{"index", int64_t(k.args.size())}};
        pid = p.id;
        k.args.push_back(a);
        body->nodes.push_back(std::move(p));
      }
      mapped.push_back(pid);
    }
    inner.args = mapped;
    body->nodes.push_back(std::move(inner));
    body->outputs = {op.id};
    body->reindex();
    k.regions["body"] = body;
    return k;
  }
};

NXV_REGISTER_PASS(LowerToKernels, "lower-to-kernels");

}  // namespace
}  // namespace nxv::passes
