// Elementwise ops with Nx broadcasting. Floats are computed in double and rounded once into
// the result type, as Nx.BinaryBackend computes in Erlang floats and writes each result back
// into the tensor's type (so f16/bf16 round after every op). Integer edge cases follow
// docs/ir.md (XLA's division by zero, wrap-around, out-of-range shifts).
#include <bit>
#include <cmath>
#include <string>
#include <unordered_map>

#include "ir/interpret_internal.h"
#include "ir/ops.h"

namespace nxv::ir::interp {
namespace {

// Calls f(offsets) over the result shape: offsets[0] into the result, then one per operand,
// broadcasting each operand right-aligned.
template <class F>
void broadcast_walk(const Node& n, const Shape& out, const Args& ops, F&& f) {
  std::vector<std::vector<int64_t>> strides{row_major_strides(out)};
  for (const Literal* op : ops) {
    const Shape& s = op->type.shape;
    if (s.size() > out.size()) throw IrError(n, "cannot broadcast " + to_string(op->type) + " to the result " + to_string(n.type()));
    std::vector<int64_t> st(out.size(), 0), own = row_major_strides(s);
    const size_t lead = out.size() - s.size();
    for (size_t d = 0; d < s.size(); ++d) {
      if (s[d] != 1 && s[d] != out[lead + d])
        throw IrError(n, "cannot broadcast " + to_string(op->type) + " to the result " + to_string(n.type()));
      st[lead + d] = s[d] == 1 ? 0 : own[d];
    }
    strides.push_back(std::move(st));
  }
  walk(out, strides, [&](const std::vector<int64_t>& off) { f(off); });
}

bool is_s(DType t) { return is_signed_int(t); }

int64_t type_min(DType t) { return is_s(t) ? wrap(int64_t(uint64_t(1) << (dtype_bits(t) - 1)), t) : 0; }

// The inverse error function: Giles' single-precision approximation ("Approximating the
// erfinv function", GPU Computing Gems, 2011) refined by Newton's method to double precision.
// Near ±1 the refinement works on log erfc: erf(x) - y cancels to nothing there (erf(5.6) is
// 1 - 3e-15), and the approximation, made for f32, starts as far as 0.7 off at 1 - 2^-53,
// from where steps on erfc itself crawl (it is convex); log erfc is close to a parabola.
double erf_inv(double y) {
  if (std::isnan(y) || y < -1 || y > 1) return NAN;
  if (y == 1 || y == -1) return std::copysign(INFINITY, y);
  if (y == 0) return y;
  double w = -std::log((1.0 - y) * (1.0 + y)), p;
  if (w < 5) {
    w -= 2.5;
    p = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                     -0.00417768164, 0.246640727, 1.50140941})
      p = c + p * w;
  } else {
    w = std::sqrt(w) - 3;
    p = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                     0.00943887047, 1.00167406, 2.83297682})
      p = c + p * w;
  }
  const double a = std::fabs(y), log_tail = std::log(1 - a);  // 1 - a is exact from a = 0.5 (Sterbenz)
  double x = p * a;
  for (int k = 0; k < 32; ++k) {
    const double slope = 2 / std::sqrt(M_PI) * std::exp(-x * x);
    double step;
    if (a < 0.5) {
      step = (std::erf(x) - a) / slope;
    } else {
      const double tail = std::erfc(x);
      step = (log_tail - std::log(tail)) * tail / slope;
    }
    x -= step;
    if (std::fabs(step) <= 0x1p-54 * std::fabs(x)) break;
  }
  return std::copysign(x, y);
}

using FloatFn = double (*)(double);

