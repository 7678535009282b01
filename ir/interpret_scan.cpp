// cumulative_sum/product/min/max: each line along attrs.axis folded serially from its first
// element (its last with reverse), every partial result rounded to the result type, as a
// device computing in that type does. Nx's associative-scan tree adds in another order
// (docs/numerics.md). Integers wrap; a NaN makes the rest of a min/max line NaN, as Nx's
// element_min/element_max do.
#include <cmath>

#include "ir/interpret_internal.h"

namespace nxv::ir::interp {
namespace {

// The float fold; acc is the partial result so far (`first`: none yet).
double fold_f(const std::string& op, double acc, double v, bool first) {
  if (first) return v;
  if (op == "cumulative_sum") return acc + v;
  if (op == "cumulative_product") return acc * v;
  if (std::isnan(acc) || std::isnan(v)) return NAN;
  return op == "cumulative_max" ? (v > acc ? v : acc) : (v < acc ? v : acc);
}

int64_t fold_i(const std::string& op, int64_t acc, int64_t v, bool first, DType t) {
  if (first) return v;
  if (op == "cumulative_sum") return wrap(int64_t(uint64_t(acc) + uint64_t(v)), t);
  if (op == "cumulative_product") return wrap(int64_t(uint64_t(acc) * uint64_t(v)), t);
  const bool greater = is_unsigned_int(t) ? uint64_t(v) > uint64_t(acc) : v > acc;
  const bool less = is_unsigned_int(t) ? uint64_t(v) < uint64_t(acc) : v < acc;
  return op == "cumulative_max" ? (greater ? v : acc) : (less ? v : acc);
}

}  // namespace

Literal eval_scan(const Node& n, const Args& args) {
  check_arity(n, args, 1);
  const Literal& x = *args[0];
  const Shape& s = x.type.shape;
  const int64_t axis = n.attrs.value("axis", int64_t(-1));
  if (axis < 0 || axis >= int64_t(s.size())) throw IrError(n, "attrs.axis out of range for " + to_string(x.type));
  if (n.type() != x.type) throw IrError(n, "the result must have the operand's type " + to_string(x.type));
  const bool reverse = n.attrs.value("reverse", false);
  const DType t = x.type.dtype;
  const int64_t len = s[axis], inner = row_major_strides(s)[axis];
  const int64_t outer = len == 0 ? 0 : x.type.num_elements() / (len * inner);
  Literal r = make_literal(n.type());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double facc = 0;
      int64_t iacc = 0;
      for (int64_t k = 0; k < len; ++k) {
        const int64_t at = (o * len + (reverse ? len - 1 - k : k)) * inner + i;
        if (is_float(t)) {
          write_f(r, at, fold_f(n.op, facc, get_f64(x, at), k == 0));
          facc = get_f64(r, at);  // rounded to t, as the next step sees it
        } else {
          iacc = fold_i(n.op, iacc, get_i64(x, at), k == 0, t);
          write_i(r, at, iacc);
        }
      }
    }
  return r;
}

}  // namespace nxv::ir::interp
