// Emulated f64's e^x, sigmoid and tanh (soft_f64_exp.h) on 64-bit integers in fixed point:
// each value below is a u64 "in 2^n units" (the integer is the value times 2^n). Tang's
// reduction x = (64 m + j) ln2/64 + r is exact on x's significand modulo 2^64 (only r, which
// is small, is kept); e^r - 1 is Taylor's series to r^6, within 2^-64.6 on |r| <= 0.00565;
// 2^(j/64) comes from a table of 64-bit significands; a quotient is a product by 1/d from two
// Newton steps. The 64-bit result is within about 2^-61 of the true significand and is
// rounded once (round_pack), subnormals included. The error analysis was checked against
// mpmath on a model of these steps, and unit_tests' math sweep measures the emitted code.
#include "codegen/soft_f64_exp.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "codegen/exp2_table.h"
#include "codegen/soft_f64.h"
#include "codegen/soft_f64_parts.h"
#include "codegen/soft_i64.h"

namespace nxv::codegen::soft {

namespace {

// Taylor's coefficients of Q(r) = (e^r - 1 - r) / r^2 = 1/2 + r/6 + r^2/24 + r^3/120 +
// r^4/720 in 2^64 units (1/2 is 2^63).
constexpr uint64_t kSixth = 0x2aaaaaaaaaaaaaabull, k24th = 0x0aaaaaaaaaaaaaabull, k120th = 0x0222222222222222ull,
                   k720th = 0x005b05b05b05b05bull;
// ln2 2^92 (= ln2/64 in 2^98 units) in three words, low first.
constexpr uint32_t kLn2Words[3] = {0xbc9e3b3au, 0x7d1cf79au, 0x0b17217fu};
// |c_n| of tanh(a)/a = sum c_n a^2n (alternating signs) in 2^63 units, to n = 8: the rest is
// below 2^-66 for a < 1/8 (mpmath).
constexpr uint64_t kTanhSeries[9] = {0x8000000000000000ull, 0x2aaaaaaaaaaaaaabull, 0x1111111111111111ull,
                                     0x06e86e86e86e86e8ull, 0x02cc9e9105821f3eull, 0x01226e355e6c23c9ull,
                                     0x0075b4f43855f77full, 0x002fb46c8a56ebc5ull, 0x0013558248036744ull};

// The high 64 bits of a b, short of them by less than 3: the low words' product and the low
// halves of the cross products are left out.
Id mul_high(Soft64& s, Id a, Id b) {
  Id h01 = two_words(s, spv::OpUMulExtended, s.lo(a), s.hi(b)).second;
  Id h10 = two_words(s, spv::OpUMulExtended, s.hi(a), s.lo(b)).second;
  auto [l11, h11] = two_words(s, spv::OpUMulExtended, s.hi(a), s.hi(b));
  auto [t, c1] = two_words(s, spv::OpIAddCarry, l11, h01);
  auto [w2, c2] = two_words(s, spv::OpIAddCarry, t, h10);
  return s.pair(w2, s.op(spv::OpIAdd, {h11, s.op(spv::OpIAdd, {c1, c2})}));
}

Id is_negative(Soft64& s, Id v) { return s.test(spv::OpSLessThan, {s.hi(v), s.c(0)}); }
Id magnitude(Soft64& s, Id v) { return s.select(is_negative(s, v), i64_neg(s, v), v); }
// a - b where `minus`, else a + b.
Id add_or_sub(Soft64& s, Id minus, Id a, Id b) { return s.select(minus, i64_sub(s, a, b), i64_add(s, a, b)); }
// v >> n for any u32 n: 0 from 64 on.
Id shift_right_any(Soft64& s, Id v, Id n) {
  Id r = i64_shr(s, v, s.b.ext(GLSLstd450UMin, s.u32, {n, s.c(63)}));
  return s.select(s.test(spv::OpUGreaterThanEqual, {n, s.c(64)}), s.c64(0), r);
}
// sig 2^(e - 1011) for a signed e: a significand in 2^64 units for an exponent field e,
// modulo 2^64.
Id scaled_by_exponent(Soft64& s, Id sig, Id e) {
  Id left = s.op(spv::OpISub, {e, s.c(1011)});
  Id up = s.test(spv::OpSGreaterThanEqual, {left, s.c(0)});
  Id l = i64_shl(s, sig, s.b.ext(GLSLstd450UMin, s.u32, {left, s.c(63)}));
  Id r = i64_shr(s, sig, s.b.ext(GLSLstd450UMin, s.u32, {s.op(spv::OpISub, {s.c(1011), e}), s.c(63)}));
  return s.select(up, l, r);
}
// A finite f64's significand with its hidden bit (53 bits).
Id significand(Soft64& s, Id hi, Id lo) {
  return s.pair(lo, s.op(spv::OpBitwiseOr, {s.op(spv::OpBitwiseAnd, {hi, s.c(0xfffff)}), s.c(0x100000)}));
}
Id exponent_field(Soft64& s, Id hi) {
  return s.op(spv::OpBitwiseAnd, {s.op(spv::OpShiftRightLogical, {hi, s.c(20)}), s.c(0x7ff)});
}

// 2^(j/64) in 2^63 units for j = 0..63, as little-endian word pairs.
const std::vector<uint32_t>& exp2_significands() {
  static const std::vector<uint32_t> words = [] {
    std::vector<uint32_t> w;
    for (const auto& [hi, lo] : kExp2Table) {
      const uint64_t v = uint64_t(std::ldexp(hi, 63)) + uint64_t(std::llround(std::ldexp(lo, 63)));
      w.push_back(uint32_t(v));
      w.push_back(uint32_t(v >> 32));
    }
    return w;
  }();
  return words;
}

// e^x = sig 2^(m - 63), sig in 2^63 units within (0.98, 2).
struct FixedExp {
  Id m;  // a signed u32
  Id sig;
};
// For |x| < 747, not NaN.
FixedExp exp_fixed(Soft64& s, Id x) {
  Id hi = s.hi(x), lo = s.lo(x);
  Id e = exponent_field(s, hi);
  // Below 2^-60 (exponent field 963), e^x rounds to 1: x is taken as 0.
  Id tiny = s.test(spv::OpULessThan, {e, s.c(963)});
  // k = x 64/ln2 rounded, in f32 from x's leading bits (exponent rebased, fraction truncated):
  // one off where x 64/ln2 is within 0.02 of a half, which keeps |r| <= 0.00565.
  Id fbits = s.op(spv::OpBitwiseOr,
                  {s.op(spv::OpBitwiseAnd, {hi, s.c(0x80000000u)}),
                   s.op(spv::OpBitwiseOr, {s.op(spv::OpShiftLeftLogical, {s.op(spv::OpISub, {e, s.c(896)}), s.c(23)}),
                                           s.op(spv::OpBitwiseOr, {s.op(spv::OpShiftLeftLogical, {s.op(spv::OpBitwiseAnd, {hi, s.c(0xfffff)}), s.c(3)}),
                                                                   s.op(spv::OpShiftRightLogical, {lo, s.c(29)})})})});
  const Id f32 = s.b.type_float(32);
  Id xf = s.b.op(spv::OpBitcast, f32, {s.select32(tiny, s.c(0), fbits)});
  Id kf = s.b.ext(GLSLstd450RoundEven, f32, {s.b.op(spv::OpFMul, f32, {xf, s.b.const_f32(0x1.715476p+6f)})});
  Id k = s.b.op(spv::OpConvertFToS, s.u32, {kf});
  // x 2^66 modulo 2^64 (two's complement): the significand moved left by at most 23.
  Id xs = s.select(tiny, s.c64(0), scaled_by_exponent(s, significand(s, hi, lo), s.op(spv::OpIAdd, {e, s.c(2)})));
  xs = s.select(s.test(spv::OpSLessThan, {hi, s.c(0)}), i64_neg(s, xs), xs);
  // k ln2/64 2^66 = k (ln2 2^92) / 2^32 modulo 2^64, |k| < 2^17.
  Id k_neg = s.test(spv::OpSLessThan, {k, s.c(0)});
  Id ak = s.select32(k_neg, s.op(spv::OpISub, {s.c(0), k}), k);
  Id h0 = two_words(s, spv::OpUMulExtended, ak, s.c(kLn2Words[0])).second;
  auto [l1, h1] = two_words(s, spv::OpUMulExtended, ak, s.c(kLn2Words[1]));
  auto [w1, carry] = two_words(s, spv::OpIAddCarry, h0, l1);
  Id w2 = s.op(spv::OpIAdd, {h1, s.op(spv::OpIAdd, {s.op(spv::OpIMul, {ak, s.c(kLn2Words[2])}), carry})});
  Id kl = s.pair(w1, w2);
  Id r = i64_sub(s, xs, s.select(k_neg, i64_neg(s, kl), kl));  // r 2^66, |r| <= 0.00565
  Id r_neg = is_negative(s, r);
  Id a66 = magnitude(s, r), a = i64_shr(s, a66, s.c(2));
  Id z = mul_high(s, a, a);  // r^2 2^64
  // Q(r) from its even and odd parts in |r|.
  Id even = i64_add(s, s.c64(uint64_t(1) << 63), mul_high(s, z, i64_add(s, s.c64(k24th), mul_high(s, z, s.c64(k720th)))));
  Id odd = i64_add(s, s.c64(kSixth), mul_high(s, z, s.c64(k120th)));
  Id q = add_or_sub(s, r_neg, even, mul_high(s, a, odd));
  Id u = add_or_sub(s, r_neg, a66, i64_shl(s, mul_high(s, z, q), s.c(2)));  // |e^r - 1| 2^66
  Id table = s.b.constant_words(exp2_significands());
  Id row = s.op(spv::OpShiftLeftLogical, {s.op(spv::OpBitwiseAnd, {k, s.c(63)}), s.c(1)});
  Id t = s.pair(s.b.table_word(table, row), s.b.table_word(table, s.op(spv::OpIAdd, {row, s.c(1)})));
  // 2^(j/64) (1 + (e^r - 1)) 2^63.
  Id sig = add_or_sub(s, r_neg, t, i64_shr(s, mul_high(s, t, u), s.c(2)));
  return {s.op(spv::OpShiftRightArithmetic, {k, s.c(6)}), sig};
}

// 2^63 / D for d = D 2^62, D in [1, 2]: an f32 quotient (within 2^-21), then two Newton
// steps y += y (1 - D y), the first with 1 - D y in 2^61 units, the second from the middle
// words of the exact product (1 - D y in 2^93 units, below 2^-40 there): within 2^-62.
Id reciprocal(Soft64& s, Id d) {
  const Id f32 = s.b.type_float(32);
  Id df = s.b.op(spv::OpConvertUToF, f32, {s.hi(d)});
  Id y = s.pair(s.c(0), s.b.op(spv::OpConvertFToU, s.u32, {s.b.op(spv::OpFDiv, f32, {s.b.const_f32(0x1p61f), df})}));
  Id e = i64_sub(s, s.c64(uint64_t(1) << 61), mul_high(s, d, y));
  y = add_or_sub(s, is_negative(s, e), y, i64_shl(s, mul_high(s, y, magnitude(s, e)), s.c(3)));
  Wide p = mul_wide(s, d, y);
  e = i64_neg(s, s.pair(s.hi(p.lo), s.lo(p.hi)));
  return add_or_sub(s, is_negative(s, e), y, i64_shr(s, mul_high(s, y, magnitude(s, e)), s.c(29)));
}

// x with |x| limited to the f64 whose high word is `limit` (low word 0), sign kept; ±inf and
// NaN become ±that limit.
Id clamp_magnitude(Soft64& s, Id x, uint32_t limit) {
  Id hi = s.hi(x);
  Id beyond = s.test(spv::OpUGreaterThanEqual, {s.op(spv::OpBitwiseAnd, {hi, s.c(0x7fffffff)}), s.c(limit)});
  Id sign = s.op(spv::OpBitwiseAnd, {hi, s.c(0x80000000u)});
  return s.pair(s.select32(beyond, s.c(0), s.lo(x)), s.select32(beyond, s.op(spv::OpBitwiseOr, {sign, s.c(limit)}), hi));
}
// |x| up to 747 (its high word): e^747 overflows and e^-747 rounds to 0, even halved.
constexpr uint32_t k747 = 0x40875800;

}  // namespace

Id f64_exp(Soft64& s, Id x, int scale) {
  FixedExp f = exp_fixed(s, clamp_magnitude(s, x, k747));
  // normalize_round_pack's value is sig 2^(exp - 1084).
  Id r = normalize_round_pack(s, s.c(0), s.op(spv::OpIAdd, {f.m, s.c(uint32_t(1021 + scale))}), f.sig);
  return s.select(f64_is_nan(s, x), x, r);
}

Id f64_sigmoid(Soft64& s, Id x) {
  // 1 / (1 + e^-|x|), or e^-|x| / (1 + e^-|x|) where x < 0.
  Id minus_abs = clamp_magnitude(s, x, k747);
  minus_abs = s.pair(s.lo(minus_abs), s.op(spv::OpBitwiseOr, {s.hi(minus_abs), s.c(0x80000000u)}));
  FixedExp f = exp_fixed(s, minus_abs);  // m <= 0
  Id d = i64_add(s, s.c64(uint64_t(1) << 62), shift_right_any(s, f.sig, s.op(spv::OpISub, {s.c(1), f.m})));
  Id y = reciprocal(s, d);
  Id negative = is_negative(s, x);
  Id sig = s.select(negative, mul_high(s, f.sig, y), y);  // 2^(126 - m) and 2^63 units
  Id r = normalize_round_pack(s, s.c(0), s.select32(negative, s.op(spv::OpIAdd, {f.m, s.c(1022)}), s.c(1021)), sig);
  return s.select(f64_is_nan(s, x), x, r);
}

Id f64_tanh(Soft64& s, Id x) {
  Id hi = s.hi(x), lo = s.lo(x);
  Id sign = s.op(spv::OpBitwiseAnd, {hi, s.c(0x80000000u)});
  // a = |x| up to 23, past which tanh rounds to 1 (±inf and NaN too).
  Id a = clamp_magnitude(s, s.pair(lo, s.op(spv::OpBitwiseXor, {hi, sign})), 0x40370000);
  Id a_hi = s.hi(a), a_lo = s.lo(a);
  // From a = 1/8 up: (1 - e^-2a) / (1 + e^-2a), the numerator at least 0.22.
  FixedExp f = exp_fixed(s, s.pair(a_lo, s.op(spv::OpBitwiseOr, {s.op(spv::OpIAdd, {a_hi, s.c(0x100000)}), s.c(0x80000000u)})));
  Id num = i64_sub(s, s.c64(uint64_t(1) << 63), shift_right_any(s, f.sig, s.op(spv::OpISub, {s.c(0), f.m})));
  Id den = i64_add(s, s.c64(uint64_t(1) << 62), shift_right_any(s, f.sig, s.op(spv::OpISub, {s.c(1), f.m})));
  Id quotient = mul_high(s, num, reciprocal(s, den));  // 2^62 units
  // Below: a (tanh(a)/a), the series in a^2 with every partial sum positive.
  Id e = exponent_field(s, a_hi);
  Id sig = significand(s, a_hi, a_lo);
  Id a64 = scaled_by_exponent(s, sig, e);
  Id z = mul_high(s, a64, a64);
  Id series = s.c64(kTanhSeries[8]);
  for (int n = 7; n >= 0; --n) series = i64_sub(s, s.c64(kTanhSeries[n]), mul_high(s, z, series));
  Id product = mul_high(s, i64_shl(s, sig, s.c(11)), series);  // 2^(1085 - e) units
  Id small = s.test(spv::OpULessThan, {a_hi, s.c(0x3fc00000)});
  Id r = normalize_round_pack(s, sign, s.select32(small, s.op(spv::OpISub, {e, s.c(1)}), s.c(1022)),
                              s.select(small, product, quotient));
  // Below 2^-30, tanh x rounds to x (zeros and subnormals included); a NaN is itself.
  Id keep = s.either(s.test(spv::OpULessThan, {s.op(spv::OpBitwiseAnd, {hi, s.c(0x7fffffff)}), s.c(0x3e100000)}),
                     f64_is_nan(s, x));
  return s.select(keep, x, r);
}

}  // namespace nxv::codegen::soft
