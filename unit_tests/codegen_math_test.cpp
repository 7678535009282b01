// The math library (codegen/emit_math.cpp) on the default device against the C library in
// long double: every f64 function, and the f32 functions taken from it rather than GLSL.std.450. Special values must
// come out exactly (NaN, the right infinity, signed zeros of odd functions); elsewhere the
// error is measured in ulp of the result type, with the bound stated per function.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "codegen/targets/launch.h"
#include "ir/interpreter.h"
#include "device_testing.h"
#include "ir/json.h"
#include "ir/literal.h"
#include "runtime/runtime.h"

namespace nxv {
namespace {

using ir::DType;

struct Fn {
  const char* op;
  std::function<long double(long double)> ref;
  double lo, hi;       // random inputs uniformly in [lo, hi] (besides the edge values)
  double max_ulp;      // bound on |device - ref| / ulp(ref) in f64
  double max_ulp_f32;  // and in f32 (a GPU computes it in f32 through the same library)
};

// ulp of v in a type with `mant` explicit mantissa bits (subnormals: the smallest step).
double ulp(long double v, int mant, int min_exp) {
  int e;
  std::frexp(double(v), &e);
  return std::ldexp(1.0, std::max(e - 1, min_exp) - mant);
}

std::vector<double> edge_values() {
  return {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 1e-300, -1e-300, 4.9e-324, 1e-8, -1e-8, 0.999999, -0.999999,
          10.0, -10.0, 30.0, 700.0, -700.0, 710.0, -746.0, 1e300, -1e300, INFINITY, -INFINITY, NAN, 3.14159265358979,
          1e5, -1e5, 2.4, 2.6, 5.9, 0.3466, -0.3466, 1e-30, 1.2565608739376064e-16, -1.6e-16, 3e-16, 5e-17,
          // either side of where e^x overflows, underflows (f64), and e^x / 2 overflows
          709.78, 709.79, -745.1, -745.2, 710.47, 710.48, 22.0, 22.1, -22.1,
          // near 1, where erf_inv's start is far off (1 - 2^-53, 1 - 2^-45, 1 - 3 2^-40, 1 - 2^-34)
          0.9999999999999999, -0.9999999999999999, 0.9999999999999716, 0.9999999999972715, -0.9999999999417923};
}

// The sweep: the edge values, 4000 inputs uniform in [lo, hi] and 4000 of log-uniform
// magnitude over [lo, hi] (both signs where the domain has them), so that small arguments
// and every binade of a wide domain are measured. Prints the largest error found, in ulp.
// Where the device does not promise IEEE arithmetic for t, errors past the bound are noted in
// `beyond_bound` instead of failing.
void check(const Fn& f, DType t, std::vector<std::string>* beyond_bound = nullptr) {
  SCOPED_TRACE(std::string(f.op) + " " + ir::dtype_name(t));
  auto dev = runtime::Device::open();
  if (t == DType::F64 && !devtest::missing_feature(t).empty()) GTEST_SKIP() << "the device has no Float64";
  std::vector<double> xs = edge_values();
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> d(f.lo, f.hi);
  // NXV_MATH_SWEEP sets the count of each kind (4000 by default) for a denser run by hand.
  const char* count_env = std::getenv("NXV_MATH_SWEEP");
  const int count = count_env ? std::atoi(count_env) : 4000;
  for (int i = 0; i < count; ++i) xs.push_back(d(rng));
  const double top = std::max(std::fabs(f.lo), std::fabs(f.hi)), bottom = t == DType::F64 ? 1e-300 : 1e-37;
  std::uniform_real_distribution<double> e(std::log(bottom), std::log(top));
  for (int i = 0; i < count; ++i) {
    double x = std::exp(e(rng)) * (rng() % 2 ? -1 : 1);
    if (x < f.lo || x > f.hi) x = -x;
    if (x >= f.lo && x <= f.hi) xs.push_back(x);
  }
  const int64_t n = int64_t(xs.size());
  const std::string ty = ir::dtype_name(t), shape = "[" + std::to_string(n) + "]";
  auto g = ir::parse_graph(R"({"version": 1, "nodes": [{"id": 0, "op": "parameter", "type": ")" + ty + R"(", "shape": )" + shape +
                           R"(, "attrs": {"index": 0}}, {"id": 1, "op": ")" + f.op + R"(", "args": [0], "type": ")" + ty +
                           R"(", "shape": )" + shape + R"(}], "outputs": [1]})");
  ir::Literal in{{t, {n}}, std::vector<uint8_t>(size_t(n) * size_t(ir::dtype_bytes(t)))};
  for (int64_t i = 0; i < n; ++i) {
    ir::Scalar s;
    s.f = xs[size_t(i)];
    ir::set_element(in, i, s);
  }
  auto out = runtime::Executable::compile(dev, g)->run_host({in})[0];
  const int mant = t == DType::F64 ? 52 : 23, min_exp = t == DType::F64 ? -1022 : -126;
  double worst = 0;
  int64_t worst_at = -1;
  for (int64_t i = 0; i < n; ++i) {
    const long double x = ir::get_f64(in, i);  // the input as the device saw it
    long double want = f.ref(x);
    if (t == DType::F32) want = (long double)(float)want;
    const double got = ir::get_f64(out, i);
    // Trigonometric reduction is exact only below 2^20 pi/2; beyond, results merely stay in range.
    const bool trig = std::string(f.op) == "sin" || std::string(f.op) == "cos";
    if (trig && std::fabs(double(x)) > 1647099.0 && std::isfinite(double(x))) {
      EXPECT_LE(std::fabs(got), 1.0) << f.op << "(" << double(x) << ")";
      continue;
    }
    if (std::string(f.op) == "tan" && std::fabs(double(x)) > 1647099.0) continue;
    if (std::isnan(double(want)) || std::isinf(double(want)) || want == 0) {
      // Results beyond the type's range round to infinity; underflow may flush to zero.
      const bool ok = std::isnan(double(want)) ? std::isnan(got)
                      // An underflowing result may land on the smallest subnormal instead of 0.
                      : want == 0             ? std::fabs(got) <= std::ldexp(1.0, min_exp - mant) &&
                                                    std::signbit(got) == std::signbit(double(want))
                                              : got == double(want);
      EXPECT_TRUE(ok) << f.op << "(" << double(x) << ") = " << got << ", want " << double(want);
      continue;
    }
    if (std::isinf(got) && std::fabs(double(want)) > (t == DType::F64 ? 1.7976e308 : 3.4028e38)) continue;
    // A device that flushes subnormals at this width may return zero for a subnormal result.
    const bool flushes = t == DType::F64 ? !dev->info().caps.preserve_denorms_f64 : !dev->info().caps.preserve_denorms_f32;
    if (flushes && got == 0 && std::fabs(double(want)) < std::ldexp(1.0, min_exp)) continue;
    // (in long double: the difference of subnormals, rounded to double, would be whole ulp)
    const double err = double(std::fabs((long double)got - want) / ulp(want, mant, min_exp));
    if (err > worst) worst = err, worst_at = i;
  }
  const double bound = t == DType::F64 ? f.max_ulp : f.max_ulp_f32;
  std::printf("%-8s %s: max error %.3f ulp over %lld inputs (bound %g), at x = %.17g\n", f.op, ir::dtype_name(t), worst,
              (long long)n, bound, worst_at >= 0 ? ir::get_f64(in, worst_at) : 0.0);
  // The bounds assume IEEE arithmetic: a driver not bound by SignedZeroInfNanPreserve may
  // contract and reassociate (lavapipe then measured expm1 at 33 ulp, erfc at 69).
  if (!devtest::preserves_special_values(t)) {
    if (worst > bound && beyond_bound) beyond_bound->push_back(std::string(f.op) + " " + std::to_string(int(worst)) + " ulp");
    return;
  }
  EXPECT_LE(worst, bound) << "at x = " << (worst_at >= 0 ? ir::get_f64(in, worst_at) : 0) << " got "
                              << (worst_at >= 0 ? ir::get_f64(out, worst_at) : 0);
}

