// Reductions, argmax/argmin and dot. Nx.BinaryBackend folds the reduced elements in
// row-major order into an Erlang number and writes the result once: floats accumulate in
// double and are rounded to the result type at the end (an f32 sum is not rounded after every
// addition), integers accumulate with 64-bit wrap-around (equal to wrapping in the type).
// f16 and bf16 sums, products and dots accumulate in f32 instead, as on every device and in
// XLA (docs/numerics.md): they differ from double only where a partial result leaves f32's range.
#include <algorithm>
#include <cmath>

#include "ir/interpret_internal.h"
#include "ir/ops.h"

namespace nxv::ir::interp {
namespace {

// The accumulator after one step: f16/bf16 accumulate in f32. Rounding the double result of
// an operation on two f32 values to f32 equals the f32 operation (53 >= 2 * 24 + 2 bits).
double accumulated(double a, DType t) { return t == DType::F16 || t == DType::BF16 ? double(float(a)) : a; }

std::vector<double> f64_values(const Literal& l) {
  std::vector<double> v(size_t(l.type.num_elements()));
  for (size_t k = 0; k < v.size(); ++k) v[k] = get_f64(l, int64_t(k));
  return v;
}

std::vector<int64_t> i64_values(const Literal& l) {
  std::vector<int64_t> v(size_t(l.type.num_elements()));
  for (size_t k = 0; k < v.size(); ++k) v[k] = get_i64(l, int64_t(k));
  return v;
}

// Which of x's axes attrs[key] reduces.
std::vector<bool> reduced_mask(const Node& n, const TensorType& x, const char* key) {
  std::vector<bool> r(x.shape.size(), false);
  for (int64_t a : reduced_axes(n, key, x)) r[size_t(a)] = true;
  return r;
}

struct ReduceLayout {
  Shape kept, keep_shape;           // without / with the reduced axes as 1s
  std::vector<int64_t> out_strides;  // over the input's axes; 0 on reduced ones
};

ReduceLayout layout(const Node& n, const Shape& in, const std::vector<bool>& reduced) {
  ReduceLayout l;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!reduced[d]) l.kept.push_back(in[d]);
    l.keep_shape.push_back(reduced[d] ? 1 : in[d]);
  }
  const auto st = row_major_strides(l.keep_shape);
  for (size_t d = 0; d < in.size(); ++d) l.out_strides.push_back(reduced[d] ? 0 : st[d]);
  if (num_elements(l.kept) != n.type().num_elements())
    throw IrError(n, "the reduction gives " + std::to_string(num_elements(l.kept)) + " elements, the node states " + to_string(n.type()));
  return l;
}

