// Emulated f64 and s64/u64 (RuntimeOptions::emulate, codegen/soft64.h) against the same
// graphs on the device's native types: the kernels declare no 64-bit type, say they emulate,
// and give the native bits (math functions within an ulp where the driver contracts products).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>

#include "ir/json.h"
#include "ir/literal.h"
#include "codegen/targets/launch.h"
#include "runtime/runtime.h"
#include "device_testing.h"
#include "spirv_testing.h"

namespace nxv::runtime {
namespace {

using ir::DType;

std::shared_ptr<Device> open_emulating(const std::string& emulate, const std::string& profile = "none") {
  RuntimeOptions o;
  o.emulate = emulate;
  o.profile = profile;
  return Device::open(o);
}

bool native_64_bit_types() {
  const auto& c = open_emulating("none")->info().caps;
  return c.float64 && c.int64;
}

// Special values first, then seeded random ones: of every magnitude for f64, of every width
// for s64 (the bit patterns), n in all.
ir::Literal input(DType t, int64_t n, unsigned seed) {
  ir::Literal lit{{t, {n}}, std::vector<uint8_t>(size_t(n) * 8)};
  std::mt19937_64 rng(seed);
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> fs = {0.0, -0.0, 1.0, -1.0, 0.5, 2.0, inf, -inf, std::nan(""), 4.9e-324, -2.2e-308,
                                  1.7976931348623157e308, 3.0, 1e-300, 1e300, 0.1, -7.25, 1e16, 4503599627370496.5};
  const std::vector<int64_t> is = {0, 1, -1, 2, -2, INT64_MAX, INT64_MIN, 1ll << 32, (1ll << 32) - 1, -(1ll << 32), 63, 64, 7};
  for (int64_t i = 0; i < n; ++i) {
    uint64_t bits;
    if (t == DType::F64) {
      double d;
      if (size_t(i) < fs.size()) d = fs[size_t(i)];
      else if (i % 3) d = std::ldexp(double(rng() >> 11) / double(1ull << 53) - 0.5, int(rng() % 64) - 32);
      else std::memcpy(&d, &(bits = rng()), 8);
      std::memcpy(&bits, &d, 8);
    } else {
      bits = size_t(i) < is.size() ? uint64_t(is[size_t(i)]) : rng() >> (rng() % 64);
    }
    std::memcpy(lit.data.data() + i * 8, &bits, 8);
  }
  return lit;
}

std::string type_name(DType t) { return ir::dtype_name(t); }

// op(x[, y]) over n elements of t, as a graph of one node.
ir::Graph op_graph(const std::string& op, DType t, int args, DType result, int64_t n, const std::string& attrs = "{}") {
  const std::string s = std::to_string(n), ts = type_name(t), rs = type_name(result);
  std::string nodes = R"({"id": 0, "op": "parameter", "type": ")" + ts + R"(", "shape": [)" + s + R"(], "attrs": {"index": 0}})";
  if (args == 2)
    nodes += R"(, {"id": 1, "op": "parameter", "type": ")" + ts + R"(", "shape": [)" + s + R"(], "attrs": {"index": 1}})";
  nodes += R"(, {"id": 2, "op": ")" + op + R"(", "args": )" + (args == 2 ? "[0, 1]" : "[0]") + R"(, "type": ")" + rs +
           R"(", "shape": [)" + s + R"(], "attrs": )" + attrs + "}";
  return ir::parse_graph(R"({"version": 1, "name": ")" + op + R"(", "nodes": [)" + nodes + R"(], "outputs": [2]})");
}

// The bits of element i (NaNs equal whatever their payload), or within `ulps` for f64.
bool same(const ir::Literal& a, const ir::Literal& b, int64_t i, double ulps) {
  const size_t w = size_t(ir::dtype_bytes(a.type.dtype));
  const bool nan_a = ir::is_float(a.type.dtype) && std::isnan(ir::get_f64(a, i));
  const bool nan_b = ir::is_float(b.type.dtype) && std::isnan(ir::get_f64(b, i));
  if (nan_a || nan_b) return nan_a && nan_b;
  if (a.type.dtype != DType::F64) return std::memcmp(a.data.data() + i * w, b.data.data() + i * w, w) == 0;
  const double x = ir::get_f64(a, i), y = ir::get_f64(b, i);
  if (ulps == 0 || std::isinf(x) || std::isinf(y)) return std::memcmp(&x, &y, 8) == 0;
  return std::fabs(x - y) <= ulps * (std::nextafter(std::fabs(x), INFINITY) - std::fabs(x));
}