long double erfinv_ref(long double y) {
  if (std::fabs(y) > 1) return NAN;
  if (std::fabs(y) == 1) return y > 0 ? INFINITY : -INFINITY;
  if (y == 0) return y;
  // Newton in long double from a rough start; erfl is accurate to long double.
  long double x = std::copysign(std::sqrt(-std::log((1 - std::fabs(y)) * (1 + std::fabs(y)))) * 0.8L, y);
  for (int i = 0; i < 200; ++i) {
    long double r = std::fabs(y) > 0.5L ? (std::erfcl(std::fabs(x)) - (1 - std::fabs(y))) * (y > 0 ? 1 : -1) : y - std::erfl(x);
    long double step = r / (1.1283791670955125738961589L * std::exp(-x * x));
    x += step;
    if (std::fabs(step) <= std::fabs(x) * 1e-19L) break;
  }
  return x;
}

const std::vector<Fn>& functions() {
  static const std::vector<Fn> fns = {
      // f64: the last step of each function is an error-free sum of double-words (hi + lo),
      // so the one rounding of consequence is the last. exp's subnormal results are rounded
      // twice (the scaling rounds once more).
      {"exp", [](long double x) { return std::exp(x); }, -745, 709, 1, 1},
      {"expm1", [](long double x) { return std::expm1(x); }, -50, 50, 1, 1},
      {"log", [](long double x) { return std::log(x); }, 0, 1e6, 1, 3},
      {"log1p", [](long double x) { return std::log1p(x); }, -1, 10, 1, 4},
      {"sigmoid", [](long double x) { return 1 / (1 + std::exp(-x)); }, -40, 40, 1, 4},
      {"sin", [](long double x) { return std::sin(x); }, -100, 100, 1, 3},
      {"cos", [](long double x) { return std::cos(x); }, -100, 100, 1, 3},
      {"tan", [](long double x) { return std::tan(x); }, -10, 10, 1, 4},
      {"sinh", [](long double x) { return std::sinh(x); }, -30, 30, 1, 4},
      {"cosh", [](long double x) { return std::cosh(x); }, -30, 30, 1, 4},
      {"tanh", [](long double x) { return std::tanh(x); }, -10, 10, 1, 4},
      {"asin", [](long double x) { return std::asin(x); }, -1, 1, 1, 4},
      {"acos", [](long double x) { return std::acos(x); }, -1, 1, 1, 4},
      {"atan", [](long double x) { return std::atan(x); }, -50, 50, 1, 3},
      {"asinh", [](long double x) { return std::asinh(x); }, -1e3, 1e3, 1, 4},
      {"acosh", [](long double x) { return std::acosh(x); }, 1, 1e3, 1, 4},
      {"atanh", [](long double x) { return std::atanh(x); }, -1, 1, 1, 4},
      {"cbrt", [](long double x) { return std::cbrt(x); }, -1e6, 1e6, 1, 3},
      // f32: 4 ulp on lavapipe without f64 (the intel-arc-a770 profile), at x = -0.4717, just
      // past where 1 - erfc(|x|) takes over and cancels a bit of the driver's exp error.
      {"erf", [](long double x) { return std::erf(x); }, -6, 6, 1, 4},
      {"erfc", [](long double x) { return std::erfc(x); }, -3, 27, 1, 6},
      {"erf_inv", erfinv_ref, -1, 1, 1, 16},
  };
  return fns;
}

