// Special-value conformance: every float elementwise op, comparison, select/clip, reduction,
// dot and cast over the operands {±0, ±1, ±Inf, NaN, ±max finite, ±smallest subnormal} of
// f16, bf16, f32 and f64, each operand given as a tensor, as a literal (an IR `constant`,
// which codegen emits into the module, where the driver's constant folder sees it) and as
// a broadcast scalar tensor. Expectations are IEEE 754 / C99 Annex F / Nx values computed
// here on the host from the operands (never by the device or the reference interpreter).
//
// Exact: arithmetic (+ - * /), negate, abs, sign, floor, ceil, round, max/min (Nx: NaN
// wins, a tie keeps the first operand), comparisons, predicates, select, clip, remainder,
// casts. Transcendentals (and sqrt, rsqrt, cbrt, pow, atan2): the special outcomes are
// exact — NaN where NaN, the infinity with its sign, a zero with its sign, and the exact
// values Annex F defines for special operands (exp(0) = 1, tanh(±Inf) = ±1, pow(x, 0) = 1)
// — and other results are only checked to be finite (their accuracy is conformance_test's).
//
// Subnormals: where the device's float controls (shaderDenormPreserveFloat32/64, shown by
// `nxv devices` as denorms_f32/f64) do not promise to keep them, the device may instead give
// the result on flushed operands, flushed (bf16 is computed in f32 and follows f32; f16
// subnormals are normal f32 register values and are always kept).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <set>

#include "codegen/kernel.h"
#include "codegen/targets/launch.h"
#include "ir/graph_writer.h"
#include "ir/interpreter.h"
#include "ir/json.h"
#include "ir/literal.h"
#include "passes/pass.h"
#include "runtime/runtime.h"
#include "device_testing.h"

