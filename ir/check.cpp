// Outputs against the reference interpreter's, with `nxv run --check`'s tolerances.
#include "ir/check.h"

#include <cmath>

#include "ir/literal.h"

namespace nxv::ir {

namespace {
bool element_matches(const Literal& want, const Literal& got, int64_t k) {
  if (!is_float(got.type.dtype)) return get_i64(want, k) == get_i64(got, k);
  const bool half = dtype_bits(got.type.dtype) == 16;
  const double w = get_f64(want, k), x = get_f64(got, k);
  if (std::isnan(w)) return std::isnan(x);
  if (std::isinf(w)) return x == w;
  return std::fabs(x - w) <= (half ? 1e-2 : 1e-6) + (half ? 1e-2 : 1e-5) * std::fabs(w);
}
}  // namespace

std::string check_outputs(const std::vector<Literal>& want, const std::vector<Literal>& got) {
  if (want.size() != got.size())
    return std::to_string(got.size()) + " outputs, the interpreter gives " + std::to_string(want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i].type != want[i].type)
      return "output " + std::to_string(i) + " is " + to_string(got[i].type) + ", the interpreter gives " +
             to_string(want[i].type);
    for (int64_t k = 0; k < got[i].type.num_elements(); ++k)
      if (!element_matches(want[i], got[i], k))
        return "output " + std::to_string(i) + " element " + std::to_string(k) + " is " +
               std::to_string(get_f64(got[i], k)) + ", the interpreter gives " + std::to_string(get_f64(want[i], k));
  }
  return "";
}

}  // namespace nxv::ir
