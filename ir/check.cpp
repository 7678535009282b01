// Outputs against the reference interpreter's, with `nxv run --check`'s tolerances.
#include "ir/check.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "ir/literal.h"

namespace nxv::ir {

namespace {
// tol as it applies to `t`'s elements.
Tolerance for_type(const Tolerance& tol, DType t) {
  if (dtype_bits(t) != 16) return tol;
  return {std::max(tol.relative, 1e-2), std::max(tol.absolute, 1e-2)};
}

bool element_matches(const Literal& want, const Literal& got, int64_t k, const Tolerance& tol) {
  if (!is_float(got.type.dtype)) return get_i64(want, k) == get_i64(got, k);
  const double w = get_f64(want, k), x = get_f64(got, k);
  if (std::isnan(w)) return std::isnan(x);
  if (std::isinf(w)) return x == w;
  return std::fabs(x - w) <= tol.absolute + tol.relative * std::fabs(w);
}

// The shortest text that reads back as v (as an f32 where `narrow`).
std::string number(double v, bool narrow) {
  char buf[40];
  const auto r = narrow ? std::to_chars(buf, buf + sizeof buf, float(v)) : std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}
}  // namespace

std::string check_outputs(const std::vector<Literal>& want, const std::vector<Literal>& got, const Tolerance& tol) {
  if (want.size() != got.size())
    return std::to_string(got.size()) + " outputs, the interpreter gives " + std::to_string(want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i].type != want[i].type)
      return "output " + std::to_string(i) + " is " + to_string(got[i].type) + ", the interpreter gives " +
             to_string(want[i].type);
    const Tolerance t = for_type(tol, got[i].type.dtype);
    for (int64_t k = 0; k < got[i].type.num_elements(); ++k)
      if (!element_matches(want[i], got[i], k, t)) {
        const std::string head = "output " + std::to_string(i) + " element " + std::to_string(k) + " is ";
        if (!is_float(got[i].type.dtype))
          return head + std::to_string(get_i64(got[i], k)) + ", the interpreter gives " + std::to_string(get_i64(want[i], k));
        const bool narrow = dtype_bits(got[i].type.dtype) <= 32;
        std::string s = head + number(get_f64(got[i], k), narrow) + ", the interpreter gives " + number(get_f64(want[i], k), narrow);
        if (std::isfinite(get_f64(want[i], k)))
          s += " (beyond " + number(t.relative, false) + " relative + " + number(t.absolute, false) + " absolute)";
        return s;
      }
  }
  return "";
}

}  // namespace nxv::ir