// The f64 unary op `op` of xs on the default device.
ir::Literal f64_unary(const char* op, const std::vector<double>& xs) {
  const std::string shape = "[" + std::to_string(xs.size()) + "]";
  auto g = ir::parse_graph(R"({"version": 1, "nodes": [{"id": 0, "op": "parameter", "type": "f64", "shape": )" + shape +
                           R"(, "attrs": {"index": 0}}, {"id": 1, "op": ")" + op + R"(", "args": [0], "type": "f64", "shape": )" +
                           shape + R"(}], "outputs": [1]})");
  ir::Literal in{{DType::F64, {int64_t(xs.size())}}, std::vector<uint8_t>(xs.size() * 8)};
  std::memcpy(in.data.data(), xs.data(), in.data.size());
  return runtime::Executable::compile(runtime::Device::open(), g)->run_host({in})[0];
}

TEST(CodegenMath, F64FunctionsMatchTheCLibrary) {
  for (const auto& f : functions()) check(f, DType::F64);
}

// Where users compare with Erlang's :math.exp (the C library's, correctly rounded there):
// e^x rounded once, e itself included.
TEST(CodegenMath, F64ExpIsCorrectlyRoundedAtCommonArguments) {
  if (!devtest::missing_feature(DType::F64).empty()) GTEST_SKIP() << "the device has no Float64";
  const std::vector<double> xs = {1.0, -1.0, 0.5, 2.0, 10.0, -0.1, 0.1, 3.0, 20.0, 100.0};
  const int64_t n = int64_t(xs.size());
  const ir::Literal out = f64_unary("exp", xs);
  for (int64_t i = 0; i < n; ++i)
    EXPECT_EQ(ir::get_f64(out, i), double(std::exp((long double)xs[size_t(i)]))) << "exp(" << xs[size_t(i)] << ")";
}