void expect_as_native(const ir::Graph& g, const std::vector<ir::Literal>& inputs, double ulps = 0) {
  auto native = Executable::compile(open_emulating("none"), g)->run_host(inputs);
  auto exe = Executable::compile(open_emulating("f64,i64"), g);
  for (const auto& k : exe->kernels()) {
    EXPECT_NE(k.launch.find("emulated"), std::string::npos) << g.name << ": " << k.name << " " << k.launch;
    for (auto c : {spv::CapabilityInt64, spv::CapabilityFloat64})
      EXPECT_FALSE(spirvtest::declares_capability(k.spirv, c)) << g.name << " declares capability " << c;
  }
  auto emulated = exe->run_host(inputs);
  ASSERT_EQ(native.size(), emulated.size());
  for (size_t r = 0; r < native.size(); ++r) {
    int bad = 0;
    for (int64_t i = 0; i < native[r].type.num_elements() && bad < 5; ++i)
      if (!same(native[r], emulated[r], i, ulps)) {
        ++bad;
        ADD_FAILURE() << g.name << " result " << r << " element " << i << ": native " << ir::get_f64(native[r], i)
                      << " emulated " << ir::get_f64(emulated[r], i) << " (inputs " << ir::get_f64(inputs[0], i)
                      << (inputs.size() > 1 ? ", " + std::to_string(ir::get_f64(inputs[1], i)) : "") << ")";
      }
  }
}

class Emulation : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!native_64_bit_types()) GTEST_SKIP() << "the device has no native f64 and s64 to compare with";
  }
};

TEST_F(Emulation, F64ArithmeticAndComparisonsGiveTheNativeBits) {
  const int64_t n = 4096;
  const auto x = input(DType::F64, n, 1), y = input(DType::F64, n, 2);
  for (const char* op : {"add", "subtract", "multiply", "divide", "max", "min", "remainder"})
    expect_as_native(op_graph(op, DType::F64, 2, DType::F64, n), {x, y});
  for (const char* op : {"equal", "not_equal", "less", "greater_equal"})
    expect_as_native(op_graph(op, DType::F64, 2, DType::U8, n), {x, y});
  for (const char* op : {"negate", "abs", "sign", "floor", "ceil", "round", "sqrt"})
    expect_as_native(op_graph(op, DType::F64, 1, DType::F64, n), {x});
  for (const char* op : {"is_nan", "is_infinity"}) expect_as_native(op_graph(op, DType::F64, 1, DType::U8, n), {x});
}

TEST_F(Emulation, F64MathFunctionsStayWithinAnUlpOfNative) {
  const int64_t n = 4096;
  const auto x = input(DType::F64, n, 3), y = input(DType::F64, n, 4);
  for (const char* op : {"exp", "log", "sin", "cos", "tanh", "erf", "atan", "cbrt", "sigmoid"})
    expect_as_native(op_graph(op, DType::F64, 1, DType::F64, n), {x}, 1);
  // Native pow takes subnormal operands as zeros where the device may flush f64 subnormals
  // (float_pow); emulated pow keeps them (SpecialValues.EmulatedPowKeepsSubnormalOperands),
  // so they are compared on the zeros.
  auto flushed = [](ir::Literal v) {
    return open_emulating("none")->info().caps.preserve_denorms_f64 ? v : devtest::zero_subnormals(std::move(v));
  };
  expect_as_native(op_graph("pow", DType::F64, 2, DType::F64, n), {flushed(x), flushed(y)}, 1);
}

