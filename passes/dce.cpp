// dce: removes nodes no output depends on. Parameters stay: they define the graph's inputs.
#include "passes/pass.h"
#include "passes/rewrite.h"

namespace nxv::passes {
namespace {

class Dce : public Pass {
 public:
  std::string name() const override { return "dce"; }
  void run(ir::Graph& g) override { remove_dead(g); }
};

NXV_REGISTER_PASS(Dce, "dce");

}  // namespace
}  // namespace nxv::passes
