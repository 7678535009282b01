// Emulated f64 sums (codegen/soft_f64_sum.h) against the exact total rounded once, computed on
// the host by Shewchuk's partials (Python's math.fsum), at 600 to 10^6 elements, with the
// special values and overflow as Nx's f64 gives them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "codegen/kernel.h"
#include "codegen/targets/launch.h"
#include "ir/json.h"
#include "ir/literal.h"
#include "passes/pass.h"
#include "runtime/runtime.h"
#include "spirv_testing.h"

namespace nxv::runtime {
namespace {

using ir::DType;

// The exact sum of xs rounded to the nearest double (ties to even), for finite xs whose
// partial sums stay finite: Shewchuk's non-overlapping partials, summed from the top with
// the half-way correction of CPython's math.fsum.
double exact_sum(const std::vector<double>& xs) {
  std::vector<double> p;
  for (double x : xs) {
    size_t i = 0;
    for (double y : p) {
      if (std::fabs(x) < std::fabs(y)) std::swap(x, y);
      const double hi = x + y, lo = y - (hi - x);
      if (lo != 0) p[i++] = lo;
      x = hi;
    }
    p.resize(i);
    p.push_back(x);
  }
  if (p.empty()) return 0;
  size_t n = p.size();
  double hi = p[--n], lo = 0;
  while (n > 0) {
    const double x = hi, y = p[--n];
    hi = x + y;
    lo = y - (hi - x);
    if (lo != 0) break;
  }
  if (n > 0 && ((lo < 0 && p[n - 1] < 0) || (lo > 0 && p[n - 1] > 0))) {
    const double y = lo * 2, x = hi + y;
    if (y == x - hi) hi = x;
  }
  return hi;
}

// Each test runs with s64 emulated too, the sum's words then added as 32-bit integers, and
// with f64 alone, as on Apple's and Intel Arc's GPUs, where they are added as 64-bit ones.
class EmulatedSums : public testing::TestWithParam<std::string> {};
INSTANTIATE_TEST_SUITE_P(Words32, EmulatedSums, testing::Values("f64,i64"));
INSTANTIATE_TEST_SUITE_P(Words64, EmulatedSums, testing::Values("f64"));

std::shared_ptr<Device> device(const std::string& emulate) {
  RuntimeOptions o;
  o.emulate = emulate;
  o.profile = "none";
  return Device::open(o);
}

// The sum over axis 1 of a rows x cols f64 array (whole rows: one fold each), or over
// everything (split across kernels where long); of the array negated where `negated` (an
// element computed in the fold, which folds it one by one, not four at a time).
ir::Graph sum_graph(int64_t rows, int64_t cols, bool rows_only, bool negated = false) {
  const std::string r = std::to_string(rows), c = std::to_string(cols);
  const std::string attrs = rows_only ? R"({"axes": [1], "keep_axes": false})" : R"({"axes": null, "keep_axes": false})";
  const std::string shape = "[" + r + ", " + c + "]";
  return ir::parse_graph(R"({"version": 1, "name": "sum", "nodes": [
    {"id": 0, "op": "parameter", "type": "f64", "shape": )" + shape + R"(, "attrs": {"index": 0}},
    {"id": 1, "op": "negate", "args": [0], "type": "f64", "shape": )" + shape + R"(},
    {"id": 2, "op": "sum", "args": [)" + (negated ? "1" : "0") + R"(], "type": "f64", "shape": )" +
                         (rows_only ? "[" + r + "]" : "[]") + R"(, "attrs": )" + attrs + R"(}], "outputs": [2]})");
}

ir::Literal literal(int64_t rows, int64_t cols, const std::vector<double>& v) {
  ir::Literal l{{DType::F64, {rows, cols}}, std::vector<uint8_t>(v.size() * 8)};
  std::memcpy(l.data.data(), v.data(), v.size() * 8);
  return l;
}

// The invocations of a cooperative kernel's workgroup, from its launch ("elements,
// cooperative; 64 invocations x 2 groups; ..."): those that fold one row together.
int64_t row_width(const std::string& launch) {
  return std::stoll(launch.substr(launch.rfind(' ', launch.find(" invocations") - 1) + 1));
}

double ulp(double x) { return std::nextafter(std::fabs(x), INFINITY) - std::fabs(x); }

std::string bits(double x) {
  uint64_t b;
  std::memcpy(&b, &x, 8);
  char s[64];
  std::snprintf(s, sizeof s, "%.17g (0x%016llx)", x, (unsigned long long)b);
  return s;
}

// Rows of one random kind each, cols elements a row: exponents within 31 of each other, so
// that every element is added exactly (cancelled totals too) and the total rounds once.
std::vector<double> rows_within_32_binades(int64_t rows, int64_t cols, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> half(0.5, 1);
  auto u = [&](std::mt19937_64& g) { return g() % 2 ? half(g) : -half(g); };
  std::vector<double> v(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    // Mixed signs, positive only, mostly cancelling pairs, subnormals, around f64's largest.
    const int kind = int(r % 5);
    for (int64_t c = 0; c < cols; ++c) {
      double x = std::ldexp(u(rng), int(rng() % 30) - 15);
      if (kind == 1) x = std::fabs(x);
      if (kind == 2 && c % 2) x = -v[size_t(r * cols + c - 1)] * (1 + std::ldexp(u(rng), -40));
      if (kind == 3) x = std::ldexp(x, -1050);
      if (kind == 4) x = std::ldexp(x, 1008 - int(std::ceil(std::log2(double(cols)))));
      v[size_t(r * cols + c)] = x;
    }
  }
  return v;
}

TEST_P(EmulatedSums, RowsRoundTheExactTotalOnce) {
  auto emulated = device(GetParam());
  // Below 65536 a row is one fold (longer ones split: SplitSumsStayWithinAnUlp): a workgroup's
  // for few long rows, an invocation's loop for many short ones, and for many rows of a few
  // hundred a workgroup of 64 (whose subgroups' totals, on lavapipe's 8 lanes, combine by
  // butterflies).
  for (auto [rows, cols] :
       std::vector<std::pair<int64_t, int64_t>>{{10, 617}, {10, 6007}, {10, 60013}, {3000, 37}, {8192, 300}}) {
    const auto v = rows_within_32_binades(rows, cols, unsigned(cols));
    for (bool negated : {false, true}) {
      auto exe = Executable::compile(emulated, sum_graph(rows, cols, true, negated));
      for (const auto& k : exe->kernels()) EXPECT_NE(k.launch.find("emulated"), std::string::npos) << k.launch;
      const auto got = exe->run_host({literal(rows, cols, v)})[0];
      for (int64_t r = 0; r < rows; ++r) {
        double want = exact_sum({v.begin() + r * cols, v.begin() + (r + 1) * cols});
        if (negated) want = -want;
        const double mine = ir::get_f64(got, r);
        EXPECT_EQ(std::memcmp(&want, &mine, 8), 0) << cols << " columns, row " << r << (negated ? " negated" : "") << ": " << bits(mine)
                                                   << ", want " << bits(want) << " (kernels: " << exe->kernels().size() << ")";
      }
    }
  }
}

// Partials meet on the largest exponent among them; one that cancelled to nothing on a large
// exponent (an invocation whose only elements were +2^60 and -2^60, its last two) is first
// brought down, so that the others keep their bits and the row its exact total.
TEST_P(EmulatedSums, CancelledPartialsGiveWayToTheOthers) {
  auto emulated = device(GetParam());
  const int64_t rows = 4, cols = 6007;
  const ir::Graph g = sum_graph(rows, cols, true);
  auto exe = Executable::compile(emulated, g);
  ASSERT_EQ(exe->kernels().size(), 1u);
  const std::string& launch = exe->kernels()[0].launch;
  ASSERT_NE(launch.find("cooperative"), std::string::npos) << launch;
  // Invocation i of the row's workgroup folds the positions i, i + width, ...
  const int64_t width = row_width(launch);
  ASSERT_GT(width, 1) << launch;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> half(0.5, 1);
  std::vector<double> v(size_t(rows * cols));
  const int64_t last = (cols - 1) / width * width;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      double x = std::ldexp(rng() % 2 ? half(rng) : -half(rng), int(rng() % 12));
      if (c % width == 0) x = c == last - width ? 0x1p60 : c == last ? -0x1p60 : 0;
      v[size_t(r * cols + c)] = x;
    }
  const auto got = exe->run_host({literal(rows, cols, v)})[0];
  for (int64_t r = 0; r < rows; ++r) {
    const double want = exact_sum({v.begin() + r * cols, v.begin() + (r + 1) * cols}), mine = ir::get_f64(got, r);
    EXPECT_EQ(std::memcmp(&want, &mine, 8), 0) << "row " << r << " (" << launch << "): " << bits(mine) << ", want " << bits(want);
  }
}

// Exponents over 600 binades: elements more than 32 places below the largest's last place
// lose their lowest bits, so the total is within an ulp of the exact one rounded.
TEST_P(EmulatedSums, RowsOfEveryMagnitudeStayWithinAnUlp) {
  const int64_t rows = 8, cols = 20011;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(size_t(rows * cols));
  for (auto& x : v) x = std::ldexp(u(rng), int(rng() % 600) - 300);
  const auto got = Executable::compile(device(GetParam()), sum_graph(rows, cols, true))->run_host({literal(rows, cols, v)})[0];
  for (int64_t r = 0; r < rows; ++r) {
    const double want = exact_sum({v.begin() + r * cols, v.begin() + (r + 1) * cols}), mine = ir::get_f64(got, r);
    EXPECT_LE(std::fabs(mine - want), ulp(want)) << "row " << r << ": " << bits(mine) << ", want " << bits(want);
  }
}

// A sum long enough to be split across kernels rounds each part's total once and then
// their sum: within an ulp for positive elements.
TEST_P(EmulatedSums, SplitSumsStayWithinAnUlp) {
  auto emulated = device(GetParam());
  for (int64_t n : {100000, 1000000}) {
    std::mt19937_64 rng{uint64_t(n)};
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<double> v(static_cast<size_t>(n));
    for (auto& x : v) x = std::ldexp(u(rng), int(rng() % 20) - 10);
    auto exe = Executable::compile(emulated, sum_graph(1, n, false));
    const double want = exact_sum(v), mine = ir::get_f64(exe->run_host({literal(1, n, v)})[0], 0);
    EXPECT_LE(std::fabs(mine - want), ulp(want)) << n << ": " << bits(mine) << ", want " << bits(want)
                                                 << " (kernels: " << exe->kernels().size() << ")";
  }
}

// Rows of three and the totals Nx's f64 gives them: infinities and NaNs; a total that leaves
// f64's range is ±inf, and one that comes back within it is the exact total (per-element
// rounding could give inf).
struct SumCase {
  std::vector<double> row;
  double want;
};
std::vector<SumCase> special_cases() {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan(""), max = std::numeric_limits<double>::max();
  const double tiny = std::numeric_limits<double>::denorm_min();
  return {
      {{1, inf, 2}, inf},          {{1, -inf, 2}, -inf},      {{inf, 3, -inf}, nan},      {{1, nan, inf}, nan},
      {{max, max, 1}, inf},        {{-max, -max, 1}, -inf},   {{max, max, -max}, max},    {{-0.0, -0.0, -0.0}, 0.0},
      {{1, -1, 0}, 0.0},           {{tiny, tiny, -tiny}, tiny}, {{max, -max, tiny}, tiny}, {{0x1p-1022, -tiny, 0}, 0x1p-1022 - tiny},
      {{1, 0x1p-53, 0x1p-53}, 1 + 0x1p-52},  // two halves of the last place: rounded once, not twice to even
  };
}

void expect_total(double want, double mine, const std::string& where) {
  if (std::isnan(want)) EXPECT_TRUE(std::isnan(mine)) << where << bits(mine);
  else EXPECT_EQ(std::memcmp(&want, &mine, 8), 0) << where << bits(mine) << ", want " << bits(want);
}

TEST_P(EmulatedSums, SpecialsAndOverflow) {
  const auto cases = special_cases();
  const int64_t cols = 3, rows = int64_t(cases.size());
  std::vector<double> v;
  for (const auto& c : cases) v.insert(v.end(), c.row.begin(), c.row.end());
  const auto got = Executable::compile(device(GetParam()), sum_graph(rows, cols, true))->run_host({literal(rows, cols, v)})[0];
  for (int64_t r = 0; r < rows; ++r) expect_total(cases[size_t(r)].want, ir::get_f64(got, r), "row " + std::to_string(r) + ": ");
}

// The same cases, and cancellations before and after a small element, among zeros in long
// rows: the case's elements one position of the invocation apart, in its first four (which
// give its starting exponent) and across its next four, which GPUs whose branches skip the
// side no invocation takes fold under one test (GroupedStepsUnderNvidiasCode runs that here).
TEST_P(EmulatedSums, SpecialsAmongManyElements) {
  auto cases = special_cases();
  const double tiny = std::numeric_limits<double>::denorm_min();
  cases.insert(cases.end(), {{{1, -1, 0x1p-60}, 0x1p-60}, {{0x1p-60, 1, -1}, 0x1p-60}, {{0x1p40, -0x1p40, tiny}, tiny}});
  // Each case in two rows: a workgroup's loop over each where rows are few and long, its
  // straight-line code where they are short, an invocation's loop where they are many (the
  // cases repeated).
  for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{2, 4001}, {2, 2000}, {1024, 4001}}) {
    auto exe = Executable::compile(device(GetParam()), sum_graph(rows, cols, true));
    ASSERT_EQ(exe->kernels().size(), 1u);
    const std::string& launch = exe->kernels()[0].launch;
    const int64_t width = launch.find("cooperative") == std::string::npos ? 1 : row_width(launch);
    ASSERT_LT(5 + 6 * width, cols) << launch;
    for (size_t first = 0; first < cases.size(); first += size_t(rows / 2)) {
      auto case_of = [&](int64_t r) { return (first + size_t(r / 2)) % cases.size(); };
      std::vector<double> v(size_t(rows * cols), 0.0);
      for (int64_t r = 0; r < rows; ++r)
        for (size_t k = 0; k < 3; ++k) v[size_t(r * cols + 5 + (int64_t(k) + 3 * (r % 2)) * width)] = cases[case_of(r)].row[k];
      const auto got = exe->run_host({literal(rows, cols, v)})[0];
      for (int64_t r = 0; r < rows; ++r)
        expect_total(cases[case_of(r)].want, ir::get_f64(got, r),
                     "case " + std::to_string(case_of(r)) + ", row " + std::to_string(r) + " (" + launch + "): ");
    }
  }
}

