// The op conformance suite: every op of docs/ir.md, every type it allows, run as a one-op
// graph on the default device and compared with the reference interpreter (ir::interpret,
// Nx's semantics). Inputs mix edge values (±0, ±1, ±Inf, NaN, subnormals, the integer
// extremes) with seeded random ones; sizes 0, 1, 255, 256, 257 and a prime; ranks 0 to 6;
// non-contiguous views (transposed, sliced, broadcast operands) through index ops.
//
// Tolerances: integers, comparisons, selections and data movement are exact. Float
// results agree in class (NaN where NaN, the same infinity, the same zero sign where the
// op is exact) and otherwise within the op's tolerance below, chosen from what Vulkan
// guarantees (division and sqrt 2.5-3 ulp, transcendentals a few ulp + range-relative).
//
// Subnormals: a device that cannot keep them at a width (NVIDIA's Vulkan driver flushes
// f32 ones; `nxv devices` says so) may instead give the result of the op on flushed
// inputs, flushed (denormals-are-zero and flush-to-zero, as CUDA's -ftz). bf16 is
// computed in f32 and follows f32.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>

#include "codegen/kernel.h"
#include "codegen/target.h"
#include "ir/graph_writer.h"
#include "ir/interpreter.h"
#include "ir/literal.h"
#include "ir/ops.h"
#include "passes/pass.h"
#include "runtime/runtime.h"
#include "device_testing.h"

namespace nxv {
namespace {

using ir::DType;
using ir::Literal;

const std::vector<DType> kAll = {DType::S8,  DType::S16, DType::S32, DType::S64, DType::U8,   DType::U16,
                                 DType::U32, DType::U64, DType::F16, DType::BF16, DType::F32, DType::F64};
const std::vector<DType> kFloats = {DType::F16, DType::BF16, DType::F32, DType::F64};
const std::vector<DType> kInts = {DType::S8, DType::S16, DType::S32, DType::S64, DType::U8, DType::U16, DType::U32, DType::U64};

using devtest::device;
bool supported(DType t) {
  const auto& c = device()->info().caps;
  if (t == DType::F64) return c.float64 || c.emulate_f64;
  if (t == DType::S64 || t == DType::U64) return c.int64 || c.emulate_i64;
  return true;
}

// Edge values first, then seeded random values in a range that suits the type.
Literal input(const ir::TensorType& t, unsigned seed, double lo = -8, double hi = 8) {
  Literal lit{t, std::vector<uint8_t>(t.byte_size())};
  std::mt19937_64 rng(seed);
  std::vector<ir::Scalar> edges;
  auto f = [](double v) { ir::Scalar s; s.f = v; return s; };
  auto i = [](int64_t v) { ir::Scalar s; s.i = v; s.is_integer = true; return s; };
  if (ir::is_float(t.dtype)) {
    edges = {f(0.0), f(-0.0), f(1), f(-1), f(0.5), f(-2.5), f(2.5), f(INFINITY), f(-INFINITY), f(NAN), f(1e-40), f(3e38), f(-7.75)};
  } else {
    const int bits = ir::dtype_bits(t.dtype);
    const int64_t max = ir::is_signed_int(t.dtype) ? (bits == 64 ? INT64_MAX : (int64_t(1) << (bits - 1)) - 1)
                                                    : (bits == 64 ? -1 : (int64_t(1) << bits) - 1);
    const int64_t min = ir::is_signed_int(t.dtype) ? (bits == 64 ? INT64_MIN : -(int64_t(1) << (bits - 1))) : 0;
    edges = {i(0), i(1), i(-1), i(max), i(min), i(2), i(-7), i(max - 1), i(min + 1), i(3)};
  }
  std::uniform_real_distribution<double> d(lo, hi);
  for (int64_t k = 0; k < t.num_elements(); ++k) {
    ir::Scalar v;
    if (k < int64_t(edges.size()) && k % 3 != 2) {
      v = edges[size_t(k)];
    } else if (ir::is_float(t.dtype)) {
      v.f = d(rng);
    } else {
      v.i = int64_t(std::llround(d(rng) * 4));
      v.is_integer = true;
    }
    ir::set_element(lit, k, v);
  }
  return lit;
}

struct Tolerance {
  double rel = 0, abs = 0;  // 0/0: bit-exact
  bool sign_of_zero = true;
};

bool flushes(DType t) { return devtest::flushes_subnormals(t); }

// Subnormals of the widths the device flushes become zeros of the same sign.
Literal flushed(Literal lit) { return flushes(lit.type.dtype) ? devtest::zero_subnormals(std::move(lit)) : lit; }

bool close(double w, double g, const Tolerance& tol) {
  if (std::isnan(w) || std::isnan(g)) return std::isnan(w) && std::isnan(g);
  if (std::isinf(w) || std::isinf(g)) return w == g || std::fabs(g - w) <= tol.abs + tol.rel * std::fabs(w);
  if (tol.rel == 0 && tol.abs == 0) return w == g && (!tol.sign_of_zero || std::signbit(w) == std::signbit(g));
  return std::fabs(g - w) <= tol.abs + tol.rel * std::fabs(w);
}

// Compares element by element, accepting `alt` (the flush-to-zero result) where given, to
// which a subnormal the device passed through unchanged (a select, a move) counts as zero;
// returns "" or a description of the first mismatch.
std::string compare(const Literal& want, const Literal& got, const Tolerance& tol, const Literal* alt = nullptr) {
  const Literal got_flushed = alt ? flushed(got) : Literal{};
  if (want.type != got.type) return "type " + ir::to_string(got.type) + ", want " + ir::to_string(want.type);
  for (int64_t k = 0; k < want.type.num_elements(); ++k) {
    if (!ir::is_float(want.type.dtype)) {
      if (ir::get_i64(want, k) != ir::get_i64(got, k) && !(alt && ir::get_i64(*alt, k) == ir::get_i64(got, k)))
        return "element " + std::to_string(k) + ": " + std::to_string(ir::get_i64(got, k)) + ", want " + std::to_string(ir::get_i64(want, k));
      continue;
    }
    const double w = ir::get_f64(want, k), g = ir::get_f64(got, k);
    if (!close(w, g, tol) && !(alt && close(ir::get_f64(*alt, k), ir::get_f64(got_flushed, k), tol))) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "element %lld: %.17g, want %.17g", (long long)k, g, w);
      return buf;
    }
  }
  return "";
}

