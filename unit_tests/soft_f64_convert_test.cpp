// Emulated f64 comparisons, classes, rounding functions and conversions (soft_f64_convert.cpp)
// against the host's IEEE f64 over 2^20 operands per routine: special values, the values a
// few ulps around them, and random bit patterns (fixed seeds).
#include <cfenv>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>

#include "codegen/soft_f64.h"
#include "soft_testing.h"

namespace nxv::softtest {
namespace {

namespace soft = codegen::soft;
constexpr size_t kCases = size_t(1) << 20;


// Doubles where rounding, classes and conversions change behaviour.
std::vector<double> special_doubles() {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> v = {0.0, inf, double_of(0x7ff8000000000000), double_of(0x7ff0000000000001),
                           double_of(0x7fffffffffffffff), double_of(0x7ff0000100000000),
                           double_of(1),                       // smallest subnormal
                           double_of(0x000fffffffffffff),      // largest subnormal
                           double_of(0x0000000100000000),      // a subnormal with an empty low word
                           std::numeric_limits<double>::min(), std::numeric_limits<double>::max(),
                           0.5, 1.0, 1.5, 2.0, 2.5, 3.5, 0.25, 0.75, 1e-300, 1e300, 123456.5,
                           0x1p52, 0x1p52 + 0.5, 0x1p52 + 1.5, 0x1p53, 0x1p53 + 2, 0x1p51 + 0.5, 0x1p51 + 0.25,
                           0x1p31, 0x1p31 - 0.5, 0x1p32, 0x1p32 - 1, 0x1p63, 0x1p64, 0x1p62 + 0x1p10,
                           // f32's limits: its largest finite value, the halfway point to 2^128,
                           // its normal and subnormal bottoms and the ties between subnormals.
                           double(std::numeric_limits<float>::max()), 0x1.ffffffp127, 0x1p128,
                           double(std::numeric_limits<float>::min()), double(std::numeric_limits<float>::denorm_min()),
                           0x1p-150, 0x1.8p-149, 0x1.8p-148, 0x1p-151, 0x1.fffffcp-127, 0x1.fffffep-127,
                           0x1.000001p0, 0x1.0000018p0, 0x1.0000008p0, 0x1.0000010000001p0, 0x1p-126 - 0x1p-150};
  const size_t n = v.size();
  for (size_t i = 0; i < n; ++i) v.push_back(-v[i]);
  return v;
}

// kCases doubles: the specials, then each of them a few ulps either way, then mostly random
// bit patterns, with a share of random values below 2^64 in magnitude (where rounding to
// integers and conversions have work to do).
std::vector<uint64_t> double_cases(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> v;
  for (double d : special_doubles())
    for (int k = -3; k <= 3; ++k) v.push_back(bits_of(d) + uint64_t(int64_t(k)));
  while (v.size() < kCases) {
    uint64_t r = rng();
    if (v.size() % 2) {
      const uint64_t exponent = 1023 - 70 + rng() % 140;  // |x| in [2^-70, 2^70)
      r = (r & 0x800fffffffffffffull) | (exponent << 52);
      if (rng() % 4 == 0) r &= ~((uint64_t(1) << (rng() % 52)) - 1);  // fewer fraction bits: ties, integers
    }
    v.push_back(r);
  }
  return v;
}

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016" PRIx64, v);
  return buf;
}

// Up to 8 mismatches, in hex, with their operands; NaN expected means any NaN.
class Mismatches {
 public:
  void check(bool ok, const std::vector<uint64_t>& operands, uint64_t got, uint64_t want) {
    if (ok) return;
    if (++count_ > 8) return;
    text_ += "\n  operands";
    for (uint64_t o : operands) text_ += " " + hex(o);
    text_ += ": got " + hex(got) + ", want " + hex(want);
  }
  void expect_none(const std::string& what) const { EXPECT_EQ(count_, 0u) << what << " mismatches:" << text_; }

 private:
  size_t count_ = 0;
  std::string text_;
};

bool same_double(uint64_t got, uint64_t want) {
  return std::isnan(double_of(want)) ? std::isnan(double_of(got)) : got == want;
}

class SoftF64Convert : public SoftRoutines {
 protected:
  static void SetUpTestSuite() { dev_ = soft_device(); }
  static void TearDownTestSuite() { dev_.reset(); }
  static std::shared_ptr<runtime::Device> dev_;