TEST(CodegenMath, F32FunctionsFromTheLibraryMatchTheCLibrary) {
  std::vector<std::string> beyond_bound;
  for (const auto& f : functions())
    for (const char* op : {"expm1", "log1p", "sin", "cos", "tan", "sinh", "cosh", "cbrt", "erf", "erfc", "erf_inv", "asin",
                           "acos", "atan", "asinh", "acosh", "atanh"})
      if (std::string(f.op) == op) check(f, DType::F32, &beyond_bound);
  if (!devtest::preserves_special_values(DType::F32)) {
    std::string what;
    for (const auto& b : beyond_bound) what += (what.empty() ? "" : ", ") + b;
    GTEST_SKIP() << "ulp bounds not checked: " << devtest::device()->info().name
                 << " lacks shaderSignedZeroInfNanPreserveFloat32 (past the bound: " << (what.empty() ? "none" : what) << ")";
  }
}

// f32 pow where |y log2 x| is large: GLSL's Pow (exp2 of y log2 x) loses about |y log2 x| ulp,
// so a device with f64 computes f32 pow in f64 and rounds; checked against powl rounded to f32.
TEST(CodegenMath, F32PowIsWithinAnUlpWhereTheDeviceHasF64) {
  auto dev = runtime::Device::open();
  if (!dev->info().caps.float64) GTEST_SKIP() << "the device has no Float64: f32 pow is GLSL's, within Vulkan's bound";
  std::vector<float> xs, ys;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> base(0.01f, 20.0f), exponent(-30.0f, 30.0f);
  for (int i = 0; i < 6000; ++i) xs.push_back(base(rng)), ys.push_back(exponent(rng));
  const int64_t n = int64_t(xs.size());
  const std::string shape = "[" + std::to_string(n) + "]";
  auto g = ir::parse_graph(R"({"version": 1, "nodes": [{"id": 0, "op": "parameter", "type": "f32", "shape": )" + shape +
                           R"(, "attrs": {"index": 0}}, {"id": 1, "op": "parameter", "type": "f32", "shape": )" + shape +
                           R"(, "attrs": {"index": 1}}, {"id": 2, "op": "pow", "args": [0, 1], "type": "f32", "shape": )" +
                           shape + R"(}], "outputs": [2]})");
  ir::Literal in_x{{DType::F32, {n}}, std::vector<uint8_t>(size_t(n) * 4)}, in_y = in_x;
  std::memcpy(in_x.data.data(), xs.data(), in_x.data.size());
  std::memcpy(in_y.data.data(), ys.data(), in_y.data.size());
  auto out = runtime::Executable::compile(dev, g)->run_host({in_x, in_y})[0];
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    const long double want = (float)std::pow((long double)xs[size_t(i)], (long double)ys[size_t(i)]);
    const double got = ir::get_f64(out, i);
    if (!std::isfinite(double(want)) || std::fabs(double(want)) < 1e-37) continue;  // outside f32's normal range
    worst = std::max(worst, double(std::fabs((long double)got - want) / ulp(want, 23, -126)));
  }
  std::printf("pow f32: max error %.3f ulp over %lld inputs\n", worst, (long long)n);
  EXPECT_LE(worst, 1.0);
}

