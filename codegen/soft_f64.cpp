// soft_f64.h's arithmetic: add, mul, div, fma, sqrt, neg and abs on the uvec2 bits of
// an f64, correctly rounded through soft_f64_parts.h's round_pack.
#include "codegen/soft_f64.h"

#include <array>

#include "codegen/soft_f64_parts.h"
#include "codegen/soft_i64.h"

namespace nxv::codegen::soft {

namespace {

// x with bit 0 set where `cond`: a sticky bit.
Id jam(Soft64& s, Id x, Id cond) { return s.pair(s.op(spv::OpBitwiseOr, {s.lo(x), s.bit(cond)}), s.hi(x)); }
Id nonzero(Soft64& s, Id x) { return i64_compare(s, spv::OpINotEqual, x, s.c64(0)); }

// The special cases' result where `nan`, else `inf`, else `zero` (each an f64), else `r`.
Id specials(Soft64& s, Id nan, Id inf_case, Id inf, Id zero_case, Id zero, Id r) {
  return s.select(nan, f64_default_nan(s), s.select(inf_case, inf, s.select(zero_case, zero, r)));
}

// Two factors' significands with their leading 1s at bit `top` (as f64_normalize gives
// them), normalising only the one of the smaller exponent field: where both are subnormal,
// the product (below 2^-2044) rounds to ±0, or to c's bits beside a nonzero c, whatever
// the other's leading bit.
std::pair<F64Normal, F64Normal> factors(Soft64& s, const F64Parts& pa, const F64Parts& pb, uint32_t top) {
  Id swap = s.test(spv::OpULessThan, {pa.exp, pb.exp});
  F64Parts large{pa.sign, s.select32(swap, pb.exp, pa.exp), s.select(swap, pb.frac, pa.frac)};
  F64Parts small{pa.sign, s.select32(swap, pa.exp, pb.exp), s.select(swap, pa.frac, pb.frac)};
  F64Normal x = f64_significand(s, large);
  return {{x.exp, i64_shl(s, x.sig, s.c(top - 52))}, f64_normalize(s, small, top)};
}

// An operand's class from its words: inf or NaN, NaN, ±0.
struct Class {
  Id inf_or_nan, nan, zero;
};
Class classify(Soft64& s, Id v) {
  Id abs = s.op(spv::OpBitwiseAnd, {s.hi(v), s.c(0x7fffffff)});
  // The high word with bit 0 set where the low word is nonzero: above inf's for a NaN.
  Id top = s.op(spv::OpBitwiseOr, {abs, s.bit(s.test(spv::OpINotEqual, {s.lo(v), s.c(0)}))});
  return Class{s.test(spv::OpUGreaterThanEqual, {abs, s.c(0x7ff00000)}), s.test(spv::OpUGreaterThan, {top, s.c(0x7ff00000)}),
               s.test(spv::OpIEqual, {top, s.c(0)})};
}

// a * b, or a / b where `quotient`, where a or b is NaN, ±inf or ±0, else r.
Id product_specials(Soft64& s, Id a, Id b, bool quotient, Id sign, Id r) {
  Class ca = classify(s, a), cb = classify(s, b);
  // Results of inf's size and of zero's (a quotient's divisor counts inversely).
  Id big = s.either(ca.inf_or_nan, quotient ? cb.zero : cb.inf_or_nan);
  Id small = s.either(ca.zero, quotient ? cb.inf_or_nan : cb.zero);
  Id nan = s.either(s.either(ca.nan, cb.nan), s.both(big, small));
  Id high = s.select32(nan, s.c(0x7ff80000), s.select32(big, s.op(spv::OpBitwiseOr, {sign, s.c(0x7ff00000)}),
                                                        s.select32(small, sign, s.hi(r))));
  return s.pair(s.select32(s.either(big, small), s.c(0), s.lo(r)), high);
}

// x >> dist with the bits shifted out jammed into bit 0, dist any u32, for x below 2^127
// (so that 127 places leave just the sticky bit, as any more would).
Words4 shift_right_jam4(Soft64& s, const Words4& x, Id dist) {
  Id d = s.b.ext(GLSLstd450UMin, s.u32, {dist, s.c(127)});
  Id m = s.op(spv::OpBitwiseAnd, {d, s.c(31)}), rest = s.op(spv::OpBitwiseXor, {m, s.c(31)});
  Id odd = s.test(spv::OpINotEqual, {s.op(spv::OpBitwiseAnd, {d, s.c(32)}), s.c(0)});
  Id far = s.test(spv::OpUGreaterThanEqual, {d, s.c(64)});
  Id zero = s.c(0);
  // The word d / 32 places up, by the two bits of d / 32.
  auto pick = [&](Id w0, Id w1, Id w2, Id w3) {
    return s.select32(far, s.select32(odd, w3, w2), s.select32(odd, w1, w0));
  };
  Words4 from{pick(x[0], x[1], x[2], x[3]), pick(x[1], x[2], x[3], zero), pick(x[2], x[3], zero, zero),
              pick(x[3], zero, zero, zero)};
  Words4 r;
  for (int i = 0; i < 4; ++i) {
    r[i] = s.op(spv::OpShiftRightLogical, {from[i], m});
    if (i < 3) r[i] = s.op(spv::OpBitwiseOr, {r[i], s.low_bits_up(from[i + 1], rest)});
  }
  Id x01 = s.op(spv::OpBitwiseOr, {x[0], x[1]});
  Id below = pick(zero, x[0], x01, s.op(spv::OpBitwiseOr, {x01, x[2]}));
  Id lost = s.op(spv::OpBitwiseOr, {below, s.low_bits_up(from[0], rest)});
  r[0] = s.op(spv::OpBitwiseOr, {r[0], s.bit(s.test(spv::OpINotEqual, {lost, zero}))});
  return r;
}

// a b + c rounded once, for a nonzero finite product and a finite c (zero where zero_c);
// a's and b's significands with their leading 1s at bit 62, c's at bit 61. `normal`: the
// result is known zero or normal, so it packs without the underflow shift.
Id fma_finite(Soft64& s, F64Normal na, F64Normal nb, F64Normal nc, Id sign_p, Id sign_c, Id zero_c, bool normal) {
  // The exact product and c in 128 bits, leading 1s at bit 124 or 125 and at 125, both worth
  // x 2^(e - 1148) for their exponents e.
  Wide p = mul_wide(s, na.sig, nb.sig);
  Id zero = s.c(0);
  Words4 prod{s.lo(p.lo), s.hi(p.lo), s.lo(p.hi), s.hi(p.hi)}, addend{zero, zero, s.lo(nc.sig), s.hi(nc.sig)};
  Id ep = s.op(spv::OpISub, {s.op(spv::OpIAdd, {na.exp, nb.exp}), s.c(1022)});
  // The term of the larger exponent stays, the other is shifted to it (jamming).
  Id p_big = s.either(zero_c, s.test(spv::OpSGreaterThanEqual, {ep, nc.exp}));
  Words4 big = select4(s, p_big, prod, addend), small = select4(s, p_big, addend, prod);
  Id e = s.select32(p_big, ep, nc.exp);
  Id d = s.select32(p_big, s.op(spv::OpISub, {ep, nc.exp}), s.op(spv::OpISub, {nc.exp, ep}));
  small = shift_right_jam4(s, small, d);
  // big - small as big + ~small + 1.
  Id subtract = s.test(spv::OpINotEqual, {sign_p, sign_c});
  Id flip = s.select32(subtract, s.c(~0u), zero);
  Words4 sum = add_words(s, big, {s.op(spv::OpBitwiseXor, {small[0], flip}), s.op(spv::OpBitwiseXor, {small[1], flip}),
                            s.op(spv::OpBitwiseXor, {small[2], flip}), s.op(spv::OpBitwiseXor, {small[3], flip})},
                    s.bit(subtract));
  // Negative only where the exponents differ by at most one, so exactly.
  Id negative = s.test(spv::OpSLessThan, {sum[3], zero});
  sum = negate_words_if(s, sum, s.op(spv::OpShiftRightArithmetic, {sum[3], s.c(31)}), s.bit(negative));
  Id sign = s.op(spv::OpBitwiseXor, {s.select32(p_big, sign_p, sign_c), s.select32(negative, s.c(0x80000000u), zero)});
  // An exact zero sum is +0.
  Id zero_sum = s.test(spv::OpIEqual, {s.op(spv::OpBitwiseOr, {s.op(spv::OpBitwiseOr, {sum[0], sum[1]}),
                                                            s.op(spv::OpBitwiseOr, {sum[2], sum[3]})}), zero});
  auto [sig, shift] = normalize4(s, sum);
  // One place further up than round_pack's k = 10 form: the same exponent with k = 11.
  Id exp = s.op(spv::OpISub, {s.op(spv::OpIAdd, {e, s.c(1)}), shift});
  if (normal) return pack_rounded(s, s.select32(zero_sum, zero, sign), s.select32(zero_sum, zero, exp), sig, 11);
  return round_pack(s, s.select32(zero_sum, zero, sign), exp, sig, 11);
}

// a b + c where the product is zero: c, but (+0) + (-0) is +0.
Id zero_product_sum(Soft64& s, Id c, Id zero_c, Id subtract) { return s.select(s.both(zero_c, subtract), s.c64(0), c); }

// An operand known zero or normal: its exponent field and its significand (the hidden bit
// set unless it is zero) with the leading 1 at bit `top`.
F64Normal normal_operand(Soft64& s, const F64Parts& p, uint32_t top) {
  F64Normal m = f64_significand(s, p);
  return {m.exp, i64_shl(s, m.sig, s.c(top - 52))};
}
Id is_zero_normal(Soft64& s, const F64Parts& p) { return s.test(spv::OpIEqual, {p.exp, s.c(0)}); }

}  // namespace

Id f64_neg(Soft64& s, Id a) { return s.pair(s.lo(a), s.op(spv::OpBitwiseXor, {s.hi(a), s.c(0x80000000u)})); }
Id f64_abs(Soft64& s, Id a) { return s.pair(s.lo(a), s.op(spv::OpBitwiseAnd, {s.hi(a), s.c(0x7fffffffu)})); }

Id f64_add(Soft64& s, Id a, Id b) {
  // x the operand of the larger magnitude (a NaN one if any), y the other, word by word.
  Id a_hi = s.hi(a), b_hi = s.hi(b), a_lo = s.lo(a), b_lo = s.lo(b);
  Id a_abs = s.op(spv::OpBitwiseAnd, {a_hi, s.c(0x7fffffff)}), b_abs = s.op(spv::OpBitwiseAnd, {b_hi, s.c(0x7fffffff)});
  Id high_equal = s.test(spv::OpIEqual, {a_abs, b_abs});
  Id swap = s.b.op(spv::OpSelect, s.boolean,
                   {high_equal, s.test(spv::OpULessThan, {a_lo, b_lo}), s.test(spv::OpULessThan, {a_abs, b_abs})});
  Id x_hi = s.select32(swap, b_hi, a_hi), x_lo = s.select32(swap, b_lo, a_lo);
  Id y_hi = s.select32(swap, a_hi, b_hi), y_lo = s.select32(swap, a_lo, b_lo);
  Id subtract = s.test(spv::OpSLessThan, {s.op(spv::OpBitwiseXor, {a_hi, b_hi}), s.c(0)});
  // x - x: +0 (and inf - inf: NaN).
  Id cancel = s.both(subtract, s.both(high_equal, s.test(spv::OpIEqual, {a_lo, b_lo})));
  // Exponents (a subnormal's as 1) and significands (hidden bits set), leading 1s at bit 62:
  // 10 guard bits for y, and a carry fits below bit 64.
  auto operand = [&](Id hi, Id lo) {
    Id exp = s.op(spv::OpShiftRightLogical, {s.op(spv::OpBitwiseAnd, {hi, s.c(0x7fffffff)}), s.c(20)});
    Id hidden = s.select32(s.test(spv::OpINotEqual, {exp, s.c(0)}), s.c(0x100000), s.c(0));
    Id sig = s.pair(lo, s.op(spv::OpBitwiseOr, {s.op(spv::OpBitwiseAnd, {hi, s.c(0xfffff)}), hidden}));
    return std::pair{s.b.ext(GLSLstd450UMax, s.u32, {exp, s.c(1)}), i64_shl(s, sig, s.c(10))};
  };
  auto [ex, mx] = operand(x_hi, x_lo);
  auto [ey, my] = operand(y_hi, y_lo);
  my = shift_right_jam(s, my, s.op(spv::OpISub, {ex, ey}));
  Id sum = s.select(subtract, i64_sub(s, mx, my), i64_add(s, mx, my));
  // The sum's leading 1 to bit 63, but no further than to exponent 0: a sum below 2^-1022
  // is exact (a multiple of 2^-1074 like the operands), and packs as a subnormal. Where the
  // exponents differ by 2 or more, the sum's leading 1 is at bit 61 or up, so the sticky
  // bit stays below the round bit.
  Id shift = s.b.ext(GLSLstd450UMin, s.u32, {s.op(spv::OpISub, {s.c(63), i64_find_msb(s, sum)}), ex});
  Id r = pack_rounded(s, s.op(spv::OpBitwiseAnd, {x_hi, s.c(0x80000000u)}), s.op(spv::OpISub, {ex, shift}),
                      i64_shl(s, sum, shift), 11);
  // x inf or NaN: x, unless y is its opposite (x NaN or inf - inf: NaN either way).
  Id special = s.test(spv::OpUGreaterThanEqual, {s.select32(swap, b_abs, a_abs), s.c(0x7ff00000)});
  Id finite = s.select(cancel, s.c64(0), r);
  return s.select(special, s.select(cancel, f64_default_nan(s), s.pair(x_lo, x_hi)), finite);
}

Id f64_mul(Soft64& s, Id a, Id b) {
  F64Parts pa = f64_unpack(s, a), pb = f64_unpack(s, b);
  auto [na, nb] = factors(s, pa, pb, 63);
  Id sign = s.op(spv::OpBitwiseXor, {pa.sign, pb.sign});
  // [2^63, 2^64) squared: the product's high word lies in [2^62, 2^64), and round_pack
  // wants its leading 1 at bit 62: one place down where at 63, together with the shift of a
  // product below 2^-1022 (exp below 0).
  Wide p = mul_wide(s, na.sig, nb.sig);
  Id sig = jam(s, p.hi, nonzero(s, p.lo));
  Id top = s.bit(s.test(spv::OpSLessThan, {s.hi(sig), s.c(0)}));
  Id exp = s.op(spv::OpIAdd, {s.op(spv::OpISub, {s.op(spv::OpIAdd, {na.exp, nb.exp}), s.c(0x400)}), top});
  Id tiny = s.test(spv::OpSLessThan, {exp, s.c(0)});
  sig = shift_right_jam(s, sig, s.op(spv::OpIAdd, {top, s.select32(tiny, s.op(spv::OpISub, {s.c(0), exp}), s.c(0))}));
  Id r = pack_rounded(s, sign, s.select32(tiny, s.c(0), exp), sig, 10);
  return product_specials(s, a, b, false, sign, r);
}

namespace {

// v >> k (0 < k < 32) as a u32, for v below 2^(32 + k).
Id word_at(Soft64& s, Id v, uint32_t k) {
  Id high = s.op(spv::OpShiftLeftLogical, {s.hi(v), s.c(32 - k)});
  return s.op(spv::OpBitwiseOr, {high, s.op(spv::OpShiftRightLogical, {s.lo(v), s.c(k)})});
}

// 2^84 / b for a significand b in [2^52, 2^53), as a u32 within 2^-30.9 of it (relatively):
// 1 / (b's top 24 bits) in f32, whose error Vulkan bounds to 2.5 ulp, scaled down by 2^-19
// to lie below 2^84 / b for sure; then one Newton step in integers.
Id reciprocal(Soft64& s, Id b) {
  Id f32 = s.b.type_float(32);
  // OR 2^23 keeps a zero b (a special case's lane) from dividing by zero.
  Id top = s.b.op(spv::OpConvertUToF, f32, {s.op(spv::OpBitwiseOr, {word_at(s, b, 29), s.c(0x800000)})});
  Id y = s.b.op(spv::OpFMul, f32,
                {s.b.op(spv::OpFDiv, f32, {s.b.const_f32(1.0f), top}), s.b.const_f32(0x1p55f * (1 - 0x1p-19f))});
  Id r0 = s.b.op(spv::OpConvertFToU, s.u32, {y});
  // e = 2^63 - (b >> 21) r0, below 2^44.2; r0 + r0 e / 2^63.
  Id e = i64_sub(s, s.c64(1ull << 63), mul32_wide(s, word_at(s, b, 21), r0));
  return s.op(spv::OpIAdd, {r0, s.op(spv::OpShiftRightLogical, {s.hi(mul32_wide(s, r0, word_at(s, e, 13))), s.c(18)})});
}

// floor(x 2^53 / b) for b in [2^52, 2^53) and x in [b, 2b), and its remainder: two 27-bit
// digits, each estimated through the reciprocal to within one and taken up to two below,
// so that each exact remainder (in 64 bits: it is below 3b) lies in [0, 3b); two steps
// then bring the last one below b.
std::pair<Id, Id> divide(Soft64& s, Id x, Id b) {
  Id r = reciprocal(s, b);
  Id q1 = s.op(spv::OpShiftRightLogical, {s.hi(mul32_wide(s, word_at(s, x, 22), r)), s.c(4)});
  q1 = s.op(spv::OpISub, {q1, s.c(1)});
  Id rem = i64_sub(s, i64_shl(s, x, s.c(26)), i64_mul(s, s.pair(q1, s.c(0)), b));
  Id q2 = s.op(spv::OpShiftRightLogical, {s.hi(mul32_wide(s, word_at(s, rem, 24), r)), s.c(1)});
  q2 = s.op(spv::OpISub, {s.b.ext(GLSLstd450UMax, s.u32, {q2, s.c(1)}), s.c(1)});
  rem = i64_sub(s, i64_shl(s, rem, s.c(27)), i64_mul(s, s.pair(q2, s.c(0)), b));
  Id twice_b = i64_add(s, b, b);
  Id two = s.isnt(i64_compare(s, spv::OpULessThan, rem, twice_b));
  rem = s.select(two, i64_sub(s, rem, twice_b), rem);
  Id one = s.isnt(i64_compare(s, spv::OpULessThan, rem, b));
  rem = s.select(one, i64_sub(s, rem, b), rem);
  Id q = s.pair(s.op(spv::OpShiftLeftLogical, {q1, s.c(27)}), s.op(spv::OpShiftRightLogical, {q1, s.c(5)}));
  Id low = s.op(spv::OpIAdd, {q2, s.op(spv::OpIAdd, {s.select32(two, s.c(2), s.c(0)), s.bit(one)})});
  return {i64_add(s, q, s.pair(low, s.c(0))), rem};
}

// The quotient of significands (leading 1s at bit 52) as the exponent and significand that
// round_pack takes (k 10): the dividend doubled where below the divisor, so that the
// quotient lies in [1, 2).
std::pair<Id, Id> quotient(Soft64& s, const F64Normal& na, const F64Normal& nb) {
  Id small = i64_compare(s, spv::OpULessThan, na.sig, nb.sig);
  Id x = s.select(small, i64_add(s, na.sig, na.sig), na.sig);
  Id exp = s.op(spv::OpIAdd, {s.op(spv::OpISub, {na.exp, nb.exp}), s.select32(small, s.c(0x3fd), s.c(0x3fe))});
  auto [q, rem] = divide(s, x, nb.sig);
  return {exp, jam(s, i64_shl(s, q, s.c(9)), nonzero(s, rem))};
}

}  // namespace

Id f64_div(Soft64& s, Id a, Id b) {
  F64Parts pa = f64_unpack(s, a), pb = f64_unpack(s, b);
  Id sign = s.op(spv::OpBitwiseXor, {pa.sign, pb.sign});
  auto [exp, sig] = quotient(s, f64_normalize(s, pa), f64_normalize(s, pb));
  Id result = round_pack(s, sign, exp, sig);
  // a / b as a times 1 / b, whose zero is b's inf and whose inf is b's zero.
  return product_specials(s, a, b, true, sign, result);
}

Id f64_fma(Soft64& s, Id a, Id b, Id c) {
  F64Parts pa = f64_unpack(s, a), pb = f64_unpack(s, b), pc = f64_unpack(s, c);
  Class ca = classify(s, a), cb = classify(s, b), cc = classify(s, c);
  Id sign_p = s.op(spv::OpBitwiseXor, {pa.sign, pb.sign});
  Id subtract = s.test(spv::OpINotEqual, {sign_p, pc.sign});
  auto [na, nb] = factors(s, pa, pb, 62);
  Id r = fma_finite(s, na, nb, f64_normalize(s, pc, 61), sign_p, pc.sign, cc.zero, false);
  Id zero_p = s.either(ca.zero, cb.zero);
  Id inf_p = s.either(ca.inf_or_nan, cb.inf_or_nan);
  Id nan = s.either(s.either(ca.nan, cb.nan), cc.nan);
  nan = s.either(nan, s.either(s.both(inf_p, zero_p), s.both(s.both(inf_p, cc.inf_or_nan), subtract)));
  return specials(s, nan, inf_p, f64_signed_inf(s, sign_p), s.either(cc.inf_or_nan, zero_p),
                  s.select(cc.inf_or_nan, c, zero_product_sum(s, c, cc.zero, subtract)), r);
}

namespace {

// 2^31 / sqrt(m / 2^54) for m in [2^52, 2^54), as a u32 below it and within 2^-30 of it
// (relatively): InverseSqrt of m's top 24 bits in f32, whose error Vulkan bounds to 2 ulp,
// scaled down by 2^-19 to lie below for sure; then one Newton step in integers, its
// products rounded up so that it stays below.
Id reciprocal_sqrt(Soft64& s, Id m) {
  Id f32 = s.b.type_float(32);
  // At least 2^22 keeps a zero m (a special case's lane) away from InverseSqrt(0).
  Id top = s.b.op(spv::OpConvertUToF, f32, {s.b.ext(GLSLstd450UMax, s.u32, {word_at(s, m, 30), s.c(0x400000)})});
  Id y = s.b.op(spv::OpFMul, f32,
                {s.b.ext(GLSLstd450InverseSqrt, f32, {top}), s.b.const_f32(0x1p43f * (1 - 0x1p-19f))});
  Id r0 = s.b.op(spv::OpConvertFToU, s.u32, {y});
  // e = 2^61 - (m / 2^23) r0^2 / 2^32, below 2^43.3; r0 + r0 e / 2^62.
  Id square = s.op(spv::OpIAdd, {s.hi(mul32_wide(s, r0, r0)), s.c(1)});
  Id e = i64_sub(s, s.c64(1ull << 61), mul32_wide(s, s.op(spv::OpIAdd, {word_at(s, m, 23), s.c(1)}), square));
  return s.op(spv::OpIAdd, {r0, s.op(spv::OpShiftRightLogical, {s.hi(mul32_wide(s, r0, word_at(s, e, 12))), s.c(18)})});
}

// r = floor(sqrt(m 2^54)) for m in [2^52, 2^54), and m 2^54 - r^2: a first digit d (r / 2^22
// from below, within 9), the rest from the exact remainder m 2^10 - d^2 through the
// reciprocal (from below, within 1.2), then one step on the remainder (below 2^58: exact in
// 64 bits).
std::pair<Id, Id> square_root(Soft64& s, Id m) {
  Id rs = reciprocal_sqrt(s, m);
  Id d = s.hi(i64_shl(s, mul32_wide(s, word_at(s, m, 22), rs), s.c(1)));
  Id rest = i64_sub(s, i64_shl(s, m, s.c(10)), mul32_wide(s, d, d));
  Id delta = s.op(spv::OpShiftRightLogical, {s.hi(mul32_wide(s, word_at(s, rest, 5), rs)), s.c(5)});
  Id root = s.pair(s.op(spv::OpShiftLeftLogical, {d, s.c(22)}), s.op(spv::OpShiftRightLogical, {d, s.c(10)}));
  root = i64_add(s, root, s.pair(delta, s.c(0)));
  Id rem = i64_sub(s, s.pair(s.c(0), s.op(spv::OpShiftLeftLogical, {s.lo(m), s.c(22)})), i64_mul(s, root, root));
  Id next = jam(s, i64_add(s, root, root), s.b.const_bool(true));  // 2 root + 1
  Id fits = s.isnt(i64_compare(s, spv::OpULessThan, rem, next));
  return {i64_add(s, root, s.pair(s.bit(fits), s.c(0))), s.select(fits, i64_sub(s, rem, next), rem)};
}

}  // namespace

Id f64_sqrt(Soft64& s, Id a) {
  F64Parts p = f64_unpack(s, a);
  F64Normal n = f64_normalize(s, p);
  // a = m 2^t with t = exp - 1075 made even: sqrt(m 2^54) 2^((t - 54) / 2), the root's
  // integer part in [2^53, 2^54).
  Id odd = s.test(spv::OpIEqual, {s.op(spv::OpBitwiseAnd, {n.exp, s.c(1)}), s.c(0)});  // t odd: exp even
  Id m = s.select(odd, i64_add(s, n.sig, n.sig), n.sig);
  Id t = s.op(spv::OpISub, {n.exp, s.select32(odd, s.c(1076), s.c(1075))});
  Id exp = s.op(spv::OpIAdd, {s.op(spv::OpShiftRightArithmetic, {s.op(spv::OpISub, {t, s.c(54)}), s.c(1)}), s.c(1075)});
  auto [root, rem] = square_root(s, m);
  // A root lies in [2^-537, 2^512): exp is above 0, no underflow to round through.
  Id r = pack_rounded(s, s.c(0), exp, jam(s, i64_shl(s, root, s.c(9)), nonzero(s, rem)), 10);
  Id negative = s.both(s.test(spv::OpINotEqual, {p.sign, s.c(0)}), s.isnt(f64_parts_zero(s, p)));
  return s.select(s.either(f64_parts_nan(s, p), negative), f64_default_nan(s),
                  s.select(s.either(f64_parts_zero(s, p), f64_parts_inf(s, p)), a, r));
}

// The *_normal forms: every operand zero or normal, and the exact result zero or of a
// normal magnitude (no subnormal, overflow, inf or NaN anywhere), where they give the
// routines' results above in fewer instructions: operands need no normalising shift,
// results no underflow shift, and no special case but zero is tested.

Id f64_mul_normal(Soft64& s, Id a, Id b) {
  // The 53-bit significands as they lie in the words (hidden bits set: a zero operand's
  // product is chosen apart), their 106-bit product as four words w0..w3 from four 32-bit
  // products, each column summed by a carry tree (a_lo b_hi and a_hi b_lo are below 2^53, so
  // their high words' sum carries nothing).
  auto sig_hi = [&](Id v) { return s.op(spv::OpBitwiseOr, {s.op(spv::OpBitwiseAnd, {s.hi(v), s.c(0xfffff)}), s.c(0x100000)}); };
  Id ah = sig_hi(a), bh = sig_hi(b), al = s.lo(a), bl = s.lo(b);
  auto [w0, h00] = two_words(s, spv::OpUMulExtended, al, bl);
  auto [l01, h01] = two_words(s, spv::OpUMulExtended, al, bh);
  auto [l10, h10] = two_words(s, spv::OpUMulExtended, ah, bl);
  auto [l11, h11] = two_words(s, spv::OpUMulExtended, ah, bh);
  auto [middle, c1] = two_words(s, spv::OpIAddCarry, l01, l10);
  auto [sum1, c2] = two_words(s, spv::OpIAddCarry, h00, middle);
  auto [upper, c3] = two_words(s, spv::OpIAddCarry, s.op(spv::OpIAdd, {h01, h10}), l11);
  auto [sum2, c4] = two_words(s, spv::OpIAddCarry, upper, s.op(spv::OpIAdd, {c1, c2}));
  // (Plain ids for the lambda below: C++20 lets clang 14 capture no structured binding.)
  const Id w1 = sum1, w2 = sum2, w3 = s.op(spv::OpIAdd, {s.op(spv::OpIAdd, {h11, c3}), c4});
  const Id jam = s.bit(s.test(spv::OpINotEqual, {w0, s.c(0)}));
  // The product lies in [2^104, 2^106): q its 53 bits from 104 or 105 down, each way rounded
  // beside the other (the contract keeps the result normal: no overflow or underflow).
  Id fa = f64_exponent_field(s, s.hi(a)), fb = f64_exponent_field(s, s.hi(b));
  Id sign = s.op(spv::OpBitwiseAnd, {s.op(spv::OpBitwiseXor, {s.hi(a), s.hi(b)}), s.c(0x80000000u)});
  Id e = s.op(spv::OpIAdd, {fa, fb});  // the result's exponent field + 1023, one more from 2^105
  auto window = [&](uint32_t k, Id bias) {
    return Window{s.op(spv::OpBitwiseOr, {s.op(spv::OpShiftRightLogical, {w1, s.c(k)}), s.op(spv::OpShiftLeftLogical, {w2, s.c(32 - k)})}),
                  s.op(spv::OpBitwiseOr, {s.op(spv::OpShiftRightLogical, {w2, s.c(k)}), s.op(spv::OpShiftLeftLogical, {w3, s.c(32 - k)})}),
                  s.op(spv::OpBitwiseAnd, {s.op(spv::OpShiftRightLogical, {w1, s.c(k)}), s.c(1)}),
                  s.op(spv::OpBitwiseOr, {s.op(spv::OpShiftLeftLogical, {w1, s.c(32 - k)}), jam}),
                  s.op(spv::OpBitwiseOr, {sign, s.op(spv::OpShiftLeftLogical, {s.op(spv::OpISub, {e, bias}), s.c(20)})})};
  };
  Id top = s.test(spv::OpUGreaterThanEqual, {w3, s.c(0x200)});
  Id r = s.select(top, rounded(s, window(21, s.c(1023))), rounded(s, window(20, s.c(1024))));
  Id zero = s.either(s.test(spv::OpIEqual, {fa, s.c(0)}), s.test(spv::OpIEqual, {fb, s.c(0)}));
  return s.select(zero, s.pair(s.c(0), sign), r);
}

Id f64_mul_branching(Soft64& s, Id a, Id b) {
  Id fa = f64_exponent_field(s, s.hi(a)), fb = f64_exponent_field(s, s.hi(b));
  auto normal = [&](Id f) { return s.test(spv::OpULessThan, {s.op(spv::OpISub, {f, s.c(1)}), s.c(2046)}); };
  Id sum_in_range = s.test(spv::OpULessThan, {s.op(spv::OpISub, {s.op(spv::OpIAdd, {fa, fb}), s.c(1024)}), s.c(2044)});
  Id common = s.both(s.both(normal(fa), normal(fb)), sum_in_range);
  // Each side works on copies made in it of the operands computed at its branch's level:
  // the builder hoists pure code to its operands' level, which would take the sides out of
  // their branches. An operand from an outer level (a loop-invariant factor) is left as it
  // is, so that the work on it alone stays hoisted out of the loop.
  auto here = [&s](Id v, int level) {
    return s.b.level_of(v) < level ? v : s.b.op_in_place(spv::OpCopyObject, s.uvec2, {v});
  };
  const int level = s.b.level();
  auto rare = [&] {
    Id x = here(a, level), y = here(b, level);
    // A zero times a finite operand (a ReLU's outputs, a mask's) is a signed zero: those
    // lanes skip the general routine, which runs only where a lane needs it.
    auto zero = [&](Id v) {
      return s.test(spv::OpIEqual, {s.op(spv::OpBitwiseOr, {s.op(spv::OpBitwiseAnd, {s.hi(v), s.c(0x7fffffff)}), s.lo(v)}), s.c(0)});
    };
    auto finite = [&](Id v) { return s.test(spv::OpULessThan, {s.op(spv::OpBitwiseAnd, {s.hi(v), s.c(0x7fffffff)}), s.c(0x7ff00000)}); };
    Id zero_product = s.either(s.both(zero(x), finite(y)), s.both(zero(y), finite(x)));
    Id sign = s.op(spv::OpBitwiseAnd, {s.op(spv::OpBitwiseXor, {s.hi(x), s.hi(y)}), s.c(0x80000000u)});
    const int inner = s.b.level();
    return std::vector<Id>{s.b.if_else(
        zero_product, {s.uvec2}, [&] { return std::vector<Id>{s.pair(s.c(0), sign)}; },
        [&] { return std::vector<Id>{f64_mul(s, here(x, inner), here(y, inner))}; })[0]};
  };
  return s.b.if_else(
      common, {s.uvec2}, [&] { return std::vector<Id>{f64_mul_normal(s, here(a, level), here(b, level))}; }, rare)[0];
}

Id f64_div_normal(Soft64& s, Id a, Id b) {
  F64Parts pa = f64_unpack(s, a), pb = f64_unpack(s, b);
  Id sign = s.op(spv::OpBitwiseXor, {pa.sign, pb.sign});
  auto [exp, sig] = quotient(s, f64_significand(s, pa), f64_significand(s, pb));
  Id r = pack_rounded(s, sign, exp, sig, 10);
  return s.select(is_zero_normal(s, pa), f64_signed_zero(s, sign), r);
}

Id f64_fma_normal(Soft64& s, Id a, Id b, Id c) {
  F64Parts pa = f64_unpack(s, a), pb = f64_unpack(s, b), pc = f64_unpack(s, c);
  Id sign_p = s.op(spv::OpBitwiseXor, {pa.sign, pb.sign});
  Id zero_c = is_zero_normal(s, pc);
  Id r = fma_finite(s, normal_operand(s, pa, 62), normal_operand(s, pb, 62), normal_operand(s, pc, 61), sign_p,
                    pc.sign, zero_c, true);
  Id subtract = s.test(spv::OpINotEqual, {sign_p, pc.sign});
  return s.select(s.either(is_zero_normal(s, pa), is_zero_normal(s, pb)), zero_product_sum(s, c, zero_c, subtract), r);
}

}  // namespace nxv::codegen::soft