// Float tolerance of an op at a type: exact unless rounding differs legitimately.
Tolerance tolerance(const std::string& op, DType t) {
  const double eps = t == DType::F64 ? 0x1p-52 : t == DType::F32 ? 0x1p-23 : t == DType::F16 ? 0x1p-10 : 0x1p-7;
  static const std::set<std::string> exact = {"add", "subtract", "multiply", "negate", "abs", "sign", "floor", "ceil",
                                              "round", "max", "min", "select", "clip", "as_type", "bitcast", "remainder"};
  if (exact.count(op)) return {};
  if (op == "divide" || op == "sqrt" || op == "rsqrt") return {4 * eps, 0, false};
  // Transcendentals: a few ulp, plus an absolute floor near zeros of the function.
  return {64 * eps, 64 * eps, false};
}

// Runs `g` on the device (compiled with `opts`) and in the interpreter; reports the first disagreement.
void check(const ir::Graph& g, const std::vector<Literal>& inputs, const Tolerance& tol, const runtime::CompileOptions& opts = {}) {
  std::vector<Literal> want;
  try {
    want = ir::interpret(g, inputs);
  } catch (const std::exception& e) {
    ADD_FAILURE() << g.name << ": interpreter: " << e.what();
    return;
  }
  std::vector<Literal> got;
  try {
    got = runtime::Executable::compile(device(), g, opts)->run_host(inputs);
  } catch (const std::exception& e) {
    ADD_FAILURE() << g.name << ": device: " << e.what();
    return;
  }
  ASSERT_EQ(got.size(), want.size()) << g.name;
  std::vector<Literal> alt;
  bool any_flush = false;
  for (const auto& in : inputs) any_flush |= flushes(in.type.dtype);
  for (const auto& out : want) any_flush |= flushes(out.type.dtype);
  if (any_flush) {
    std::vector<Literal> flushed_inputs;
    for (const auto& in : inputs) flushed_inputs.push_back(flushed(in));
    for (auto& out : ir::interpret(g, flushed_inputs)) alt.push_back(flushed(std::move(out)));
  }
  for (size_t i = 0; i < got.size(); ++i) {
    std::string err = compare(want[i], got[i], tol, alt.empty() ? nullptr : &alt[i]);
    EXPECT_EQ(err, "") << g.name << " output " << i;
  }
}

// One node over parameters: parameters 0..n-1, then the op over them, attrs given as JSON.
ir::Graph one_op(const std::string& name, const std::vector<ir::TensorType>& params, const std::string& op,
                 const ir::TensorType& result, const std::string& attrs = "{}") {
  ir::GraphWriter w(name);
  std::vector<ir::NodeId> args;
  for (size_t i = 0; i < params.size(); ++i) args.push_back(w.param(int(i), params[i].dtype, params[i].shape));
  return w.finish({w.node(op, args, result.dtype, result.shape, nlohmann::json::parse(attrs))});
}

const std::vector<int64_t> kSizes = {0, 1, 255, 256, 257, 1009};

TEST(Conformance, UnaryOps) {
  for (const auto& op : {"exp", "expm1", "log", "log1p", "sigmoid", "cos", "sin", "tan", "cosh", "sinh", "tanh", "acos",
                         "asin", "atan", "acosh", "asinh", "atanh", "sqrt", "rsqrt", "cbrt", "erf", "erfc", "erf_inv",
                         "negate", "abs", "sign", "floor", "ceil", "round", "bitwise_not", "population_count",
                         "count_leading_zeros", "is_nan", "is_infinity", "logical_not"}) {
    const auto fam = ir::op_family(op);
    const bool int_only = std::string(op) == "bitwise_not" || std::string(op) == "population_count" ||
                          std::string(op) == "count_leading_zeros";
    for (DType t : kAll) {
      if (!supported(t) || (int_only && !ir::is_integer(t))) continue;
      DType rt = fam == ir::OpFamily::FloatUnary ? ir::to_floating(t) : fam == ir::OpFamily::Predicate ? DType::U8 : t;
      for (int64_t n : kSizes) {
        auto g = one_op(std::string(op) + "_" + ir::dtype_name(t) + "_" + std::to_string(n), {{t, {n}}}, op, {rt, {n}});
        // Inverse trig/hyperbolic functions mostly see their domain; the edges cover the rest.
        const bool unit = std::string(op) == "acos" || std::string(op) == "asin" || std::string(op) == "atanh" ||
                          std::string(op) == "erf_inv";
        Literal x = input({t, {n}}, unsigned(n) * 31 + unsigned(t), unit ? -1 : -8, unit ? 1 : 8);
        // sin/cos/tan reduce their argument exactly only below 2^20 (docs/ir.md): the
        // integer extremes and 3e38 are left out for them.
        const std::string o = op;
        if (o == "sin" || o == "cos" || o == "tan")
          for (int64_t k = 0; k < n; ++k)
            if (std::fabs(ir::is_float(t)           ? ir::get_f64(x, k)
                          : ir::is_unsigned_int(t) ? double(uint64_t(ir::get_i64(x, k)))
                                                   : double(ir::get_i64(x, k))) > 1e6)
              ir::set_element(x, k, ir::parse_scalar(3));
        check(g, {x}, tolerance(op, rt));
      }
    }
  }
}

TEST(Conformance, BinaryOpsWithBroadcasting) {
  for (const auto& op : {"add", "subtract", "multiply", "divide", "pow", "remainder", "atan2", "max", "min", "quotient",
                         "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "equal", "not_equal",
                         "greater", "less", "less_equal", "greater_equal", "logical_and", "logical_or", "logical_xor"}) {
    const std::string o = op;
    const bool int_only = o == "quotient" || o.rfind("bitwise_", 0) == 0 || o.find("shift") != std::string::npos;
    const bool compare_op = ir::op_family(o) == ir::OpFamily::Compare;
    for (DType t : kAll) {
      if (!supported(t) || (int_only && !ir::is_integer(t))) continue;
      DType rt = compare_op ? DType::U8 : (o == "divide" || o == "atan2") ? ir::to_floating(t) : t;
      // Same shapes at every size, then broadcasting of a row and of a scalar.
      std::vector<std::tuple<ir::Shape, ir::Shape, ir::Shape>> shapes;
      for (int64_t n : kSizes) shapes.push_back({{n}, {n}, {n}});
      shapes.push_back({{7, 1, 5}, {3, 1}, {7, 3, 5}});
      shapes.push_back({{}, {4, 9}, {4, 9}});
      for (auto& [a, b, r] : shapes) {
        auto g = one_op(o + "_" + ir::dtype_name(t) + "_" + ir::shape_string(a) + ir::shape_string(b), {{t, a}, {t, b}}, o, {rt, r});
        // Shifts and powers of integers are interesting for small right operands.
        const bool small = o.find("shift") != std::string::npos || (o == "pow" && ir::is_integer(t));
        Literal lhs = input({t, a}, 7 + unsigned(t)), rhs = input({t, b}, 11 + unsigned(t), small ? 0 : -8, small ? 4 : 8);
        check(g, {lhs, rhs}, tolerance(o, rt));
      }
    }
  }
}