namespace nxv {
namespace {

using ir::DType;
using ir::GraphWriter;
using ir::Literal;
using ir::NodeId;
using nlohmann::json;

using devtest::device;

// f64 last: a test's NXV_SKIP_WITHOUT(t) (f64 where the device can run it neither natively
// nor emulated) skips the rest of it after the other types have run.
const std::vector<DType> kFloats = {DType::F16, DType::BF16, DType::F32, DType::F64};

// The value a double has in type t's storage (f16/bf16 through f32, as the device rounds).
double round_to(DType t, double v) {
  if (t == DType::F64) return v;
  const float f = float(v);
  if (t == DType::F16) return ir::f16_to_f32(ir::f32_to_f16(f));
  if (t == DType::BF16) return ir::bf16_to_f32(ir::f32_to_bf16(f));
  return f;
}

double max_finite(DType t) {
  switch (t) {
    case DType::F16: return 65504.0;
    case DType::BF16: return 0x1.fep127;
    case DType::F32: return FLT_MAX;
    default: return DBL_MAX;
  }
}
double smallest_subnormal(DType t) {
  switch (t) {
    case DType::F16: return 0x1p-24;
    case DType::BF16: return 0x1p-133;
    case DType::F32: return 0x1p-149;
    default: return 0x1p-1074;
  }
}

std::vector<double> special_values(DType t) {
  return {0.0, -0.0, 1.0, -1.0, INFINITY, -INFINITY, NAN, max_finite(t), -max_finite(t), smallest_subnormal(t),
          -smallest_subnormal(t)};
}

// Emulated f64 (a device without shaderFloat64, or NXV_EMULATE=f64) computes every f64 op
// as 32-bit integer code: hundreds of instructions for + - * /, ten thousand to a quarter
// million for the math library (erfc 121k, erf_inv 249k), which our codegen and the driver
// (lavapipe's LLVM, at the first dispatch) take seconds each to compile. So there the costly ops (the
// math library, pow, atan2, remainder's loop) compile each op once where they compiled it
// once per case: the tensor and broadcast-scalar cases share one kernel (the operands
// concatenated before the op), and the literals the device computes are one normal value (or
// pair) per op, `salt` (the op's place in its list) choosing which, that the driver folds.
// Every special value stays every op's operand on the device (tensor and broadcast scalar,
// all values and pairs) and in the constant-folded literal case; special values as literals
// the device computes stay covered by the cheap ops (all values, all pairs), a literal
// reaching emulated code as the same integer constant (or push-constant-hidden bits)
// whatever op uses it.
bool emulated(DType t) { return t == DType::F64 && device()->info().caps.emulate_f64; }

// Whether the op's cases share kernels and take one device-computed literal (emulated()).
bool compiles_once(DType t, bool costly) { return emulated(t) && costly; }

// The indices of special_values(t) an op takes as literals the device computes: all, or one
// normal value (±1, ±max finite) where compiles_once.
std::vector<size_t> device_literals(DType t, bool costly, size_t salt) {
  const size_t normal[] = {2, 3, 7, 8};
  if (compiles_once(t, costly)) return {normal[salt % 4]};
  std::vector<size_t> all(special_values(t).size());
  for (size_t k = 0; k < all.size(); ++k) all[k] = k;
  return all;
}

// A subnormal of a width the device may flush (its reported float controls) as the zero it
// may give instead.
double flush(DType t, double v) { return devtest::flushes_subnormals(t) ? devtest::zero_if_subnormal(t, v) : v; }

std::string describe(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return std::signbit(v) && v == 0 ? "-0" : buf;
}

// A float tensor holding v.
Literal literal(DType t, const ir::Shape& s, const std::vector<double>& v) {
  Literal lit{{t, s}, std::vector<uint8_t>(ir::TensorType{t, s}.byte_size())};
  for (size_t k = 0; k < v.size(); ++k) {
    ir::Scalar x;
    x.f = v[k];
    ir::set_element(lit, int64_t(k), x);
  }
  return lit;
}

// ---- graphs (ir::GraphWriter) ----
// A dot's attrs: each operand's contracted axes, and batch axes shared by both.
json contraction(std::vector<int> lhs, std::vector<int> rhs, std::vector<int> batch) {
  return {{"contract_axes1", lhs}, {"contract_axes2", rhs}, {"batch_axes1", batch}, {"batch_axes2", batch}};
}

// The default pipeline without constant folding: ops on literals alone then run on the
// device, where the driver sees the literals (with folding the host computes them).
runtime::CompileOptions device_computes_literals() {
  runtime::CompileOptions o;
  for (const auto& p : passes::default_pipeline())
    if (p != "constant-fold") o.pipeline.push_back(p);
  return o;
}

std::vector<Literal> run(const ir::Graph& g, const std::vector<Literal>& inputs, const runtime::CompileOptions& opts = {}) {
  return runtime::Executable::compile(device(), g, opts)->run_host(inputs);
}

// ---- expectations ----
enum class Check { Exact, Special };  // Special: the special outcomes exact, other results finite

bool bit_equal(double w, double g) { return std::isnan(w) ? std::isnan(g) : w == g && std::signbit(w) == std::signbit(g); }

bool agrees(double w, double g, Check how, bool operands_special) {
  if (how == Check::Exact || std::isnan(w) || std::isinf(w)) return bit_equal(w, g);
  if (w == 0) return operands_special ? bit_equal(w, g) : std::fabs(g) < 1e-30;  // an underflow: near enough
  if (operands_special && w == std::trunc(w) && std::fabs(w) <= 2) return bit_equal(w, g);  // exp(0), tanh(inf), erfc(-inf)
  return std::isfinite(g);
}

bool is_special(double v) { return v == 0 || !std::isfinite(v); }

// Collects mismatches of one op into a readable failure.
struct Report {
  std::string op;
  DType t;
  std::string kind;
  std::vector<std::string> errors;
  // `alt`: the result on operands the device flushes, flushed. Vulkan lets a flushing device
  // flush each operand and result or not (NVIDIA's min and max compare a subnormal as zero but
  // return its bits unflushed), so a result that flushes to `alt` passes too.
  // Without shaderSignedZeroInfNanPreserve a zero's sign is not promised either, so a zero
  // where the flushed result is a zero passes whatever its sign.
  void expect(const std::string& operands, double want, double got, Check how, bool operands_special, double alt) {
    if (agrees(want, got, how, operands_special) || agrees(alt, got, how, operands_special) ||
        agrees(alt, flush(t, got), how, operands_special))
      return;
    if (!devtest::preserves_special_values(t) && alt == 0 && flush(t, got) == 0) return;
    if (errors.size() < 12) errors.push_back(op + "(" + operands + ") = " + describe(got) + ", want " + describe(want));
    else if (errors.size() == 12) errors.push_back("...");
  }
  ~Report() {
    if (!errors.empty()) {
      std::string all;
      for (const auto& e : errors) all += "\n  " + e;
      ADD_FAILURE() << op << " " << ir::dtype_name(t) << " with " << kind << " operands:" << all;
    }
  }
};

// Unary float ops and predicates in double (C99 Annex F, Nx for sign/round/erf_inv).
struct UnaryOp {
  const char* name;
  std::function<double(double)> f;
  Check how;
  bool predicate = false;
};

double erf_inv(double y) {
  if (std::isnan(y) || std::fabs(y) > 1) return NAN;
  if (std::fabs(y) == 1) return std::copysign(INFINITY, y);
  if (y == 0) return y;
  return std::copysign(1.0, y);  // some finite value: only its finiteness is checked
}

const std::vector<UnaryOp>& unary_ops() {
  static const std::vector<UnaryOp> ops = {
      {"negate", [](double x) { return -x; }, Check::Exact},
      {"abs", [](double x) { return std::fabs(x); }, Check::Exact},
      {"sign", [](double x) { return x < 0 ? -1.0 : x > 0 ? 1.0 : x; }, Check::Exact},  // keeps ±0, NaN
      {"floor", [](double x) { return std::floor(x); }, Check::Exact},
      {"ceil", [](double x) { return std::ceil(x); }, Check::Exact},
      {"round", [](double x) { double r = std::round(x); return r == 0 ? 0.0 : r; }, Check::Exact},  // Nx: +0
      {"is_nan", [](double x) { return double(std::isnan(x)); }, Check::Exact, true},
      {"is_infinity", [](double x) { return double(std::isinf(x)); }, Check::Exact, true},
      {"logical_not", [](double x) { return double(x == 0); }, Check::Exact, true},  // NaN is true
      {"sqrt", [](double x) { return std::sqrt(x); }, Check::Special},
      {"rsqrt", [](double x) { return 1 / std::sqrt(x); }, Check::Special},
      {"cbrt", [](double x) { return std::cbrt(x); }, Check::Special},
      {"exp", [](double x) { return std::exp(x); }, Check::Special},
      {"expm1", [](double x) { return std::expm1(x); }, Check::Special},
      {"log", [](double x) { return std::log(x); }, Check::Special},
      {"log1p", [](double x) { return std::log1p(x); }, Check::Special},
      {"sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, Check::Special},
      {"sin", [](double x) { return std::sin(x); }, Check::Special},
      {"cos", [](double x) { return std::cos(x); }, Check::Special},
      {"tan", [](double x) { return std::tan(x); }, Check::Special},
      {"sinh", [](double x) { return std::sinh(x); }, Check::Special},
      {"cosh", [](double x) { return std::cosh(x); }, Check::Special},
      {"tanh", [](double x) { return std::tanh(x); }, Check::Special},
      {"asin", [](double x) { return std::asin(x); }, Check::Special},
      {"acos", [](double x) { return std::acos(x); }, Check::Special},
      {"atan", [](double x) { return std::atan(x); }, Check::Special},
      {"asinh", [](double x) { return std::asinh(x); }, Check::Special},
      {"acosh", [](double x) { return std::acosh(x); }, Check::Special},
      {"atanh", [](double x) { return std::atanh(x); }, Check::Special},
      {"erf", [](double x) { return std::erf(x); }, Check::Special},
      {"erfc", [](double x) { return std::erfc(x); }, Check::Special},
      {"erf_inv", erf_inv, Check::Special},
  };
  return ops;
}

struct BinaryOp {
  const char* name;
  std::function<double(double, double)> f;
  Check how;
  bool predicate = false;
};

const std::vector<BinaryOp>& binary_ops() {
  static const std::vector<BinaryOp> ops = {
      {"add", [](double a, double b) { return a + b; }, Check::Exact},
      {"subtract", [](double a, double b) { return a - b; }, Check::Exact},
      {"multiply", [](double a, double b) { return a * b; }, Check::Exact},
      {"divide", [](double a, double b) { return a / b; }, Check::Exact},
      {"remainder", [](double a, double b) { return std::fmod(a, b); }, Check::Exact},
      // Nx: NaN wins; of equal operands (±0) the first.
      {"max", [](double a, double b) { return std::isnan(a) ? a : std::isnan(b) ? b : a < b ? b : a; }, Check::Exact},
      {"min", [](double a, double b) { return std::isnan(a) ? a : std::isnan(b) ? b : a > b ? b : a; }, Check::Exact},
      {"pow", [](double a, double b) { return std::pow(a, b); }, Check::Special},
      {"atan2", [](double a, double b) { return std::atan2(a, b); }, Check::Special},
      {"equal", [](double a, double b) { return double(a == b); }, Check::Exact, true},
      {"not_equal", [](double a, double b) { return double(a != b); }, Check::Exact, true},
      {"less", [](double a, double b) { return double(a < b); }, Check::Exact, true},
      {"less_equal", [](double a, double b) { return double(a <= b); }, Check::Exact, true},
      {"greater", [](double a, double b) { return double(a > b); }, Check::Exact, true},
      {"greater_equal", [](double a, double b) { return double(a >= b); }, Check::Exact, true},
      {"logical_and", [](double a, double b) { return double(a != 0 && b != 0); }, Check::Exact, true},
      {"logical_or", [](double a, double b) { return double(a != 0 || b != 0); }, Check::Exact, true},
      {"logical_xor", [](double a, double b) { return double((a != 0) != (b != 0)); }, Check::Exact, true},
  };
  return ops;
}

// The expected value of a float op in t: in double from the stored operands, then rounded
// to t (one rounding for + - * / of f32 and narrower: double rounding is innocuous there).
double want_of(DType t, bool predicate, double r) { return predicate ? r : round_to(t, r); }

// ---- unary ops: tensor, broadcast scalar, literal (device-computed and host-folded) ----
TEST(SpecialValues, UnaryOps) {
  for (DType t : kFloats) {
    NXV_SKIP_WITHOUT(t);
    const std::vector<double> v = special_values(t);
    const int64_t n = int64_t(v.size());
    for (const auto& op : unary_ops()) {
      const DType rt = op.predicate ? DType::U8 : t;
      // `got` from element `at` on holds the results for `operands`.
      auto check = [&](const std::string& kind, const Literal& got, const std::vector<double>& operands, int64_t at = 0) {
        Report r{op.name, t, kind, {}};
        for (size_t k = 0; k < operands.size(); ++k) {
          const double x = operands[k];
          const double want = want_of(t, op.predicate, op.f(x));
          const double alt = want_of(t, op.predicate, op.f(flush(t, x)));
          const int64_t i = at + int64_t(k);
          r.expect(describe(x), want, op.predicate ? double(ir::get_i64(got, i)) : ir::get_f64(got, i), op.how, is_special(x),
                   op.predicate ? alt : flush(t, alt));
        }
      };
      const bool costly = op.how == Check::Special;
      if (compiles_once(t, costly)) {
        // The tensor and a broadcast scalar concatenated: one compile, a run per value.
        GraphWriter gt(std::string(op.name) + "_tensor_and_scalar");
        NodeId x = gt.param(0, t, {n}), bs = gt.node("broadcast", {gt.param(1, t, {})}, t, {3}, {{"shape", {3}}, {"axes", json::array()}});
        NodeId both = gt.node("concatenate", {x, bs}, t, {n + 3}, {{"axis", 0}});
        auto exe = runtime::Executable::compile(device(), gt.finish({gt.node(op.name, {both}, rt, {n + 3})}));
        for (size_t j = 0; j < v.size(); ++j) {
          Literal got = exe->run_host({literal(t, {n}, v), literal(t, {}, {v[j]})})[0];
          if (j == 0) check("tensor", got, v);
          check("broadcast scalar", got, {v[j], v[j], v[j]}, n);
        }
      }
      // Tensor operand.
      if (!compiles_once(t, costly)) {
        GraphWriter gt(std::string(op.name) + "_tensor");
        auto g = gt.finish({gt.node(op.name, {gt.param(0, t, {n})}, rt, {n})});
        check("tensor", run(g, {literal(t, {n}, v)})[0], v);
      }
      // Broadcast scalar tensor: one compile, a run per value.
      if (!compiles_once(t, costly)) {
        GraphWriter gt(std::string(op.name) + "_scalar");
        NodeId bx = gt.node("broadcast", {gt.param(0, t, {})}, t, {3}, {{"shape", {3}}, {"axes", json::array()}});
        auto exe = runtime::Executable::compile(device(), gt.finish({gt.node(op.name, {bx}, rt, {3})}));
        for (double x0 : v) {
          Literal got = exe->run_host({literal(t, {}, {x0})})[0];
          check("broadcast scalar", got, {x0, x0, x0});
        }
      }
      // Literal operands: computed by the device (no constant folding), then folded on the host.
      auto literal_graph = [&](const std::vector<double>& xs) {
        GraphWriter gt(std::string(op.name) + "_literal");
        std::vector<NodeId> results;
        for (double x : xs) results.push_back(gt.node(op.name, {gt.scalar(x, t)}, rt, {}));
        return gt.finish({gt.stack(results, rt)});
      };
      std::vector<double> on_device;
      for (size_t k : device_literals(t, costly, size_t(&op - unary_ops().data())))
        on_device.push_back(v[k]);
      check("literal", run(literal_graph(on_device), {}, device_computes_literals())[0], on_device);
      check("literal (constant-folded)", run(literal_graph(v), {})[0], v);
    }
  }
}

// ---- binary ops over all pairs ----
TEST(SpecialValues, BinaryOpsAndComparisons) {
  // Types whose literal-on-literal results the device computes without the promise of
  // preserves_special_values: not checked (the rest is), and the test reports itself skipped.
  std::set<std::string> unpromised;
  for (DType t : kFloats) {
    if (!devtest::missing_feature(t).empty()) break;
    const std::vector<double> v = special_values(t);
    const int64_t n = int64_t(v.size());
    std::vector<double> lhs, rhs;  // all pairs
    for (double a : v)
      for (double b : v) lhs.push_back(a), rhs.push_back(b);
    const int64_t pairs = int64_t(lhs.size());
    for (const auto& op : binary_ops()) {
      const DType rt = op.predicate ? DType::U8 : t;
      // `got` from element `at` on holds the results for the pairs of `a` and `b`.
      auto check = [&](const std::string& kind, const Literal& got, const std::vector<double>& a, const std::vector<double>& b,
                       int64_t at = 0) {
        Report r{op.name, t, kind, {}};
        for (size_t k = 0; k < a.size(); ++k) {
          const double want = want_of(t, op.predicate, op.f(a[k], b[k]));
          const double alt = want_of(t, op.predicate, op.f(flush(t, a[k]), flush(t, b[k])));
          const int64_t i = at + int64_t(k);
          r.expect(describe(a[k]) + ", " + describe(b[k]), want, op.predicate ? double(ir::get_i64(got, i)) : ir::get_f64(got, i),
                   op.how, is_special(a[k]) && is_special(b[k]), op.predicate ? alt : flush(t, alt));
        }
      };
      const bool costly = op.how == Check::Special || std::string(op.name) == "remainder";
      const size_t salt = size_t(&op - binary_ops().data());
      if (compiles_once(t, costly)) {
        // The pairs, then a broadcast scalar on the left of x and one on the right,
        // concatenated: one compile, a run per value.
        GraphWriter gt(std::string(op.name) + "_tensors_and_scalars");
        NodeId a = gt.param(0, t, {pairs}), b = gt.param(1, t, {pairs}), x = gt.param(2, t, {n});
        NodeId bs = gt.node("broadcast", {gt.param(3, t, {})}, t, {n}, {{"shape", {n}}, {"axes", json::array()}});
        auto cat = [&](NodeId p, NodeId q, NodeId r) { return gt.node("concatenate", {p, q, r}, t, {pairs + 2 * n}, {{"axis", 0}}); };
        const NodeId lhs_all = cat(a, bs, x), rhs_all = cat(b, x, bs);
        auto exe = runtime::Executable::compile(device(), gt.finish({gt.node(op.name, {lhs_all, rhs_all}, rt, {pairs + 2 * n})}));
        for (size_t j = 0; j < v.size(); ++j) {
          Literal got = exe->run_host({literal(t, {pairs}, lhs), literal(t, {pairs}, rhs), literal(t, {n}, v), literal(t, {}, {v[j]})})[0];
          if (j == 0) check("tensor", got, lhs, rhs);
          const std::vector<double> sv(size_t(n), v[j]);
          check("broadcast scalar", got, sv, v, pairs);
          check("broadcast scalar", got, v, sv, pairs + n);
        }
      }
      // Tensor operands.
      if (!compiles_once(t, costly)) {
        GraphWriter gt(std::string(op.name) + "_tensors");
        NodeId a = gt.param(0, t, {pairs}), b = gt.param(1, t, {pairs});
        auto g = gt.finish({gt.node(op.name, {a, b}, rt, {pairs})});
        check("tensor", run(g, {literal(t, {pairs}, lhs), literal(t, {pairs}, rhs)})[0], lhs, rhs);
      }
      // A broadcast scalar tensor on either side: one compile each, a run per value.
      for (int side : {0, 1}) {
        if (compiles_once(t, costly)) break;
        GraphWriter gt(std::string(op.name) + "_scalar" + std::to_string(side));
        NodeId a = gt.param(0, t, side == 0 ? ir::Shape{} : ir::Shape{n}), b = gt.param(1, t, side == 1 ? ir::Shape{} : ir::Shape{n});
        auto exe = runtime::Executable::compile(device(), gt.finish({gt.node(op.name, {a, b}, rt, {n})}));
        for (double s : v) {
          Literal got = side == 0 ? exe->run_host({literal(t, {}, {s}), literal(t, {n}, v)})[0]
                                  : exe->run_host({literal(t, {n}, v), literal(t, {}, {s})})[0];
          std::vector<double> sv(size_t(n), s);
          check("broadcast scalar", got, side == 0 ? sv : v, side == 0 ? v : sv);
        }
      }
      // A literal on either side of a tensor: out[j][i] = op(x[i], c_j) and op(c_j, x[i]).
      {
        GraphWriter gt(std::string(op.name) + "_literal");
        NodeId x = gt.param(0, t, {n});
        std::vector<NodeId> right, left;
        std::vector<double> xs, cs;
        for (size_t j : device_literals(t, costly, salt)) {
          NodeId k = gt.scalar(v[j], t);
          right.push_back(gt.node(op.name, {x, k}, rt, {n}));
          left.push_back(gt.node(op.name, {k, x}, rt, {n}));
          for (double x0 : v) xs.push_back(x0), cs.push_back(v[j]);
        }
        const NodeId r0 = gt.stack(right, rt), r1 = gt.stack(left, rt);
        auto got = run(gt.finish({r0, r1}), {literal(t, {n}, v)});
        check("tensor and literal", got[0], xs, cs);
        check("literal and tensor", got[1], cs, xs);
      }
      // Literals on both sides: on the device (the driver sees both), and folded on the host.
      // A remainder loops per exponent step (2^1023 by 2^-1074: ~2100 steps), so its pairs
      // take a graph per left operand, within lavapipe's 65535 loop steps per invocation.
      // literal_pairs(a, b): the graph of op(a[k], b[k]) for every k, stacked.
      auto literal_pairs = [&](const std::vector<double>& a, const std::vector<double>& b) {
        GraphWriter gt(std::string(op.name) + "_literals");
        std::vector<NodeId> results;
        for (size_t k = 0; k < a.size(); ++k) results.push_back(gt.node(op.name, {gt.scalar(a[k], t), gt.scalar(b[k], t)}, rt, {}));
        return gt.finish({gt.stack(results, rt)});
      };
      if (!devtest::preserves_special_values(t)) unpromised.insert(ir::dtype_name(t));
      else if (compiles_once(t, costly)) {
        const std::vector<double> a = {v[device_literals(t, costly, salt)[0]]}, b = {v[device_literals(t, costly, salt + 1)[0]]};
        check("literal", run(literal_pairs(a, b), {}, device_computes_literals())[0], a, b);
      }
      const int64_t rows_per_graph = std::string(op.name) == "remainder" ? 1 : n;
      for (int64_t first = 0; first < n; first += rows_per_graph) {
        const std::vector<double> a(lhs.begin() + first * n, lhs.begin() + (first + rows_per_graph) * n),
            b(rhs.begin() + first * n, rhs.begin() + (first + rows_per_graph) * n);
        const ir::Graph g = literal_pairs(a, b);
        if (devtest::preserves_special_values(t) && !compiles_once(t, costly))
          check("literal", run(g, {}, device_computes_literals())[0], a, b);
        check("literal (constant-folded)", run(g, {})[0], a, b);
      }
    }
  }
  if (!unpromised.empty()) {
    std::string types;
    for (const auto& u : unpromised) types += (types.empty() ? "" : ", ") + u;
    GTEST_SKIP() << "literal-on-literal results in " << types << " not checked: " << device()->info().name
                 << " lacks shaderSignedZeroInfNanPreserveFloat32/64, so its driver may fold x - x to 0 at Inf";
  }
  NXV_SKIP_WITHOUT(DType::F64);
}

// select with special predicates and branches; clip with special bounds.
TEST(SpecialValues, SelectAndClip) {
  for (DType t : kFloats) {
    NXV_SKIP_WITHOUT(t);
    const std::vector<double> v = special_values(t);
    const int64_t n = int64_t(v.size());
    // select(pred, x, -x): a float predicate is true where nonzero (NaN too), -0.0 is false.
    for (bool literal_pred : {false, true}) {
      GraphWriter gt("select_special");
      NodeId x = gt.param(0, t, {n});
      std::vector<NodeId> rows;
      NodeId p = literal_pred ? -1 : gt.param(1, t, {n});
      NodeId neg = gt.node("negate", {x}, t, {n});
      if (literal_pred) {
        for (double c : v) rows.push_back(gt.node("select", {gt.scalar(c, t), x, neg}, t, {n}));
      } else {
        rows.push_back(gt.node("select", {p, x, neg}, t, {n}));
      }
      auto g = gt.finish({gt.stack(rows, t)});
      Literal got = literal_pred ? run(g, {literal(t, {n}, v)})[0] : run(g, {literal(t, {n}, v), literal(t, {n}, v)})[0];
      Report r{"select", t, literal_pred ? "literal predicate" : "tensor predicate", {}};
      for (size_t row = 0; row < rows.size(); ++row)
        for (size_t i = 0; i < v.size(); ++i) {
          const double pred = literal_pred ? v[row] : v[i];
          const double want = pred != 0 ? v[i] : -v[i];
          const double alt = flush(t, flush(t, pred) != 0 ? v[i] : -v[i]);
          r.expect(describe(pred) + ", " + describe(v[i]) + ", " + describe(-v[i]), want, ir::get_f64(got, int64_t(row * v.size() + i)),
                   Check::Exact, true, alt);
        }
    }
    // clip(x, lo, hi) = min(max(x, lo), hi), NaN bounds propagating (docs/ir.md, Nx).
    const std::vector<std::pair<double, double>> bounds = {
        {-1, 1}, {-INFINITY, INFINITY}, {-0.0, 0.0}, {NAN, 1}, {-1, NAN}, {smallest_subnormal(t), max_finite(t)}};
    for (bool literal_bounds : {false, true}) {
      GraphWriter gt("clip_special");
      NodeId x = gt.param(0, t, {n});
      std::vector<NodeId> rows;
      for (size_t k = 0; k < bounds.size(); ++k) {
        NodeId lo = literal_bounds ? gt.scalar(bounds[k].first, t) : gt.param(int(1 + 2 * k), t, {});
        NodeId hi = literal_bounds ? gt.scalar(bounds[k].second, t) : gt.param(int(2 + 2 * k), t, {});
        rows.push_back(gt.node("clip", {x, lo, hi}, t, {n}));
      }
      std::vector<Literal> inputs = {literal(t, {n}, v)};
      if (!literal_bounds)
        for (auto [lo, hi] : bounds) inputs.push_back(literal(t, {}, {lo})), inputs.push_back(literal(t, {}, {hi}));
      Literal got = run(gt.finish({gt.stack(rows, t)}), inputs)[0];
      Report r{"clip", t, literal_bounds ? "literal bounds" : "broadcast scalar bounds", {}};
      auto clip = [](double x, double lo, double hi) {
        double c = x < lo ? lo : x;
        c = c > hi ? hi : c;
        return std::isnan(hi) ? hi : std::isnan(lo) ? lo : c;
      };
      for (size_t k = 0; k < bounds.size(); ++k)
        for (size_t i = 0; i < v.size(); ++i) {
          auto [lo, hi] = bounds[k];
          r.expect(describe(v[i]) + ", " + describe(lo) + ", " + describe(hi), clip(v[i], lo, hi),
                   ir::get_f64(got, int64_t(k * v.size() + i)), Check::Exact, true,
                   flush(t, clip(flush(t, v[i]), flush(t, lo), flush(t, hi))));
        }
    }
  }
}

// Rows of special values reduced along their axis, as a tensor and as a broadcast literal.
TEST(SpecialValues, Reductions) {
  for (DType t : kFloats) {
    NXV_SKIP_WITHOUT(t);
    const double mx = max_finite(t), sub = smallest_subnormal(t);
    const std::vector<std::vector<double>> rows = {
        {INFINITY, -INFINITY}, {INFINITY, 1}, {-INFINITY, -1}, {NAN, 1}, {1, NAN}, {-0.0, -0.0}, {0.0, -0.0},
        {mx, mx},              {-mx, -mx},   {sub, sub},      {0.0, INFINITY}, {-1, -0.0}, {NAN, INFINITY}, {-INFINITY, NAN}};
    const int64_t r = int64_t(rows.size());
    std::vector<double> flat;
    for (const auto& row : rows) flat.insert(flat.end(), row.begin(), row.end());
    // Nx: sums start at +0.0 (a sum of -0.0s is +0.0), products at 1; max/min propagate NaN.
    auto reduce = [&](const std::string& op, const std::vector<double>& row) {
      double acc = op == "sum" ? 0.0 : op == "product" ? 1.0 : op == "reduce_max" ? -INFINITY : INFINITY;
      for (double x : row) {
        if (op == "sum") acc = round_to(t, acc + x);
        else if (op == "product") acc = round_to(t, acc * x);
        else if (std::isnan(acc) || std::isnan(x)) acc = NAN;
        else acc = op == "reduce_max" ? std::max(acc, x) : std::min(acc, x);
      }
      return acc;
    };
    for (const std::string op : {"sum", "product", "reduce_max", "reduce_min"}) {
      // Tensor.
      GraphWriter gt(op + "_rows");
      Literal got = run(gt.finish({gt.node(op, {gt.param(0, t, {r, 2})}, t, {r}, {{"axes", {1}}})}), {literal(t, {r, 2}, flat)})[0];
      Report rep{op, t, "tensor", {}};
      for (int64_t k = 0; k < r; ++k) {
        const auto& row = rows[size_t(k)];
        std::vector<double> flushed_row;
        for (double y : row) flushed_row.push_back(flush(t, y));
        // Zero signs of max/min over mixed zeros are the device's order: not checked.
        const bool mixed_zeros = op.find("reduce_") == 0 && row[0] == 0 && row[1] == 0 && std::signbit(row[0]) != std::signbit(row[1]);
        const double want = reduce(op, row), g = ir::get_f64(got, k);
        if (mixed_zeros && g == 0) continue;
        rep.expect(describe(row[0]) + ", " + describe(row[1]), want, g, Check::Exact, true, flush(t, reduce(op, flushed_row)));
      }
      // A literal broadcast to 4 elements, reduced (on the device and folded on the host).
      GraphWriter lt(op + "_literal");
      std::vector<NodeId> results;
      for (double c : special_values(t)) {
        NodeId b = lt.node("broadcast", {lt.scalar(c, t)}, t, {4}, {{"shape", {4}}, {"axes", json::array()}});
        results.push_back(lt.node(op, {b}, t, {}, {{"axes", nullptr}}));
      }
      const ir::Graph g = lt.finish({lt.stack(results, t)});
      for (bool fold : {false, true}) {
        // Literal-on-literal arithmetic without the driver's promise is not checked, as in
        // BinaryOpsAndComparisons (NVIDIA held to vulkan-minimum gave product(-2^-149 x4) = -2^-149).
        if (!fold && !devtest::preserves_special_values(t)) continue;
        Literal lg = fold ? run(g, {})[0] : run(g, {}, device_computes_literals())[0];
        Report lr{op, t, fold ? "literal (constant-folded)" : "literal", {}};
        const auto v = special_values(t);
        for (size_t k = 0; k < v.size(); ++k)
          lr.expect(describe(v[k]) + " x4", reduce(op, std::vector<double>(4, v[k])), ir::get_f64(lg, int64_t(k)), Check::Exact, true,
                    flush(t, reduce(op, std::vector<double>(4, flush(t, v[k])))));
      }
    }
  }
}

// f16 and bf16 sums and products accumulate in f32 on the device and in the interpreter
// (docs/numerics.md), in index order here: a partial result beyond f32's range is an infinity
// though the exact result fits (Nx.BinaryBackend, adding in double, gives the finite value).
// f32 accumulates in f32 where the device computes f32 as f32, in f64 where it computes f32
// in f64 (computes_f32_in_f64) and in the interpreter (as BinaryBackend).
TEST(SpecialValues, ReductionsAccumulateInF32) {
  struct Case {
    DType t;
    std::string op;
    std::vector<double> x;
  };
  const std::vector<double> nine_then_zero = {6e4, 6e4, 6e4, 6e4, 6e4, 6e4, 6e4, 6e4, 6e4, 0};
  const std::vector<double> zero_then_nine = {0, 6e4, 6e4, 6e4, 6e4, 6e4, 6e4, 6e4, 6e4, 6e4};
  const std::vector<Case> cases = {
      {DType::BF16, "sum", {3e38, 3e38, -3e38}}, {DType::BF16, "sum", {3e38, -3e38, 3e38}},
      {DType::F16, "product", nine_then_zero},   {DType::F16, "product", zero_then_nine},
      {DType::BF16, "product", {1e30, 1e30, 1e-30, 1e-30}}, {DType::F32, "sum", {3e38, 3e38, -3e38}},
  };
  const bool f32_in_f64 = codegen::computes_f32_in_f64(device()->info().caps);
  for (const auto& c : cases) {
    const int64_t n = int64_t(c.x.size());
    std::vector<double> x;
    for (double v : c.x) x.push_back(round_to(c.t, v));
    double f32_acc = c.op == "sum" ? 0 : 1, f64_acc = f32_acc;
    for (double v : x) {
      f32_acc = c.op == "sum" ? double(float(f32_acc) + float(v)) : double(float(f32_acc) * float(v));
      f64_acc = c.op == "sum" ? f64_acc + v : f64_acc * v;
    }
    const double accumulated_in_f32 = round_to(c.t, f32_acc), accumulated_in_f64 = round_to(c.t, f64_acc);
    GraphWriter gt(c.op + "_acc");
    const ir::Graph g = gt.finish({gt.node(c.op, {gt.param(0, c.t, {n})}, c.t, {}, {{"axes", nullptr}})});
    const std::vector<Literal> in = {literal(c.t, {n}, x)};
    const double interpreted = ir::get_f64(ir::interpret(g, in)[0], 0), computed = ir::get_f64(run(g, in)[0], 0);
    std::string what = std::string(ir::dtype_name(c.t)) + " " + c.op + " of";
    for (double v : x) what += " " + describe(v);
    if (c.t == DType::F32) {
      EXPECT_TRUE(bit_equal(accumulated_in_f64, interpreted)) << what << ": interpreter " << describe(interpreted);
      EXPECT_TRUE(bit_equal(f32_in_f64 ? accumulated_in_f64 : accumulated_in_f32, computed)) << what << ": device " << describe(computed);
    } else {
      EXPECT_TRUE(bit_equal(accumulated_in_f32, interpreted)) << what << ": interpreter " << describe(interpreted);
      EXPECT_TRUE(bit_equal(accumulated_in_f32, computed)) << what << ": device " << describe(computed);
    }
  }
}

// The interpreter and the device agree on f16/bf16 sums and products of n, 10n and 100n
// elements (the device's order differs there: workgroup trees), within the type's rounding.
TEST(SpecialValues, HalfReductionsAgreeWithTheInterpreterAtSize) {
  for (DType t : {DType::F16, DType::BF16})
    for (int64_t n : {1000, 10000, 100000})
      for (const std::string op : {"sum", "product"}) {
        std::vector<double> x;
        uint64_t state = 0x9e3779b97f4a7c15ull * uint64_t(n);
        for (int64_t i = 0; i < n; ++i) {
          state = state * 6364136223846793005ull + 1442695040888963407ull;
          const double u = double(state >> 11) * 0x1p-53;  // [0, 1)
          x.push_back(round_to(t, op == "sum" ? 2 * u - 1 : 1 + (u - 0.5) / double(n)));
        }
        GraphWriter gt(op + "_size");
        const ir::Graph g = gt.finish({gt.node(op, {gt.param(0, t, {n})}, t, {}, {{"axes", nullptr}})});
        const std::vector<Literal> in = {literal(t, {n}, x)};
        const double want = ir::get_f64(ir::interpret(g, in)[0], 0), got = ir::get_f64(run(g, in)[0], 0);
        // Both results are rounded once to the type (8 or 11 bits). Before that, the
        // interpreter's f32 additions in index order err by at most 2^-24 of each partial sum,
        // the device's tree by 2^-24 * log2(n) * sum |x|; products by n * 2^-24 relative each.
        const double ulp = t == DType::BF16 ? 0x1p-8 : 0x1p-11;
        double partials = 0, partial = 0, magnitude = 0;
        for (double v : x) partial += v, partials += std::fabs(partial), magnitude += std::fabs(v);
        const double bound = op == "sum" ? 2 * ulp * std::max(1.0, std::fabs(want)) + 0x1p-24 * (partials + std::log2(double(n)) * magnitude)
                                         : (2 * ulp + 2 * double(n) * 0x1p-24) * std::fabs(want);
        EXPECT_NEAR(got, want, bound) << ir::dtype_name(t) << " " << op << " of " << n;
      }
}

// A long reduction into few outputs is split in parts (split-reduction), whose partial
// results keep the type the kernels accumulate in, so the result is rounded to its type once,
// as in the interpreter: f16 sums in f32 on every device, f32 sums and dots in f64 where the
// device computes f32 in f64. The halves here have opposite signs and each part's result
// leaves the type's range; parts rounded to the type first gave +Inf + -Inf = NaN (the
// differential fuzzer's seed 2057: a u16 . f32 dot of 16384 terms, NaN on lavapipe against
// +Inf). Where the device keeps f32 accumulators an f32 result whose partials overflow depends
// on the order of the additions (docs/numerics.md): only NaN or an infinity may replace it.
TEST(SpecialValues, SplitReductionsRoundOnce) {
  const bool f32_in_f64 = codegen::computes_f32_in_f64(device()->info().caps);
  auto check = [&](const std::string& what, DType t, const ir::Graph& g, const std::vector<Literal>& in, double exact) {
    const double want = round_to(t, exact);
    const double interpreted = ir::get_f64(ir::interpret(g, in)[0], 0), computed = ir::get_f64(run(g, in)[0], 0);
    EXPECT_TRUE(bit_equal(want, interpreted)) << what << ": interpreter " << describe(interpreted) << ", want " << describe(want);
    if (t == DType::F32 && !f32_in_f64)
      EXPECT_TRUE(bit_equal(want, computed) || !std::isfinite(computed)) << what << ": device " << describe(computed);
    else
      EXPECT_TRUE(bit_equal(want, computed)) << what << ": device " << describe(computed) << ", want " << describe(want);
  };
  // Sums of n (split from 2^16 on): +big in the first half, -big in the second but a last
  // 0; every partial sum is exact in the accumulator, and the total is big.
  for (int64_t n : {int64_t(1) << 17, int64_t(1) << 20})
    for (DType t : {DType::F16, DType::F32}) {
      const double big = t == DType::F16 ? 0x1p15 : 0x1p127;
      std::vector<double> x(size_t(n), big);
      for (int64_t i = n / 2; i < n; ++i) x[size_t(i)] = i == n - 1 ? 0 : -big;
      GraphWriter gt("split_sum");
      const ir::Graph g = gt.finish({gt.node("sum", {gt.param(0, t, {n})}, t, {}, {{"axes", nullptr}})});
      check(std::string(ir::dtype_name(t)) + " sum of " + std::to_string(n), t, g, {literal(t, {n}, x)}, big);
    }
  // u16 . f32 dots of k terms (split from 4096 on): 2 . (+-2^127), products of 2^128 beyond
  // f32's range, halves of opposite signs; the last term 1 . -2^127 (total 2^127) or 2 . 0
  // (total 2^128: +Inf in f32, as in seed 2057).
  for (int64_t k : {int64_t(16384), int64_t(1) << 17})
    for (bool overflows : {false, true}) {
      Literal a{{DType::U16, {k}}, std::vector<uint8_t>(size_t(k) * 2)};
      for (int64_t i = 0; i < k; ++i) {
        ir::Scalar v;
        v.is_integer = true;
        v.i = i == k - 1 && !overflows ? 1 : 2;
        ir::set_element(a, i, v);
      }
      std::vector<double> b(size_t(k), 0x1p127);
      for (int64_t i = k / 2; i < k; ++i) b[size_t(i)] = i == k - 1 && overflows ? 0 : -0x1p127;
      GraphWriter gt("split_dot");
      const NodeId pa = gt.param(0, DType::U16, {k}), pb = gt.param(1, DType::F32, {k, 1});
      const ir::Graph g = gt.finish({gt.node("dot", {pa, pb}, DType::F32, {1}, contraction({0}, {0}, {}))});
      check("u16 . f32 dot of " + std::to_string(k) + (overflows ? ", total 2^128" : ", total 2^127"), DType::F32, g,
            {a, literal(DType::F32, {k, 1}, b)}, overflows ? 0x1p128 : 0x1p127);
    }
}

// dot: special values in the products and the sums of a contraction.
TEST(SpecialValues, Dot) {
  for (DType t : kFloats) {
    NXV_SKIP_WITHOUT(t);
    const double mx = max_finite(t);
    // Rows of a (2 wide) against b = [1, 1] and b = the row's partner.
    const std::vector<std::pair<std::vector<double>, std::vector<double>>> cases = {
        {{INFINITY, 1}, {1, 1}},   {{INFINITY, -INFINITY}, {1, 1}}, {{0.0, 1}, {INFINITY, 0}}, {{NAN, 1}, {0, 1}},
        {{-0.0, -0.0}, {1, 1}},    {{mx, 0}, {2, 1}},               {{-0.0, 0}, {1, -1}},      {{1, 1}, {-INFINITY, 0}},
        {{mx, -mx}, {1, 1}},       {{0, 0}, {NAN, 1}}};
    const int64_t m = int64_t(cases.size());
    std::vector<double> a, b;
    for (const auto& [x, y] : cases) a.insert(a.end(), x.begin(), x.end()), b.insert(b.end(), y.begin(), y.end());
    // Batched over the cases: out[k] = sum_j a[k, j] * b[k, j], products rounded to t, summed from +0.0.
    for (bool literal_b : {false, true}) {
      GraphWriter gt("dot_special");
      NodeId pa = gt.param(0, t, {m, 2});
      NodeId pb;
      if (literal_b) {
        json data = json::array();
        for (double x : b) data.push_back(ir::float_json(x));
        pb = gt.node("tensor", {}, t, {m, 2}, {{"data", data}});
      } else {
        pb = gt.param(1, t, {m, 2});
      }
      auto g = gt.finish({gt.node("dot", {pa, pb}, t, {m}, contraction({1}, {1}, {0}))});
      std::vector<Literal> inputs = {literal(t, {m, 2}, a)};
      if (!literal_b) inputs.push_back(literal(t, {m, 2}, b));
      Literal got = run(g, inputs)[0];
      Report r{"dot", t, literal_b ? "tensor and literal tensor" : "tensor", {}};
      for (int64_t k = 0; k < m; ++k) {
        const auto& [x, y] = cases[size_t(k)];
        // Accumulated in t or wider: the cases are chosen so that both give one value.
        const double want = round_to(t, 0.0 + x[0] * y[0] + x[1] * y[1]);
        r.expect("[" + describe(x[0]) + ", " + describe(x[1]) + "] . [" + describe(y[0]) + ", " + describe(y[1]) + "]", want,
                 ir::get_f64(got, k), Check::Exact, true, want);
      }
    }
  }
}

// bf16 dot products beyond f32's range: a bf16 product has f32's significand but not its
// range, and each is added to the accumulator exactly, then rounded to f32 (as the
// interpreter adds the double product, and Nx adds in double). inf + 2.64 * -2.99e38 is
// inf (it was NaN: the product rounded to -inf first); -3e38 + 1.5 * 3e38 is finite. Per
// element (k = 2) and in the matmul kernel's tiles (k = 8 with zeros after the pair).
TEST(SpecialValues, BfloatDotProductsBeyondF32Range) {
  const DType t = DType::BF16;
  const double mx = max_finite(t);
  const std::vector<std::pair<std::vector<double>, std::vector<double>>> cases = {
      {{INFINITY, -2.640625}, {5.78125, 2.9907629905160607e38}}, {{-3e38, 1.5}, {1, 3e38}},
      {{3e38, -2}, {1, 3e38}}, {{1, 4}, {1, 3e38}}, {{-INFINITY, 2}, {1, mx}}, {{-3e38, 2}, {1, mx}},
      {{-mx, -mx}, {mx, -mx}}, {{2, 1}, {mx, -INFINITY}}};
  const int64_t c = int64_t(cases.size());
  for (int64_t k : {2, 8}) {
    const int64_t m = k == 2 ? c : 256;  // rows of a: case i % c; columns of b: case j % c
    std::vector<double> a(size_t(m * k), 0.0), bt(size_t(m * k), 0.0);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < 2; ++j) {
        a[size_t(i * k + j)] = round_to(t, cases[size_t(i % c)].first[size_t(j)]);
        bt[size_t(j * m + i)] = round_to(t, cases[size_t(i % c)].second[size_t(j)]);
      }
    GraphWriter gt("bf16_dot_range");
    const NodeId pa = gt.param(0, t, {m, k}), pb = gt.param(1, t, {k, m});
    const auto g = gt.finish({gt.node("dot", {pa, pb}, t, {m, m}, contraction({1}, {0}, {}))});
    const std::vector<Literal> in = {literal(t, {m, k}, a), literal(t, {k, m}, bt)};
    const Literal got = run(g, in)[0], interpreted = ir::interpret(g, in)[0];
    int failures = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < m && failures < 8; ++j) {
        double acc = 0, exact = 0;
        for (int64_t q = 0; q < k; ++q) {
          acc = double(float(acc + a[size_t(i * k + q)] * bt[size_t(q * m + j)]));
          exact += a[size_t(i * k + q)] * bt[size_t(q * m + j)];
        }
        const double want = round_to(t, acc), dev = ir::get_f64(got, i * m + j), ref = ir::get_f64(interpreted, i * m + j);
        // A matrix unit may carry its running sum beyond f32's range within a tile's k-step
        // (NVIDIA's tensor cores: -mx·mx + mx·mx is 0, as Nx's double accumulation gives,
        // where adding in f32 step by step overflows to -inf first).
        const bool matrix_unit_sum = k == 8 && bit_equal(round_to(t, exact), dev);
        if ((bit_equal(want, dev) || matrix_unit_sum) && bit_equal(want, ref)) continue;
        ++failures;
        ADD_FAILURE() << "k = " << k << ", out[" << i << ", " << j << "] = " << describe(dev) << ", interpreter "
                      << describe(ref) << ", want " << describe(want);
      }
  }
}

// Casts between float types, and from floats to integers (truncation toward zero,
// saturating, NaN → 0: docs/ir.md, as XLA; Nx.BinaryBackend raises there).
// `as_type` of every value in v from `from` to `to`: kind 0 as a tensor, 1 as literals the
// device converts, 2 as literals the compiler's passes fold on the host.
Literal cast_values(DType from, DType to, int kind, const std::vector<double>& v) {
  const int64_t n = int64_t(v.size());
  GraphWriter gt("cast");
  std::vector<NodeId> results;
  if (kind > 0) {
    for (double c : v) results.push_back(gt.node("as_type", {gt.scalar(c, from)}, to, {}));
  } else {
    results.push_back(gt.node("as_type", {gt.param(0, from, {n})}, to, {n}));
  }
  const NodeId out = kind > 0 ? gt.stack(results, to) : results[0];
  auto g = gt.finish({out});
  if (kind == 2) return run(g, {})[0];
  return kind == 1 ? run(g, {}, device_computes_literals())[0] : run(g, {literal(from, {n}, v)})[0];
}

// x cast to integer type t as Nx's as_type does: truncated toward zero, saturated to the
// type's minimum and maximum (u64's as the bits Nx stores), NaN 0; as get_i64 reads it back.
int64_t saturated(double x, DType t) {
  if (std::isnan(x)) return 0;
  const int bits = ir::dtype_bits(t);
  const bool is_signed = ir::is_signed_int(t);
  const double lo = is_signed ? -std::ldexp(1.0, bits - 1) : 0.0, hi = std::ldexp(1.0, is_signed ? bits - 1 : bits);
  if (x <= lo) return is_signed ? int64_t(lo) : 0;
  if (x >= hi) return is_signed ? int64_t((uint64_t(1) << (bits - 1)) - 1) : int64_t(bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1);
  return is_signed ? int64_t(std::trunc(x)) : int64_t(uint64_t(std::trunc(x)));
}

TEST(SpecialValues, Casts) {
  const std::vector<DType> ints = {DType::S8, DType::U8, DType::S32, DType::U32, DType::S64, DType::U64};
  for (DType from : kFloats) {
    NXV_SKIP_WITHOUT(from);
    const std::vector<double> v = special_values(from);
    for (DType to : kFloats) {
      if (!devtest::missing_feature(to).empty()) continue;
      if (to == from) continue;
      for (int kind : {0, 1, 2}) {
        const bool lit = kind > 0;
        Literal got = cast_values(from, to, kind, v);
        Report r{"as_type", from, std::string(kind == 2 ? "literal (constant-folded)" : lit ? "literal" : "tensor") + " to " + ir::dtype_name(to), {}};
        for (size_t k = 0; k < v.size(); ++k)
          r.expect(describe(v[k]), round_to(to, v[k]), ir::get_f64(got, int64_t(k)), Check::Exact, true,
                   flush(to, round_to(to, flush(from, v[k]))));
      }
    }
    for (DType to : ints) {
      if (!devtest::missing_feature(to).empty()) continue;
      for (int kind : {0, 1, 2}) {
        const bool lit = kind > 0;
        Literal got = cast_values(from, to, kind, v);
        for (size_t k = 0; k < v.size(); ++k)
          EXPECT_EQ(ir::get_i64(got, int64_t(k)), saturated(v[k], to))
              << "as_type " << ir::dtype_name(from) << " -> " << ir::dtype_name(to) << (kind == 2 ? " folded literal " : lit ? " literal " : " tensor ") << describe(v[k]);
      }
    }
  }
}

// Large floats cast to 32- and 64-bit integers (truncated, saturated), and those cast on to
// narrower integers (which wrap, keeping the low bits). An H100 gave u8 255 for 1.0987e18 -> u64 -> u8
// (fuzz seed 163706), where the low byte is 0.
TEST(SpecialValues, CastsOfLargeFloatsToWideIntegers) {
  // The value in type t (from a 64-bit two's complement value), as get_i64 reads it back.
  auto wrap = [](uint64_t w, DType t) {
    const int bits = ir::dtype_bits(t);
    if (bits == 64) return int64_t(w);
    const uint64_t low = w & ((uint64_t(1) << bits) - 1);
    return ir::is_signed_int(t) && (low >> (bits - 1)) ? int64_t(low | ~((uint64_t(1) << bits) - 1)) : int64_t(low);
  };
  for (DType from : {DType::BF16, DType::F32, DType::F64}) {
    NXV_SKIP_WITHOUT(from);
    // Exact in bf16 (8 significant bits), so in f32 and f64 too: in and beyond the range of
    // each 32- and 64-bit type, with their low bytes 0 or not.
    const std::vector<double> v = {0x1.e8p59, 0x1.02p33, 0x1.fep62, 0x1.8p40, 0x1.06p32, 0x1.02p63, 0x1.fep63, -0x1.02p33,
                                   -0x1.fep62, -0x1.8p40, 0x1.02p12, 0x1.86p31, 0x1.fep31, 0x1.02p31, -0x1.8p30, -0x1.02p31};
    const int64_t n = int64_t(v.size());
    // The wide values stored besides the narrow ones, and not: the H100 was wrong only where a
    // narrow cast was all that read them.
    for (DType wide : {DType::S32, DType::U32, DType::S64, DType::U64}) {
      if (!devtest::missing_feature(wide).empty()) continue;
      std::vector<DType> narrow = {DType::S8, DType::U8, DType::S16, DType::U16};
      if (ir::dtype_bits(wide) == 64) narrow.insert(narrow.end(), {DType::S32, DType::U32});
      for (bool stored : {false, true}) {
        GraphWriter gt("wide_narrow");
        const NodeId x = gt.node("as_type", {gt.param(0, from, {n})}, wide, {n});
        std::vector<NodeId> outs;
        if (stored) outs.push_back(x);
        for (DType to : narrow) outs.push_back(gt.node("as_type", {x}, to, {n}));
        const std::vector<Literal> got = run(gt.finish(outs), {literal(from, {n}, v)});
        for (int64_t k = 0; k < n; ++k) {
          for (size_t o = 0; o < outs.size(); ++o) {
            const DType to = stored && o == 0 ? wide : narrow[o - stored];
            EXPECT_EQ(ir::get_i64(got[o], k), wrap(uint64_t(saturated(v[k], wide)), to))
                << ir::dtype_name(from) << " " << describe(v[k]) << " -> " << ir::dtype_name(wide)
                << (to != wide ? " -> " + std::string(ir::dtype_name(to)) : "") << (stored ? " (stored)" : "");
          }
        }
      }
    }
  }
}

// Integers beyond a float's significand cast to each float type: rounded to nearest, ties to
// even, as the reference interpreter rounds them (u64 from 2^63 and s64 at its minimum
// included), the bits compared.
TEST(SpecialValues, CastsOfLargeIntegersToFloats) {
  const std::vector<std::pair<DType, std::vector<uint64_t>>> cases = {
      {DType::U64, {~uint64_t(0), uint64_t(1) << 63, (uint64_t(1) << 63) + (uint64_t(1) << 40) + 1, (uint64_t(1) << 53) + 1,
                    (uint64_t(1) << 32) + 1, (uint64_t(1) << 24) + 1, 0x8000008000000000ull, 0xFFFFFF7FFFFFFFFFull}},
      {DType::S64, {uint64_t(INT64_MIN), uint64_t(INT64_MAX), uint64_t(-(int64_t(1) << 53) - 1), (uint64_t(1) << 53) + 1,
                    uint64_t(-(int64_t(1) << 24) - 3), 0x4000008000000000ull}},
      {DType::U32, {0xFFFFFFFFu, 0x80000001u, 0x01000001u, 0x80000080u}},
      {DType::S32, {uint64_t(int64_t(INT32_MIN)), uint64_t(int64_t(INT32_MAX)), uint64_t(int64_t(-16777217)), 16777217}}};
  for (const auto& [from, values] : cases) {
    if (!devtest::missing_feature(from).empty()) continue;
    const int64_t n = int64_t(values.size());
    Literal in{{from, {n}}, std::vector<uint8_t>(ir::TensorType{from, {n}}.byte_size())};
    for (int64_t k = 0; k < n; ++k) ir::set_element(in, k, ir::Scalar{0, int64_t(values[k]), true});
    for (DType to : kFloats) {
      if (!devtest::missing_feature(to).empty()) continue;
      GraphWriter gt("int_to_float");
      const ir::Graph g = gt.finish({gt.node("as_type", {gt.param(0, from, {n})}, to, {n})});
      const Literal got = run(g, {in})[0], want = ir::interpret(g, {in})[0];
      for (int64_t k = 0; k < n; ++k)
        EXPECT_TRUE(bit_equal(ir::get_f64(want, k), ir::get_f64(got, k)))
            << ir::dtype_name(from) << " " << ir::get_i64(in, k) << " -> " << ir::dtype_name(to) << ": " << describe(ir::get_f64(got, k))
            << ", want " << describe(ir::get_f64(want, k));
    }
  }
}

// f32 NaNs whose payload lies in the lower 16 bits, cast to bf16 and then through ops a
// driver may fold to their operand (x * 1, x / 1, --x, max(x, x)): NaN after each, since
// bf16's rounding steps truncate the f32 bits in place and rely on casts quieting such NaNs.
TEST(SpecialValues, BfloatCastsKeepNaNsWithLowPayloads) {
  NXV_SKIP_WITHOUT(DType::BF16);
  const std::vector<uint32_t> bits = {0x7f800001, 0xff800001, 0x7f80ffff, 0x7fc00000, 0x7f800000, 0xff800000, 0x3fc00000, 0x80000000};
  const int64_t n = int64_t(bits.size());
  Literal in{{DType::F32, {n}}, std::vector<uint8_t>(size_t(n) * 4)};
  std::memcpy(in.data.data(), bits.data(), in.data.size());
  GraphWriter gt("bf16_low_payload_nans");
  const NodeId x = gt.node("as_type", {gt.param(0, DType::F32, {n})}, DType::BF16, {n});
  const NodeId one = gt.scalar(1.0, DType::BF16);
  const std::vector<std::pair<std::string, NodeId>> ops = {
      {"as_type", x},
      {"multiply by 1", gt.node("multiply", {x, one}, DType::BF16, {n})},
      {"divide by 1", gt.node("divide", {x, one}, DType::BF16, {n})},
      {"negate twice", gt.node("negate", {gt.node("negate", {x}, DType::BF16, {n})}, DType::BF16, {n})},
      {"max with itself", gt.node("max", {x, x}, DType::BF16, {n})},
  };
  std::vector<NodeId> outs;
  for (const auto& op : ops) outs.push_back(op.second);
  const ir::Graph g = gt.finish(outs);
  for (const auto& opts : {runtime::CompileOptions{}, device_computes_literals()}) {
    const auto got = run(g, {in}, opts);
    for (size_t j = 0; j < ops.size(); ++j) {
      Report r{ops[j].first, DType::BF16, "f32-tensor", {}};
      for (int64_t k = 0; k < n; ++k) {
        float f;
        std::memcpy(&f, &bits[size_t(k)], 4);
        char hex[16];
        std::snprintf(hex, sizeof hex, "0x%08x", bits[size_t(k)]);  // the NaNs told apart by their bits
        r.expect(hex, round_to(DType::BF16, f), ir::get_f64(got[j], k), Check::Exact, true, round_to(DType::BF16, f));
      }
    }
  }
}

// NVIDIA's vendor id where this device, compiled for through NVIDIA's code path, converts f16
// in hardware there (codegen::converts_f16_in_hardware); 0 where it lacks what that takes.
uint32_t nvidia_with_hardware_f16() {
  codegen::DeviceCaps caps = device()->info().caps;
  caps.vendor_id = codegen::pci_vendor_id(codegen::Vendor::Nvidia);
  return codegen::converts_f16_in_hardware(caps) ? caps.vendor_id : 0;
}
constexpr const char* kLacksHardwareF16 =
    " lacks shaderFloat16, shaderRoundingModeRTEFloat16 or shaderSignedZeroInfNanPreserveFloat16";

// f16 through the hardware's conversions (codegen::converts_f16_in_hardware), run on this
// device under NVIDIA's code path: every f16 bit pattern to f32, and f32 values on, beside
// and halfway between halves (ties, the subnormal range, overflow) to f16, bit for bit
// against the host's conversions (NaN as NaN).
TEST(SpecialValues, F16HardwareConversionsAreExact) {
  const uint32_t nvidia = nvidia_with_hardware_f16();
  if (!nvidia) GTEST_SKIP() << device()->info().name << kLacksHardwareF16;
  std::vector<float> xs;
  for (uint32_t h = 0; h < 0x7C00; ++h) {
    const float v = ir::f16_to_f32(uint16_t(h)), next = ir::f16_to_f32(uint16_t(h + 1));
    const float mid = v + (next - v) / 2;  // exact: halves are 11 bits, f32 24
    for (float m : {v, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1.0f), std::nextafter(v, 1.0f)}) {
      xs.push_back(m);
      xs.push_back(-m);
    }
  }
  for (float m : {65504.0f, 65519.996f, 65520.0f, 1e30f, INFINITY, NAN, 0x1p-25f, 0x1.8p-25f, 0x1p-26f, 1e-30f, 1e-45f})
    for (float sgn : {1.0f, -1.0f}) xs.push_back(sgn * m);
  const int64_t n = int64_t(xs.size());
  GraphWriter gt("f16_hardware");
  const NodeId halves = gt.param(0, DType::F16, {65536}), floats = gt.param(1, DType::F32, {n});
  const NodeId widened = gt.node("as_type", {halves}, DType::F32, {65536}), narrowed = gt.node("as_type", {floats}, DType::F16, {n});
  const ir::Graph g = gt.finish({widened, narrowed});
  Literal in_h{ir::TensorType{DType::F16, {65536}}, {}}, in_f{ir::TensorType{DType::F32, {n}}, {}};
  in_h.data.resize(65536 * 2);
  for (uint32_t h = 0; h < 65536; ++h) std::memcpy(&in_h.data[h * 2], &h, 2);
  in_f.data.resize(size_t(n) * 4);
  std::memcpy(in_f.data.data(), xs.data(), in_f.data.size());
  runtime::CompileOptions opts;
  opts.as_vendor = nvidia;
  const auto got = runtime::Executable::compile(device(), g, opts)->run_host({in_h, in_f});
  ASSERT_EQ(got.size(), 2u);
  int bad = 0;
  for (uint32_t h = 0; h < 65536 && bad < 8; ++h) {
    float w = ir::f16_to_f32(uint16_t(h)), v;
    std::memcpy(&v, &got[0].data[h * 4], 4);
    if (std::isnan(w) ? !std::isnan(v) : std::memcmp(&w, &v, 4) != 0)
      ++bad, ADD_FAILURE() << "f16 0x" << std::hex << h << " to f32: " << v << ", want " << w;
  }
  for (int64_t i = 0; i < n && bad < 16; ++i) {
    uint16_t w = ir::f32_to_f16(xs[size_t(i)]), v;
    std::memcpy(&v, &got[1].data[size_t(i) * 2], 2);
    const bool nan = (w & 0x7FFF) > 0x7C00;
    if (nan ? (v & 0x7FFF) <= 0x7C00 : v != w)
      ++bad, ADD_FAILURE() << "f32 " << std::hexfloat << xs[size_t(i)] << " to f16: 0x" << std::hex << v << ", want 0x" << w;
  }
}