TEST_F(Emulation, S64ArithmeticGivesTheNativeBits) {
  const int64_t n = 4096;
  const auto a = input(DType::S64, n, 5), b = input(DType::S64, n, 6);
  for (const char* op : {"add", "subtract", "multiply", "quotient", "remainder", "max", "min", "bitwise_and",
                         "bitwise_xor", "left_shift", "right_shift"})
    expect_as_native(op_graph(op, DType::S64, 2, DType::S64, n), {a, b});
  for (const char* op : {"equal", "less", "greater_equal"}) expect_as_native(op_graph(op, DType::S64, 2, DType::U8, n), {a, b});
  for (const char* op : {"negate", "abs", "sign", "population_count", "count_leading_zeros", "bitwise_not"})
    expect_as_native(op_graph(op, DType::S64, 1, DType::S64, n), {a});
}

TEST_F(Emulation, ConversionsToAndFromEveryTypeGiveTheNativeBits) {
  const int64_t n = 4096;
  const auto x = input(DType::F64, n, 7), a = input(DType::S64, n, 8);
  for (DType to : {DType::F32, DType::F16, DType::BF16, DType::S32, DType::U8, DType::S64, DType::U64}) {
    expect_as_native(op_graph("as_type", DType::F64, 1, to, n), {x});
    expect_as_native(op_graph("as_type", DType::S64, 1, to == DType::S64 ? DType::F64 : to, n), {a});
  }
  expect_as_native(op_graph("bitcast", DType::F64, 1, DType::S64, n), {x});
}

// Reductions, a product, scans and sorts of f64 and s64 at sizes that loop: each kernel family
// computes on the emulated values.
TEST_F(Emulation, ReductionsProductsScansAndSortsGiveTheNativeBits) {
  const int64_t n = 100000;
  const auto x = input(DType::F64, n, 9), a = input(DType::S64, n, 10);
  for (const char* op : {"sum", "reduce_max", "cumulative_sum", "cumulative_max"}) {
    const bool scan = std::string(op).rfind("cumulative", 0) == 0;
    const std::string attrs = scan ? R"({"axis": 0, "reverse": false})" : R"({"axes": [0], "keep_axes": false})";
    for (DType t : {DType::F64, DType::S64}) {
      ir::Graph g = op_graph(op, t, 1, t, n, attrs);
      if (!scan) g.nodes.back().results[0].shape = {};
      expect_as_native(g, {t == DType::F64 ? x : a});
    }
  }
  ir::Graph sort = op_graph("argsort", DType::F64, 1, DType::S64, n, R"({"axis": 0, "direction": "asc", "stable": true})");
  expect_as_native(sort, {x});
  const std::string dot = R"({"version": 1, "name": "dot", "nodes": [
    {"id": 0, "op": "parameter", "type": "f64", "shape": [64, 300], "attrs": {"index": 0}},
    {"id": 1, "op": "parameter", "type": "f64", "shape": [300, 50], "attrs": {"index": 1}},
    {"id": 2, "op": "dot", "args": [0, 1], "type": "f64", "shape": [64, 50],
     "attrs": {"contract_axes1": [1], "contract_axes2": [0], "batch_axes1": [], "batch_axes2": []}}], "outputs": [2]})";
  ir::Literal p = input(DType::F64, 64 * 300, 11), q = input(DType::F64, 300 * 50, 12);
  p.type.shape = {64, 300}, q.type.shape = {300, 50};
  // Quarters in [-16, 16): every partial sum is exact, so the sums compare bit for bit
  // whatever order the native and the emulated tiles add in (they differ under a profile).
  for (auto* l : {&p, &q})
    for (int64_t i = 0; i < l->type.num_elements(); ++i)
      ir::set_element(*l, i, ir::Scalar{.f = double((i * 7919 + l->type.shape[1]) % 128 - 64) / 4});
  expect_as_native(ir::parse_graph(dot), {p, q});
}

