// soft_f64.h's arithmetic: add, sub, mul, div, fma, sqrt, neg and abs on the uvec2 bits of
// an f64, correctly rounded through soft_f64_parts.h's round_pack.
#include "codegen/soft_f64.h"

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

// a * b, or a / b where `quotient`, where a or b is NaN, ±inf or ±0, else r.
Id product_specials(Soft64& s, Id a, Id b, bool quotient, Id sign, Id r) {
  struct Class {
    Id inf_or_nan, nan, zero;
  };
  auto classify = [&](Id v) {
    Id abs = s.op(spv::OpBitwiseAnd, {s.hi(v), s.c(0x7fffffff)});
    // The high word with bit 0 set where the low word is nonzero: above inf's for a NaN.
    Id top = s.op(spv::OpBitwiseOr, {abs, s.bit(s.test(spv::OpINotEqual, {s.lo(v), s.c(0)}))});
    return Class{s.test(spv::OpUGreaterThanEqual, {abs, s.c(0x7ff00000)}), s.test(spv::OpUGreaterThan, {top, s.c(0x7ff00000)}),
                 s.test(spv::OpIEqual, {top, s.c(0)})};
  };
  Class ca = classify(a), cb = classify(b);
  // Results of inf's size and of zero's (a quotient's divisor counts inversely).
  Id big = s.either(ca.inf_or_nan, quotient ? cb.zero : cb.inf_or_nan);
  Id small = s.either(ca.zero, quotient ? cb.inf_or_nan : cb.zero);
  Id nan = s.either(s.either(ca.nan, cb.nan), s.both(big, small));
  Id high = s.select32(nan, s.c(0x7ff80000), s.select32(big, s.op(spv::OpBitwiseOr, {sign, s.c(0x7ff00000)}),
                                                        s.select32(small, sign, s.hi(r))));
  return s.pair(s.select32(s.either(big, small), s.c(0), s.lo(r)), high);
}

// A 128-bit value as two uvec2 words, for fma's exact sum.
Wide add128(Soft64& s, Wide x, Wide y) {
  Id lo = i64_add(s, x.lo, y.lo);
  Id carry = s.pair(s.bit(i64_compare(s, spv::OpULessThan, lo, x.lo)), s.c(0));
  return {i64_add(s, i64_add(s, x.hi, y.hi), carry), lo};
}
Wide neg128(Soft64& s, Wide x) {
  Id ones = s.c64(~0ull);
  return add128(s, {s.b.op(spv::OpBitwiseXor, s.uvec2, {x.hi, ones}), s.b.op(spv::OpBitwiseXor, s.uvec2, {x.lo, ones})},
                {s.c64(0), s.c64(1)});
}
Wide select128(Soft64& s, Id cond, Wide x, Wide y) { return {s.select(cond, x.hi, y.hi), s.select(cond, x.lo, y.lo)}; }

// x >> dist with the bits shifted out jammed into bit 0, dist any u32.
Wide shift_right_jam128(Soft64& s, Wide x, Id dist) {
  Id words = s.test(spv::OpUGreaterThanEqual, {dist, s.c(64)});
  x = select128(s, words, {s.c64(0), jam(s, x.hi, nonzero(s, x.lo))}, x);
  Id d = s.select32(words, s.op(spv::OpISub, {dist, s.c(64)}), dist);
  // Past 63 the high word is now 0 and the low one jams to its sticky bit alone.
  Id d63 = s.b.ext(GLSLstd450UMin, s.u32, {d, s.c(63)});
  Id carried = s.select(s.test(spv::OpIEqual, {d, s.c(0)}), s.c64(0),
                        i64_shl(s, x.hi, s.op(spv::OpBitwiseAnd, {s.op(spv::OpISub, {s.c(64), d63}), s.c(63)})));
  return {i64_shr(s, x.hi, d63), s.b.op(spv::OpBitwiseOr, s.uvec2, {shift_right_jam(s, x.lo, d), carried})};
}

// The top 64 bits of a nonzero x shifted left until its leading 1 is at bit 126, with the
// bits below jammed into bit 0, and the shift: a significand for round_pack.
std::pair<Id, Id> normalize128(Soft64& s, Wide x) {
  Id high_zero = i64_compare(s, spv::OpIEqual, x.hi, s.c64(0));
  x = select128(s, high_zero, {x.lo, s.c64(0)}, x);
  Id msb = i64_find_msb(s, x.hi);
  Id top = s.test(spv::OpIEqual, {msb, s.c(63)});
  // Leading bit at 63: one place right (jamming); else 62 - msb places left.
  Id left = s.select32(top, s.c(0), s.op(spv::OpISub, {s.c(62), msb}));
  Id funnel = s.select(s.test(spv::OpIEqual, {left, s.c(0)}), s.c64(0),
                       i64_shr(s, x.lo, s.op(spv::OpISub, {s.c(64), left})));
  Id up = s.b.op(spv::OpBitwiseOr, s.uvec2, {i64_shl(s, x.hi, left), funnel});
  Id rest = nonzero(s, i64_shl(s, x.lo, left));
  Id odd = s.test(spv::OpINotEqual, {s.op(spv::OpBitwiseAnd, {s.lo(x.hi), s.c(1)}), s.c(0)});
  Id down = jam(s, i64_shr(s, x.hi, s.c(1)), s.either(nonzero(s, x.lo), odd));
  Id shift = s.op(spv::OpIAdd, {s.select32(top, s.c(~0u), left), s.select32(high_zero, s.c(64), s.c(0))});
  return {s.select(top, down, jam(s, up, rest)), shift};
}