  // A one-operand f64 -> f64 routine against `ref` on double_cases(seed).
  static void unary(const std::string& what, uint64_t seed, Id (*routine)(Soft64&, Id), double (*ref)(double)) {
    auto in = double_cases(seed);
    auto got = run_soft(dev_, [&](Soft64& s, const std::vector<Id>& x) { return routine(s, x[0]); }, {in});
    Mismatches m;
    for (size_t i = 0; i < in.size(); ++i) {
      const uint64_t want = bits_of(ref(double_of(in[i])));
      m.check(same_double(got[i], want), {in[i]}, got[i], want);
    }
    m.expect_none(what);
  }
};
std::shared_ptr<runtime::Device> SoftF64Convert::dev_;
NXV_SOFT_ROUTINE_SUITE(SoftF64Convert);

TEST_P(SoftF64Convert, NegAbsFlipAndClearTheSignOfEveryPattern) {
  unary("neg", 1, soft::f64_neg, [](double d) { return -d; });
  unary("abs", 2, soft::f64_abs, [](double d) { return std::fabs(d); });
}

TEST_P(SoftF64Convert, IsNanIsInf) {
  auto in = double_cases(3);
  auto got = run_soft(
      dev_,
      [](Soft64& s, const std::vector<Id>& x) {
        return s.op(spv::OpBitwiseOr, {s.select32(soft::f64_is_nan(s, x[0]), s.c(1), s.c(0)),
                                       s.select32(soft::f64_is_inf(s, x[0]), s.c(2), s.c(0))});
      },
      {in}, Result::Word32);
  Mismatches m;
  for (size_t i = 0; i < in.size(); ++i) {
    const double d = double_of(in[i]);
    const uint64_t want = (std::isnan(d) ? 1 : 0) | (std::isinf(d) ? 2 : 0);
    m.check(got[i] == want, {in[i]}, got[i], want);
  }
  m.expect_none("is_nan | is_inf << 1");
}

// All twelve comparisons of each pair, as one word of 12 bits.
TEST_P(SoftF64Convert, ComparisonsOrderedAndUnordered) {
  const spv::Op ops[] = {spv::OpFOrdEqual,           spv::OpFUnordEqual,        spv::OpFOrdNotEqual,
                         spv::OpFUnordNotEqual,      spv::OpFOrdLessThan,       spv::OpFUnordLessThan,
                         spv::OpFOrdGreaterThan,     spv::OpFUnordGreaterThan,  spv::OpFOrdLessThanEqual,
                         spv::OpFUnordLessThanEqual, spv::OpFOrdGreaterThanEqual, spv::OpFUnordGreaterThanEqual};
  auto a = double_cases(4), b = double_cases(5);
  // Pairs of specials, and pairs that are equal, opposite, or an ulp apart.
  const auto sp = special_doubles();
  std::mt19937_64 rng(6);
  for (size_t i = 0; i < sp.size() * sp.size(); ++i) a[i] = bits_of(sp[i / sp.size()]), b[i] = bits_of(sp[i % sp.size()]);
  for (size_t i = sp.size() * sp.size(); i < kCases; i += 4) {
    const uint64_t picks[] = {a[i], a[i] ^ (uint64_t(1) << 63), a[i] + 1, a[i] - 1};
    b[i] = picks[rng() % 4];
  }
  auto got = run_soft(
      dev_,
      [&](Soft64& s, const std::vector<Id>& x) {
        Id r = s.c(0);
        for (int k = 0; k < 12; ++k)
          r = s.op(spv::OpBitwiseOr, {r, s.select32(soft::f64_compare(s, ops[k], x[0], x[1]), s.c(1u << k), s.c(0))});
        return r;
      },
      {a, b}, Result::Word32);
  Mismatches m;
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = double_of(a[i]), y = double_of(b[i]);
    const bool un = std::isnan(x) || std::isnan(y);
    const bool rel[] = {x == y, un || x == y, !un && x != y, x != y, x < y, un || x < y,
                        x > y,  un || x > y, x <= y,          un || x <= y, x >= y, un || x >= y};
    uint64_t want = 0;
    for (int k = 0; k < 12; ++k) want |= uint64_t(rel[k]) << k;
    m.check(got[i] == want, {a[i], b[i]}, got[i], want);
  }
  m.expect_none("comparisons (bit k: ops[k])");
}

TEST_P(SoftF64Convert, FloorCeilTrunc) {
  unary("floor", 7, soft::f64_floor, [](double d) { return std::floor(d); });
  unary("ceil", 8, soft::f64_ceil, [](double d) { return std::ceil(d); });
  unary("trunc", 9, soft::f64_trunc, [](double d) { return std::trunc(d); });
}