// In emulated f64 the math library takes a product's rounding error from the software Fma
// (a multiply and an Fma: 551 emulated instructions) rather than Dekker's split (12 emulated
// operations), and an error-free sum from Fast2Sum on its operands ordered by magnitude:
// asinh, which squares its argument exactly and takes the logarithm of a double-word,
// compiles to a function of about 11,000 instructions (`nxv explore --emulate=f64,i64`:
// 11,031 results in its module, against 15,010 with Dekker's products and Knuth's
// six-addition sums). Both errors are exact either way, so the results are the same bits;
// their accuracy is CodegenMath's under NXV_EMULATE.
TEST(EmulationCode, MathTakesProductErrorsFromTheSoftwareFma) {
  auto exe = Executable::compile(open_emulating("f64,i64"), op_graph("asinh", DType::F64, 1, DType::F64, 1 << 20));
  ASSERT_EQ(exe->kernels().size(), 1u);
  const size_t instructions = spirvtest::function_instructions(exe->kernels()[0].spirv);
  EXPECT_LT(instructions, 13000u) << instructions;
  EXPECT_GT(instructions, 5000u) << instructions;  // the lowering ran: native asinh is a few hundred
}

// Emulated f64 exp, expm1, sigmoid, sinh, cosh, tanh, log and log1p compute on 64-bit integer
// significands in fixed point (soft_f64_fixed.h): Tang's reduction by ln2/64 with a table of
// 2^(j/64), Newton's reciprocal for the quotients, log's table of log(1 + j/64), one
// rounding at the end. Functions of about 620, 1,230, 840, 1,050, 820, 1,170, 1,150 and
// 1,260 instructions, against 3,200, 11,200, 5,800, 9,200, 6,300, 7,800, 6,900 and 8,400 on
// the software f64 operations. Within 0.52 ulp of the reference (subnormal results too,
// rounded once) at 40,000 arguments each: for exp, expm1, sigmoid, sinh and cosh over their
// ranges and tanh up to 22, where the reduced argument is largest (half-way between table
// entries) and at each entry, expm1 and sinh also within 1/4 of 0, where their series take
// x itself; for log over every binade from the subnormals up and within 2^-5 of 1, where its
// series takes x - 1 itself; for log1p over the binades, near -1 and near 0.
void expect_fixed_point_function(const std::string& op, const std::function<double(int64_t, int64_t)>& argument,
                                 long double (*reference)(long double), size_t max_instructions) {
  const int64_t n = 40000;
  auto exe = Executable::compile(open_emulating("f64,i64"), op_graph(op, DType::F64, 1, DType::F64, n));
  ASSERT_EQ(exe->kernels().size(), 1u);
  const auto& spirv = exe->kernels()[0].spirv;
  const size_t instructions = spirvtest::function_instructions(spirv);
  EXPECT_LT(instructions, max_instructions) << op;
  // The table: an OpVariable (59) in Private storage (6) with an initializer (5 words); the
  // products: OpUMulExtended (151).
  bool table = false, products = false;
  for (size_t i = 5; i < spirv.size(); i += spirv[i] >> 16) {
    table = table || ((spirv[i] & 0xffff) == 59 && spirv[i] >> 16 == 5 && spirv[i + 3] == 6);
    products = products || (spirv[i] & 0xffff) == 151;
  }
  EXPECT_TRUE(table && products) << op;
  ir::Literal x{{DType::F64, {n}}, std::vector<uint8_t>(size_t(n) * 8)};
  for (int64_t i = 0; i < n; ++i) ir::set_element(x, i, ir::Scalar{.f = argument(i, n)});
  const auto out = exe->run_host({x})[0];
  int bad = 0;
  for (int64_t i = 0; i < n && bad < 5; ++i) {
    const double v = ir::get_f64(x, i), got = ir::get_f64(out, i);
    const long double want = reference((long double)v);
    const double ulp = std::nextafter(std::fabs(double(want)), INFINITY) - std::fabs(double(want));
    if (std::fabs((long double)got - want) > 0.52L * (long double)ulp)
      ADD_FAILURE() << op << "(" << v << ") = " << got << ", want " << double(want), ++bad;
  }
}

// Argument i of n: from `from` to `to` in steps of `step`, and half-way between.
std::function<double(int64_t, int64_t)> steps(double from, double to, double step) {
  return [=](int64_t i, int64_t n) {
    const long double k = std::floor(from / step + (to - from) / step * (long double)(i / 2) / double(n / 2));
    return double((k + (i % 2 ? 0.5L : 0)) * step);
  };
}

