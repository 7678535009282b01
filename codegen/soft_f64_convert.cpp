// Emulated f64 (soft_f64.h) that needs no arithmetic rounding of its own beyond one step:
// sign and class tests, comparisons, rounding to integers, min/max, ldexp and conversions.
#include <stdexcept>
#include <string>

#include "codegen/soft_f64.h"
#include "codegen/soft_f64_parts.h"
#include "codegen/soft_i64.h"

namespace nxv::codegen::soft {

namespace {

constexpr uint32_t kSign = 0x80000000u, kAbs = 0x7fffffffu;
constexpr uint32_t kOneHi = 0x3ff00000u;           // 1.0's high word
constexpr uint64_t kFraction = (1ull << 52) - 1;  // the stored significand

Id ext(Soft64& s, GLSLstd450 inst, const std::vector<Id>& ids) { return s.b.ext(inst, s.u32, ids); }
Id vec(Soft64& s, spv::Op op, Id x, Id y) { return s.b.op(op, s.uvec2, {x, y}); }
Id is_zero32(Soft64& s, Id x) { return s.test(spv::OpIEqual, {x, s.c(0)}); }

// Whether a word's top bit (an f64's or f32's sign, an s32's) is set.
Id negative(Soft64& s, Id word) { return s.test(spv::OpSLessThan, {word, s.c(0)}); }
// ±1 of `sign` (0 or 0x80000000).
Id signed_one(Soft64& s, Id sign) { return s.pair(s.c(0), s.op(spv::OpBitwiseOr, {sign, s.c(kOneHi)})); }
// The exponent field less its bias, a u32 to compare as signed.
Id unbiased(Soft64& s, const F64Parts& p) { return s.op(spv::OpISub, {p.exp, s.c(1023)}); }

// The bits as an unsigned integer whose order is the values' order, -0 just below +0
// (IEEE totalOrder for non-NaNs): negatives inverted, positives above them.
Id order_key(Soft64& s, Id a) {
  Id mask = s.op(spv::OpShiftRightArithmetic, {s.hi(a), s.c(31)});
  return s.pair(s.op(spv::OpBitwiseXor, {s.lo(a), mask}),
                s.op(spv::OpBitwiseXor, {s.hi(a), s.op(spv::OpBitwiseOr, {mask, s.c(kSign)})}));
}

enum class Rounding { Floor, Ceil, Trunc, Even };

// Whether a (|a| < 1, exponent e < 0) rounds to ±1 rather than ±0.
Id fraction_only_goes_away(Soft64& s, const F64Parts& p, Rounding mode) {
  Id neg = negative(s, p.sign);
  Id nonzero = s.isnt(f64_parts_zero(s, p));
  switch (mode) {
    case Rounding::Floor: return s.both(neg, nonzero);
    case Rounding::Ceil: return s.both(s.isnt(neg), nonzero);
    case Rounding::Trunc: return s.b.const_bool(false);
    case Rounding::Even: {
      // Above one half: exponent -1, significand not 1.0.
      return s.both(s.test(spv::OpIEqual, {p.exp, s.c(1022)}), s.isnt(s.is_zero64(p.frac)));
    }
  }
  return 0;
}

// a rounded to an integral value. For exponents 0..51 the bits below the units place are
// cleared, and where the mode rounds away from zero one unit is added to the bits: a carry
// out of the significand steps the exponent, which is the right result. Exponents of 52 and
// more (inf and NaN included) clear nothing.
Id to_integral(Soft64& s, Id a, Rounding mode) {
  F64Parts p = f64_unpack(s, a);
  Id e = unbiased(s, p);
  Id below_one = s.test(spv::OpSLessThan, {e, s.c(0)});
  Id shift = ext(s, GLSLstd450SClamp, {e, s.c(0), s.c(52)});
  Id fraction = i64_shr(s, s.c64(kFraction), shift);  // the bits below the units place
  Id rest = vec(s, spv::OpBitwiseAnd, a, fraction);
  Id has_rest = s.isnt(s.is_zero64(rest));
  Id neg = negative(s, p.sign);
  Id unit = i64_add(s, fraction, s.c64(1));
  Id away = s.b.const_bool(false);
  if (mode == Rounding::Floor) away = s.both(neg, has_rest);
  if (mode == Rounding::Ceil) away = s.both(s.isnt(neg), has_rest);
  if (mode == Rounding::Even) {
    Id half = i64_shr(s, s.c64(1ull << 51), shift);
    Id odd = s.isnt(s.is_zero64(vec(s, spv::OpBitwiseAnd, a, unit)));
    Id tie_to_odd = s.both(i64_compare(s, spv::OpIEqual, rest, half), odd);
    away = s.both(has_rest, s.either(i64_compare(s, spv::OpUGreaterThan, rest, half), tie_to_odd));
  }
  Id kept = vec(s, spv::OpBitwiseAnd, a, s.b.op(spv::OpNot, s.uvec2, {fraction}));
  Id whole = i64_add(s, kept, s.select(away, unit, s.c64(0)));
  Id small = s.select(fraction_only_goes_away(s, p, mode), signed_one(s, p.sign), f64_signed_zero(s, p.sign));
  return s.select(below_one, small, whole);
}

// x >> n for n in 0..31, with the bits shifted out OR'd into bit 0 (sticky), so that
// rounding on the low bits sees whether anything below them was set.
Id shift_right_jam32(Soft64& s, Id x, Id n) {
  Id lost = s.op(spv::OpBitwiseAnd, {x, s.op(spv::OpISub, {s.op(spv::OpShiftLeftLogical, {s.c(1), n}), s.c(1)})});
  return s.op(spv::OpBitwiseOr, {s.op(spv::OpShiftRightLogical, {x, n}), s.bit(s.isnt(is_zero32(s, lost)))});
}

}  // namespace

// The high word less its sign with bit 0 set where the low word is nonzero: above inf's
// high word exactly for a NaN.
Id magnitude_word(Soft64& s, Id a) {
  return s.op(spv::OpBitwiseOr, {s.op(spv::OpBitwiseAnd, {s.hi(a), s.c(kAbs)}), s.bit(s.isnt(is_zero32(s, s.lo(a))))});
}

Id f64_is_nan(Soft64& s, Id a) { return s.test(spv::OpUGreaterThan, {magnitude_word(s, a), s.c(0x7ff00000)}); }
Id f64_is_inf(Soft64& s, Id a) { return s.test(spv::OpIEqual, {magnitude_word(s, a), s.c(0x7ff00000)}); }

Id f64_compare(Soft64& s, spv::Op op, Id a, Id b) {
  Id unordered = s.either(f64_is_nan(s, a), f64_is_nan(s, b));
  Id zeros = is_zero32(s, s.op(spv::OpBitwiseOr, {s.op(spv::OpBitwiseAnd, {s.op(spv::OpBitwiseOr, {s.hi(a), s.hi(b)}), s.c(kAbs)}),
                                                  s.op(spv::OpBitwiseOr, {s.lo(a), s.lo(b)})}));
  // Only the relation asked for is emitted.
  auto eq = [&] { return s.either(s.all(s.b.op(spv::OpIEqual, s.bvec2, {a, b})), zeros); };
  auto less = [&](Id x, Id y) {
    return s.both(i64_compare(s, spv::OpULessThan, order_key(s, x), order_key(s, y)), s.isnt(zeros));
  };
  // Between ordered values one of <, ==, > holds, so <= is not >.
  Id rel;
  bool ordered;
  switch (op) {
    case spv::OpFOrdEqual: case spv::OpFUnordEqual: rel = eq(); break;
    case spv::OpFOrdNotEqual: case spv::OpFUnordNotEqual: rel = s.isnt(eq()); break;
    case spv::OpFOrdLessThan: case spv::OpFUnordLessThan: rel = less(a, b); break;
    case spv::OpFOrdGreaterThan: case spv::OpFUnordGreaterThan: rel = less(b, a); break;
    case spv::OpFOrdLessThanEqual: case spv::OpFUnordLessThanEqual: rel = s.isnt(less(b, a)); break;
    case spv::OpFOrdGreaterThanEqual: case spv::OpFUnordGreaterThanEqual: rel = s.isnt(less(a, b)); break;
    default: throw std::invalid_argument("f64_compare: not a float comparison: opcode " + std::to_string(int(op)));
  }
  switch (op) {
    case spv::OpFOrdEqual: case spv::OpFOrdNotEqual: case spv::OpFOrdLessThan: case spv::OpFOrdGreaterThan:
    case spv::OpFOrdLessThanEqual: case spv::OpFOrdGreaterThanEqual: ordered = true; break;
    default: ordered = false;
  }
  return ordered ? s.both(rel, s.isnt(unordered)) : s.either(rel, unordered);
}

Id f64_floor(Soft64& s, Id a) { return to_integral(s, a, Rounding::Floor); }
Id f64_ceil(Soft64& s, Id a) { return to_integral(s, a, Rounding::Ceil); }
Id f64_trunc(Soft64& s, Id a) { return to_integral(s, a, Rounding::Trunc); }
Id f64_round_even(Soft64& s, Id a) { return to_integral(s, a, Rounding::Even); }
// x - floor(x) without a subtraction: the fraction t = |x| - trunc|x| as a fixed-point u64
// T = t * 2^63 (jammed where x's last place lies below 2^-63), and for negative x 1 - t,
// 2^63 - T, rounded once (subtracting a jammed T leaves the rounding unchanged).
Id f64_fract(Soft64& s, Id a) {
  F64Parts p = f64_unpack(s, a);
  F64Normal n = f64_normalize(s, p);
  Id up = s.op(spv::OpISub, {n.exp, s.c(1023 - 11)});  // e + 11: x's units place moved to bit 63
  Id left = i64_shl(s, n.sig, ext(s, GLSLstd450SClamp, {up, s.c(0), s.c(63)}));
  left = s.pair(s.lo(left), s.op(spv::OpBitwiseAnd, {s.hi(left), s.c(kAbs)}));  // the integer bits gone
  Id t = s.select(s.test(spv::OpSLessThan, {up, s.c(0)}), shift_right_jam(s, n.sig, s.op(spv::OpSNegate, {up})), left);
  t = s.select(f64_parts_zero(s, p), s.c64(0), t);
  Id neg = negative(s, p.sign);
  Id r = s.select(s.both(neg, s.isnt(s.is_zero64(t))), i64_sub(s, s.c64(1ull << 63), t), t);
  r = normalize_round_pack(s, s.c(0), s.c(1021), r);  // r * 2^-63
  // Below 1 a positive x is its own fraction (the fixed point would lose its low bits).
  r = s.select(s.both(s.isnt(neg), s.test(spv::OpSLessThan, {p.exp, s.c(1023)})), a, r);
  return s.select(s.test(spv::OpIEqual, {p.exp, s.c(0x7ff)}), f64_default_nan(s), r);
}

Id f64_sign(Soft64& s, Id a) {
  F64Parts p = f64_unpack(s, a);
  return s.select(s.either(f64_parts_nan(s, p), f64_parts_zero(s, p)), a, signed_one(s, p.sign));
}

// min and max order -0 below +0 (IEEE minimum/maximumNumber) and ignore a NaN operand.
Id f64_min(Soft64& s, Id a, Id b) {
  Id pick_a = i64_compare(s, spv::OpULessThanEqual, order_key(s, a), order_key(s, b));
  Id r = s.select(f64_is_nan(s, b), a, s.select(pick_a, a, b));
  return s.select(f64_is_nan(s, a), b, r);
}
Id f64_max(Soft64& s, Id a, Id b) {
  Id pick_a = i64_compare(s, spv::OpUGreaterThanEqual, order_key(s, a), order_key(s, b));
  Id r = s.select(f64_is_nan(s, b), a, s.select(pick_a, a, b));
  return s.select(f64_is_nan(s, a), b, r);
}

Id f64_ldexp(Soft64& s, Id a, Id exponent) {
  F64Parts p = f64_unpack(s, a);
  F64Normal n = f64_normalize(s, p);
  // Past ±2200 every nonzero finite operand has overflowed, or underflowed below half the
  // smallest subnormal: clamping keeps the exponent's sum from wrapping.
  Id k = ext(s, GLSLstd450SClamp, {exponent, s.c(uint32_t(-2200)), s.c(2200)});
  // round_pack's exponent is one less (its significand's leading 1 adds it back), its
  // significand 10 places higher.
  Id r = round_pack(s, p.sign, s.op(spv::OpIAdd, {s.op(spv::OpISub, {n.exp, s.c(1)}), k}), i64_shl(s, n.sig, s.c(10)));
  Id keep = s.either(s.test(spv::OpIEqual, {p.exp, s.c(0x7ff)}), f64_parts_zero(s, p));  // NaN, ±inf, ±0
  return s.select(keep, a, r);
}

Id f64_from_f32(Soft64& s, Id x) {
  Id w = s.b.op(spv::OpBitcast, s.u32, {x});
  Id e8 = s.op(spv::OpBitwiseAnd, {s.op(spv::OpShiftRightLogical, {w, s.c(23)}), s.c(0xff)});
  Id m = s.op(spv::OpBitwiseAnd, {w, s.c(0x7fffff)});
  // A subnormal m * 2^-149 normalised: its top bit moved to the implicit place (bit 23).
  Id msb = ext(s, GLSLstd450FindUMsb, {m});
  Id normalised = s.op(spv::OpBitwiseAnd, {s.op(spv::OpShiftLeftLogical, {m, s.op(spv::OpBitwiseAnd, {s.op(spv::OpISub, {s.c(23), msb}), s.c(31)})}),
                                           s.c(0x7fffff)});
  Id subnormal = is_zero32(s, e8);
  Id fraction = s.select32(subnormal, normalised, m);
  Id exponent = s.select32(subnormal, s.op(spv::OpIAdd, {msb, s.c(1023 - 149)}), s.op(spv::OpIAdd, {e8, s.c(1023 - 127)}));
  exponent = s.select32(s.test(spv::OpIEqual, {e8, s.c(0xff)}), s.c(0x7ff), exponent);
  exponent = s.select32(is_zero32(s, s.op(spv::OpBitwiseAnd, {w, s.c(kAbs)})), s.c(0), exponent);
  Id hi = s.op(spv::OpBitwiseOr, {s.op(spv::OpBitwiseAnd, {w, s.c(kSign)}), s.op(spv::OpShiftLeftLogical, {exponent, s.c(20)})});
  hi = s.op(spv::OpBitwiseOr, {hi, s.op(spv::OpShiftRightLogical, {fraction, s.c(3)})});
  return s.pair(s.op(spv::OpShiftLeftLogical, {fraction, s.c(29)}), hi);
}

Id f64_to_f32(Soft64& s, Id a) {
  F64Parts p = f64_unpack(s, a);
  Id lo = s.lo(p.frac);
  // The exponent rebiased for f32 (signed) and the significand as 24 bits at 30..7 with 7
  // bits below for rounding, the last of them sticky for the 22 bits dropped.
  Id e = s.op(spv::OpISub, {p.exp, s.c(1023 - 127)});
  Id top = s.op(spv::OpBitwiseOr, {s.op(spv::OpShiftLeftLogical, {s.hi(p.frac), s.c(10)}),
                                   s.op(spv::OpShiftRightLogical, {lo, s.c(22)})});
  Id sig = s.op(spv::OpBitwiseOr, {s.op(spv::OpBitwiseOr, {top, s.c(1u << 30)}),
                                   s.bit(s.isnt(is_zero32(s, s.op(spv::OpBitwiseAnd, {lo, s.c(0x3fffff)}))))});
  // Below f32's normal range the significand moves right into a subnormal (f64 zeros and
  // subnormals round to 0 here); a carry out of the rounding reaches the exponent field.
  Id shift = ext(s, GLSLstd450SClamp, {s.op(spv::OpISub, {s.c(1), e}), s.c(0), s.c(31)});
  sig = shift_right_jam32(s, sig, shift);
  Id kept = s.op(spv::OpShiftRightLogical, {sig, s.c(7)});
  Id round_bits = s.op(spv::OpIAdd, {s.op(spv::OpBitwiseAnd, {sig, s.c(0x7f)}), s.op(spv::OpBitwiseAnd, {kept, s.c(1)})});
  Id up = s.test(spv::OpUGreaterThan, {round_bits, s.c(0x40)});  // above half, or half and odd
  Id exponent_field = s.op(spv::OpShiftLeftLogical, {ext(s, GLSLstd450SMax, {s.op(spv::OpISub, {e, s.c(1)}), s.c(0)}), s.c(23)});
  Id r = s.op(spv::OpIAdd, {s.op(spv::OpIAdd, {exponent_field, kept}), s.bit(up)});
  r = s.select32(s.test(spv::OpSGreaterThanEqual, {e, s.c(255)}), s.c(0x7f800000), r);
  r = s.select32(f64_parts_nan(s, p), s.c(0x7fc00000), r);
  return s.b.op(spv::OpBitcast, s.b.type_float(32), {s.op(spv::OpBitwiseOr, {r, p.sign})});
}

Id f64_from_int(Soft64& s, Id x, int bits, bool is_signed) {
  if (bits == 64) {
    // The magnitude is sig * 2^(exp - 0x43c) for exp 0x43c.
    Id neg = is_signed ? negative(s, s.hi(x)) : s.b.const_bool(false);
    return normalize_round_pack(s, s.select32(neg, s.c(kSign), s.c(0)), s.c(0x43c), s.select(neg, i64_neg(s, x), x));
  }
  Id neg = is_signed ? negative(s, x) : s.b.const_bool(false);
  Id magnitude = s.select32(neg, s.op(spv::OpSNegate, {x}), x);
  // Exact: the magnitude's top bit moved to bit 31, the 31 below it into the fraction.
  Id msb = ext(s, GLSLstd450FindUMsb, {magnitude});
  Id n = s.op(spv::OpShiftLeftLogical, {magnitude, s.op(spv::OpBitwiseAnd, {s.op(spv::OpISub, {s.c(31), msb}), s.c(31)})});
  Id hi = s.op(spv::OpBitwiseOr, {s.op(spv::OpShiftLeftLogical, {s.op(spv::OpIAdd, {msb, s.c(1023)}), s.c(20)}),
                                  s.op(spv::OpBitwiseAnd, {s.op(spv::OpShiftRightLogical, {n, s.c(11)}), s.c(0xfffff)})});
  hi = s.op(spv::OpBitwiseOr, {hi, s.select32(neg, s.c(kSign), s.c(0))});
  return s.select(is_zero32(s, magnitude), s.c64(0), s.pair(s.op(spv::OpShiftLeftLogical, {n, s.c(21)}), hi));
}

Id f64_to_int(Soft64& s, Id a, int bits, bool is_signed) {
  F64Parts p = f64_unpack(s, a);
  Id lo = s.lo(p.frac);
  Id e = unbiased(s, p);
  Id below_one = s.test(spv::OpSLessThan, {e, s.c(0)});
  Id neg = is_signed ? negative(s, p.sign) : s.b.const_bool(false);
  // The significand with its implicit bit at the word's top, shifted down to the units place.
  Id top = s.op(spv::OpBitwiseOr, {s.c(kSign), s.op(spv::OpShiftLeftLogical, {s.hi(p.frac), s.c(11)})});
  top = s.op(spv::OpBitwiseOr, {top, s.op(spv::OpShiftRightLogical, {lo, s.c(21)})});
  if (bits == 32) {
    Id shift = ext(s, GLSLstd450SClamp, {s.op(spv::OpISub, {s.c(31), e}), s.c(0), s.c(31)});
    Id magnitude = s.select32(below_one, s.c(0), s.op(spv::OpShiftRightLogical, {top, shift}));
    return s.select32(neg, s.op(spv::OpSNegate, {magnitude}), magnitude);
  }
  Id shift = ext(s, GLSLstd450SClamp, {s.op(spv::OpISub, {s.c(63), e}), s.c(0), s.c(63)});
  Id magnitude = s.select(below_one, s.c64(0), i64_shr(s, s.pair(s.op(spv::OpShiftLeftLogical, {lo, s.c(11)}), top), shift));
  return s.select(neg, i64_neg(s, magnitude), magnitude);
}

}  // namespace nxv::codegen::soft