// Squares of floats are one rounding: bit-exact in f32 and f16, as Nx's x ** 2 (the C
// library's pow in double, rounded) is on the host, where a pow through exp and log would
// be an ulp off (1.5 ** 2 = 2.2500002). In f64 the C library's pow, which the reference and
// Erlang call, is itself up to an ulp from the correctly rounded x * x. x ** 0.5 is the
// device's square root, within the sqrt op's bound (NVIDIA's f32 one is not exactly rounded).
TEST(Conformance, FloatSquaresAndSquareRootsAreExact) {
  for (DType t : {DType::F32, DType::F64, DType::F16}) {
    if (!supported(t)) continue;
    auto g = one_op(std::string("pow_square_") + ir::dtype_name(t), {{t, {257}}, {t, {}}}, "pow", {t, {257}});
    for (double y : {2.0, 0.5}) {
      Literal exponent{{t, {}}, std::vector<uint8_t>(ir::TensorType{t, {}}.byte_size())};
      ir::set_element(exponent, 0, ir::parse_scalar(y));
      const Tolerance tol = y == 0.5                ? tolerance("sqrt", t)
                            : t == DType::F64 ? Tolerance{0x1p-52, 0, false}
                                              : Tolerance{};
      check(g, {input({t, {257}}, 13), exponent}, tol);
    }
  }
}

// f64 values with fractions between 2^24 and 2^52: lavapipe on a CPU without 512-bit vectors
// truncates f64 vectors on a path meant for f32, which takes them for integers (round gave
// 16777217.5 back, and pow(-1, 16777217.5) 1 where it is NaN); the kernels truncate f64 by
// floor and ceil instead (Emitter::truncate) and hold no Trunc. Bit for bit, on every
// binade from 2^23 to 2^53, both signs, halves and integers among them.
TEST(Conformance, F64RoundingBeyondF32Precision) {
  if (!supported(DType::F64)) GTEST_SKIP() << "no f64";
  const int64_t n = 1024;
  Literal x{{DType::F64, {n}}, std::vector<uint8_t>(size_t(n) * 8)}, minus_one = x;
  std::mt19937_64 rng(5);
  for (int64_t i = 0; i < n; ++i) {
    const int e = 23 + int(i % 31);
    double v = std::ldexp(1.0 + double(rng() >> 11) * 0x1p-53, e);
    if (i % 7 == 0) v = std::floor(v) + 0.5;
    if (i % 11 == 0) v = std::floor(v);
    ir::set_element(x, i, ir::parse_scalar(i % 2 ? -v : v));
    ir::set_element(minus_one, i, ir::parse_scalar(-1.0));
  }
  const DType f64 = DType::F64;
  for (const char* op : {"round", "floor", "ceil"}) check(one_op(op, {{f64, {n}}}, op, {f64, {n}}), {x}, Tolerance{});
  check(one_op("pow_minus_one", {{f64, {n}}, {f64, {n}}}, "pow", {f64, {n}}), {minus_one, x}, Tolerance{});
  check(one_op("as_s64", {{f64, {n}}}, "as_type", {DType::S64, {n}}), {x}, Tolerance{});
  for (const char* op : {"round", "pow"}) {
    const ir::Graph g = std::string(op) == "round" ? one_op(op, {{f64, {n}}}, op, {f64, {n}})
                                                   : one_op(op, {{f64, {n}}, {f64, {n}}}, op, {f64, {n}});
    for (const auto& k : runtime::Executable::compile(device(), g)->kernels())
      EXPECT_EQ(codegen::disassemble(k.spirv).find(" Trunc "), std::string::npos) << op;
  }
}

TEST(Conformance, Conversions) {
  for (DType from : kAll)
    for (DType to : kAll) {
      if (!supported(from) || !supported(to)) continue;
      auto g = one_op(std::string("as_type_") + ir::dtype_name(from) + "_" + ir::dtype_name(to), {{from, {257}}}, "as_type", {to, {257}});
      check(g, {input({from, {257}}, 3)}, {});
      if (ir::dtype_bits(from) == ir::dtype_bits(to)) {
        auto b = one_op(std::string("bitcast_") + ir::dtype_name(from) + "_" + ir::dtype_name(to), {{from, {257}}}, "bitcast", {to, {257}});
        check(b, {input({from, {257}}, 5)}, {});
      }
    }
}

TEST(Conformance, SelectAndClip) {
  for (DType t : kAll) {
    if (!supported(t)) continue;
    auto g = one_op(std::string("select_") + ir::dtype_name(t), {{DType::U8, {5, 1}}, {t, {5, 7}}, {t, {7}}}, "select", {t, {5, 7}});
    check(g, {input({DType::U8, {5, 1}}, 1, 0, 2), input({t, {5, 7}}, 2), input({t, {7}}, 3)}, {});
    auto c = one_op(std::string("clip_") + ir::dtype_name(t), {{t, {300}}, {t, {}}, {t, {}}}, "clip", {t, {300}});
    Literal lo = input({t, {}}, 4), hi = input({t, {}}, 4);
    ir::set_element(lo, 0, ir::parse_scalar(-3));
    ir::set_element(hi, 0, ir::parse_scalar(5));
    if (ir::is_unsigned_int(t)) ir::set_element(lo, 0, ir::parse_scalar(1));
    check(c, {input({t, {300}}, 5), lo, hi}, {});
  }
}

// Integer abs and sign inside fused chains, the forms NVIDIA's compiler got wrong (driver
// 580): with GLSL's SAbs, `0 - abs(x) > c` was false for every x (the GPU fuzzer's seed
// 40302187), and an s64 SSign of a bitwise_not failed to compile ("NVVM compilation
// failed", seed 40303757). Every comparison and constant sign is covered, at three sizes.
TEST(Conformance, IntegerAbsAndSignInFusedChains) {
  for (DType t : {DType::S8, DType::S16, DType::S32, DType::S64}) {
    if (!supported(t)) continue;
    const std::string tn = ir::dtype_name(t);
    for (int64_t n : {int64_t(1), int64_t(257), int64_t(25600)}) {
      for (const char* cmp : {"greater", "less", "greater_equal", "less_equal", "equal"}) {
        for (int c : {-100, -8, -1, 0, 1}) {
          ir::GraphWriter w("negated_abs_" + std::string(cmp) + "_" + tn + "_" + std::to_string(n));
          const ir::NodeId x = w.param(0, t, {n}), zero = w.scalar(0, t), k = w.scalar(c, t);
          const ir::NodeId a = w.node("abs", {x}, t, {n}), negated = w.node("subtract", {zero, a}, t, {n});
          const ir::NodeId right = w.node(cmp, {negated, k}, DType::U8, {n}), left = w.node(cmp, {k, negated}, DType::U8, {n});
          const ir::NodeId other = w.node(cmp, {w.node("negate", {a}, t, {n}), k}, DType::U8, {n});
          check(w.finish({negated, right, left, other}), {input({t, {n}}, unsigned(n) + unsigned(c + 200), -40, 40)}, {});
        }
      }
      if (!supported(DType::F64)) continue;
      ir::GraphWriter w("sign_of_not_" + tn + "_" + std::to_string(n));
      const ir::NodeId x = w.param(0, t, {n}), i = w.node("iota", {}, DType::F64, {n}, {{"axis", 0}});
      const ir::NodeId sign_of_not = w.node("sign", {w.node("bitwise_not", {x}, t, {n})}, t, {n});
      const ir::NodeId angle = w.node("atan2", {i, w.node("as_type", {sign_of_not}, DType::F64, {n})}, DType::F64, {n});
      const ir::NodeId sign = w.node("sign", {x}, t, {n});
      check(w.finish({angle, sign_of_not, sign}), {input({t, {n}}, unsigned(n) * 7, -40, 40)}, tolerance("atan2", DType::F64));
    }
  }
}