// A rounding step that stays in registers (codegen's f16_round_trip_hw) under NVIDIA's code
// path: (p + q) - r in f16, each op in f32 rounded to f16, for p every f16 bit pattern and q
// and r from values that put the sums on ties, in the subnormal range, at overflow and on
// signed zeros, bit for bit against the host (NaN as NaN).
TEST(SpecialValues, F16HardwareRoundingStepsAreExact) {
  const uint32_t nvidia = nvidia_with_hardware_f16();
  if (!nvidia) GTEST_SKIP() << device()->info().name << kLacksHardwareF16;
  const std::vector<uint16_t> qs = {0x0000, 0x8000, 0x0001, 0x8001, 0x3C00, 0x7BFF, 0xFBFF, 0x0200, 0x1400, 0x93FF, 0x0400};
  const int64_t n = 65536;
  Literal p{ir::TensorType{DType::F16, {n}}, {}}, q = p, r = p;
  for (Literal* l : {&p, &q, &r}) l->data.resize(size_t(n) * 2);
  for (uint32_t h = 0; h < n; ++h) {
    const uint16_t a = uint16_t(h), b = qs[h % qs.size()], c = qs[(h / qs.size()) % qs.size()];
    std::memcpy(&p.data[h * 2], &a, 2);
    std::memcpy(&q.data[h * 2], &b, 2);
    std::memcpy(&r.data[h * 2], &c, 2);
  }
  GraphWriter gt("f16_steps");
  const NodeId pp = gt.param(0, DType::F16, {n}), qp = gt.param(1, DType::F16, {n}), rp = gt.param(2, DType::F16, {n});
  const NodeId sum = gt.node("add", {pp, qp}, DType::F16, {n});
  const ir::Graph g = gt.finish({gt.node("subtract", {sum, rp}, DType::F16, {n})});
  runtime::CompileOptions opts;
  opts.as_vendor = nvidia;
  const auto got = runtime::Executable::compile(device(), g, opts)->run_host({p, q, r});
  int bad = 0;
  for (uint32_t h = 0; h < n && bad < 8; ++h) {
    uint16_t a, b, c, v;
    std::memcpy(&a, &p.data[h * 2], 2), std::memcpy(&b, &q.data[h * 2], 2), std::memcpy(&c, &r.data[h * 2], 2);
    std::memcpy(&v, &got[0].data[h * 2], 2);
    const float s1 = ir::f16_to_f32(ir::f32_to_f16(ir::f16_to_f32(a) + ir::f16_to_f32(b)));
    const uint16_t w = ir::f32_to_f16(s1 - ir::f16_to_f32(c));
    const bool nan = (w & 0x7FFF) > 0x7C00;
    if (nan ? (v & 0x7FFF) <= 0x7C00 : v != w)
      ++bad, ADD_FAILURE() << "(0x" << std::hex << a << " + 0x" << b << ") - 0x" << c << " = 0x" << v << ", want 0x" << w;
  }
}

