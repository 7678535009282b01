// constant-fold: a node whose operands are all literals is evaluated at compile time by
// the reference interpreter (so folding gives exactly what the device would, in Nx's
// semantics) and becomes a literal: a `constant` when every element is equal (a scalar
// broadcast lazily, which fusion then copies into kernels), else a `tensor`. Results
// beyond kMaxElements stay computed on the device rather than bloating the graph.
#include "ir/interpreter.h"
#include "ir/literal.h"
#include "ir/ops.h"
#include "passes/pass.h"
#include "passes/rewrite.h"

namespace nxv::passes {
namespace {

constexpr int64_t kMaxElements = 1 << 16;

bool foldable(const ir::Node& n) {
  switch (ir::op_family(n.op)) {
    case ir::OpFamily::Source:
      return n.op == "iota" || n.op == "eye";
    case ir::OpFamily::Control:
    case ir::OpFamily::Kernel:
    case ir::OpFamily::Repeat:
    case ir::OpFamily::Tuple:
    case ir::OpFamily::Unknown:
      return false;
    default:
      return !n.is_tuple();
  }
}

class ConstantFold : public Pass {
 public:
  std::string name() const override { return "constant-fold"; }

  void run(ir::Graph& g) override {
    for (auto& n : g.nodes) {
      if (!foldable(n) || n.type().num_elements() > kMaxElements) continue;
      std::vector<ir::Literal> values;
      bool all_literal = true;
      for (ir::NodeId a : n.args) {
        const ir::Node& arg = g.node(a);
        if (!ir::is_literal(arg)) {
          all_literal = false;
          break;
        }
        values.push_back(ir::literal_of(arg));
      }
      if (!all_literal) continue;
      std::vector<const ir::Literal*> args;
      for (const auto& v : values) args.push_back(&v);
      ir::Literal out = ir::interpret_node(n, args).at(0);
      replace_with_literal(n, out);
    }
    remove_dead(g);
  }

 private:
  static void replace_with_literal(ir::Node& n, const ir::Literal& lit) {
    const int64_t count = lit.type.num_elements();
    const size_t width = size_t(ir::dtype_bytes(lit.type.dtype));
    bool uniform = count > 0;
    for (int64_t i = 1; i < count && uniform; ++i)
      uniform = std::equal(lit.data.begin(), lit.data.begin() + long(width), lit.data.begin() + long(i * width));
    if (uniform) {
      n.op = "constant";
      n.args.clear();
      n.attrs = {{"value", ir::literal_to_json(lit)["data"][0]}};
    } else {
      ir::set_tensor_literal(n, lit);
    }
  }
};

NXV_REGISTER_PASS(ConstantFold, "constant-fold");

}  // namespace
}  // namespace nxv::passes