// Arguments where a function's result is normal but an intermediate leaves the range: the
// ratio of atan2 with both arguments near the largest finite value (a plain division by them
// gave 0 on NVIDIA, whose reciprocal of a divisor beyond 2^126 flushes) and sinh/cosh where
// e^|x| overflows but e^|x| / 2 does not (NVIDIA's f32 Cosh(89) was inf, not 2.24e38), and
// log1p where 1 + x - 1 passes 2^126 (0 on NVIDIA). Within the functions' random-argument
// bounds (atan 3 ulp, the others 4); inf past the range.
TEST(CodegenMath, FunctionsNearTheEndOfTheRange) {
  auto dev = runtime::Device::open();
  devtest::LeftOut left_out;
  for (DType t : {DType::F32, DType::F64}) {
    if (left_out(t)) continue;
    const bool f32 = t == DType::F32;
    const double max = f32 ? double(std::numeric_limits<float>::max()) : std::numeric_limits<double>::max();
    const double top = f32 ? 0x1p127 : 0x1p1023, edge = f32 ? 89.0 : 710.0;
    const std::vector<double> ys = {max, -max, max, max / 3, top, 1e-3 * max, -top};
    const std::vector<double> xs = {max, max, -max, max, top / 2, max, -top / 4};
    const std::vector<double> hs = {edge - 0.2, edge, edge + 0.4, -edge, f32 ? 89.5 : 711.0, -(f32 ? 89.5 : 711.0)};
    const int64_t n = int64_t(ys.size()), m = int64_t(hs.size());
    const std::string ty = std::string("\"") + ir::dtype_name(t) + "\"", sn = "[" + std::to_string(n) + "]",
                      sm = "[" + std::to_string(m) + "]";
    auto g = ir::parse_graph(R"({"version": 1, "nodes": [)"
                             R"({"id": 0, "op": "parameter", "type": )" + ty + R"(, "shape": )" + sn + R"(, "attrs": {"index": 0}},)"
                             R"({"id": 1, "op": "parameter", "type": )" + ty + R"(, "shape": )" + sn + R"(, "attrs": {"index": 1}},)"
                             R"({"id": 2, "op": "parameter", "type": )" + ty + R"(, "shape": )" + sm + R"(, "attrs": {"index": 2}},)"
                             R"({"id": 3, "op": "atan2", "args": [0, 1], "type": )" + ty + R"(, "shape": )" + sn + R"(},)"
                             R"({"id": 4, "op": "sinh", "args": [2], "type": )" + ty + R"(, "shape": )" + sm + R"(},)"
                             R"({"id": 5, "op": "cosh", "args": [2], "type": )" + ty + R"(, "shape": )" + sm + R"(},)"
                             R"({"id": 6, "op": "log1p", "args": [1], "type": )" + ty + R"(, "shape": )" + sn + R"(}],)"
                             R"( "outputs": [3, 4, 5, 6]})");
    auto literal = [&](const std::vector<double>& v) {
      ir::Literal l{{t, {int64_t(v.size())}}, {}};
      if (f32) {
        std::vector<float> w(v.begin(), v.end());
        l.data.resize(w.size() * 4);
        std::memcpy(l.data.data(), w.data(), l.data.size());
      } else {
        l.data.resize(v.size() * 8);
        std::memcpy(l.data.data(), v.data(), l.data.size());
      }
      return l;
    };
    auto out = runtime::Executable::compile(dev, g)->run_host({literal(ys), literal(xs), literal(hs)});
    const int mant = f32 ? 23 : 52, min_exp = f32 ? -126 : -1022;
    // Without shaderSignedZeroInfNanPreserveFloat32 the driver may reassociate the library's
    // arithmetic (F32FunctionsFromTheLibraryMatchTheCLibrary skips its bounds there): only
    // the range is checked, to 64 ulp.
    const double loose = devtest::preserves_special_values(t) ? 1 : 64 / 3.0;
    auto expect_near = [&](const char* op, double x, long double want, double got, double bound) {
      const long double w = f32 ? (long double)float(want) : want;
      if (!std::isfinite(double(w))) {
        EXPECT_EQ(got, double(w)) << ir::dtype_name(t) << " " << op << "(" << x << ")";
        return;
      }
      EXPECT_LE(double(std::fabs((long double)got - w) / ulp(w, mant, min_exp)), bound)
          << ir::dtype_name(t) << " " << op << "(" << x << ") = " << got << ", not " << double(w);
    };
    auto arg = [&](double v) { return f32 ? (long double)float(v) : (long double)v; };  // as the device reads it
    for (int64_t k = 0; k < n; ++k)
      expect_near("atan2", ys[size_t(k)], std::atan2(arg(ys[size_t(k)]), arg(xs[size_t(k)])), ir::get_f64(out[0], k), 3 * loose);
    for (int64_t k = 0; k < n; ++k)
      if (xs[size_t(k)] > 0) expect_near("log1p", xs[size_t(k)], std::log1p(arg(xs[size_t(k)])), ir::get_f64(out[3], k), 4 * loose);
    for (int64_t k = 0; k < m; ++k) {
      expect_near("sinh", hs[size_t(k)], std::sinh(arg(hs[size_t(k)])), ir::get_f64(out[1], k), 4 * loose);
      expect_near("cosh", hs[size_t(k)], std::cosh(arg(hs[size_t(k)])), ir::get_f64(out[2], k), 4 * loose);
    }
  }
  NXV_SKIP_IF_LEFT_OUT(left_out);
}