Literal reduction(const Node& n, const Literal& x) {
  const Shape& in = x.type.shape;
  const auto reduced = reduced_mask(n, x.type, "axes");
  const auto l = layout(n, in, reduced);
  const bool keep = n.attrs.value("keep_axes", false);
  if (n.type().shape != (keep ? l.keep_shape : l.kept)) throw IrError(n, "shape mismatch with the reduced operand " + to_string(x.type));
  const std::string& op = n.op;
  const DType t = n.type().dtype;
  const int64_t count = n.type().num_elements();
  Literal r = make_literal(n.type());
  const std::vector<std::vector<int64_t>> strides{row_major_strides(in), l.out_strides};

  if (op == "all" || op == "any") {
    const bool all = op == "all";
    std::vector<uint8_t> acc(count, all);
    walk(in, strides, [&](const auto& o) {
      acc[o[1]] = all ? acc[o[1]] && truthy(x, o[0]) : acc[o[1]] || truthy(x, o[0]);
    });
    for (int64_t i = 0; i < count; ++i) write_i(r, i, acc[i]);
    return r;
  }
  const bool sum = op == "sum", product = op == "product", mx = op == "reduce_max";
  if (!sum && !product && !mx && op != "reduce_min") throw IrError(n, "not a reduction");
  if (is_float(t)) {
    std::vector<double> acc(count, sum ? 0.0 : product ? 1.0 : mx ? -INFINITY : INFINITY);
    walk(in, strides, [&](const auto& o) {
      double& a = acc[o[1]];
      const double v = get_f64(x, o[0]);
      if (sum) a = accumulated(a + v, t);
      else if (product) a = accumulated(a * v, t);
      else if (!std::isnan(a) && (std::isnan(v) || (mx ? v > a : v < a))) a = v;  // NaN propagates
    });
    for (int64_t i = 0; i < count; ++i) write_f(r, i, acc[i]);
    return r;
  }
  const bool s = is_signed_int(t);
  const int bits = dtype_bits(t);
  const int64_t tmax = s ? int64_t((uint64_t(1) << (bits - 1)) - 1) : bits == 64 ? -1 : int64_t((uint64_t(1) << bits) - 1);
  const int64_t tmin = s ? -tmax - 1 : 0;
  std::vector<int64_t> acc(count, sum ? 0 : product ? 1 : mx ? tmin : tmax);
  walk(in, strides, [&](const auto& o) {
    int64_t& a = acc[o[1]];
    const int64_t v = get_i64(x, o[0]);
    if (sum) a = int64_t(uint64_t(a) + uint64_t(v));
    else if (product) a = int64_t(uint64_t(a) * uint64_t(v));
    else if (s ? (mx ? v > a : v < a) : (mx ? uint64_t(v) > uint64_t(a) : uint64_t(v) < uint64_t(a))) a = v;
  });
  for (int64_t i = 0; i < count; ++i) write_i(r, i, acc[i]);
  return r;
}

Literal arg_reduction(const Node& n, const Literal& x) {
  const Shape& in = x.type.shape;
  const bool flat = !n.attrs.contains("axis") || n.attrs["axis"].is_null();
  const auto reduced = reduced_mask(n, x.type, "axis");
  const auto l = layout(n, in, reduced);
  if (!is_integer(n.type().dtype)) throw IrError(n, "the result type must be an integer");
  const std::string tie = n.attrs.value("tie_break", std::string("low"));
  if (tie != "low" && tie != "high") throw IrError(n, "attrs.tie_break must be \"low\" or \"high\"");
  const bool high = tie == "high", mx = n.op == "argmax";
  const int64_t count = n.type().num_elements();
  // The index counted along the reduced axis, or over the whole flattened tensor.
  std::vector<int64_t> index_strides = row_major_strides(in);
  if (!flat)
    for (size_t d = 0; d < in.size(); ++d) index_strides[d] = reduced[d] ? 1 : 0;
  // Per output element: the input offset of the best element so far (-1: none yet) and its index.
  std::vector<int64_t> best_at(count, -1), best(count, 0);
  const DType xt = x.type.dtype;
  // Does element a beat element b? The first NaN wins and is never replaced (Nx).
  auto beats = [&](int64_t a, int64_t b) {
    if (is_float(xt)) {
      const double va = get_f64(x, a), vb = get_f64(x, b);
      if (std::isnan(vb)) return false;
      if (std::isnan(va)) return true;
      return mx ? va > vb : va < vb;
    }
    const int64_t va = get_i64(x, a), vb = get_i64(x, b);
    if (is_unsigned_int(xt)) return mx ? uint64_t(va) > uint64_t(vb) : uint64_t(va) < uint64_t(vb);
    return mx ? va > vb : va < vb;
  };
  auto equal = [&](int64_t a, int64_t b) {
    return is_float(xt) ? get_f64(x, a) == get_f64(x, b) : get_i64(x, a) == get_i64(x, b);
  };
  // The walk visits each output's candidates in increasing index, so "high" takes later ties.
  walk(in, {row_major_strides(in), l.out_strides, index_strides}, [&](const auto& o) {
    int64_t& b = best_at[o[1]];
    if (b < 0 || beats(o[0], b) || (high && equal(o[0], b))) {
      b = o[0];
      best[o[1]] = o[2];
    }
  });
  Literal r = make_literal(n.type());
  for (int64_t i = 0; i < count; ++i) write_i(r, i, best[i]);
  return r;
}

}  // namespace

