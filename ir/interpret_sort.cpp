// argsort: each line along attrs.axis in Nx.BinaryBackend's stable order (std::stable_sort);
// argsort_merge: the comparators of split-sort's bitonic stages, run literally, so that the
// interpreter checks the network stage by stage as well as the sort as a whole.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ir/interpret_internal.h"

namespace nxv::ir::interp {
namespace {

// Nx's order of two elements of x: ascending, NaN after +Inf; descending, NaN first; NaNs
// equal to each other, -0.0 equal to 0.0.
struct KeyOrder {
  const Literal& x;
  bool desc;
  bool less(int64_t a, int64_t b) const {  // element a strictly before element b
    const DType t = x.type.dtype;
    if (is_float(t)) {
      const double u = get_f64(x, a), v = get_f64(x, b);
      if (std::isnan(u) || std::isnan(v)) return desc ? std::isnan(u) && !std::isnan(v) : !std::isnan(u);
      return desc ? u > v : u < v;
    }
    const int64_t u = get_i64(x, a), v = get_i64(x, b);
    if (is_unsigned_int(t)) return desc ? uint64_t(u) > uint64_t(v) : uint64_t(u) < uint64_t(v);
    return desc ? u > v : u < v;
  }
};

}  // namespace

Literal eval_sort(const Node& n, const Args& args) {
  check_arity(n, args, n.op == "argsort" ? 1 : 2);
  const Literal& x = *args[0];
  const AxisLines l(n, x.type.shape);
  const KeyOrder key{x, n.attrs.value("direction", std::string("asc")) == "desc"};
  Literal r = make_literal(n.type());
  std::vector<int64_t> order(size_t(l.len));
  for (int64_t line = 0; line < l.outer * l.inner; ++line) {
    auto before = [&](int64_t a, int64_t b) { return key.less(l.at(line, a), l.at(line, b)); };
    if (n.op == "argsort") {
      const int64_t block = std::max<int64_t>(n.attrs.value("block", l.len), 1);
      std::iota(order.begin(), order.end(), int64_t(0));
      for (int64_t start = 0; start < l.len; start += block)
        std::stable_sort(order.begin() + start, order.begin() + std::min(l.len, start + block), before);
    } else {
      for (int64_t k = 0; k < l.len; ++k) {
        order[size_t(k)] = index_at(*args[1], l.at(line, k));
        if (order[size_t(k)] < 0 || order[size_t(k)] >= l.len)
          throw IrError(n, "the order holds " + std::to_string(order[size_t(k)]) + ", not a position of a line of " + std::to_string(l.len));
      }
      // Ties go by position: the order a stable sort gives, whichever comparators run.
      auto stable_before = [&](int64_t a, int64_t b) { return before(a, b) || (!before(b, a) && a < b); };
      const int64_t merge = n.attrs.value("merge", int64_t(2));
      for (int64_t s = n.attrs.value("stride", int64_t(1)); s >= std::max<int64_t>(n.attrs.value("last_stride", int64_t(1)), 1); s /= 2)
        for (int64_t i = 0; i < l.len; ++i) {
          const bool flip = s == merge / 2;
          const int64_t partner = flip ? i - i % merge + merge - 1 - i % merge : i ^ s;
          if (partner <= i || partner >= l.len) continue;
          if (stable_before(order[size_t(partner)], order[size_t(i)])) std::swap(order[size_t(i)], order[size_t(partner)]);
        }
    }
    for (int64_t k = 0; k < l.len; ++k) write_i(r, l.at(line, k), order[size_t(k)]);
  }
  return r;
}

}  // namespace nxv::ir::interp