// The same path with literal operands the device computes: -s s and s s of the smallest
// half, each stacked beside a pad of +1 and -1 made of literals, keep their zero's sign. The
// conversions must leave literal-derived values marked foldable (spirv::Builder::unfoldable):
// where an index went in as an operand id, Mesa folded select(c, -0.0, 1.0) into +0.0, and
// NVIDIA's compiler did the same.
TEST(SpecialValues, F16HardwareConversionsKeepLiteralZeroSigns) {
  const uint32_t nvidia = nvidia_with_hardware_f16();
  if (!nvidia) GTEST_SKIP() << device()->info().name << kLacksHardwareF16;
  const DType t = DType::F16;
  const double s = 0x1p-24;
  GraphWriter gt("f16_literal_zeros");
  const auto binary = [&](const char* op, double x, double y) { return gt.node(op, {gt.scalar(x, t), gt.scalar(y, t)}, t, {}); };
  std::vector<NodeId> outs;
  std::vector<std::pair<double, double>> want;
  for (auto [product, value] : {std::pair{binary("multiply", -s, s), -0.0}, std::pair{binary("multiply", s, s), 0.0}}) {
    for (auto [pad, pad_value] : {std::pair{binary("pow", 1, 2), 1.0}, std::pair{binary("multiply", -1, 1), -1.0}}) {
      outs.push_back(gt.stack({product, pad}, t));
      want.emplace_back(value, pad_value);
    }
  }
  runtime::CompileOptions opts = device_computes_literals();
  opts.as_vendor = nvidia;
  const auto got = runtime::Executable::compile(device(), gt.finish(outs), opts)->run_host({});
  ASSERT_EQ(got.size(), outs.size());
  for (size_t o = 0; o < outs.size(); ++o) {
    EXPECT_TRUE(bit_equal(want[o].first, ir::get_f64(got[o], 0)))
        << "output " << o << ": " << describe(ir::get_f64(got[o], 0)) << ", want " << describe(want[o].first);
    EXPECT_TRUE(bit_equal(want[o].second, ir::get_f64(got[o], 1))) << "output " << o << "'s pad";
  }
}

