// codegen/soft_i64.h's routines against the host's uint64_t / int64_t arithmetic: a million
// bit patterns per routine (edge values, their neighbours, words of all zeros or ones, random).
#include "codegen/soft_i64.h"

#include <cinttypes>
#include <cstdio>
#include <string>

#include "soft_testing.h"

namespace nxv::softtest {
namespace {

namespace soft = codegen::soft;
using Routine = std::function<Id(Soft64&, const std::vector<Id>&)>;

constexpr size_t kCases = 1'000'000;
constexpr uint64_t kMin = uint64_t(1) << 63;

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016" PRIx64, v);
  return buf;
}

const std::vector<uint64_t>& edges() {
  static const std::vector<uint64_t> e = [] {
    std::vector<uint64_t> base{0,          1,          2,           3,          0xffffffffu, 0x100000000u,
                               0x7fffffffu, 0x80000000u, kMin,       kMin - 1,   0xffffffff00000000u,
                               0x1ffffffffu, 0x8000000080000000u, 0x5555555555555555u, 0xaaaaaaaaaaaaaaaau,
                               uint64_t(1) << 24, (uint64_t(1) << 24) + 1, uint64_t(1) << 53, 0x123456789abcdef0u};
    std::vector<uint64_t> all;
    for (uint64_t v : base) all.insert(all.end(), {v, ~v + 1, v - 1, v + 1});
    return all;
  }();
  return e;
}

// One operand: an edge value, one near it, a word of 0 or 0xffffffff beside a random one,
// a small number, or random bits; fixed seeds throughout.
uint64_t pattern(std::mt19937_64& rng) {
  const uint64_t r = rng();
  const std::vector<uint64_t>& e = edges();
  switch (r % 8) {
    case 0: return e[(r >> 8) % e.size()];
    case 1: return e[(r >> 8) % e.size()] + ((r >> 40) % 64) - 32;
    case 2: return (rng() & 0xffffffffu) | ((r & 256) ? 0xffffffff00000000u : 0);
    case 3: return (rng() << 32) | ((r & 256) ? 0xffffffffu : 0);
    case 4: return (r >> 8) % 1000;
    default: return rng();
  }
}

// kCases operand tuples: for two operands every pair of edge values first, then patterns.
std::vector<std::vector<uint64_t>> cases(size_t operands, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<uint64_t>> in(operands, std::vector<uint64_t>(kCases));
  const std::vector<uint64_t>& e = edges();
  size_t i = 0;
  if (operands == 1)
    for (; i < e.size(); ++i) in[0][i] = e[i];
  if (operands == 2)
    for (; i < e.size() * e.size(); ++i) in[0][i] = e[i % e.size()], in[1][i] = e[i / e.size()];
  for (; i < kCases; ++i)
    for (auto& v : in) v[i] = pattern(rng);
  return in;
}

// Runs the routine over `in` and compares every lane with `host`.
void expect_lanes(const std::vector<std::vector<uint64_t>>& in, const Routine& routine,
                  const std::function<uint64_t(const std::vector<uint64_t>&)>& host, Result result = Result::Word64) {
  static auto dev = soft_device();
  const std::vector<uint64_t> got = run_soft(dev, routine, in, result);
  std::vector<uint64_t> args(in.size());
  for (size_t i = 0; i < got.size(); ++i) {
    for (size_t k = 0; k < in.size(); ++k) args[k] = in[k][i];
    const uint64_t want = host(args);
    if (got[i] != want) {
      std::string operands;
      for (uint64_t a : args) operands += " " + hex(a);
      FAIL() << "lane " << i << ", operands" << operands << ": got " << hex(got[i]) << ", want " << hex(want);
    }
  }
}

using Binary = Id (*)(Soft64&, Id, Id);
Routine binary(Binary f) {
  return [f](Soft64& s, const std::vector<Id>& x) { return f(s, x[0], x[1]); };
}
int64_t sgn(uint64_t v) { return int64_t(v); }

class SoftI64 : public SoftRoutines {};
NXV_SOFT_ROUTINE_SUITE(SoftI64);

TEST_P(SoftI64, AddSubNegWrapAround) {
  const auto in = cases(2, 1);
  expect_lanes(in, binary(soft::i64_add), [](const auto& a) { return a[0] + a[1]; });
  expect_lanes(in, binary(soft::i64_sub), [](const auto& a) { return a[0] - a[1]; });
  expect_lanes(
      in, [](Soft64& s, const std::vector<Id>& x) { return soft::i64_neg(s, x[0]); },
      [](const auto& a) { return 0 - a[0]; });
}

TEST_P(SoftI64, MulKeepsTheLow64Bits) {
  expect_lanes(cases(2, 2), binary(soft::i64_mul), [](const auto& a) { return a[0] * a[1]; });
}

// Shift counts: every one of 0..63 among the edge pairs' counts, 0, 31, 32, 33, 63 often.
std::vector<std::vector<uint64_t>> shift_cases(uint64_t seed) {
  auto in = cases(2, seed);
  std::mt19937_64 rng(seed);
  const uint64_t often[] = {0, 31, 32, 33, 63};
  for (size_t i = 0; i < kCases; ++i) in[1][i] = (i % 4 == 0) ? often[(i / 4) % 5] : rng() % 64;
  return in;
}

TEST_P(SoftI64, ShiftsByEveryCountBelow64) {
  const auto in = shift_cases(3);
  auto lo = [](const auto& a) { return unsigned(a[1]); };
  expect_lanes(
      in, [](Soft64& s, const std::vector<Id>& x) { return soft::i64_shl(s, x[0], s.lo(x[1])); },
      [&](const auto& a) { return a[0] << lo(a); });
  expect_lanes(
      in, [](Soft64& s, const std::vector<Id>& x) { return soft::i64_shr(s, x[0], s.lo(x[1])); },
      [&](const auto& a) { return a[0] >> lo(a); });
  expect_lanes(
      in, [](Soft64& s, const std::vector<Id>& x) { return soft::i64_sar(s, x[0], s.lo(x[1])); },
      [&](const auto& a) { return uint64_t(sgn(a[0]) >> lo(a)); });
}

TEST_P(SoftI64, ComparisonsSignedAndUnsigned) {
  // All ten comparisons of a lane in one word, bit k for kOps[k]; equal operands often.
  static constexpr spv::Op kOps[] = {spv::OpIEqual,         spv::OpINotEqual,        spv::OpULessThan,
                                     spv::OpULessThanEqual, spv::OpUGreaterThan,     spv::OpUGreaterThanEqual,
                                     spv::OpSLessThan,      spv::OpSLessThanEqual,   spv::OpSGreaterThan,
                                     spv::OpSGreaterThanEqual};
  auto in = cases(2, 4);
  for (size_t i = edges().size() * edges().size(); i < kCases; i += 7) {
    in[1][i] = in[0][i] ^ ((i % 3 == 0) ? 0 : (i % 3 == 1) ? 1 : uint64_t(1) << 32);
  }
  expect_lanes(
      in,
      [](Soft64& s, const std::vector<Id>& x) {
        Id bits = s.c(0);
        for (uint32_t k = 0; k < std::size(kOps); ++k)
          bits = s.op(spv::OpBitwiseOr,
                      {bits, s.select32(soft::i64_compare(s, kOps[k], x[0], x[1]), s.c(1u << k), s.c(0))});
        return bits;
      },
      [](const auto& a) {
        const uint64_t x = a[0], y = a[1];
        const bool r[] = {x == y,           x != y,           x < y,           x <= y,           x > y,
                          x >= y,           sgn(x) < sgn(y), sgn(x) <= sgn(y), sgn(x) > sgn(y), sgn(x) >= sgn(y)};
        uint64_t bits = 0;
        for (size_t k = 0; k < std::size(r); ++k) bits |= uint64_t(r[k]) << k;
        return bits;
      },
      Result::Word32);
}

TEST_P(SoftI64, FindMsbOfEveryWidth) {
  auto in = cases(1, 5);
  // Single bits and all-ones runs of each width, then random values shifted to each width.
  for (size_t i = 0; i < 64; ++i) in[0][100 + i] = uint64_t(1) << i, in[0][200 + i] = ~uint64_t(0) >> i;
  for (size_t i = 300; i < kCases; i += 3) in[0][i] >>= (i % 64);
  expect_lanes(
      in, [](Soft64& s, const std::vector<Id>& x) { return soft::i64_find_msb(s, x[0]); },
      [](const auto& a) { return a[0] ? uint64_t(63 - __builtin_clzll(a[0])) : uint64_t(0xffffffffu); },
      Result::Word32);
}

TEST_P(SoftI64, WidenU32AndS32) {
  const auto in = cases(1, 6);
  expect_lanes(
      in, [](Soft64& s, const std::vector<Id>& x) { return soft::i64_from_u32(s, s.lo(x[0])); },
      [](const auto& a) { return uint64_t(uint32_t(a[0])); });
  expect_lanes(
      in, [](Soft64& s, const std::vector<Id>& x) { return soft::i64_from_s32(s, s.lo(x[0])); },
      [](const auto& a) { return uint64_t(int64_t(int32_t(uint32_t(a[0])))); });
}

TEST_P(SoftI64, AbsMinMax) {
  const auto in = cases(2, 7);
  expect_lanes(
      in, [](Soft64& s, const std::vector<Id>& x) { return soft::i64_abs(s, x[0]); },
      [](const auto& a) { return sgn(a[0]) < 0 ? 0 - a[0] : a[0]; });
  for (bool is_signed : {false, true}) {
    auto lt = [is_signed](uint64_t x, uint64_t y) { return is_signed ? sgn(x) < sgn(y) : x < y; };
    expect_lanes(
        in, [is_signed](Soft64& s, const std::vector<Id>& x) { return soft::i64_min(s, x[0], x[1], is_signed); },
        [&](const auto& a) { return lt(a[1], a[0]) ? a[1] : a[0]; });
    expect_lanes(
        in, [is_signed](Soft64& s, const std::vector<Id>& x) { return soft::i64_max(s, x[0], x[1], is_signed); },
        [&](const auto& a) { return lt(a[0], a[1]) ? a[1] : a[0]; });
  }
}

TEST_P(SoftI64, PopcountOfEveryWeight) {
  auto in = cases(1, 8);
  std::mt19937_64 rng(8);
  for (size_t i = 100; i < kCases; i += 2) in[0][i] &= rng() & rng();  // sparser
  expect_lanes(
      in, [](Soft64& s, const std::vector<Id>& x) { return soft::i64_popcount(s, x[0]); },
      [](const auto& a) { return uint64_t(__builtin_popcountll(a[0])); });
}

// Dividends and divisors of every width, multiples of the divisor and one off them; divisors
// nonzero and no MIN / -1 (what the callers guarantee).
std::vector<std::vector<uint64_t>> division_cases(uint64_t seed) {
  auto in = cases(2, seed);
  std::mt19937_64 rng(seed);
  for (size_t i = edges().size() * edges().size(); i < kCases; ++i) {
    uint64_t& a = in[0][i];
    uint64_t& d = in[1][i];
    switch (i % 4) {
      case 0: d >>= rng() % 64; break;
      case 1: a >>= rng() % 64; break;
      case 2: d >>= rng() % 64, a = d * (rng() >> (rng() % 64)) + (rng() % 3) - 1; break;
      default: break;
    }
  }
  for (size_t i = 0; i < kCases; ++i) {
    if (in[1][i] == 0) in[1][i] = 7;
    if (in[0][i] == kMin && in[1][i] == ~uint64_t(0)) in[1][i] = 3;
  }
  return in;
}

TEST_P(SoftI64, UnsignedDivisionAndRemainder) {
  const auto in = division_cases(9);
  expect_lanes(in, binary(soft::i64_udiv), [](const auto& a) { return a[0] / a[1]; });
  expect_lanes(in, binary(soft::i64_umod), [](const auto& a) { return a[0] % a[1]; });
  // Both of one pair of operands: one loop, the same results.
  expect_lanes(
      in,
      [](Soft64& s, const std::vector<Id>& x) {
        Id both = s.b.op(spv::OpBitwiseXor, s.uvec2, {soft::i64_udiv(s, x[0], x[1]), soft::i64_umod(s, x[0], x[1])});
        EXPECT_EQ(s.b.loop_steps().loops, 1u);
        return both;
      },
      [](const auto& a) { return (a[0] / a[1]) ^ (a[0] % a[1]); });
}

TEST_P(SoftI64, SignedDivisionTruncatesTowardZero) {
  const auto in = division_cases(10);
  expect_lanes(in, binary(soft::i64_sdiv), [](const auto& a) { return uint64_t(sgn(a[0]) / sgn(a[1])); });
  expect_lanes(in, binary(soft::i64_srem), [](const auto& a) { return uint64_t(sgn(a[0]) % sgn(a[1])); });
}


TEST_P(SoftI64, ToF32RoundsToNearestEven) {
  auto in = cases(1, 11);
  std::mt19937_64 rng(11);
  // 24 kept bits (odd or even) shifted to every place, then exactly half an ulp below
  // them, half an ulp and a sticky bit anywhere, or one less than half.
  for (size_t i = 100; i < kCases; i += 2) {
    const unsigned shift = 1 + rng() % 40;
    const uint64_t kept = (uint64_t(1) << 23) | (rng() & 0x7fffff);
    const uint64_t half = uint64_t(1) << (shift - 1);
    const uint64_t below[] = {half, half | (uint64_t(1) << (rng() % shift)), half - 1, 0, rng() & (2 * half - 1)};
    in[0][i] = (kept << shift) | below[(i / 2) % 5];
    if (i % 3 == 0) in[0][i] = 0 - in[0][i];
  }
  for (bool is_signed : {false, true})
    expect_lanes(
        in, [is_signed](Soft64& s, const std::vector<Id>& x) { return soft::f32_from_i64(s, x[0], is_signed); },
        [is_signed](const auto& a) {
          return uint64_t(bits_of_f32(is_signed ? float(sgn(a[0])) : float(a[0])));
        },
        Result::Word32);
}

TEST_P(SoftI64, FromF32TruncatesTowardZero) {
  for (bool is_signed : {false, true}) {
    // Floats in range of every exponent, bits in the low word: |f| < 2^63 for s64, and
    // (-1, 2^64) for u64; fractions, ties and signed zeros among them.
    std::mt19937_64 rng(12);
    std::vector<uint64_t> in(kCases);
    const float edge[] = {0.0f, -0.0f, 0.5f, -0.5f, 0.99999994f, -0.99999994f, 1.0f, 1.5f, 2.5f, 8388607.5f,
                          16777216.0f, 4294967295.0f, 4294967296.0f, 9.2233715e18f, 1e-45f, -1e-45f};
    for (size_t i = 0; i < kCases; ++i) {
      const uint32_t top = is_signed ? 62 : 63;
      const uint32_t exponent = 127 - 4 + uint32_t(rng() % (top + 5));
      uint32_t bits = (exponent << 23) | uint32_t(rng() & 0x7fffff);
      if (is_signed ? rng() % 2 : exponent < 127 && rng() % 2) bits |= 0x80000000u;
      in[i] = i < std::size(edge) ? bits_of_f32(edge[i]) : bits;
      if (is_signed && i == std::size(edge)) in[i] = bits_of_f32(-9.223372e18f);  // -2^63
      if (!is_signed && i == std::size(edge)) in[i] = bits_of_f32(1.8446743e19f);  // below 2^64
    }
    expect_lanes(
        {in},
        [is_signed](Soft64& s, const std::vector<Id>& x) {
          return soft::i64_from_f32(s, s.b.op(spv::OpBitcast, s.b.type_float(32), {s.lo(x[0])}), is_signed);
        },
        [is_signed](const auto& a) {
          const float f = f32_of(uint32_t(a[0]));
          return is_signed ? uint64_t(int64_t(f)) : uint64_t(f);
        });
  }
}

}  // namespace
}  // namespace nxv::softtest
