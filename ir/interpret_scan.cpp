// cumulative_sum/product/min/max: each line along attrs.axis folded serially from its first
// element (its last with reverse), every partial result rounded to the result type, as a
// device computing in that type does. With carries (a second operand), each segment of
// attrs.segment elements of a line is folded from its carry instead, or, with
// attrs.carry_totals, from the fold of the totals of the segments before it. Nx's associative-scan tree adds in another order
// (docs/numerics.md). Integers wrap; a NaN makes the rest of a min/max line NaN, as Nx's
// element_min/element_max do.
#include <algorithm>
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
  if (args.size() != 1) check_arity(n, args, 2);
  const Literal& x = *args[0];
  const Literal* carry = args.size() == 2 ? args[1] : nullptr;
  const AxisLines lines(n, x.type.shape);
  if (n.type() != x.type) throw IrError(n, "the result must have the operand's type " + to_string(x.type));
  const bool reverse = n.attrs.value("reverse", false);
  const DType t = x.type.dtype;
  const int64_t len = lines.len, inner = lines.inner, outer = lines.outer;
  const int64_t segment = carry ? n.attrs.value("segment", int64_t(0)) : len, segments = segment > 0 ? (len + segment - 1) / segment : 0;
  if (carry && (segment < 1 || carry->type.num_elements() != outer * segments * inner))
    throw IrError(n, "the carries must have one element per segment of a line, got " + to_string(carry->type));
  const bool totals = carry && n.attrs.value("carry_totals", false);
  Literal r = make_literal(n.type()), rounded = make_literal({t, {}});
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double facc = 0;
      int64_t iacc = 0;
      for (int64_t k = 0; k < len; ++k) {
        const int64_t p = reverse ? len - 1 - k : k, at = (o * len + p) * inner + i;
        const int64_t seg = p / std::max<int64_t>(segment, 1);
        // A segment's first element in scan order (its last position with reverse).
        const bool starts = p == (reverse ? std::min(len, (seg + 1) * segment) - 1 : seg * segment);
        // With totals, the carry folds the totals of the segments before this one in scan order.
        const int64_t before = totals ? (reverse ? segments - 1 - seg : seg) : 1;
        for (int64_t q = 0; carry && starts && q < before; ++q) {
          const int64_t c = (o * segments + (!totals ? seg : reverse ? segments - 1 - q : q)) * inner + i;
          if (is_float(t)) {
            write_f(rounded, 0, fold_f(n.op, facc, get_f64(*carry, c), q == 0));
            facc = get_f64(rounded, 0);
          } else {
            iacc = fold_i(n.op, iacc, get_i64(*carry, c), q == 0, t);
          }
        }
        const bool first = starts && (carry ? before == 0 : k == 0);
        if (is_float(t)) {
          write_f(r, at, fold_f(n.op, facc, get_f64(x, at), first));
          facc = get_f64(r, at);  // rounded to t, as the next step sees it
        } else {
          iacc = fold_i(n.op, iacc, get_i64(x, at), first, t);
          write_i(r, at, iacc);
        }
      }
    }
  return r;
}

}  // namespace nxv::ir::interp