// f64 to f16 rounds once, as the interpreter does: through f32 rounded to nearest, a value
// just beyond a tie between two halves became the tie and went to the even one (1 + 2^-11 +
// 2^-40 gave 1), and 65519.99999 became 65520 and so inf. As a tensor, as literals the
// device converts and as literals the compiler folds.
TEST(SpecialValues, F64ToF16RoundsOnce) {
  NXV_SKIP_WITHOUT(DType::F64);
  const std::vector<std::pair<double, double>> cases = {
      {1 + 0x1p-11 + 0x1p-40, 1 + 0x1p-10}, {-(1 + 0x1p-11 + 0x1p-40), -(1 + 0x1p-10)}, {1 + 3 * 0x1p-11 - 0x1p-40, 1 + 0x1p-10},
      {65519.99999999, 65504},             {0x1p-25 + 0x1p-60, 0x1p-24},               {-0x1p-25 - 0x1p-60, -0x1p-24},
      {2049 + 0x1p-30, 2050}};
  std::vector<double> v;
  for (const auto& c : cases) v.push_back(c.first);
  for (int kind : {0, 1, 2}) {
    const Literal got = cast_values(DType::F64, DType::F16, kind, v);
    Report r{"as_type", DType::F64, std::string(kind == 2 ? "literal (constant-folded)" : kind ? "literal" : "tensor") + " to f16", {}};
    for (size_t k = 0; k < cases.size(); ++k)
      r.expect(describe(cases[k].first), cases[k].second, ir::get_f64(got, int64_t(k)), Check::Exact, false, cases[k].second);
  }
}