// a b + c rounded once, for a nonzero finite product and a finite c (zero where zero_c).
Id fma_finite(Soft64& s, F64Normal na, F64Normal nb, F64Normal nc, Id sign_p, Id sign_c, Id zero_c) {
  // The exact product and c in 128 bits, leading 1s at bit 124 or 125 and at 125, both worth
  // x 2^(e - 1148) for their exponents e.
  Wide prod = mul_wide(s, i64_shl(s, na.sig, s.c(10)), i64_shl(s, nb.sig, s.c(10)));
  Wide addend{i64_shl(s, nc.sig, s.c(9)), s.c64(0)};
  Id ep = s.op(spv::OpISub, {s.op(spv::OpIAdd, {na.exp, nb.exp}), s.c(1022)});
  // The term of the larger exponent stays, the other is shifted to it (jamming).
  Id p_big = s.either(zero_c, s.test(spv::OpSGreaterThanEqual, {ep, nc.exp}));
  Wide big = select128(s, p_big, prod, addend), small = select128(s, p_big, addend, prod);
  Id e = s.select32(p_big, ep, nc.exp);
  Id d = s.select32(p_big, s.op(spv::OpISub, {ep, nc.exp}), s.op(spv::OpISub, {nc.exp, ep}));
  small = shift_right_jam128(s, small, d);
  Id subtract = s.test(spv::OpINotEqual, {sign_p, sign_c});
  Wide sum = add128(s, big, select128(s, subtract, neg128(s, small), small));
  // Negative only where the exponents differ by at most one, so exactly.
  Id negative = s.test(spv::OpSLessThan, {s.hi(sum.hi), s.c(0)});
  sum = select128(s, negative, neg128(s, sum), sum);
  Id sign = s.op(spv::OpBitwiseXor,
                 {s.select32(p_big, sign_p, sign_c), s.select32(negative, s.c(0x80000000u), s.c(0))});
  // An exact zero sum is +0.
  Id zero_sum = s.isnt(s.either(nonzero(s, sum.hi), nonzero(s, sum.lo)));
  auto [sig, shift] = normalize128(s, sum);
  return round_pack(s, s.select32(zero_sum, s.c(0), sign), s.op(spv::OpISub, {e, shift}), sig);
}

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

Id f64_sub(Soft64& s, Id a, Id b) { return f64_add(s, a, f64_neg(s, b)); }

Id f64_mul(Soft64& s, Id a, Id b) {
  F64Parts pa = f64_unpack(s, a), pb = f64_unpack(s, b);
  F64Normal na = f64_normalize(s, pa, 63), nb = f64_normalize(s, pb, 63);
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

}  // namespace

Id f64_div(Soft64& s, Id a, Id b) {
  F64Parts pa = f64_unpack(s, a), pb = f64_unpack(s, b);
  F64Normal na = f64_normalize(s, pa), nb = f64_normalize(s, pb);
  Id sign = s.op(spv::OpBitwiseXor, {pa.sign, pb.sign});
  // The dividend doubled where below the divisor, so that the quotient lies in [1, 2).
  Id small = i64_compare(s, spv::OpULessThan, na.sig, nb.sig);
  Id x = s.select(small, i64_add(s, na.sig, na.sig), na.sig);
  Id exp = s.op(spv::OpIAdd, {s.op(spv::OpISub, {na.exp, nb.exp}), s.select32(small, s.c(0x3fd), s.c(0x3fe))});
  auto [q, rem] = divide(s, x, nb.sig);
  Id result = round_pack(s, sign, exp, jam(s, i64_shl(s, q, s.c(9)), nonzero(s, rem)));
  // a / b as a times 1 / b, whose zero is b's inf and whose inf is b's zero.
  return product_specials(s, a, b, true, sign, result);
}

Id f64_fma(Soft64& s, Id a, Id b, Id c) {
  F64Parts pa = f64_unpack(s, a), pb = f64_unpack(s, b), pc = f64_unpack(s, c);
  Id sign_p = s.op(spv::OpBitwiseXor, {pa.sign, pb.sign});
  Id zero_c = f64_parts_zero(s, pc);
  Id subtract = s.test(spv::OpINotEqual, {sign_p, pc.sign});
  Id r = fma_finite(s, f64_normalize(s, pa), f64_normalize(s, pb), f64_normalize(s, pc), sign_p, pc.sign, zero_c);
  Id zero_p = s.either(f64_parts_zero(s, pa), f64_parts_zero(s, pb));
  Id inf_a = f64_parts_inf(s, pa), inf_b = f64_parts_inf(s, pb), inf_c = f64_parts_inf(s, pc);
  Id inf_p = s.either(inf_a, inf_b);
  Id nan = s.either(s.either(f64_parts_nan(s, pa), f64_parts_nan(s, pb)), f64_parts_nan(s, pc));
  nan = s.either(nan, s.either(s.both(inf_p, zero_p), s.both(s.both(inf_p, inf_c), subtract)));
  // A zero product leaves c, but (+0) + (-0) is +0.
  Id zero_p_result = s.select(s.both(zero_c, subtract), s.c64(0), c);
  return specials(s, nan, inf_p, f64_signed_inf(s, sign_p), s.either(inf_c, zero_p),
                  s.select(inf_c, c, zero_p_result), r);
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
  Id r = round_pack(s, s.c(0), exp, jam(s, i64_shl(s, root, s.c(9)), nonzero(s, rem)));
  Id negative = s.both(s.test(spv::OpINotEqual, {p.sign, s.c(0)}), s.isnt(f64_parts_zero(s, p)));
  return s.select(s.either(f64_parts_nan(s, p), negative), f64_default_nan(s),
                  s.select(s.either(f64_parts_zero(s, p), f64_parts_inf(s, p)), a, r));
}

}  // namespace nxv::codegen::soft