TEST_P(SoftF64Convert, RoundEvenFractSign) {
  ASSERT_EQ(std::fegetround(), FE_TONEAREST);
  unary("round_even", 10, soft::f64_round_even, [](double d) { return std::nearbyint(d); });
  unary("fract", 11, soft::f64_fract, [](double d) { return d - std::floor(d); });
  unary("sign", 12, soft::f64_sign, [](double d) { return std::isnan(d) || d == 0 ? d : std::copysign(1.0, d); });
}

// min and max: the other operand where one is NaN, -0 below +0.
double min_ref(double x, double y) {
  if (std::isnan(x)) return y;
  if (std::isnan(y)) return x;
  if (x == 0 && y == 0) return std::signbit(x) ? x : y;
  return y < x ? y : x;
}
double max_ref(double x, double y) {
  if (std::isnan(x)) return y;
  if (std::isnan(y)) return x;
  if (x == 0 && y == 0) return std::signbit(x) ? y : x;
  return y > x ? y : x;
}

TEST_P(SoftF64Convert, MinMax) {
  auto a = double_cases(13), b = double_cases(14);
  const auto sp = special_doubles();
  for (size_t i = 0; i < sp.size() * sp.size(); ++i) a[i] = bits_of(sp[i / sp.size()]), b[i] = bits_of(sp[i % sp.size()]);
  for (bool is_max : {false, true}) {
    auto got = run_soft(
        dev_,
        [&](Soft64& s, const std::vector<Id>& x) { return (is_max ? soft::f64_max : soft::f64_min)(s, x[0], x[1]); },
        {a, b});
    Mismatches m;
    for (size_t i = 0; i < a.size(); ++i) {
      const double x = double_of(a[i]), y = double_of(b[i]);
      const uint64_t want = bits_of(is_max ? max_ref(x, y) : min_ref(x, y));
      m.check(same_double(got[i], want), {a[i], b[i]}, got[i], want);
    }
    m.expect_none(is_max ? "max" : "min");
  }
}

// Exponents that stay in range, cross into the subnormals or out to inf, and any s32.
TEST_P(SoftF64Convert, LdexpRoundsOnceIntoTheSubnormals) {
  auto a = double_cases(19);
  std::mt19937_64 rng(20);
  std::vector<uint64_t> n(a.size());
  for (size_t i = 0; i < n.size(); ++i) {
    const int32_t ranges[] = {70, 1100, 2300};
    int32_t k = i % 8 == 7 ? int32_t(rng()) : int32_t(rng() % (2 * ranges[i % 3] + 1)) - ranges[i % 3];
    if (i % 1000 == 1) k = i % 2000 == 1 ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int32_t>::max();
    n[i] = uint32_t(k);
  }
  auto got = run_soft(dev_, [](Soft64& s, const std::vector<Id>& x) { return soft::f64_ldexp(s, x[0], s.lo(x[1])); },
                      {a, n});
  Mismatches m;
  for (size_t i = 0; i < a.size(); ++i) {
    const uint64_t want = bits_of(std::ldexp(double_of(a[i]), int32_t(n[i])));
    m.check(same_double(got[i], want), {a[i], n[i]}, got[i], want);
  }
  m.expect_none("ldexp");
}

TEST_P(SoftF64Convert, ToF32RoundsToNearestEven) {
  auto in = double_cases(15);
  // Values in and around f32's range, with the 29 bits rounded off near a tie.
  std::mt19937_64 rng(16);
  for (size_t i = 7 * special_doubles().size(); i < kCases; i += 2) {
    const uint64_t exponent = 1023 - 160 + rng() % 300;
    uint64_t r = (rng() & 0x800fffffffffffffull) | (exponent << 52);
    if (rng() % 2) r = (r & ~uint64_t(0x1fffffff)) | (0x10000000 + rng() % 3 - 1);
    in[i] = r;
  }
  auto got = run_soft(
      dev_, [](Soft64& s, const std::vector<Id>& x) { return s.b.op(spv::OpBitcast, s.u32, {soft::f64_to_f32(s, x[0])}); },
      {in}, Result::Word32);
  Mismatches m;
  for (size_t i = 0; i < in.size(); ++i) {
    const float want = float(double_of(in[i]));
    const bool ok = std::isnan(want) ? std::isnan(f32_of(uint32_t(got[i]))) : got[i] == bits_of_f32(want);
    m.check(ok, {in[i]}, got[i], bits_of_f32(want));
  }
  m.expect_none("to_f32");
}