// pow of negative bases at exponents beyond the mantissa (all even integers: 2^24 in f32,
// 2^53 in f64, 2^11 in f16) and odd ones just below it, as tensors, as literals the device
// computes and constant-folded, against C's pow on the host and the reference interpreter.
// The sign of an infinite or zero result is exact; others agree within 1e-6 relative.
// (pow(-3, 1e20) was -inf: the magnitude's correction term turned negative past exp's range.)
TEST(SpecialValues, PowOfNegativeBasesAtHugeExponents) {
  for (DType t : kFloats) {
    NXV_SKIP_WITHOUT(t);
    const double odd_max = t == DType::F64 ? 0x1p53 - 1 : t == DType::F16 ? 2047 : t == DType::BF16 ? 255 : 0x1p24 - 1;
    const std::vector<double> bases = {-3, -1.5, -2, -0.5, -1, -0.75, 3};
    const std::vector<double> exps = {1e20, 1e19, 1e18, 1e16, 1e30, -1e20, odd_max, -odd_max, odd_max + 1, 4097};
    std::vector<double> xs, ys;
    for (double x : bases)
      for (double y : exps)
        if (std::isfinite(round_to(t, y))) xs.push_back(round_to(t, x)), ys.push_back(round_to(t, y));
    const int64_t n = int64_t(xs.size());
    // `got(k)`: the k-th result; every `step`-th case from the first.
    auto check = [&](const std::string& kind, const std::function<double(int64_t)>& got, int64_t step = 1) {
      for (int64_t k = 0; k < n; k += step) {
        const double want = round_to(t, std::pow(xs[size_t(k)], ys[size_t(k)])), g = got(k);
        const bool ok = want == 0 || std::isinf(want) ? bit_equal(want, g) : std::fabs(g - want) <= 1e-6 * std::fabs(want);
        EXPECT_TRUE(ok) << ir::dtype_name(t) << " " << kind << ": pow(" << describe(xs[size_t(k)]) << ", "
                        << describe(ys[size_t(k)]) << ") = " << describe(g) << ", want " << describe(want);
      }
    };
    {
      GraphWriter gt("pow_tensors");
      NodeId x = gt.param(0, t, {n}), y = gt.param(1, t, {n});
      const ir::Graph g = gt.finish({gt.node("pow", {x, y}, t, {n})});
      const std::vector<Literal> in = {literal(t, {n}, xs), literal(t, {n}, ys)};
      const Literal device = run(g, in)[0], reference = ir::interpret(g, in)[0];
      check("tensors", [&](int64_t k) { return ir::get_f64(device, k); });
      check("interpreter", [&](int64_t k) { return ir::get_f64(reference, k); });
    }
    // One scalar output each: one kernel, no stack. Emulated, the device computes every 7th
    // case (each exponent once, every base; the other cases are the tensors' and the folded
    // literals'), as emulated() says why.
    const int64_t every = emulated(t) ? 7 : 1;
    for (bool fold : {false, true}) {
      const int64_t step = fold ? 1 : every;
      GraphWriter gt("pow_literals");
      std::vector<NodeId> results;
      for (int64_t k = 0; k < n; k += step) results.push_back(gt.node("pow", {gt.scalar(xs[size_t(k)], t), gt.scalar(ys[size_t(k)], t)}, t, {}));
      const ir::Graph g = gt.finish(results);
      const std::vector<Literal> got = fold ? run(g, {}) : run(g, {}, device_computes_literals());
      check(fold ? "literals (constant-folded)" : "literals", [&](int64_t k) { return ir::get_f64(got[size_t(k / step)], 0); }, step);
    }
  }
}

// Emulated f64 keeps subnormals (soft_f64.h) whatever the device's own f64 does: pow took a
// subnormal operand for the zero a flushing device's f64 may see (pow(inf, 2^-1074) was 1,
// not inf, on lavapipe with f64 emulated).
TEST(SpecialValues, EmulatedPowKeepsSubnormalOperands) {
  const double sub = 0x1p-1074;
  std::vector<double> xs, ys;
  for (double x : {0.0, -0.0, 1.0, -1.0, 2.0, 0.5, double(INFINITY), -double(INFINITY), double(NAN), sub, -sub})
    for (double y : {sub, -sub}) xs.push_back(x), ys.push_back(y), xs.push_back(y), ys.push_back(x);
  const int64_t n = int64_t(xs.size());
  runtime::CompileOptions emulate;
  emulate.emulate = "f64";
  GraphWriter gt("pow_subnormal");
  const NodeId x = gt.param(0, DType::F64, {n}), y = gt.param(1, DType::F64, {n});
  const Literal tensors = runtime::Executable::compile(device(), gt.finish({gt.node("pow", {x, y}, DType::F64, {n})}), emulate)
                              ->run_host({literal(DType::F64, {n}, xs), literal(DType::F64, {n}, ys)})[0];
  Report r{"pow", DType::F64, "emulated tensor", {}};
  for (int64_t k = 0; k < n; ++k) {
    const double want = std::pow(xs[size_t(k)], ys[size_t(k)]);
    const std::string what = describe(xs[size_t(k)]) + ", " + describe(ys[size_t(k)]);
    // Exact: the software keeps subnormals, so no flushed alternative is allowed.
    r.expect(what, want, ir::get_f64(tensors, k), Check::Special, true, want);
  }
}