TEST(Conformance, ShapeOpsRanksZeroToSix) {
  for (DType t : {DType::U8, DType::S16, DType::F16, DType::F32, DType::S64, DType::F64}) {
    if (!supported(t)) continue;
    const std::string ty = ir::dtype_name(t);
    // Ranks 0..6: reshape to the reversed shape, transpose reversing the axes, reverse all axes.
    for (size_t rank = 0; rank <= 6; ++rank) {
      ir::Shape s, rs;
      std::string perm = "[", all = "[";
      for (size_t k = 0; k < rank; ++k) s.push_back(int64_t(k % 3) + 2);
      rs.assign(s.rbegin(), s.rend());
      for (size_t k = 0; k < rank; ++k) perm += (k ? "," : "") + std::to_string(rank - 1 - k), all += (k ? "," : "") + std::to_string(k);
      perm += "]", all += "]";
      Literal x = input({t, s}, unsigned(rank));
      check(one_op("reshape_" + ty + std::to_string(rank), {{t, s}}, "reshape", {t, rs}), {x}, {});
      check(one_op("transpose_" + ty + std::to_string(rank), {{t, s}}, "transpose", {t, rs}, R"({"axes": )" + perm + "}"), {x}, {});
      check(one_op("reverse_" + ty + std::to_string(rank), {{t, s}}, "reverse", {t, s}, R"({"axes": )" + all + "}"), {x}, {});
    }
    Literal m = input({t, {4, 1, 6}}, 9);
    check(one_op("squeeze_" + ty, {{t, {4, 1, 6}}}, "squeeze", {t, {4, 6}}, R"({"axes": [1]})"), {m}, {});
    Literal m1 = input({t, {1, 4, 1, 6}}, 9);
    check(one_op("squeeze_kept_" + ty, {{t, {1, 4, 1, 6}}}, "squeeze", {t, {4, 1, 6}}, R"({"axes": [0]})"), {m1}, {});
    check(one_op("broadcast_" + ty, {{t, {4, 1, 6}}}, "broadcast", {t, {2, 4, 5, 6}}, R"({"shape": [2, 4, 5, 6], "axes": [1, 2, 3]})"), {m}, {});
    Literal x = input({t, {9, 10}}, 10);
    check(one_op("slice_" + ty, {{t, {9, 10}}}, "slice", {t, {3, 4}}, R"({"start": [1, 2], "lengths": [7, 7], "strides": [3, 2]})"), {x}, {});
    // Dynamic starts, clamped to the valid range as Nx clamps them.
    for (int64_t st : {-5, 0, 3, 100}) {
      Literal s0{{DType::S32, {}}, std::vector<uint8_t>(4)};
      ir::set_element(s0, 0, ir::parse_scalar(st));
      check(one_op("dynamic_slice_" + ty + std::to_string(st), {{t, {9, 10}}, {DType::S32, {}}}, "slice", {t, {4, 5}},
                   R"({"start": [{"arg": 1}, 2], "lengths": [4, 5], "strides": [1, 1]})"),
            {x, s0}, {});
      check(one_op("put_slice_" + ty + std::to_string(st), {{t, {9, 10}}, {t, {2, 3}}, {DType::S32, {}}}, "put_slice", {t, {9, 10}},
                   R"({"start": [{"arg": 2}, {"arg": 2}]})"),
            {x, input({t, {2, 3}}, 12), s0}, {});
    }
    Literal v = input({t, {}}, 13);
    check(one_op("pad_" + ty, {{t, {9, 10}}, {t, {}}}, "pad", {t, {20, 8}}, R"({"config": [[2, 1, 1], [-1, -1, 0]]})"), {x, v}, {});
    check(one_op("concatenate_" + ty, {{t, {9, 10}}, {t, {9, 3}}}, "concatenate", {t, {9, 13}}, R"({"axis": 1})"),
          {x, input({t, {9, 3}}, 14)}, {});
    check(one_op("stack_" + ty, {{t, {9, 10}}, {t, {9, 10}}}, "stack", {t, {9, 2, 10}}, R"({"axis": 1})"), {x, input({t, {9, 10}}, 15)}, {});
  }
}

TEST(Conformance, SourcesIotaEyeLiterals) {
  for (DType t : {DType::U8, DType::S32, DType::S64, DType::F32, DType::F64}) {
    if (!supported(t)) continue;
    const std::string ty = ir::dtype_name(t);
    auto src = [&](const std::string& op, const ir::Shape& s, const std::string& attrs) { return one_op(op + ty, {}, op, {t, s}, attrs); };
    check(src("iota", {3, 4, 5}, R"({"axis": 1})"), {}, {});
    check(src("iota", {3, 4, 5}, R"({"axis": null})"), {}, {});
    check(src("eye", {2, 3, 4}, "{}"), {}, {});
    check(src("constant", {2, 3}, R"({"value": 7})"), {}, {});
    check(src("tensor", {2, 2}, R"({"data": [1, 2, 3, 0]})"), {}, {});
  }
}

