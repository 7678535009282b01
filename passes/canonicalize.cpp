// canonicalize: one spelling per meaning, so later passes match fewer forms. `metadata`
// (Nx's annotations: stop_grad markers, custom names) is the identity at run time;
// literal tensors written as JSON arrays become data_b64, the form the runtime uploads.
#include <map>

#include "ir/literal.h"
#include "passes/pass.h"
#include "passes/rewrite.h"

namespace nxv::passes {
namespace {

class Canonicalize : public Pass {
 public:
  std::string name() const override { return "canonicalize"; }
  void run(ir::Graph& g) override {
    std::map<ir::NodeId, ir::NodeId> replaced;
    for (auto& n : g.nodes) {
      if (n.op == "metadata") {
        replaced[n.id] = n.args.at(0);
      } else if (n.op == "tensor" && n.attrs.contains("data")) {
        ir::set_tensor_literal(n, ir::literal_of(n));
      }
    }
    apply_replacements(g, replaced);
  }
};

NXV_REGISTER_PASS(Canonicalize, "canonicalize");

}  // namespace
}  // namespace nxv::passes