// Ops on normal literals alone whose results are special (a zero of either sign, an
// infinity), stacked into one tensor with ±1 pads (a stack is a chain of selects on the
// position). Without constant-fold the driver folds each op to a constant itself, and Mesa
// 22.3's lavapipe matched a derived -0.0 against its rule select(c, 0.0, 1.0) -> b2f(!c)
// (+0.0), and a derived +0.0 against select(c, -1.0, -0.0) -> -b2f(c) (-0.0):
// pow(-0.5, 2047) came out +0 beside pow(1, 2). Each op's result must
// match std::pow / IEEE arithmetic and the interpreter bit for bit, folded or not.
struct LiteralCase {
  std::string what;
  double want;  // in double; rounded to the type's storage
  std::function<NodeId(GraphWriter&, DType)> build;
};

std::vector<LiteralCase> special_literal_cases(DType t) {
  // Powers of two: s * s and s / b underflow past half the smallest subnormal, b * b
  // overflows, in every type (f16 computes in f32 registers and rounds when it stores).
  const int e = t == DType::F64 ? 600 : t == DType::F16 ? 14 : 100;
  const double s = std::ldexp(1.0, -e), b = std::ldexp(1.0, e);
  // The largest odd integer below 2^11 the type holds exactly (bf16: 8 significand bits).
  const double odd = t == DType::BF16 ? 255 : 2047;
  auto binary = [](const std::string& op, double x, double y) {
    return [=](GraphWriter& g, DType t) { return g.node(op, {g.scalar(x, t), g.scalar(y, t)}, t, {}); };
  };
  auto unary = [](const std::string& op, std::function<NodeId(GraphWriter&, DType)> of) {
    return [=](GraphWriter& g, DType t) { return g.node(op, {of(g, t)}, t, {}); };
  };
  std::vector<LiteralCase> cases = {
      {"pow(-0.5, odd)", std::pow(-0.5, odd), binary("pow", -0.5, odd)},
      {"pow(-0.5, -odd)", std::pow(-0.5, -odd), binary("pow", -0.5, -odd)},
      {"pow(-0.5, odd + 1)", std::pow(-0.5, odd + 1), binary("pow", -0.5, odd + 1)},
      {"pow(-0.5, 4096)", std::pow(-0.5, 4096), binary("pow", -0.5, 4096)},
      {"pow(-2, odd)", std::pow(-2.0, odd), binary("pow", -2.0, odd)},
      {"-s * s", -s * s, binary("multiply", -s, s)},
      {"s * s", s * s, binary("multiply", s, s)},
      {"-s / b", -s / b, binary("divide", -s, b)},
      {"s / -b", s / -b, binary("divide", s, -b)},
      {"-b * b", -b * b, binary("multiply", -b, b)},
      {"-1 / (b * b)", -1 / (b * b), [=](GraphWriter& g, DType t) { return g.node("divide", {g.scalar(-1, t), binary("multiply", b, b)(g, t)}, t, {}); }},
      {"negate(s * s)", -(s * s), unary("negate", binary("multiply", s, s))},
      {"abs(-s * s)", 0.0, unary("abs", binary("multiply", -s, s))},
      {"sign(-s * s)", -0.0, unary("sign", binary("multiply", -s, s))},
      {"-s * s + s * s", 0.0, [=](GraphWriter& g, DType t) {
         return g.node("add", {binary("multiply", -s, s)(g, t), binary("multiply", s, s)(g, t)}, t, {});
       }},
      // Nx's max: a tie keeps the first operand.
      {"max(-s * s, s * s)", -0.0, [=](GraphWriter& g, DType t) {
         return g.node("max", {binary("multiply", -s, s)(g, t), binary("multiply", s, s)(g, t)}, t, {});
       }},
  };
  return cases;
}

TEST(SpecialValues, StackedLiteralOpsKeepTheSignOfZero) {
  // Pads: ±1 derived from literals (pow(1, 2) as reported, -1 * 1) and plain ±1 literals.
  struct Pad {
    double value;
    std::function<NodeId(GraphWriter&, DType)> build;
  };
  const std::vector<Pad> pads = {
      {1.0, [](GraphWriter& g, DType t) { return g.node("pow", {g.scalar(1, t), g.scalar(2, t)}, t, {}); }},
      {-1.0, [](GraphWriter& g, DType t) { return g.node("multiply", {g.scalar(-1, t), g.scalar(1, t)}, t, {}); }},
      {1.0, [](GraphWriter& g, DType t) { return g.scalar(1, t); }},
      {-1.0, [](GraphWriter& g, DType t) { return g.scalar(-1, t); }}};
  for (DType t : kFloats) {
    NXV_SKIP_WITHOUT(t);
    const auto cases = special_literal_cases(t);
    // Emulated, one length: the stack's selects pick integer words there, which no float
    // pattern rule matches, and each kernel holds a case's emulated code (emulated()).
    for (int n : emulated(t) ? std::vector<int>{12} : std::vector<int>{1, 12, 120}) {
      // Every case beside every pad, after n copies of it and before them: the driver's select
      // chain collapses equal pads, so the case meets a pad constant in a select either way.
      GraphWriter gt("stacked_literals");
      std::vector<NodeId> outs;
      std::vector<std::vector<double>> want;
      std::vector<std::string> what;
      for (const auto& c : cases) {
        for (size_t p = 0; p < pads.size(); ++p) {
          for (bool case_first : {false, true}) {
            std::vector<NodeId> parts(size_t(n), pads[p].build(gt, t));
            std::vector<double> w(size_t(n), pads[p].value);
            parts.insert(case_first ? parts.begin() : parts.end(), c.build(gt, t));
            w.insert(case_first ? w.begin() : w.end(), round_to(t, c.want));
            outs.push_back(gt.stack(parts, t));
            want.push_back(w);
            what.push_back(c.what + (case_first ? " before " : " after ") + std::to_string(n) + " x pad " + std::to_string(p));
          }
        }
      }
      const ir::Graph g = gt.finish(outs);
      const std::vector<Literal> reference = ir::interpret(g, {});
      for (bool fold : {false, true}) {
        const std::vector<Literal> got = fold ? run(g, {}) : run(g, {}, device_computes_literals());
        for (size_t o = 0; o < outs.size(); ++o) {
          for (int64_t k = 0; k <= n; ++k) {
            const double w = want[o][size_t(k)];
            EXPECT_TRUE(bit_equal(w, ir::get_f64(got[o], k)))
                << ir::dtype_name(t) << (fold ? " constant-folded" : "") << ", " << what[o] << ", element " << k << ": "
                << describe(ir::get_f64(got[o], k)) << ", want " << describe(w);
            if (!fold) {
              EXPECT_TRUE(bit_equal(w, ir::get_f64(reference[o], k)))
                  << ir::dtype_name(t) << " interpreter, " << what[o] << ", element " << k << ": "
                  << describe(ir::get_f64(reference[o], k)) << ", want " << describe(w);
            }
          }
        }
      }
    }
  }
}

// The issue's example: x / 0.0 with the divisor a literal `constant` (Mesa 22.3's lavapipe
// folded it to 0 in f32 and to denormal garbage in f64) and is_nan of it.
TEST(SpecialValues, DivisionByLiteralZero) {
  for (DType t : {DType::F32, DType::F64}) {
    NXV_SKIP_WITHOUT(t);
    GraphWriter gt("div0");
    NodeId x = gt.param(0, t, {4});
    NodeId q = gt.node("divide", {x, gt.scalar(0.0, t)}, t, {4});
    NodeId nan = gt.node("is_nan", {q}, DType::U8, {4});
    auto got = run(gt.finish({q, nan}), {literal(t, {4}, {-1.0, 0.0, 1.0, -0.0})});
    EXPECT_EQ(ir::get_f64(got[0], 0), -INFINITY) << ir::dtype_name(t);
    EXPECT_TRUE(std::isnan(ir::get_f64(got[0], 1))) << ir::dtype_name(t);
    EXPECT_EQ(ir::get_f64(got[0], 2), INFINITY) << ir::dtype_name(t);
    EXPECT_TRUE(std::isnan(ir::get_f64(got[0], 3))) << ir::dtype_name(t);
    for (int64_t k = 0; k < 4; ++k) EXPECT_EQ(ir::get_i64(got[1], k), k % 2) << ir::dtype_name(t) << " is_nan " << k;
  }
}

// x / 2^k of a literal 2^k runs as x * 2^-k (simplify): exact, so every operand (special
// values, subnormals, quotients that turn subnormal or overflow) gives IEEE's quotient.
TEST(SpecialValues, DivisionByLiteralPowersOfTwo) {
  for (DType t : kFloats) {
    NXV_SKIP_WITHOUT(t);
    const int most = t == DType::F16 ? 14 : t == DType::F64 ? 1022 : 126;  // 2^±most both normal
    const double least_normal = std::ldexp(1.0, t == DType::F16 ? -14 : t == DType::F64 ? -1022 : -126);
    std::vector<double> x = special_values(t);
    for (double v : {3.0, -0.75, least_normal, -3 * least_normal, max_finite(t) / 2}) x.push_back(round_to(t, v));
    const int64_t n = int64_t(x.size());
    const std::vector<double> divisors = {8.0, -0.5, std::ldexp(1.0, most), std::ldexp(1.0, -most)};
    GraphWriter gt("pow2_divisors");
    const NodeId p = gt.param(0, t, {n});
    std::vector<NodeId> outs;
    for (double d : divisors) outs.push_back(gt.node("divide", {p, gt.scalar(d, t)}, t, {n}));
    const auto got = run(gt.finish(outs), {literal(t, {n}, x)});
    for (size_t j = 0; j < divisors.size(); ++j) {
      Report r{"divide", t, "literal " + describe(divisors[j]), {}};
      for (int64_t k = 0; k < n; ++k) {
        const double a = x[size_t(k)];
        r.expect(describe(a), round_to(t, a / divisors[j]), ir::get_f64(got[j], k), Check::Exact, is_special(a),
                 flush(t, round_to(t, flush(t, a) / divisors[j])));
      }
    }
  }
}

// x / c and c / x of literals c that are not powers of two, whose divisions a driver may
// fold into products by reciprocals (NVIDIA's f64 x / 3.0 was an ulp off), and a divisor
// near the top of the range, whose reciprocal is below the normal range: IEEE's quotients
// at 2^20 elements. f32 and f64 only: f16's and bf16's quotients are f32's, rounded again.
TEST(SpecialValues, DivisionByOtherLiterals) {
  for (DType t : {DType::F32, DType::F64}) {
    NXV_SKIP_WITHOUT(t);
    const int64_t n = int64_t(1) << 20;
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<double> significand(1.0, 2.0);
    std::uniform_int_distribution<int> exponent(-24, 24);
    std::vector<double> x(static_cast<size_t>(n));
    for (double& v : x) v = round_to(t, std::ldexp(rng() & 1 ? significand(rng) : -significand(rng), exponent(rng)));
    const std::vector<double> divisors = {3.0, 10.0, -7.0, round_to(t, 0.1), round_to(t, max_finite(t) / 1.5)};
    const double dividend = 7.0;
    GraphWriter gt("literal_divisions");
    const NodeId p = gt.param(0, t, {n});
    std::vector<NodeId> outs;
    for (double d : divisors) outs.push_back(gt.node("divide", {p, gt.scalar(d, t)}, t, {n}));
    outs.push_back(gt.node("divide", {gt.scalar(dividend, t), p}, t, {n}));
    const auto got = run(gt.finish(outs), {literal(t, {n}, x)});
    // Rounding the double quotient to f32 is f32's correctly rounded quotient (53 >= 2 x 24 + 2).
    auto check = [&](size_t j, const std::string& kind, auto quotient) {
      Report r{"divide", t, kind, {}};
      for (int64_t k = 0; k < n; ++k) {
        const double want = round_to(t, quotient(x[size_t(k)]));
        r.expect(describe(x[size_t(k)]), want, ir::get_f64(got[j], k), Check::Exact, false, flush(t, want));
      }
    };
    for (size_t j = 0; j < divisors.size(); ++j)
      check(j, "literal divisor " + describe(divisors[j]), [&](double a) { return a / divisors[j]; });
    check(divisors.size(), "literal dividend 7", [&](double a) { return dividend / a; });
  }
}