FloatFn float_unary(const Node& n) {
  static const std::unordered_map<std::string, FloatFn> table = {
      {"exp", [](double v) { return std::exp(v); }},
      {"expm1", [](double v) { return std::expm1(v); }},
      {"log", [](double v) { return std::log(v); }},
      {"log1p", [](double v) { return std::log1p(v); }},
      {"sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"cos", [](double v) { return std::cos(v); }},
      {"sin", [](double v) { return std::sin(v); }},
      {"tan", [](double v) { return std::tan(v); }},
      {"cosh", [](double v) { return std::cosh(v); }},
      {"sinh", [](double v) { return std::sinh(v); }},
      {"tanh", [](double v) { return std::tanh(v); }},
      {"acos", [](double v) { return std::acos(v); }},
      {"asin", [](double v) { return std::asin(v); }},
      {"atan", [](double v) { return std::atan(v); }},
      {"acosh", [](double v) { return std::acosh(v); }},
      {"asinh", [](double v) { return std::asinh(v); }},
      {"atanh", [](double v) { return std::atanh(v); }},
      {"sqrt", [](double v) { return std::sqrt(v); }},
      {"rsqrt", [](double v) { return 1 / std::sqrt(v); }},
      {"cbrt", [](double v) { return std::cbrt(v); }},
      {"erf", [](double v) { return std::erf(v); }},
      {"erfc", [](double v) { return std::erfc(v); }},
      {"erf_inv", erf_inv},
      // Nx: -1 below zero, 1 above, the value itself otherwise (keeps -0.0 and NaN).
      {"sign", [](double v) { return v < 0 ? -1.0 : v > 0 ? 1.0 : v; }},
      {"negate", [](double v) { return -v; }},
      {"abs", [](double v) { return std::fabs(v); }},
      {"floor", [](double v) { return std::floor(v); }},
      {"ceil", [](double v) { return std::ceil(v); }},
      // Half away from zero (Erlang's round/1); a zero is +0.0 as Erlang returns the integer 0.
      {"round", [](double v) { double r = std::round(v); return r == 0 ? 0.0 : r; }},
  };
  auto it = table.find(n.op);
  if (it == table.end()) throw IrError(n, "needs an integer operand");
  return it->second;
}

int64_t int_unary(const Node& n, int64_t x, DType t) {
  const int bits = dtype_bits(t);
  const uint64_t masked = bits == 64 ? uint64_t(x) : uint64_t(x) & ((uint64_t(1) << bits) - 1);
  const std::string& op = n.op;
  if (op == "negate") return wrap(int64_t(0 - uint64_t(x)), t);
  if (op == "abs") return is_s(t) && x < 0 ? wrap(int64_t(0 - uint64_t(x)), t) : x;
  if (op == "sign") return is_s(t) ? (x > 0) - (x < 0) : x != 0;
  if (op == "floor" || op == "ceil" || op == "round") return x;
  if (op == "bitwise_not") return wrap(~x, t);
  if (op == "population_count") return std::popcount(masked);
  if (op == "count_leading_zeros") return bits - std::bit_width(masked);
  throw IrError(n, "needs a float operand");
}

double float_binary(const Node& n, double a, double b) {
  const std::string& op = n.op;
  if (op == "add") return a + b;
  if (op == "subtract") return a - b;
  if (op == "multiply") return a * b;
  if (op == "divide") return a / b;
  if (op == "pow") return std::pow(a, b);  // C99 Annex F special cases, as Erlang's :math
  if (op == "remainder") return std::fmod(a, b);  // exact, the sign of the dividend
  if (op == "atan2") return std::atan2(a, b);
  if (op == "max" || op == "min") {
    // NaN wins; ties keep the first operand (Erlang's max/min).
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
    return (op == "max" ? a < b : a > b) ? b : a;
  }
  throw IrError(n, "needs integer operands");
}

int64_t int_pow(int64_t base, int64_t e, DType t) {
  if (is_s(t) && e < 0) return base == 1 ? 1 : base == -1 ? ((e & 1) ? -1 : 1) : 0;
  uint64_t acc = 1, b = uint64_t(base), k = uint64_t(e);
  for (; k; k >>= 1, b *= b)
    if (k & 1) acc *= b;
  return wrap(int64_t(acc), t);
}

int64_t int_binary(const Node& n, int64_t a, int64_t b, DType t) {
  const std::string& op = n.op;
  const bool s = is_s(t);
  const int bits = dtype_bits(t);
  const uint64_t ua = uint64_t(a), ub = uint64_t(b);
  if (op == "add") return wrap(int64_t(ua + ub), t);
  if (op == "subtract") return wrap(int64_t(ua - ub), t);
  if (op == "multiply") return wrap(int64_t(ua * ub), t);
  if (op == "bitwise_and") return a & b;
  if (op == "bitwise_or") return a | b;
  if (op == "bitwise_xor") return a ^ b;
  if (op == "max" || op == "min") {
    const bool less = s ? a < b : ua < ub, greater = s ? a > b : ua > ub;
    return (op == "max" ? less : greater) ? b : a;
  }
  if (op == "quotient" || op == "remainder") {
    // x / 0 = -1 (all bits), x rem 0 = x; MIN / -1 = MIN, MIN rem -1 = 0 (docs/ir.md, as XLA).
    const bool q = op == "quotient";
    if (b == 0) return q ? wrap(-1, t) : a;
    if (s && b == -1 && a == type_min(t)) return q ? a : 0;
    if (s) return q ? wrap(a / b, t) : a % b;
    return q ? int64_t(ua / ub) : int64_t(ua % ub);
  }
  if (op == "left_shift" || op == "right_shift") {
    // Out-of-range amounts give 0, or the sign fill for an arithmetic right shift.
    const bool out_of_range = (s && b < 0) || ub >= uint64_t(bits);
    if (op == "left_shift") return out_of_range ? 0 : wrap(int64_t(ua << b), t);
    if (s) return a >> (out_of_range ? 63 : b);
    return out_of_range ? 0 : int64_t(ua >> b);
  }
  if (op == "pow") return int_pow(a, b, t);
  throw IrError(n, "needs float operands");
}

bool compare(const std::string& op, auto a, auto b) {
  if (op == "equal") return a == b;
  if (op == "not_equal") return a != b;  // true with NaN
  if (op == "greater") return a > b;
  if (op == "less") return a < b;
  if (op == "less_equal") return a <= b;
  return a >= b;
}

// The operands converted to t (Nx converts both sides of a binary op to the result type);
// only those of another type are copied.
struct Converted {
  std::vector<Literal> copies;
  Args args;
  Converted(const Args& in, DType t) {
    copies.reserve(in.size());  // keeps the pointers into it valid
    for (const Literal* a : in) {
      if (a->type.dtype == t) {
        args.push_back(a);
      } else {
        copies.push_back(convert(*a, t));
        args.push_back(&copies.back());
      }
    }
  }
  const Literal& operator[](size_t i) const { return *args[i]; }
};

// One elementwise node's evaluation: its result type and the literal it fills.
class Elementwise {
 public:
  Elementwise(const Node& node, const Args& a)
      : n(node), args(a), op(node.op), rt(node.type()), t(rt.dtype), fl(is_float(t)), out(make_literal(rt)) {}

  // Unary ops, on the result type.
  Literal eval_unary() {
    check_arity(n, args, 1);
    const Converted v(args, t);
    const Literal& x = v[0];
    if (fl) {
      const FloatFn f = float_unary(n);
      broadcast_walk(n, rt.shape, v.args, [&](const auto& o) { write_f(out, o[0], f(get_f64(x, o[1]))); });
    } else {
      broadcast_walk(n, rt.shape, v.args, [&](const auto& o) { write_i(out, o[0], int_unary(n, get_i64(x, o[1]), t)); });
    }
    return out;
  }

  // logical_not, is_nan and is_inf: u8 results.
  Literal eval_predicate() {
    check_arity(n, args, 1);
    const Literal& x = *args[0];
    const bool xf = is_float(x.type.dtype);
    broadcast_walk(n, rt.shape, {&x}, [&](const auto& o) {
      bool r;
      if (op == "logical_not") r = !truthy(x, o[1]);
      else if (!xf) r = false;
      else r = op == "is_nan" ? std::isnan(get_f64(x, o[1])) : std::isinf(get_f64(x, o[1]));
      write_i(out, o[0], r);
    });
    return out;
  }

  // Binary arithmetic, on the result type.
  Literal eval_binary() {
    check_arity(n, args, 2);
    const Converted v(args, t);
    broadcast_walk(n, rt.shape, v.args, [&](const auto& o) {
      if (fl) write_f(out, o[0], float_binary(n, get_f64(v[0], o[1]), get_f64(v[1], o[2])));
      else write_i(out, o[0], int_binary(n, get_i64(v[0], o[1]), get_i64(v[1], o[2]), t));
    });
    return out;
  }

  // Comparisons on the operands' merged type; logical ops on truthiness.
  Literal eval_compare() {
    check_arity(n, args, 2);
    if (op.rfind("logical_", 0) == 0) {
      broadcast_walk(n, rt.shape, args, [&](const auto& o) {
        const bool a = truthy(*args[0], o[1]), b = truthy(*args[1], o[2]);
        write_i(out, o[0], op == "logical_and" ? a && b : op == "logical_or" ? a || b : a != b);
      });
      return out;
    }
    const DType m = merge_types(args[0]->type.dtype, args[1]->type.dtype);
    const Converted v(args, m);
    broadcast_walk(n, rt.shape, v.args, [&](const auto& o) {
      bool r;
      if (is_float(m)) r = compare(op, get_f64(v[0], o[1]), get_f64(v[1], o[2]));
      else if (is_s(m)) r = compare(op, get_i64(v[0], o[1]), get_i64(v[1], o[2]));
      else r = compare(op, uint64_t(get_i64(v[0], o[1])), uint64_t(get_i64(v[1], o[2])));
      write_i(out, o[0], r);
    });
    return out;
  }

  // select, and clip with Nx's NaN-propagating max and min.
  Literal eval_select() {
    check_arity(n, args, 3);
    if (op == "select") {
      broadcast_walk(n, rt.shape, args, [&](const auto& o) {
        if (truthy(*args[0], o[1])) convert_element(*args[1], o[2], out, o[0]);
        else convert_element(*args[2], o[3], out, o[0]);
      });
      return out;
    }
    // clip(x, lo, hi) = min(max(x, lo), hi) with Nx's NaN-propagating max/min.
    if (args[1]->type.num_elements() != 1 || args[2]->type.num_elements() != 1)
      throw IrError(n, "clip bounds must be scalars");
    const Converted v(args, t);
    broadcast_walk(n, rt.shape, {v.args[0]}, [&](const auto& o) {
      if (fl) {
        const double x = get_f64(v[0], o[1]), lo = get_f64(v[1], 0), hi = get_f64(v[2], 0);
        double r = x < lo ? lo : x;
        r = r > hi ? hi : r;
        write_f(out, o[0], std::isnan(hi) ? hi : std::isnan(lo) ? lo : r);
        return;
      }
      const int64_t x = get_i64(v[0], o[1]), lo = get_i64(v[1], 0), hi = get_i64(v[2], 0);
      auto less = [&](int64_t a, int64_t b) { return is_s(t) ? a < b : uint64_t(a) < uint64_t(b); };
      const int64_t r = less(x, lo) ? lo : x;
      write_i(out, o[0], less(hi, r) ? hi : r);
    });
    return out;
  }

  // as_type converts; bitcast keeps the bytes.
  Literal eval_convert() {
    check_arity(n, args, 1);
    const Literal& x = *args[0];
    if (x.type.shape != rt.shape) throw IrError(n, "operand " + to_string(x.type) + " does not have the result's shape");
    if (op == "as_type") return convert(x, t);
    if (dtype_bits(x.type.dtype) != dtype_bits(t)) throw IrError(n, "bitcast between types of different widths");
    out.data = x.data;
    return out;
  }

 private:
  const Node& n;
  const Args& args;
  const std::string& op;
  const TensorType& rt;
  const DType t;
  const bool fl;
  Literal out;
};

}  // namespace

Literal eval_elementwise(const Node& n, const Args& args) {
  switch (op_family(n.op)) {
    case OpFamily::FloatUnary:
    case OpFamily::Unary: return Elementwise(n, args).eval_unary();
    case OpFamily::Predicate: return Elementwise(n, args).eval_predicate();
    case OpFamily::Binary: return Elementwise(n, args).eval_binary();
    case OpFamily::Compare: return Elementwise(n, args).eval_compare();
    case OpFamily::Select: return Elementwise(n, args).eval_select();
    case OpFamily::Convert: return Elementwise(n, args).eval_convert();
    default: throw IrError(n, "not an elementwise op");
  }
}

}  // namespace nxv::ir::interp
