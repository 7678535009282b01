// libFuzzer target: the reference interpreter on small inputs that verify, with seeded
// inputs of every type (special values included). Graphs with `while` are left out: a loop
// may legally never end, and the interpreter has no step limit.
#include <random>

#include "fuzz/fuzz_common.h"
#include "ir/interpreter.h"
#include "ir/literal.h"

namespace {
using namespace nxv;

ir::Literal input(const ir::TensorType& t, std::mt19937_64& rng) {
  static const double kSpecial[] = {0.0, -0.0, 1.0, -1.0, 0.5, 1e-310, -1e-40, 65504.0, 3.5e38,
                                    1e300, -1e300, 1.0 / 0.0, -1.0 / 0.0, 0.0 / 0.0, 2.5, -7.0};
  ir::Literal lit{t, std::vector<uint8_t>(size_t(t.byte_size()))};
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    ir::Scalar v;
    if (ir::is_float(t.dtype)) {
      v.f = kSpecial[rng() % 16];
    } else {
      v.is_integer = true;
      v.i = int64_t(rng());
      if (rng() % 2) v.i = int64_t(rng() % 9) - 4;
    }
    ir::set_element(lit, i, v);
  }
  return lit;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto g = fuzz::read_verified(data, size);
  if (!g || fuzz::total_elements(*g) > (int64_t(1) << 12) || fuzz::contains_op(*g, "while")) return 0;
  std::mt19937_64 rng(size);
  std::vector<ir::Literal> inputs;
  for (const ir::Node* p : g->parameters()) inputs.push_back(input(p->type(), rng));
  try {
    auto out = ir::interpret(*g, inputs);
    if (out.size() != g->outputs.size()) fuzz::finding("interpret returned the wrong number of outputs", &*g);
  } catch (const ir::IrError&) {
  } catch (const std::exception& e) {
    fuzz::finding(std::string("interpret threw a non-IrError: ") + e.what(), &*g);
  }
  return 0;
}