TEST(Conformance, ReductionsOverAnyAxes) {
  for (const auto& op : {"sum", "product", "reduce_max", "reduce_min", "all", "any", "argmax", "argmin"}) {
    const std::string o = op;
    for (DType t : kAll) {
      if (!supported(t)) continue;
      const bool arg = o == "argmax" || o == "argmin";
      DType rt = o == "all" || o == "any" ? DType::U8 : arg ? DType::S64 : t;
      if (o == "sum" || o == "product") rt = ir::is_signed_int(t) ? DType::S64 : ir::is_unsigned_int(t) ? DType::U64 : t;
      if (!supported(rt)) continue;
      const ir::Shape s = {5, 6, 7};
      // Innermost, outermost, middle, several, all; with and without keep_axes.
      std::vector<std::tuple<std::string, ir::Shape>> cases;
      if (arg) {
        cases = {{R"({"axis": 2, "tie_break": "low"})", {5, 6}}, {R"({"axis": 0, "keep_axis": true, "tie_break": "high"})", {1, 6, 7}},
                 {R"({"axis": null})", {}}};
      } else {
        cases = {{R"({"axes": [2]})", {5, 6}}, {R"({"axes": [0], "keep_axes": true})", {1, 6, 7}}, {R"({"axes": [1]})", {5, 7}},
                 {R"({"axes": [0, 2]})", {6}}, {R"({"axes": null})", {}}};
      }
      // Products overflow floats quickly: keep factors near 1.
      const bool product = o == "product";
      Literal x = input({t, s}, 21 + unsigned(t), product ? -1.2 : -8, product ? 1.2 : 8);
      for (auto& [attrs, rs] : cases) {
        auto g = one_op(o + "_" + ir::dtype_name(t) + attrs, {{t, s}}, o, {rt, rs}, attrs);
        Tolerance tol;
        if (ir::is_float(rt) && (o == "sum" || o == "product")) tol = {1e-5 * (rt == DType::F64 ? 1e-8 : 1) + (ir::dtype_bits(rt) == 16 ? 1e-2 : 0), 1e-6, false};
        check(g, {x}, tol);
      }
    }
  }
}

TEST(Conformance, DotContractionsAndBatches) {
  for (DType t : {DType::S32, DType::U8, DType::F16, DType::F32, DType::F64}) {
    if (!supported(t)) continue;
    const std::string ty = ir::dtype_name(t);
    Tolerance tol = ir::is_float(t) ? Tolerance{t == DType::F16 ? 1e-2 : 1e-5, 1e-5, false} : Tolerance{};
    auto dot = [&](const std::string& name, ir::Shape a, ir::Shape b, ir::Shape r, const std::string& attrs) {
      check(one_op(name + "_" + ty, {{t, a}, {t, b}}, "dot", {t, r}, attrs), {input({t, a}, 31, -2, 2), input({t, b}, 37, -2, 2)}, tol);
    };
    dot("matmul", {7, 13}, {13, 5}, {7, 5}, R"({"contract_axes1": [1], "contract_axes2": [0]})");
    dot("batched", {3, 4, 6}, {3, 6, 2}, {3, 4, 2}, R"({"contract_axes1": [2], "batch_axes1": [0], "contract_axes2": [1], "batch_axes2": [0]})");
    dot("vector", {257}, {257}, {}, R"({"contract_axes1": [0], "contract_axes2": [0]})");
    dot("outer", {4}, {3}, {4, 3}, R"({"contract_axes1": [], "contract_axes2": []})");
    dot("transposed", {13, 7}, {5, 13}, {7, 5}, R"({"contract_axes1": [0], "contract_axes2": [1]})");
  }
}

// Integer dots whose contraction split-reduction splits (4096 terms or more into few
// outputs): the parts sum in the dot's own type, not in 64 bits (which a device may lack),
// wrapping as the dot does; the inputs overflow it many times over.
TEST(Conformance, LongIntegerDotsWrapInTheirType) {
  for (DType t : {DType::S32, DType::U32, DType::S8, DType::U16}) {
    if (!supported(t)) continue;
    for (int64_t k : {4096, 40960}) {
      const std::string name = std::string("long_dot_") + ir::dtype_name(t) + "_" + std::to_string(k);
      auto g = one_op(name, {{t, {4, k}}, {t, {k}}}, "dot", {t, {4}}, R"({"contract_axes1": [1], "contract_axes2": [0]})");
      check(g, {input({t, {4, k}}, 51, -2e8, 2e8), input({t, {k}}, 53, -2e8, 2e8)}, Tolerance{});
    }
  }
}

// Indices in [lo, hi]: a range a little wider than the axes they address, so that some are
// negative or past the end (gather clamps them, indexed_* skip them: docs/ir.md) and, with
// more indices than positions, many repeat.
Literal indices(DType t, const ir::Shape& s, unsigned seed, int64_t lo, int64_t hi) {
  Literal lit{{t, s}, std::vector<uint8_t>(ir::TensorType{t, s}.byte_size())};
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> d(lo, hi);
  for (int64_t k = 0; k < lit.type.num_elements(); ++k) {
    ir::Scalar v;
    v.i = d(rng);
    v.is_integer = true;
    ir::set_element(lit, k, v);
  }
  return lit;
}

// Values for sums compared with an f64 reference: the edge values but the huge finite ones,
// whose f32 partial sums may overflow where the reference's (in double) do not.
Literal summands(const ir::TensorType& t, unsigned seed) {
  Literal lit = input(t, seed);
  if (!ir::is_float(t.dtype)) return lit;
  for (int64_t k = 0; k < t.num_elements(); ++k)
    if (std::isfinite(ir::get_f64(lit, k)) && std::fabs(ir::get_f64(lit, k)) > 1e6) ir::set_element(lit, k, ir::parse_scalar(-3.25));
  return lit;
}

const std::vector<DType> kIndexedData = {DType::F32, DType::F64, DType::S32};

TEST(Conformance, GatherClampsIndicesRanksOneToThree) {
  struct Case {
    ir::Shape x, indices, out;
    std::string axes;  // "" for the default (leading axes)
  };
  const std::vector<Case> cases = {
      {{7}, {5, 1}, {5}, ""},
      {{4, 6}, {3, 2}, {3}, ""},
      {{4, 6}, {5, 1}, {5, 6}, ""},
      {{4, 6}, {2, 3, 1}, {2, 3, 4}, "[1]"},
      {{3, 4, 5}, {2, 2}, {2, 4}, "[0, 2]"},
      {{3, 4, 5}, {6, 1}, {6, 3, 5}, "[1]"},
      {{3, 4, 5}, {2, 2, 3}, {2, 2}, "[0, 1, 2]"},
      {{257, 3}, {1009, 1}, {1009, 3}, ""},
  };
  for (DType t : kIndexedData) {
    if (!supported(t)) continue;
    for (DType it : {DType::S32, DType::S64, DType::U8, DType::S8}) {
      if (!supported(it)) continue;
      for (size_t c = 0; c < cases.size(); ++c) {
        const auto& k = cases[c];
        const std::string attrs = k.axes.empty() ? "{}" : R"({"axes": )" + k.axes + "}";
        auto g = one_op("gather_" + std::string(ir::dtype_name(t)) + "_" + ir::dtype_name(it) + "_" + std::to_string(c),
                        {{t, k.x}, {it, k.indices}}, "gather", {t, k.out}, attrs);
        const int64_t longest = *std::max_element(k.x.begin(), k.x.end());
        check(g, {input({t, k.x}, unsigned(c) + 3), indices(it, k.indices, unsigned(c) * 7 + unsigned(it), ir::is_unsigned_int(it) ? 0 : -3, longest + 2)}, {});
      }
    }
  }
}