// f64 rsqrt is 1 / sqrt(x) rounded as Nx's division rounds it (NVIDIA's division by a value
// it cannot fold is an ulp off without the correction `divide` takes), bit for bit.
TEST(CodegenMath, F64RsqrtIsOneOverTheSquareRoot) {
  NXV_SKIP_WITHOUT(DType::F64);
  std::vector<double> xs = {2.0, 3.0, 0.5, 1e-300, 1e300, 0x1p-1022};
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> exponent(-1000.0, 1000.0);
  for (int i = 0; i < 1 << 16; ++i) xs.push_back(std::exp2(exponent(rng)));
  const int64_t n = int64_t(xs.size());
  const ir::Literal out = f64_unary("rsqrt", xs);
  int wrong = 0;
  for (int64_t i = 0; i < n; ++i)
    if (ir::get_f64(out, i) != 1.0 / std::sqrt(xs[size_t(i)])) ++wrong;
  EXPECT_EQ(wrong, 0) << "of " << n;
}

// f32 sqrt and rsqrt correctly rounded where the device has f64 (Vulkan allows 3 and 2 ulp;
// IEEE 754 and Nx.BinaryBackend round sqrt correctly), over every binade of normal floats.
TEST(CodegenMath, F32RootsAreCorrectlyRoundedWhereTheDeviceHasF64) {
  auto dev = runtime::Device::open();
  if (!dev->info().caps.float64) GTEST_SKIP() << "the device has no Float64: f32 roots are the device's";
  std::vector<float> xs = {1.0f, 2.0f, 3.0f, 5.0f, 0.5f, 1e-30f, 3e38f, 0x1p-126f, 16777215.0f};
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> exponent(-125.0, 127.0);
  for (int i = 0; i < 60000; ++i) xs.push_back(float(std::exp2(exponent(rng))));
  const int64_t n = int64_t(xs.size());
  const std::string shape = "[" + std::to_string(n) + "]";
  auto g = ir::parse_graph(R"({"version": 1, "nodes": [{"id": 0, "op": "parameter", "type": "f32", "shape": )" + shape +
                           R"(, "attrs": {"index": 0}}, {"id": 1, "op": "sqrt", "args": [0], "type": "f32", "shape": )" + shape +
                           R"(}, {"id": 2, "op": "rsqrt", "args": [0], "type": "f32", "shape": )" + shape +
                           R"(}], "outputs": [1, 2]})");
  ir::Literal in{{DType::F32, {n}}, std::vector<uint8_t>(size_t(n) * 4)};
  std::memcpy(in.data.data(), xs.data(), in.data.size());
  auto out = runtime::Executable::compile(dev, g)->run_host({in});
  int wrong_sqrt = 0, wrong_rsqrt = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float x = xs[size_t(i)];
    if (float(ir::get_f64(out[0], i)) != std::sqrt(x)) ++wrong_sqrt;  // the C library's sqrtf is exact
    if (float(ir::get_f64(out[1], i)) != float(1.0L / std::sqrt((long double)x))) ++wrong_rsqrt;
  }
  EXPECT_EQ(wrong_sqrt, 0) << "of " << n;
  EXPECT_EQ(wrong_rsqrt, 0) << "of " << n;
}

