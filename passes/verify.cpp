// verify: the shape/type inference check as a pass, so that `nxv explore --passes=verify`
// checks a graph without changing it. The pass manager also runs the verifier on its input
// and after every pass.
#include "ir/verify.h"
#include "passes/pass.h"

namespace nxv::passes {
namespace {

class Verify : public Pass {
 public:
  std::string name() const override { return "verify"; }
  void run(ir::Graph& g) override { ir::verify(g); }
};
NXV_REGISTER_PASS(Verify, "verify");

}  // namespace
}  // namespace nxv::passes