TEST(Conformance, IndexedAddAndPutWithRepeatedAndOutOfRangeIndices) {
  struct Case {
    ir::Shape target, indices, updates;
    std::string axes;
  };
  const std::vector<Case> cases = {
      {{7}, {9, 1}, {9}, ""},
      {{4, 6}, {5, 2}, {5}, ""},
      {{4, 6}, {5, 1}, {5, 6}, ""},
      {{4, 6}, {5, 1}, {5, 4}, "[1]"},
      {{4, 6}, {3, 1}, {3, 2}, ""},          // a window narrower than the target's axis 1
      {{3, 4, 5}, {6, 2}, {6, 4}, "[0, 2]"},
      {{3, 4, 5}, {4, 3}, {4}, ""},
      {{3, 4, 5}, {5, 1}, {5, 3, 5}, "[1]"},
      {{3, 4, 5}, {2, 1}, {2, 2, 3}, ""},    // narrower on two axes
      {{257, 3}, {300, 1}, {300, 3}, ""},
  };
  for (const std::string op : {"indexed_add", "indexed_put"}) {
    for (DType t : kIndexedData) {
      if (!supported(t)) continue;
      // f32 sums in f32 rather than double; where a launch splits the fold over the updates
      // across a workgroup (NVIDIA, few outputs), sums of either width in another order.
      const Tolerance tol = op != "indexed_add" || !ir::is_float(t) ? Tolerance{}
                            : t == DType::F32                    ? Tolerance{1e-6, 1e-5, false}
                                                                 : Tolerance{1e-14, 1e-14, false};
      for (DType it : {DType::S32, DType::S64, DType::U8}) {
        if (!supported(it)) continue;
        for (size_t c = 0; c < cases.size(); ++c) {
          const auto& k = cases[c];
          const std::string attrs = k.axes.empty() ? "{}" : R"({"axes": )" + k.axes + "}";
          auto g = one_op(op + "_" + ir::dtype_name(t) + "_" + ir::dtype_name(it) + "_" + std::to_string(c),
                          {{t, k.target}, {it, k.indices}, {t, k.updates}}, op, {t, k.target}, attrs);
          const int64_t longest = *std::max_element(k.target.begin(), k.target.end());
          check(g, {input({t, k.target}, unsigned(c) + 5), indices(it, k.indices, unsigned(c) * 5 + unsigned(it), ir::is_unsigned_int(it) ? 0 : -2, longest + 1),
                    summands({t, k.updates}, unsigned(c) + 11)},
                tol);
        }
      }
    }
  }
}

// Few outputs with thousands of updates: every output element's fold is split over a
// workgroup (with subgroup shuffles as for NVIDIA), whose partial results must combine to
// the sum, and to the last matching update for indexed_put; an integer target with float
// updates gives a float result.
TEST(Conformance, IndexedOpsOverManyUpdatesCooperate) {
  for (uint32_t vendor : {0u, 0x10DEu}) {
    runtime::CompileOptions opts;
    opts.as_vendor = vendor;
    for (const std::string op : {"indexed_add", "indexed_put"}) {
      for (DType t : kIndexedData) {
        if (!supported(t)) continue;
        const Tolerance tol = op == "indexed_add" && ir::is_float(t) ? Tolerance{1e-5, 1e-3, false} : Tolerance{};
        auto g = one_op(op + "_many_" + ir::dtype_name(t) + std::to_string(vendor), {{t, {3, 2}}, {DType::S32, {5000, 1}}, {t, {5000, 2}}}, op,
                        {t, {3, 2}});
        check(g, {input({t, {3, 2}}, 1), indices(DType::S32, {5000, 1}, 2, -1, 3), summands({t, {5000, 2}}, 3)}, tol, opts);
      }
      // s64 indices (Nx's default) where the device has them.
      const DType it = supported(DType::S64) ? DType::S64 : DType::S32;
      auto mixed = one_op(op + "_s32_into_f32" + std::to_string(vendor), {{DType::S32, {3}}, {it, {2000, 1}}, {DType::F32, {2000}}}, op,
                          {DType::F32, {3}});
      check(mixed, {input({DType::S32, {3}}, 4), indices(it, {2000, 1}, 5, 0, 2), summands({DType::F32, {2000}}, 6)},
            op == "indexed_add" ? Tolerance{1e-5, 1e-3, false} : Tolerance{}, opts);
    }
  }
}

// Values whose sums are exact in every float type and order (quarters in [-8, 8]), so that
// the sorted form's chunks (each adding its rows' sum to the result so far) must give the
// interpreter's bits; among them -0.0, NaN and +Inf, which an element keeps where no update
// aims at it and propagates where one does. Integers: full-range values, which wrap.
Literal exact_summands(const ir::TensorType& t, unsigned seed, bool specials) {
  if (!ir::is_float(t.dtype)) return input(t, seed);
  Literal lit{t, std::vector<uint8_t>(t.byte_size())};
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> quarter(-32, 32);
  for (int64_t k = 0; k < t.num_elements(); ++k) {
    ir::Scalar v;
    v.f = k % 97 == 3 && specials ? -0.0 : k % 101 == 5 && specials ? NAN : k % 103 == 7 && specials ? INFINITY : quarter(rng) / 4.0;
    ir::set_element(lit, k, v);
  }
  return lit;
}