// Where branches skip the side no invocation takes (not lavapipe, which runs both), elements
// read from a buffer are folded four under one test: NVIDIA's code for the row sums above,
// run here as a module, gives the same totals.
TEST_P(EmulatedSums, GroupedStepsUnderNvidiasCode) {
  RuntimeOptions o;
  o.emulate = GetParam();
  o.profile = "none";
  o.robust_buffer_access = true;
  auto dev = Device::open(o);
  codegen::DeviceCaps nvidia = dev->info().caps;
  nvidia.vendor_id = codegen::target_caps("nvidia").vendor_id;
  ASSERT_TRUE(codegen::branches_to_common_cases(nvidia));
  auto cases = special_cases();
  for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{2, 6007}, {3000, 37}, {1024, 4001}}) {
    ir::Graph low = sum_graph(rows, cols, true);
    passes::PassManager(passes::default_pipeline()).run(low);
    const ir::Node* kernel = nullptr;
    for (const auto& n : low.nodes)
      if (n.op == "kernel") kernel = &n;
    ASSERT_NE(kernel, nullptr);
    auto kb = codegen::compile_kernel(*kernel, low, nvidia);
    // Where the device branches too (any GPU), its own code may be the same as NVIDIA's.
    if (!codegen::branches_to_common_cases(dev->info().caps)) {
      EXPECT_NE(kb.spirv, codegen::compile_kernel(*kernel, low, dev->info().caps).spirv) << "the target changes the fold";
    }
    EXPECT_EQ(spirvtest::declares_capability(kb.spirv, spv::CapabilityInt64), dev->info().caps.int64) << "64-bit integers where s64 is native";
    // Rows within 32 binades (exact totals), and every third row a special case, its elements
    // in one invocation's groups as above.
    const int64_t width = kb.launch.find("cooperative") == std::string::npos ? 1 : row_width(kb.launch);
    std::vector<double> v = rows_within_32_binades(rows, cols, unsigned(rows));
    std::vector<double> want(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      if (r % 3 == 2) {
        const SumCase& c = cases[size_t(r) % cases.size()];
        std::fill(v.begin() + r * cols, v.begin() + (r + 1) * cols, 0.0);
        for (size_t k = 0; k < 3; ++k) v[size_t(r * cols + 5 + int64_t(3 * k + 1) * width)] = c.row[k];
        want[size_t(r)] = c.want;
      } else {
        want[size_t(r)] = exact_sum({v.begin() + r * cols, v.begin() + (r + 1) * cols});
      }
    }
    const ir::Literal in = literal(rows, cols, v);
    runtime::SpirvLaunch launch;
    launch.push_constants.assign(kb.push_constant_bytes, 0);
    for (int i = 0; i < 3; ++i) launch.group_count[i] = kb.group_count[i];
    auto out = runtime::run_spirv(dev, kb.spirv, {dev->upload(in.type, in.data.data(), in.data.size())}, kernel->results, launch);
    ir::Literal got{kernel->results[0], std::vector<uint8_t>(kernel->results[0].byte_size())};
    dev->download(*out[0], got.data.data(), got.data.size());
    for (int64_t r = 0; r < rows; ++r)
      expect_total(want[size_t(r)], ir::get_f64(got, r), std::to_string(cols) + " columns, row " + std::to_string(r) + " (" + kb.launch + "): ");
  }
}

}  // namespace
}  // namespace nxv::runtime