Literal eval_reduce(const Node& n, const Args& args) {
  check_arity(n, args, 1);
  return n.op == "argmax" || n.op == "argmin" ? arg_reduction(n, *args[0]) : reduction(n, *args[0]);
}

// Output dims: the batch axes, the free axes of a, the free axes of b; each output element is
// the in-order sum over the contracted axes.
Literal eval_dot(const Node& n, const Args& args) {
  check_arity(n, args, 2);
  const DType t = n.type().dtype;
  const Literal a = convert(*args[0], t), b = convert(*args[1], t);
  const Shape &sa = a.type.shape, &sb = b.type.shape;
  const auto c1 = int_list(n, "contract_axes1"), c2 = int_list(n, "contract_axes2");
  const auto b1 = int_list(n, "batch_axes1"), b2 = int_list(n, "batch_axes2");
  if (c1.size() != c2.size() || b1.size() != b2.size()) throw IrError(n, "contraction/batch axes of the two operands differ in number");
  std::vector<bool> used_a(sa.size(), false), used_b(sb.size(), false);
  auto use = [&](std::vector<bool>& used, int64_t axis) {
    if (axis < 0 || size_t(axis) >= used.size() || used[axis]) throw IrError(n, "axis " + std::to_string(axis) + " out of range or repeated");
    used[axis] = true;
  };
  const auto sta = row_major_strides(sa), stb = row_major_strides(sb);
  Shape out, inner;
  std::vector<int64_t> out_a, out_b, in_a, in_b;  // strides of a and b over the output / contracted dims
  for (size_t k = 0; k < b1.size(); ++k) {
    use(used_a, b1[k]);
    use(used_b, b2[k]);
    if (sa[b1[k]] != sb[b2[k]]) throw IrError(n, "batch axes differ in size");
    out.push_back(sa[b1[k]]);
    out_a.push_back(sta[b1[k]]);
    out_b.push_back(stb[b2[k]]);
  }
  for (size_t k = 0; k < c1.size(); ++k) {
    use(used_a, c1[k]);
    use(used_b, c2[k]);
    if (sa[c1[k]] != sb[c2[k]]) throw IrError(n, "contracted axes differ in size");
    inner.push_back(sa[c1[k]]);
    in_a.push_back(sta[c1[k]]);
    in_b.push_back(stb[c2[k]]);
  }
  for (size_t d = 0; d < sa.size(); ++d)
    if (!used_a[d]) out.push_back(sa[d]), out_a.push_back(sta[d]), out_b.push_back(0);
  for (size_t d = 0; d < sb.size(); ++d)
    if (!used_b[d]) out.push_back(sb[d]), out_a.push_back(0), out_b.push_back(stb[d]);
  if (out != n.type().shape) throw IrError(n, "the operands give shape " + to_string(TensorType{t, out}) + ", the node states " + to_string(n.type()));

  std::vector<std::pair<int64_t, int64_t>> pairs;  // contracted element offsets in a and b
  walk(inner, {in_a, in_b}, [&](const auto& o) { pairs.emplace_back(o[0], o[1]); });
  Literal r = make_literal(n.type());
  const std::vector<int64_t> out_strides = row_major_strides(out);
  // Each operand element decoded once, not once per product it takes part in.
  if (is_float(t)) {
    const std::vector<double> va = f64_values(a), vb = f64_values(b);
    walk(out, {out_strides, out_a, out_b}, [&](const auto& o) {
      double acc = 0;
      for (auto [i, j] : pairs) acc = accumulated(acc + va[size_t(o[1] + i)] * vb[size_t(o[2] + j)], t);
      write_f(r, o[0], acc);
    });
  } else {
    const std::vector<int64_t> va = i64_values(a), vb = i64_values(b);
    walk(out, {out_strides, out_a, out_b}, [&](const auto& o) {
      uint64_t acc = 0;
      for (auto [i, j] : pairs) acc += uint64_t(va[size_t(o[1] + i)]) * uint64_t(vb[size_t(o[2] + j)]);
      write_i(r, o[0], int64_t(acc));
    });
  }
  return r;
}

}  // namespace nxv::ir::interp