// Enough updates that sort-indexed sorts them (its form checked here), into a small and a
// large target (two index components, a window narrower than the target), with repeated,
// negative and past-the-end indices: the device's binary searches, runs and (on a device
// that bounds loop steps) chunks must give the interpreter's result bit for bit.
TEST(Conformance, SortedIndexedOpsGrowAlongTheirUpdates) {
  struct Case {
    ir::Shape target, window;
    int64_t depth;
  };
  const std::vector<Case> cases = {{{300}, {}, 1}, {{200, 100, 3}, {2}, 2}};
  const auto bounds = codegen::kernel_bounds(device()->info().caps);
  // The sorted op binds 5 inputs and a result; with fewer bindings the fold stays (lit:
  // passes/sort-indexed.test), quadratic at these sizes.
  if (bounds.max_bindings < 6)
    GTEST_SKIP() << device()->info().name << " binds " << bounds.max_bindings
                 << " storage buffers per kernel (maxPerStageDescriptorStorageBuffers); the sorted form needs 6";
  for (const std::string op : {"indexed_add", "indexed_put"}) {
    for (DType t : kIndexedData) {
      if (!supported(t)) continue;
      for (int64_t n : {1000, 10000, 100000}) {
        for (size_t c = 0; c < cases.size(); ++c) {
          const auto& k = cases[c];
          ir::Shape us{n};
          us.insert(us.end(), k.window.begin(), k.window.end());
          const ir::TensorType target{t, k.target}, index_type{DType::S32, {n, k.depth}}, updates{t, us};
          auto g = one_op(op + "_sorted_" + ir::dtype_name(t) + "_" + std::to_string(n) + "_" + std::to_string(c), {target, index_type, updates}, op, target);
          ir::Graph sorted = g;
          passes::PassManager({"sort-indexed"}, bounds).run(sorted);
          EXPECT_TRUE(std::any_of(sorted.nodes.begin(), sorted.nodes.end(), [](const ir::Node& x) { return ir::is_sorted_indexed(x); }))
              << g.name << ": sort-indexed left the fold";
          const int64_t longest = *std::max_element(k.target.begin(), k.target.end());
          check(g, {exact_summands(target, unsigned(n + c), true), indices(DType::S32, index_type.shape, unsigned(n) * 3 + unsigned(c), -2, longest + 1),
                    exact_summands(updates, unsigned(n + c) + 7, false)},
                Tolerance{});
        }
      }
    }
  }
}

// Scans (cumulative_*), exact wherever the inputs make the order of the fold irrelevant, so
// that the device's blocks (passes/split-scan, workgroup runs) must give the interpreter's
// serial result bit for bit: integers wrap (modular arithmetic associates), min and max
// select, float sums of small integers are exact below 2^(mantissa bits), float products of
// ±1, ±2 and ±0.5 are exact while their exponents stay in range (a line of 16-bit floats is
// kept to 257 for that). Lines longer than 1024 are split; 1031 and 2049 are padded.
Literal scan_input(const std::string& op, const ir::TensorType& t, unsigned seed) {
  if (op == "cumulative_min" || op == "cumulative_max" || !ir::is_float(t.dtype)) return input(t, seed);
  Literal lit{t, std::vector<uint8_t>(t.byte_size())};
  std::mt19937_64 rng(seed);
  const bool narrow = ir::dtype_bits(t.dtype) == 16;
  std::uniform_int_distribution<int> small(narrow ? -1 : -2, narrow ? 1 : 2), die(0, 19);
  for (int64_t k = 0; k < t.num_elements(); ++k) {
    ir::Scalar v;
    if (op == "cumulative_sum") v.f = small(rng);
    else v.f = (die(rng) == 0 ? (die(rng) < 10 ? 2.0 : 0.5) : 1.0) * (die(rng) < 10 ? -1 : 1);
    ir::set_element(lit, k, v);
  }
  return lit;
}

struct ScanCase {
  ir::Shape shape;
  int64_t axis;
};

void check_scans(const std::vector<ScanCase>& cases, const std::vector<DType>& types, const runtime::CompileOptions& opts = {}) {
  for (const std::string op : {"cumulative_sum", "cumulative_product", "cumulative_min", "cumulative_max"})
    for (DType t : types) {
      if (!supported(t)) continue;
      for (const auto& c : cases)
        for (bool reverse : {false, true}) {
          if (ir::dtype_bits(t) == 16 && op == "cumulative_product" && c.shape[c.axis] > 257) continue;
          const std::string attrs = R"({"axis": )" + std::to_string(c.axis) + R"(, "reverse": )" + (reverse ? "true" : "false") + "}";
          auto g = one_op(op + "_" + ir::dtype_name(t) + "_" + ir::shape_string(c.shape) + attrs, {{t, c.shape}}, op, {t, c.shape}, attrs);
          // ±0 ties of min and max may keep either zero.
          const bool select = op == "cumulative_min" || op == "cumulative_max";
          check(g, {scan_input(op, {t, c.shape}, 31 + unsigned(t))}, Tolerance{0, 0, !select}, opts);
        }
    }
}

const std::vector<ScanCase> kScanCases = {{{1}, 0},       {{257}, 0},       {{1009}, 0},     {{5, 6, 7}, 0}, {{5, 6, 7}, 1},
                                          {{5, 6, 7}, 2}, {{3, 1031}, 1},   {{2049, 2}, 0}};

TEST(Conformance, ScansEveryTypeAxisAndDirection) { check_scans(kScanCases, kAll); }

// NVIDIA's code path: a workgroup per line of the innermost axis, runs' totals scanned
// through shared memory.
TEST(Conformance, ScansInWorkgroups) {
  runtime::CompileOptions opts;
  opts.as_vendor = 0x10DE;
  check_scans({{{1009}, 0}, {{3, 1031}, 1}, {{4, 64}, 1}, {{2, 33}, 1}, {{5, 6, 7}, 0}}, {DType::U8, DType::S32, DType::S64, DType::F16, DType::F32, DType::F64}, opts);
}

// NaN and the infinities keep their classes in any order: from a NaN on, a line of
// cumulative_sum/min/max is NaN; inf + -inf is NaN. The random reals between them make the
// sums inexact: 64 ulp, relative to values of a few units, covers any order of a few terms.
TEST(Conformance, ScansPropagateNanAndInfinities) {
  for (const std::string op : {"cumulative_sum", "cumulative_product", "cumulative_min", "cumulative_max"})
    for (DType t : kFloats) {
      if (!supported(t)) continue;
      const double eps = t == DType::F64 ? 0x1p-52 : t == DType::F32 ? 0x1p-23 : t == DType::F16 ? 0x1p-10 : 0x1p-7;
      for (bool reverse : {false, true}) {
        const std::string attrs = std::string(R"({"axis": 1, "reverse": )") + (reverse ? "true" : "false") + "}";
        auto g = one_op(op + "_special_" + ir::dtype_name(t) + attrs, {{t, {2, 13}}}, op, {t, {2, 13}}, attrs);
        check(g, {input({t, {2, 13}}, 41)}, Tolerance{64 * eps, 64 * eps, false});
      }
    }
}