// Where the device computes f32 in f64 (lavapipe), f16 and bf16 functions are computed in
// f64 too and rounded once, as Nx computes them in double: equal to the reference
// interpreter for every f16 and bf16 value. bf16 truncates its f32 value, so an f32 result
// an ulp low costs a whole bf16 step (bf16 pow(4.9e-26, 4.9e-26) was 0.996, not 1). Left
// out: erf_inv (Nx's is Giles' approximation alone, which the device follows there and the
// interpreter refines) and trigonometric arguments beyond 2^20 pi/2 (reduced in f32).
TEST(CodegenMath, HalfFunctionsMatchTheInterpreterWhereF32IsComputedInF64) {
  auto dev = runtime::Device::open();
  if (!codegen::computes_f32_in_f64(dev->info().caps)) GTEST_SKIP() << "the device computes f32 in f32";
  const std::vector<std::string> unary = {"exp",  "expm1", "log",  "log1p", "sigmoid", "sin",  "cos",   "tan",
                                          "sinh", "cosh",  "tanh", "asin",  "acos",    "atan", "asinh", "acosh",
                                          "atanh", "sqrt", "rsqrt", "cbrt", "erf",     "erfc"};
  for (DType t : {DType::BF16, DType::F16}) {
    const int64_t n = 65536;
    const std::string ty = ir::dtype_name(t), shape = "[" + std::to_string(n) + "]";
    auto node = [&](int id, const std::string& op, const std::string& args) {
      return R"(, {"id": )" + std::to_string(id) + R"(, "op": ")" + op + R"(", "args": [)" + args + R"(], "type": ")" + ty +
             R"(", "shape": )" + shape + "}";
    };
    // x: every bit pattern, its trigonometric arguments clamped below 2^20 pi/2; y: x reversed.
    std::string nodes = R"({"id": 0, "op": "parameter", "type": ")" + ty + R"(", "shape": )" + shape +
                        R"(, "attrs": {"index": 0}}, {"id": 1, "op": "parameter", "type": ")" + ty + R"(", "shape": )" +
                        shape + R"(, "attrs": {"index": 1}})";
    nodes += R"(, {"id": 2, "op": "constant", "type": ")" + ty + R"(", "shape": [], "attrs": {"value": -1e6}})";
    nodes += R"(, {"id": 3, "op": "constant", "type": ")" + ty + R"(", "shape": [], "attrs": {"value": 1e6}})";
    nodes += node(4, "clip", "0, 2, 3");
    std::string outputs;
    int id = 5;
    for (const auto& op : unary) {
      const bool trig = op == "sin" || op == "cos" || op == "tan";
      nodes += node(id, op, trig ? "4" : "0");
      outputs += (outputs.empty() ? "" : ", ") + std::to_string(id++);
    }
    for (const char* args : {"0, 0", "0, 1", "1, 0"}) {
      nodes += node(id, "pow", args);
      outputs += ", " + std::to_string(id++);
    }
    nodes += node(id, "atan2", "0, 1");
    outputs += ", " + std::to_string(id++);
    auto g = ir::parse_graph(R"({"version": 1, "nodes": [)" + nodes + R"(], "outputs": [)" + outputs + "]}");
    ir::Literal x{{t, {n}}, std::vector<uint8_t>(size_t(n) * 2)}, y = x;
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t a = uint16_t(i), r = uint16_t(n - 1 - i);
      std::memcpy(x.data.data() + i * 2, &a, 2);
      std::memcpy(y.data.data() + i * 2, &r, 2);
    }
    const auto got = runtime::Executable::compile(dev, g)->run_host({x, y}), want = ir::interpret(g, {x, y});
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      const std::string op = k < unary.size() ? unary[k] : k + 1 < got.size() ? "pow" : "atan2";
      int differ = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double w = ir::get_f64(want[k], i), d = ir::get_f64(got[k], i);
        if (std::isnan(w) ? std::isnan(d) : w == d) continue;
        if (++differ <= 3)
          ADD_FAILURE() << ty << " " << op << " (output " << k << ") element " << i << ": " << d << ", interpreter " << w;
      }
      EXPECT_EQ(differ, 0) << ty << " " << op << " (output " << k << ") of " << n;
    }
  }
}

}  // namespace
}  // namespace nxv