// The same inside a loop's body (its kernels compiled per body, driven from the host or,
// with a cond in the body, as one serial-loop kernel): three steps of x = x / 0.0.
TEST(SpecialValues, DivisionByLiteralZeroInALoop) {
  const ir::Graph g = ir::parse_graph(R"({"version": 1, "name": "div0_loop", "nodes": [
    {"id": 0, "op": "parameter", "type": "f32", "shape": [4], "attrs": {"index": 0}},
    {"id": 1, "op": "constant", "type": "s32", "shape": [], "attrs": {"value": 0}},
    {"id": 2, "op": "while", "args": [1, 0], "results": [{"type": "s32", "shape": []}, {"type": "f32", "shape": [4]}],
     "regions": {
      "condition": {"version": 1, "nodes": [
         {"id": 0, "op": "parameter", "type": "s32", "shape": [], "attrs": {"index": 0}},
         {"id": 1, "op": "constant", "type": "s32", "shape": [], "attrs": {"value": 3}},
         {"id": 2, "op": "less", "args": [0, 1], "type": "u8", "shape": []}], "outputs": [2]},
      "body": {"version": 1, "nodes": [
         {"id": 0, "op": "parameter", "type": "s32", "shape": [], "attrs": {"index": 0}},
         {"id": 1, "op": "parameter", "type": "f32", "shape": [4], "attrs": {"index": 1}},
         {"id": 2, "op": "constant", "type": "s32", "shape": [], "attrs": {"value": 1}},
         {"id": 3, "op": "add", "args": [0, 2], "type": "s32", "shape": []},
         {"id": 4, "op": "constant", "type": "f32", "shape": [], "attrs": {"value": 0.0}},
         {"id": 5, "op": "divide", "args": [1, 4], "type": "f32", "shape": [4]},
         {"id": 6, "op": "greater", "args": [0, 2], "type": "u8", "shape": []},
         {"id": 7, "op": "cond", "args": [6, 5], "results": [{"type": "f32", "shape": [4]}], "regions": {
           "branch0": {"version": 1, "nodes": [
              {"id": 0, "op": "parameter", "type": "f32", "shape": [4], "attrs": {"index": 0}}], "outputs": [0]},
           "branch1": {"version": 1, "nodes": [
              {"id": 0, "op": "parameter", "type": "f32", "shape": [4], "attrs": {"index": 0}},
              {"id": 1, "op": "constant", "type": "f32", "shape": [], "attrs": {"value": "-0.0"}},
              {"id": 2, "op": "multiply", "args": [0, 1], "type": "f32", "shape": [4]}], "outputs": [2]}}},
         {"id": 8, "op": "elem", "args": [7], "type": "f32", "shape": [4], "attrs": {"index": 0}}], "outputs": [3, 8]}}},
    {"id": 3, "op": "elem", "args": [2], "type": "f32", "shape": [4], "attrs": {"index": 1}}],
   "outputs": [3]})");
  // Steps 0 and 1: x / 0.0 (cond false); step 2: x / 0.0 * -0.0 (Inf * -0.0 = NaN).
  const double want_two[4] = {-INFINITY, NAN, INFINITY, NAN};
  for (bool serial : {true, false}) {
    runtime::CompileOptions opts;
    opts.serial_loops = serial;
    Literal got = runtime::Executable::compile(device(), g, opts)->run_host({literal(DType::F32, {4}, {-1.0, 0.0, 1.0, -0.0})})[0];
    for (int64_t k = 0; k < 4; ++k) {
      const double x = want_two[k] / 0.0 * -0.0;
      EXPECT_TRUE(bit_equal(x, ir::get_f64(got, k))) << (serial ? "serial" : "host") << " loop, element " << k << ": "
                                                     << describe(ir::get_f64(got, k)) << ", want " << describe(x);
    }
  }
}

// Zeros the driver can derive itself, not literals: x < x and x xor x of integers, and an
// iota over an axis of one, times (or into) Inf and NaN. Their conversion to float hides them
// behind the push-constant zero: Mesa 22.3's lavapipe otherwise folded 0.0 * Inf and 0 / x to
// 0 (found by nxv_fuzz_diff, seeds 17, 32 and 63).
TEST(SpecialValues, ZerosTheDriverDerivesAreNotFolded) {
  for (DType t : {DType::F32, DType::F64, DType::BF16}) {
    NXV_SKIP_WITHOUT(t);
    const std::string ty = ir::dtype_name(t);
    const std::string iota_type = device()->info().caps.int64 ? "u64" : "u32";
    const ir::Graph g = ir::parse_graph(R"({"version": 1, "name": "derived_zeros", "nodes": [
      {"id": 0, "op": "parameter", "type": "s32", "shape": [4], "attrs": {"index": 0}},
      {"id": 1, "op": "parameter", "type": ")" + ty + R"(", "shape": [4], "attrs": {"index": 1}},
      {"id": 2, "op": "less", "args": [0, 0], "type": "u8", "shape": [4]},
      {"id": 3, "op": "constant", "type": ")" + ty + R"(", "shape": [4], "attrs": {"value": "inf"}},
      {"id": 4, "op": "multiply", "args": [2, 3], "type": ")" + ty + R"(", "shape": [4]},
      {"id": 5, "op": "logical_xor", "args": [0, 0], "type": "u8", "shape": [4]},
      {"id": 6, "op": "divide", "args": [5, 1], "type": ")" + ty + R"(", "shape": [4]},
      {"id": 7, "op": "iota", "type": ")" + iota_type + R"(", "shape": [1, 4], "attrs": {"axis": 0}},
      {"id": 8, "op": "reshape", "args": [1], "type": ")" + ty + R"(", "shape": [4, 1]},
      {"id": 9, "op": "dot", "args": [8, 7], "type": ")" + ty + R"(", "shape": [4, 4],
       "attrs": {"contract_axes1": [1], "contract_axes2": [0], "batch_axes1": [], "batch_axes2": []}}],
      "outputs": [4, 6, 9]})");
    const std::vector<double> x = {INFINITY, 0.0, NAN, -INFINITY};
    auto got = run(g, {literal(DType::S32, {4}, {1, -2, 3, 0}), literal(t, {4}, x)});
    for (int64_t k = 0; k < 4; ++k) {
      EXPECT_TRUE(std::isnan(ir::get_f64(got[0], k))) << ty << " 0 * Inf, element " << k << ": " << describe(ir::get_f64(got[0], k));
      const double q = 0.0 / x[size_t(k)];
      EXPECT_TRUE(bit_equal(q, ir::get_f64(got[1], k))) << ty << " 0 / x, element " << k << ": "
                                                        << describe(ir::get_f64(got[1], k)) << ", want " << describe(q);
      for (int64_t j = 0; j < 4; ++j) {
        const double p = x[size_t(k)] * 0.0;
        EXPECT_TRUE(bit_equal(p, ir::get_f64(got[2], k * 4 + j))) << ty << " x * iota, element " << k << "," << j << ": "
                                                                   << describe(ir::get_f64(got[2], k * 4 + j));
      }
    }
  }
}

// The workaround itself: a special literal reaches the module only through the push-constant
// zero (XOR'd into its bits, bitcast), never as a float OpConstant the driver could fold, in
// this device's code and in NVIDIA's; a normal literal stays a plain constant, and a module
// without special literals declares no push constants.
codegen::KernelBinary divide_by_literal(const std::string& value, uint32_t vendor) {
  const std::string g = R"({"version": 1, "name": "d", "nodes": [
      {"id": 0, "op": "parameter", "type": "f32", "shape": [4], "attrs": {"index": 0}},
      {"id": 1, "op": "constant", "type": "f32", "shape": [], "attrs": {"value": )" +
                        value + R"(}},
      {"id": 2, "op": "divide", "args": [0, 1], "type": "f32", "shape": [4]}], "outputs": [2]})";
  runtime::CompileOptions opts;
  opts.as_vendor = vendor;
  return runtime::Executable::compile(device(), ir::parse_graph(g), opts)->kernels().at(0);
}

TEST(SpecialValues, SpecialLiteralsAreHiddenFromTheDriver) {
  for (uint32_t vendor : {0u, 0x10DEu}) {
    for (const std::string special : {"0.0", "\"-0.0\"", "\"inf\"", "\"-inf\"", "\"nan\"", "1e-45"}) {
      const auto k = divide_by_literal(special, vendor);
      const std::string text = codegen::disassemble(k.spirv);
      EXPECT_EQ(k.push_constant_bytes, 4u) << special;
      EXPECT_NE(text.find("PushConstant"), std::string::npos) << special << "\n" << text;
      EXPECT_NE(text.find("OpBitwiseXor"), std::string::npos) << special << "\n" << text;
      // The module's own float constants (division's range guard) are all normal numbers.
      const std::string decl = "= OpConstant %float ";
      for (size_t at = text.find(decl); at != std::string::npos; at = text.find(decl, at + 1)) {
        const double c = std::strtod(text.c_str() + at + decl.size(), nullptr);
        EXPECT_TRUE(std::isfinite(c) && std::fabs(c) >= 0x1p-126) << special << ": a special float constant\n" << text;
      }
    }
    const auto plain = divide_by_literal("2.5", vendor);
    EXPECT_EQ(plain.push_constant_bytes, 0u);
    EXPECT_EQ(codegen::disassemble(plain.spirv).find("PushConstant"), std::string::npos);
    EXPECT_NE(codegen::disassemble(plain.spirv).find("= OpConstant %float 2.5"), std::string::npos);
  }
}

// The workaround for values the driver derives: with constant-fold off, pow(-0.5, 2047)
// and pow(1, 2) of literals reach the stack's select only through the push-constant word,
// each OR'd with a zero of its own (with one shared zero, NIR hoists the OR out of the
// select and the two constants meet again), in this device's code and in NVIDIA's.
TEST(SpecialValues, DerivedValuesAreHiddenFromTheDriver) {
  GraphWriter gt("derived");
  const DType t = DType::F32;
  auto pow = [&](double x, double y) { return gt.node("pow", {gt.scalar(x, t), gt.scalar(y, t)}, t, {}); };
  const ir::Graph g = gt.finish({gt.stack({pow(1, 2), pow(-0.5, 2047)}, t)});
  for (uint32_t vendor : {0u, 0x10DEu}) {
    runtime::CompileOptions opts = device_computes_literals();
    opts.as_vendor = vendor;
    const auto exe = runtime::Executable::compile(device(), g, opts);
    ASSERT_EQ(exe->kernels().size(), 1u);
    const std::string text = codegen::disassemble(exe->kernels()[0].spirv);
    // The zeros: the push-constant word (the one OpLoad through a PushConstant pointer)
    // AND'd with a mask; each is used once (by its OR, or a UConvert to 64 bits before it).
    auto id_defined_by = [&](const std::string& pattern) {
      const size_t at = text.find(pattern);
      if (at == std::string::npos) return std::string();
      const size_t start = text.rfind('%', text.rfind(" = ", at));
      return text.substr(start, text.find(' ', start) - start);
    };
    const std::string word = id_defined_by("= OpLoad %uint " + id_defined_by("OpAccessChain %_ptr_PushConstant_uint") + "\n");
    ASSERT_FALSE(word.empty()) << text;
    std::vector<std::string> zeros;
    const std::string def = "= OpBitwiseAnd %uint " + word + " ";
    for (size_t at = text.find(def); at != std::string::npos; at = text.find(def, at + 1)) {
      const size_t start = text.rfind('%', text.rfind(" = ", at));
      zeros.push_back(text.substr(start, text.find(' ', start) - start));
    }
    EXPECT_GE(zeros.size(), 2u) << text;
    for (const auto& z : zeros) {
      size_t uses = 0;
      for (size_t at = text.find(z + "\n"); at != std::string::npos; at = text.find(z + "\n", at + 1)) ++uses;
      for (size_t at = text.find(z + " "); at != std::string::npos; at = text.find(z + " ", at + 1)) ++uses;
      EXPECT_EQ(uses, 2u) << z << " is shared (one definition, one use expected)\n" << text;
    }
    if (vendor == 0) {
      const Literal got = exe->run_host({})[0];
      EXPECT_TRUE(bit_equal(1.0, ir::get_f64(got, 0)));
      EXPECT_TRUE(bit_equal(-0.0, ir::get_f64(got, 1))) << describe(ir::get_f64(got, 1));
    }
  }
}

}  // namespace
}  // namespace nxv