TEST(EmulationCode, ExponentialsAndLogarithmsComputeInFixedPoint) {
  const long double ln2_64 = 0.693147180559945309417232121458L / 64;
  expect_fixed_point_function("exp", steps(-745, 709, double(ln2_64)), [](long double v) { return std::exp(v); }, 800);
  expect_fixed_point_function("expm1", steps(-745, 709, double(ln2_64)), [](long double v) { return std::expm1(v); }, 1400);
  expect_fixed_point_function("expm1", steps(-0.25, 0.25, 0x1p-15), [](long double v) { return std::expm1(v); }, 1400);
  expect_fixed_point_function("sinh", steps(-709, 709, double(ln2_64)), [](long double v) { return std::sinh(v); }, 1400);
  expect_fixed_point_function("sinh", steps(-0.25, 0.25, 0x1p-15), [](long double v) { return std::sinh(v); }, 1400);
  expect_fixed_point_function("cosh", steps(-709, 709, double(ln2_64)), [](long double v) { return std::cosh(v); }, 1400);
  expect_fixed_point_function("sigmoid", steps(-745, 40, double(ln2_64)), [](long double v) { return 1 / (1 + std::exp(-v)); },
                              1000);
  expect_fixed_point_function("tanh", steps(0, 22, double(ln2_64 / 2)), [](long double v) { return std::tanh(v); }, 1400);
  // Half the arguments 2^u over u in [-1074, 1024), the other half 1 + d over d in [-2^-5, 2^-5).
  auto log_argument = [](int64_t i, int64_t n) {
    const double u = double(i / 2) / double(n / 2);
    return i % 2 ? std::exp2(-1074 + 2098 * u) : 1 + (u - 0.5) * 0x1p-4;
  };
  expect_fixed_point_function("log", log_argument, [](long double v) { return std::log(v); }, 1400);
  // A third near -1 (-1 + 2^-53u), a third 2^u over u in [-1074, 1024) and -2^u below 2^-6, a
  // third within 2^-5 of 0, where the series takes x itself.
  auto log1p_argument = [](int64_t i, int64_t n) {
    const double u = double(i / 3) / double(n / 3);
    if (i % 3 == 0) return -1 + std::exp2(-53 * u);
    if (i % 3 == 1) return i % 2 ? -std::exp2(-1074 + 1068 * u) : std::exp2(-1074 + 2098 * u);
    return (u - 0.5) * 0x1p-4;
  };
  expect_fixed_point_function("log1p", log1p_argument, [](long double v) { return std::log1p(v); }, 1400);
}

TEST(EmulationOption, BadValuesAreErrorsNamingThem) {
  for (const std::string bad : {"f32", "f64,x", "none,f64"}) {
    std::string msg;
    try {
      open_emulating(bad);
    } catch (const Error& e) {
      msg = e.what();
    }
    EXPECT_NE(msg.find("emulate"), std::string::npos) << bad << ": " << msg;
  }
}

// A profile without f64 and s64 (phones) emulates them unless told not to.
TEST(EmulationOption, AProfileWithoutTheTypesEmulatesThem) {
  auto dev = open_emulating("auto", "mali-g78");  // the default, whatever $NXV_EMULATE says
  EXPECT_TRUE(dev->info().caps.emulate_f64 && dev->info().caps.emulate_i64);
  EXPECT_FALSE(dev->info().caps.float64 || dev->info().caps.int64);
  const ir::Graph g = op_graph("multiply", DType::F64, 2, DType::F64, 1000);
  const auto x = input(DType::F64, 1000, 13);
  auto out = Executable::compile(dev, g)->run_host({x, x});
  for (int64_t i = 0; i < 1000; ++i) {
    const double v = ir::get_f64(x, i) * ir::get_f64(x, i), got = ir::get_f64(out[0], i);
    EXPECT_TRUE(std::isnan(v) ? std::isnan(got) : std::memcmp(&v, &got, 8) == 0) << i << ": " << got << " vs " << v;
  }
  std::string msg;
  try {
    Executable::compile(open_emulating("none", "mali-g78"), g);
  } catch (const std::exception& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("shaderFloat64"), std::string::npos) << msg;
}

}  // namespace
}  // namespace nxv::runtime