TEST_P(SoftF64Convert, FromF32IsExact) {
  std::mt19937 rng(17);
  std::vector<uint64_t> in;
  for (double d : special_doubles())
    for (int k = -3; k <= 3; ++k) in.push_back(bits_of_f32(float(d)) + uint32_t(k));
  // Every subnormal's neighbourhood of the powers of two, then random patterns.
  for (uint32_t p = 1; p < (1u << 23); p <<= 1)
    for (uint32_t k : {p - 1, p, p + 1, p | 1, (p << 1) - 1}) in.push_back(k), in.push_back(k | 0x80000000u);
  while (in.size() < kCases) in.push_back(rng());
  auto got = run_soft(
      dev_,
      [](Soft64& s, const std::vector<Id>& x) {
        return soft::f64_from_f32(s, s.b.op(spv::OpBitcast, s.b.type_float(32), {s.lo(x[0])}));
      },
      {in});
  Mismatches m;
  for (size_t i = 0; i < in.size(); ++i) {
    const uint64_t want = bits_of(double(f32_of(uint32_t(in[i]))));
    m.check(same_double(got[i], want), {in[i]}, got[i], want);
  }
  m.expect_none("from_f32");
}

// Integers: the extremes and their neighbours, values near the powers of two (where 64-bit
// ones round), then random ones with a random number of leading zero or one bits.
std::vector<uint64_t> int_cases(uint64_t seed, int bits) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> v;
  for (int p = 0; p < bits; ++p)
    for (int64_t k = -3; k <= 3; ++k) v.push_back((uint64_t(1) << p) + uint64_t(k));
  for (uint64_t base : {uint64_t(1) << 53, uint64_t(1) << 54, uint64_t(1) << 62, uint64_t(3) << 60})
    for (uint64_t k = 0; k < 64; ++k) v.push_back(base + k), v.push_back(~(base + k) + 1);
  while (v.size() < kCases) {
    uint64_t r = rng() >> (rng() % 64);
    if (rng() % 2) r = ~r;
    v.push_back(r);
  }
  if (bits == 32)
    for (auto& x : v) x &= 0xffffffffu;
  return v;
}

TEST_P(SoftF64Convert, FromInt) {
  for (int bits : {32, 64})
    for (bool is_signed : {false, true}) {
      auto in = int_cases(18 + bits + is_signed, bits);
      auto got = run_soft(
          dev_,
          [&](Soft64& s, const std::vector<Id>& x) {
            return soft::f64_from_int(s, bits == 32 ? s.lo(x[0]) : x[0], bits, is_signed);
          },
          {in});
      Mismatches m;
      for (size_t i = 0; i < in.size(); ++i) {
        const uint64_t x = in[i];
        const double d = bits == 32 ? (is_signed ? double(int32_t(x)) : double(uint32_t(x)))
                                    : (is_signed ? double(int64_t(x)) : double(x));
        m.check(got[i] == bits_of(d), {x}, got[i], bits_of(d));
      }
      m.expect_none("from_int " + std::string(is_signed ? "s" : "u") + std::to_string(bits));
    }
}

// In-range doubles for a conversion to an integer of `bits` (the signed minimum, and
// negatives above -1 for unsigned ones): the specials and randoms that are, else a random
// value of a random exponent within the range.
std::vector<uint64_t> in_range_cases(uint64_t seed, int bits, bool is_signed) {
  const double top = std::ldexp(1.0, is_signed ? bits - 1 : bits);
  const double bottom = is_signed ? -top : -1.0;
  auto v = double_cases(seed);
  std::mt19937_64 rng(seed);
  for (auto& x : v) {
    const double d = double_of(x);
    if ((d > bottom || (is_signed && d == bottom)) && d < top) continue;
    const uint64_t exponent = 1023 - 60 + rng() % (60 + (is_signed ? bits - 1 : bits));
    x = (rng() & 0x000fffffffffffffull) | (exponent << 52) | (is_signed && rng() % 2 ? uint64_t(1) << 63 : 0);
  }
  return v;
}

TEST_P(SoftF64Convert, ToIntTruncates) {
  for (int bits : {32, 64})
    for (bool is_signed : {false, true}) {
      auto in = in_range_cases(24 + bits + is_signed, bits, is_signed);
      auto got = run_soft(
          dev_, [&](Soft64& s, const std::vector<Id>& x) { return soft::f64_to_int(s, x[0], bits, is_signed); }, {in},
          bits == 32 ? Result::Word32 : Result::Word64);
      Mismatches m;
      for (size_t i = 0; i < in.size(); ++i) {
        const double d = double_of(in[i]);
        const uint64_t want = bits == 32 ? (is_signed ? uint32_t(int32_t(d)) : uint32_t(d))
                                         : (is_signed ? uint64_t(int64_t(d)) : uint64_t(d));
        m.check(got[i] == want, {in[i]}, got[i], want);
      }
      m.expect_none("to_int " + std::string(is_signed ? "s" : "u") + std::to_string(bits));
    }
}

}  // namespace
}  // namespace nxv::softtest
