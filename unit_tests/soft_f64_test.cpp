// codegen/soft_f64.h's arithmetic against the host's IEEE doubles (its +, -, *, /, std::fma
// and std::sqrt round correctly): a million operand tuples per routine, bit for bit (any NaN
// where the host's is).
// The tuples mix special values, random bits, and operands built to stress rounding.
#include "codegen/soft_f64.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "soft_testing.h"

namespace nxv::softtest {
namespace {

namespace soft = codegen::soft;
using Routine = std::function<Id(Soft64&, const std::vector<Id>&)>;
using Operands = std::vector<uint64_t>;

constexpr size_t kCases = 1'000'000;
constexpr uint64_t kSign = uint64_t(1) << 63;

const std::vector<uint64_t>& specials() {
  static const std::vector<uint64_t> v = [] {
    std::vector<uint64_t> base{0,
                               0x7ff0000000000000u,  // inf
                               0x7ff8000000000000u,  // quiet NaN
                               0x7ff0000000000001u,  // signalling NaN
                               0x7fffffffffffffffu,
                               1,                    // min subnormal
                               2,
                               3,
                               0x000fffffffffffffu,  // max subnormal
                               0x0008000000000000u,
                               0x0010000000000000u,  // min normal
                               0x0010000000000001u,
                               0x7fefffffffffffffu,  // max finite
                               0x7fe0000000000000u,
                               bits_of(1.0),
                               bits_of(1.0) + 1,
                               bits_of(1.0) - 1,
                               bits_of(2.0),
                               bits_of(0.5),
                               bits_of(3.0),
                               bits_of(0x1p-1022 * 0x1p52),
                               bits_of(0x1p-537),
                               bits_of(0x1p512),
                               bits_of(0x1p-1074 * 3)};
    std::vector<uint64_t> all;
    for (uint64_t b : base) all.insert(all.end(), {b, b | kSign});
    return all;
  }();
  return v;
}

// A finite double with a random sign, biased exponent in [lo, hi] (0 a subnormal) and a
// significand of random bits, or of few bits (products and quotients of those hit ties).
uint64_t finite(std::mt19937_64& rng, int lo, int hi) {
  const uint64_t r = rng();
  uint64_t frac = rng() & 0x000fffffffffffffu;
  if (r & 1) frac &= rng() & rng() & rng();               // sparse
  if ((r >> 1) % 4 == 0) frac &= ~uint64_t(0) << (r >> 8) % 53;  // short
  const uint64_t e = uint64_t(lo + int((r >> 16) % uint64_t(hi - lo + 1)));
  return ((r >> 40) & 1 ? kSign : 0) | (e << 52) | frac;
}

// x moved by a few ulps (across zero or to inf/NaN bit patterns too).
uint64_t nudge(std::mt19937_64& rng, uint64_t x) { return x + (rng() % 9) - 4; }

// One operand of any kind: special, random bits, or finite over the whole range.
uint64_t any(std::mt19937_64& rng) {
  const uint64_t r = rng();
  switch (r % 6) {
    case 0: return specials()[(r >> 8) % specials().size()];
    case 1: return rng();
    case 2: return nudge(rng, specials()[(r >> 8) % specials().size()]);
    default: return finite(rng, 0, 2046);
  }
}

// Biased exponents around `center` (clamped to the finite range).
uint64_t near_exponent(std::mt19937_64& rng, int center, int spread) {
  center = std::clamp(center, 0, 2046);
  return finite(rng, std::max(0, center - spread), std::min(2046, center + spread));
}

std::string describe(const Operands& args, uint64_t want, uint64_t got) {
  std::ostringstream out;
  out << std::hex << std::setfill('0');
  for (uint64_t a : args) out << " 0x" << std::setw(16) << a;
  out << " -> want 0x" << std::setw(16) << want << " got 0x" << std::setw(16) << got;
  return out.str();
}

// Runs the routine on every tuple and checks each lane against the host's bits.
void expect_ieee(const std::vector<Operands>& in, const Routine& routine,
                 const std::function<double(const std::vector<double>&)>& host) {
  static auto dev = soft_device();
  const std::vector<uint64_t> got = run_soft(dev, routine, in);
  ASSERT_EQ(got.size(), in.at(0).size());
  size_t bad = 0;
  Operands args(in.size());
  std::vector<double> values(in.size());
  for (size_t i = 0; i < got.size(); ++i) {
    for (size_t k = 0; k < in.size(); ++k) args[k] = in[k][i], values[k] = double_of(in[k][i]);
    const double want = host(values);
    const bool ok = std::isnan(want) ? std::isnan(double_of(got[i])) : got[i] == bits_of(want);
    if (!ok && ++bad <= 20) ADD_FAILURE() << "lane " << i << ":" << describe(args, bits_of(want), got[i]);
  }
  EXPECT_EQ(bad, 0u) << "of " << got.size() << " lanes";
}

// kCases tuples: every pair of special values first (binary ops), then `make` per tuple.
std::vector<Operands> cases(size_t operands, uint64_t seed,
                            const std::function<void(std::mt19937_64&, Operands&)>& make) {
  std::mt19937_64 rng(seed);
  std::vector<Operands> in(operands, Operands(kCases));
  const auto& sp = specials();
  size_t i = 0;
  if (operands >= 2)
    for (; i < sp.size() * sp.size(); ++i) {
      in[0][i] = sp[i % sp.size()], in[1][i] = sp[i / sp.size()];
      if (operands == 3) in[2][i] = sp[(i * 7) % sp.size()];
    }
  Operands t(operands);
  for (; i < kCases; ++i) {
    make(rng, t);
    for (size_t k = 0; k < operands; ++k) in[k][i] = t[k];
  }
  return in;
}

// Two operands for add/sub: any, cancelling (same magnitude within a few ulps or exponents
// apart by 0..2), far apart (the smaller one near half an ulp), or near the range's ends.
void sum_operands(std::mt19937_64& rng, Operands& t) {
  const uint64_t r = rng();
  const uint64_t a = any(rng);
  const int ea = int((a >> 52) & 0x7ff);
  uint64_t b;
  switch (r % 6) {
    case 0: b = any(rng); break;
    case 1: b = nudge(rng, a) ^ (r & 256 ? kSign : 0); break;
    case 2: b = near_exponent(rng, ea, 2); break;
    case 3: b = near_exponent(rng, ea - 53, 2); break;
    case 4: b = near_exponent(rng, ea, 60); break;
    default:
      t[0] = near_exponent(rng, r & 256 ? 2 : 2044, 3);
      t[1] = near_exponent(rng, r & 256 ? 2 : 2044, 3);
      return;
  }
  t[0] = a, t[1] = b;
  if (r & 512) std::swap(t[0], t[1]);
}

class SoftF64 : public SoftRoutines {};
NXV_SOFT_ROUTINE_SUITE(SoftF64);

TEST_P(SoftF64, AddIsIeee) {
  expect_ieee(cases(2, 101, sum_operands), [](Soft64& s, const std::vector<Id>& x) { return soft::f64_add(s, x[0], x[1]); },
              [](const std::vector<double>& v) { return v[0] + v[1]; });
}

TEST_P(SoftF64, SubIsIeee) {
  expect_ieee(cases(2, 102, sum_operands),
              [](Soft64& s, const std::vector<Id>& x) { return soft::f64_add(s, x[0], soft::f64_neg(s, x[1])); },
              [](const std::vector<double>& v) { return v[0] - v[1]; });
}

// A significand (52 stored bits) at the edges rounding meets: all ones (a carry into the
// exponent), none, one set bit at the bottom or top, or random.
uint64_t edge_fraction(std::mt19937_64& rng) {
  switch (rng() % 5) {
    case 0: return 0x000fffffffffffffu;
    case 1: return 0;
    case 2: return 1;
    case 3: return uint64_t(1) << 51;
    default: return rng() & 0x000fffffffffffffu;
  }
}

// Exponent differences where the aligning and normalising shifts change shape (word and
// guard-bit boundaries, the sticky-only clamp), with edge significands; y half an ulp of x
// (or just off it) for ties; results crossing the subnormal boundary and overflowing.
void aligned_sum_operands(std::mt19937_64& rng, Operands& t) {
  static const int diffs[] = {0, 1, 2, 3, 9, 10, 11, 12, 31, 32, 33, 51, 52, 53, 54, 55, 56, 61, 62, 63, 64, 65, 66, 84, 85, 94, 95, 96, 97, 100, 128, 200};
  const uint64_t r = rng();
  const int diff = diffs[r % std::size(diffs)];
  int ex;
  switch ((r >> 8) % 4) {
    case 0: ex = int((r >> 16) % 4); break;              // subnormal boundary
    case 1: ex = 2046 - int((r >> 16) % 3); break;       // overflow
    default: ex = diff + int((r >> 16) % (2047 - diff));
  }
  const int ey = std::max(0, ex - diff);
  uint64_t x = (uint64_t(ex) << 52) | edge_fraction(rng);
  uint64_t y = (uint64_t(ey) << 52) | edge_fraction(rng);
  if ((r >> 24) % 4 == 0) y = nudge(rng, y);
  if ((r >> 28) & 1) y ^= kSign;
  if ((r >> 29) & 1) x ^= kSign, y ^= kSign;
  t[0] = (r >> 30) & 1 ? y : x;
  t[1] = (r >> 30) & 1 ? x : y;
}

TEST_P(SoftF64, AddAtShiftAndRoundingBoundaries) {
  expect_ieee(cases(2, 107, aligned_sum_operands),
              [](Soft64& s, const std::vector<Id>& x) { return soft::f64_add(s, x[0], x[1]); },
              [](const std::vector<double>& v) { return v[0] + v[1]; });
}

// Factors with edge significands whose product lies around the subnormal boundary, one
// biased exponent step at a time through the whole jamming range (and past it), or around
// the overflow boundary.
void underflow_product_operands(std::mt19937_64& rng, Operands& t) {
  const uint64_t r = rng();
  const int sum = (r & 1) ? 0x3ff - int((r >> 8) % 70) + 2 : 0x3ff + 2046 - int((r >> 8) % 4);
  const int ea = std::clamp(int((r >> 16) % 2047), std::max(0, sum - 2046), std::min(2046, sum));
  const uint64_t sign = (r >> 40) & 3;
  t[0] = (sign & 1 ? kSign : 0) | (uint64_t(ea) << 52) | edge_fraction(rng);
  t[1] = (sign & 2 ? kSign : 0) | (uint64_t(std::clamp(sum - ea, 0, 2046)) << 52) | edge_fraction(rng);
  if ((r >> 42) % 4 == 0) t[1] = nudge(rng, t[1]);
}

TEST_P(SoftF64, MulAtUnderflowAndOverflowBoundaries) {
  expect_ieee(cases(2, 108, underflow_product_operands),
              [](Soft64& s, const std::vector<Id>& x) { return soft::f64_mul(s, x[0], x[1]); },
              [](const std::vector<double>& v) { return v[0] * v[1]; });
}

// Two factors: any, or exponents summing near the subnormal range, its boundary (0x3ff + 1
// together), overflow, or 1.
void product_operands(std::mt19937_64& rng, Operands& t) {
  const uint64_t r = rng();
  static const int sums[] = {0x3ff - 1022, 0x3ff + 1, 0x3ff - 1074, 0x3ff + 1023, 0x3ff + 1024, 0x3ff * 2};
  if (r % 4 == 0) {
    t[0] = any(rng), t[1] = any(rng);
    return;
  }
  const int sum = sums[(r >> 8) % 6] + int((r >> 16) % 7) - 3;
  const int ea = int((r >> 24) % 2047);
  t[0] = near_exponent(rng, ea, 0);
  t[1] = near_exponent(rng, std::clamp(sum - ea, 0, 2046), 1);
}

TEST_P(SoftF64, MulIsIeee) {
  expect_ieee(cases(2, 103, product_operands),
              [](Soft64& s, const std::vector<Id>& x) { return soft::f64_mul(s, x[0], x[1]); },
              [](const std::vector<double>& v) { return v[0] * v[1]; });
}

// The branching form on the same operands and at the same boundaries: the branch's test
// sends each product to the routine whose contract it meets (lavapipe runs both sides).
TEST_P(SoftF64, MulBranchingToItsCommonCaseIsIeee) {
  const Routine mul = [](Soft64& s, const std::vector<Id>& x) { return soft::f64_mul_branching(s, x[0], x[1]); };
  const auto host = [](const std::vector<double>& v) { return v[0] * v[1]; };
  expect_ieee(cases(2, 109, product_operands), mul, host);
  expect_ieee(cases(2, 110, underflow_product_operands), mul, host);
}

// Dividend and divisor: any, close to each other, a product of the divisor (rounded, so
// the quotient lands within an ulp of a short number), or quotients near the range's ends.
void quotient_operands(std::mt19937_64& rng, Operands& t) {
  const uint64_t r = rng();
  uint64_t b = any(rng);
  // Divisors whose significand is all ones below its top 24 bits or past them, or a power
  // of two: the reciprocal's estimate at its worst.
  if ((r >> 60) == 0) b |= (r >> 59 & 1 ? 0x1fffffffu : 0x000fffffffffffffu);
  if ((r >> 60) == 1) b &= ~0x000fffffffffffffu;
  switch (r % 6) {
    case 0: t[0] = any(rng), t[1] = b; return;
    case 1: t[0] = nudge(rng, b) ^ (r & 256 ? kSign : 0), t[1] = b; return;
    case 5: t[0] = nudge(rng, b + (uint64_t(1) << 52)), t[1] = b; return;  // just below twice b
    case 2: t[0] = nudge(rng, bits_of(double_of(b) * double_of(finite(rng, 1023 - 3, 1023 + 3)))), t[1] = b; return;
    default: {
      const int eb = int((r >> 24) % 2047);
      const int diff = r % 6 == 3 ? 0x3ff - 1022 - int((r >> 16) % 60) : 0x3ff + 1023 + int((r >> 16) % 3);
      t[0] = near_exponent(rng, std::clamp(eb + diff - 0x3ff, 0, 2046), 1);
      t[1] = near_exponent(rng, eb, 0);
    }
  }
}

TEST_P(SoftF64, DivIsIeee) {
  expect_ieee(cases(2, 104, quotient_operands),
              [](Soft64& s, const std::vector<Id>& x) { return soft::f64_div(s, x[0], x[1]); },
              [](const std::vector<double>& v) { return v[0] / v[1]; });
}

// Three operands: any, c cancelling a * b (its rounded value, nudged), c far below or above
// the product, products near the subnormal range, or past the largest finite.
void fma_operands(std::mt19937_64& rng, Operands& t) {
  const uint64_t r = rng();
  t[0] = r % 5 == 0 ? any(rng) : near_exponent(rng, 1023 + int((r >> 8) % 200) - 100, 30);
  t[1] = r % 7 == 0 ? any(rng) : near_exponent(rng, 1023 + int((r >> 16) % 200) - 100, 30);
  const double p = double_of(t[0]) * double_of(t[1]);
  const int ep = int((bits_of(p) >> 52) & 0x7ff);
  switch (r % 7) {
    case 0: t[2] = any(rng); break;
    case 1: t[2] = nudge(rng, bits_of(-p)); break;
    case 6:  // a product just past the largest finite, brought back (or not) by c
      t[0] = near_exponent(rng, 0x3ff + 600, 1), t[1] = near_exponent(rng, 0x3ff + 424, 1);
      t[2] = nudge(rng, 0x7fefffffffffffffu) ^ ((r >> 24) & 1 ? kSign : 0);
      break;
    case 2: t[2] = bits_of(-p) & ~((uint64_t(1) << ((r >> 24) % 40)) - 1); break;
    case 3: t[2] = near_exponent(rng, ep + ((r >> 24) & 1 ? 1 : -1) * int(50 + (r >> 32) % 80), 3); break;
    case 4: t[2] = near_exponent(rng, ep, 2); break;
    default:
      t[0] = near_exponent(rng, 0x3ff - 511, 3), t[1] = near_exponent(rng, 0x3ff - 511 - int((r >> 24) % 60), 3);
      t[2] = near_exponent(rng, (r >> 32) & 1 ? 0 : 1, 1);
  }
}

TEST_P(SoftF64, FmaIsIeee) {
  expect_ieee(cases(3, 105, fma_operands),
              [](Soft64& s, const std::vector<Id>& x) { return soft::f64_fma(s, x[0], x[1], x[2]); },
              [](const std::vector<double>& v) { return std::fma(v[0], v[1], v[2]); });
}

// Products with c at exponent distances where fma's 128-bit alignment crosses a word (32,
// 64, 96) or drops to the sticky bit alone (near 127), either side, edge significands.
void word_boundary_fma_operands(std::mt19937_64& rng, Operands& t) {
  static const int dists[] = {0, 1, 2, 3, 30, 31, 32, 33, 34, 52, 53, 54, 62, 63, 64, 65, 66,
                              94, 95, 96, 97, 98, 105, 106, 107, 125, 126, 127, 128, 129, 130, 170};
  const uint64_t r = rng();
  const int ea = 1023 + int((r >> 8) % 100) - 50, eb = 1023 + int((r >> 16) % 100) - 50;
  t[0] = ((r >> 40) & 1 ? kSign : 0) | (uint64_t(ea) << 52) | edge_fraction(rng);
  t[1] = ((r >> 41) & 1 ? kSign : 0) | (uint64_t(eb) << 52) | edge_fraction(rng);
  const int ep = ea + eb - 1023, dist = dists[r % std::size(dists)];
  const int ec = std::clamp((r >> 42) & 1 ? ep + dist : ep - dist, 0, 2046);
  t[2] = ((r >> 43) & 1 ? kSign : 0) | (uint64_t(ec) << 52) | edge_fraction(rng);
  if ((r >> 44) % 4 == 0) t[2] = nudge(rng, bits_of(-(double_of(t[0]) * double_of(t[1]))));
}

TEST_P(SoftF64, FmaAtWordBoundaries) {
  expect_ieee(cases(3, 109, word_boundary_fma_operands),
              [](Soft64& s, const std::vector<Id>& x) { return soft::f64_fma(s, x[0], x[1], x[2]); },
              [](const std::vector<double>& v) { return std::fma(v[0], v[1], v[2]); });
}

// One operand: any, a square's neighbours (roots near halfway), subnormal, or with runs
// of ones or zeros.
void root_operands(std::mt19937_64& rng, Operands& t) {
  const uint64_t r = rng();
  switch (r % 5) {
    case 0: t[0] = any(rng); return;
    case 4: {
      // Significands all ones below their top bits, or none: the estimates at their worst.
      const uint64_t x = finite(rng, 0, 2046) & ~kSign;
      const uint64_t low = (uint64_t(1) << ((r >> 8) % 53)) - 1;
      t[0] = (r >> 16) & 1 ? x | low : x & ~low;
      return;
    }
    case 1: {
      const double y = double_of(finite(rng, 1, 2046) & ~kSign);
      t[0] = nudge(rng, bits_of(y * y));
      return;
    }
    case 2: t[0] = finite(rng, 0, 1) & ~kSign; return;
    default: t[0] = finite(rng, 0, 2046) & ~kSign;
  }
}

TEST_P(SoftF64, SqrtIsIeee) {
  std::vector<Operands> in = cases(1, 106, root_operands);
  for (size_t i = 0; i < specials().size(); ++i) in[0][i] = specials()[i];
  expect_ieee(in, [](Soft64& s, const std::vector<Id>& x) { return soft::f64_sqrt(s, x[0]); },
              [](const std::vector<double>& v) { return std::sqrt(v[0]); });
}

// The *_normal forms, on the tuples above that keep their contract: every operand zero or
// normal and the result zero or at least twice the smallest normal (an exact result just
// below it could round up to it), plus zeros in place of each operand in one tuple in 16.
std::vector<Operands> normal_cases(size_t operands, uint64_t seed, const std::function<void(std::mt19937_64&, Operands&)>& make,
                                   const std::function<double(const std::vector<double>&)>& host) {
  auto zero_or_normal = [](uint64_t b) {
    const uint64_t e = (b >> 52) & 0x7ff;
    return (b & ~kSign) == 0 || (e != 0 && e != 0x7ff);
  };
  std::mt19937_64 rng(seed);
  std::vector<Operands> in(operands, Operands(kCases));
  Operands t(operands);
  std::vector<double> v(operands);
  for (size_t i = 0; i < kCases;) {
    make(rng, t);
    const uint64_t r = rng();
    if (r % 16 == 0) t[(r >> 8) % operands] = (r >> 16) & 1 ? kSign : 0;
    if (!std::all_of(t.begin(), t.end(), zero_or_normal)) continue;
    for (size_t k = 0; k < operands; ++k) v[k] = double_of(t[k]);
    const double want = host(v);
    // A zero result must be exact: a zero product (beside a zero c), or an fma's cancellation
    // of a c above 2^-900, where a nonzero remainder (a multiple of the product's last place
    // over 2^53) could not underflow.
    const bool zero_product = v[0] == 0 || v[1] == 0;
    const bool exact_zero =
        want == 0 && (operands == 2 ? zero_product : (zero_product && v[2] == 0) || std::fabs(v[2]) >= 0x1p-900);
    if (!(exact_zero || (std::isfinite(want) && std::fabs(want) >= 0x1p-1021))) continue;
    for (size_t k = 0; k < operands; ++k) in[k][i] = t[k];
    ++i;
  }
  return in;
}

TEST_P(SoftF64, NormalFormsAreIeeeWithinTheirContract) {
  auto mul = [](const std::vector<double>& v) { return v[0] * v[1]; };
  auto div = [](const std::vector<double>& v) { return v[0] / v[1]; };
  auto fma = [](const std::vector<double>& v) { return std::fma(v[0], v[1], v[2]); };
  expect_ieee(normal_cases(2, 111, product_operands, mul),
              [](Soft64& s, const std::vector<Id>& x) { return soft::f64_mul_normal(s, x[0], x[1]); }, mul);
  // (A zero divisor breaks the contract: its quotient is not finite.)
  expect_ieee(normal_cases(2, 112, quotient_operands, div),
              [](Soft64& s, const std::vector<Id>& x) { return soft::f64_div_normal(s, x[0], x[1]); }, div);
  using Make = void (*)(std::mt19937_64&, Operands&);
  for (auto [seed, make] : {std::pair<uint64_t, Make>{113, fma_operands}, std::pair<uint64_t, Make>{114, word_boundary_fma_operands}})
    expect_ieee(normal_cases(3, seed, make, fma),
                [](Soft64& s, const std::vector<Id>& x) { return soft::f64_fma_normal(s, x[0], x[1], x[2]); }, fma);
}

}  // namespace
}  // namespace nxv::softtest