// Lines of n, 10n and 100n (10^6) elements, exact (f32 sums of integers in [-4, 4] stay
// below 2^24), on both code paths; u8 and s32 sums wrap many times.
TEST(Conformance, ScansAtScale) {
  for (uint32_t vendor : {0u, 0x10DEu})
    for (int64_t n : {10000, 100000, 1000000})
      for (DType t : {DType::F32, DType::S32, DType::U8}) {
        runtime::CompileOptions opts;
        opts.as_vendor = vendor;
        Literal x{{t, {n}}, std::vector<uint8_t>(size_t(n) * size_t(ir::dtype_bytes(t)))};
        std::mt19937_64 rng(n);
        std::uniform_int_distribution<int64_t> d(t == DType::F32 ? -4 : -2000000000, t == DType::F32 ? 4 : 2000000000);
        for (int64_t k = 0; k < n; ++k) {
          ir::Scalar v;
          v.i = d(rng);
          v.f = double(v.i);
          v.is_integer = t != DType::F32;
          ir::set_element(x, k, v);
        }
        for (const std::string attrs : {R"({"axis": 0})", R"({"axis": 0, "reverse": true})"}) {
          auto g = one_op("cumsum_" + std::to_string(n) + ir::dtype_name(t) + std::to_string(vendor) + attrs, {{t, {n}}}, "cumulative_sum", {t, {n}}, attrs);
          check(g, {x}, Tolerance{}, opts);
        }
      }
}

// Long lines at n, 10n and 100n, none a multiple of a block (lavapipe's 1024, NVIDIA's 4096):
// split-scan's reduce, scan and rescan from carries, every op in an integer and a float type,
// on both code paths, exact as above: rows (the innermost axis) forward, columns reversed.
// Float products stay at the shorter lengths, where their random walk of exponents stays in
// range.
TEST(Conformance, LongScansEveryOpAxisAndDirection) {
  const std::vector<std::pair<std::string, std::vector<DType>>> ops = {{"cumulative_sum", {DType::U8, DType::F32}},
                                                                       {"cumulative_product", {DType::S64, DType::F32}},
                                                                       {"cumulative_min", {DType::S64, DType::F32}},
                                                                       {"cumulative_max", {DType::U8, DType::F64}}};
  for (uint32_t vendor : {0u, 0x10DEu})
    for (const auto& [op, types] : ops)
      for (DType t : types)
        for (int64_t n : {1500, 15000, 150000})
          for (const ScanCase& c : {ScanCase{{3, n}, 1}, ScanCase{{n, 3}, 0}}) {
            if (!supported(t) || (op == "cumulative_product" && ir::is_float(t) && n > 20000)) continue;
            runtime::CompileOptions opts;
            opts.as_vendor = vendor;
            const bool reverse = c.axis == 0;
            const std::string attrs = R"({"axis": )" + std::to_string(c.axis) + R"(, "reverse": )" + (reverse ? "true" : "false") + "}";
            auto g = one_op(op + "_long_" + ir::dtype_name(t) + ir::shape_string(c.shape) + std::to_string(vendor) + attrs, {{t, c.shape}}, op, {t, c.shape}, attrs);
            const bool select = op == "cumulative_min" || op == "cumulative_max";
            check(g, {scan_input(op, {t, c.shape}, 61 + unsigned(n))}, Tolerance{0, 0, !select}, opts);
          }
}

// A scan from carries (split-scan's last pass) against the interpreter's: each segment folds
// from its carry, or with carry_totals from the totals of the segments before it, the last
// segment shorter where the segment does not divide the axis. The inputs' sums and products
// are exact in any order (small integers, powers of two), so the workgroups' fold of the
// totals matches the interpreter's serial one bit for bit.
TEST(Conformance, ScansFromCarries) {
  struct Carried {
    ir::Shape shape;
    int64_t axis, segment;
  };
  // {2, 5000}: more segments (50) than the workgroup has invocations (16), which share their fold.
  const std::vector<Carried> cases = {{{3, 700}, 1, 100}, {{700, 3}, 0, 128}, {{2, 50, 3}, 1, 7}, {{5}, 0, 8}, {{2, 5000}, 1, 100}};
  for (uint32_t vendor : {0u, 0x10DEu})
    for (const std::string op : {"cumulative_sum", "cumulative_product", "cumulative_min", "cumulative_max"})
      for (DType t : {DType::S8, DType::U32, DType::S64, DType::F16, DType::F64}) {
        if (!supported(t)) continue;
        for (const auto& c : cases)
          for (auto [reverse, totals] : {std::pair{false, false}, {true, false}, {false, true}, {true, true}}) {
            runtime::CompileOptions opts;
            opts.as_vendor = vendor;
            ir::Shape cs = c.shape;
            cs[c.axis] = (c.shape[c.axis] + c.segment - 1) / c.segment;
            const std::string attrs = R"({"axis": )" + std::to_string(c.axis) + R"(, "reverse": )" + (reverse ? "true" : "false") +
                                      R"(, "segment": )" + std::to_string(c.segment) + (totals ? R"(, "carry_totals": true)" : "") + "}";
            auto g = one_op(op + "_carried_" + ir::dtype_name(t) + ir::shape_string(c.shape) + std::to_string(vendor) + attrs, {{t, c.shape}, {t, cs}}, op, {t, c.shape}, attrs);
            const bool select = op == "cumulative_min" || op == "cumulative_max";
            check(g, {scan_input(op, {t, c.shape}, 71), scan_input(op, {t, cs}, 72)}, Tolerance{0, 0, !select}, opts);
          }
      }
}

// Random reals: the device's blocks and the interpreter's serial fold round differently.
// Both errors grow like sqrt(k)·eps·S_k over a prefix of k positive terms summing to S_k
// (recursive summation with random rounding errors, Higham 2002 §4.2); 16·sqrt(10^6)·eps
// bounds the difference relatively: 2e-3 for f32, 4e-12 for f64. Columns of 1000 x 1000
// (axis 0) take the coalesced path, rows (axis 1) the workgroups on NVIDIA's.
TEST(Conformance, ScansOfRealsWithinTheirRoundingBound) {
  for (DType t : {DType::F32, DType::F64}) {
    if (!supported(t)) continue;
    const double rel = 16 * 1000 * (t == DType::F32 ? 0x1p-23 : 0x1p-52);
    for (const ir::Shape& shape : {ir::Shape{1000000}, ir::Shape{1000, 1000}})
      for (int64_t axis = 0; axis < int64_t(shape.size()); ++axis) {
        const std::string attrs = R"({"axis": )" + std::to_string(axis) + "}";
        auto g = one_op(std::string("cumsum_reals_") + ir::dtype_name(t) + ir::shape_string(shape) + attrs, {{t, shape}}, "cumulative_sum", {t, shape}, attrs);
        Literal x = input({t, shape}, 51, 0, 1);
        for (int64_t k = 0; k < 16; ++k) ir::set_element(x, k, ir::Scalar{0.25, 0, false});  // past the edge values
        runtime::CompileOptions nv;
        nv.as_vendor = 0x10DE;
        check(g, {x}, Tolerance{rel, 0, false});
        check(g, {x}, Tolerance{rel, 0, false}, nv);
      }
  }
}

}  // namespace
}  // namespace nxv
