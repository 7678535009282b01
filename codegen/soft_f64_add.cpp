// soft_f64.h's f64_add_two_path: the far path (an addition, or exponents two or more apart)
// and the near path (a subtraction of operands at most one binade apart) computed side by
// side from the operands' words and selected, for the shortest dependent chain.
#include <utility>

#include "codegen/soft_f64.h"
#include "codegen/soft_f64_parts.h"
#include "codegen/soft_i64.h"

namespace nxv::codegen::soft {

namespace {

// An operand's magnitude word (its high word without the sign), exponent (a subnormal's as
// 1), significand (the hidden bit set where normal, so leading 1 at bit 52), the place of its
// lowest set bit plus 32 (for a nonzero operand) and whether it is ±0, each read straight off
// its words so that no step waits on which operand is the larger.
struct Addend {
  Id abs, exp, sig, lowest32, zero;
};
Addend addend(Soft64& s, Id hi, Id lo) {
  Id abs = s.op(spv::OpBitwiseAnd, {hi, s.c(0x7fffffff)});
  Id frac = s.op(spv::OpBitwiseAnd, {hi, s.c(0xfffff)});
  Id normal = s.test(spv::OpUGreaterThanEqual, {abs, s.c(0x100000)});
  Id sig_hi = s.select32(normal, s.op(spv::OpBitwiseOr, {frac, s.c(0x100000)}), frac);
  Id exp = s.b.ext(GLSLstd450UMax, s.u32, {s.op(spv::OpShiftRightLogical, {abs, s.c(20)}), s.c(1)});
  // The hidden bit's place, 52, is the lowest where the fraction is 0 (a subnormal's is not).
  Id places = s.b.ext(GLSLstd450FindILsb, s.uvec2, {s.pair(lo, s.op(spv::OpBitwiseOr, {frac, s.c(0x100000)}))});
  // + 32 and + 64 as ORs, which keep FindILsb's 0xffffffff for a zero low word.
  Id places32 = s.b.op(spv::OpBitwiseOr, s.uvec2, {places, s.pair(s.c(32), s.c(64))});
  Id lowest32 = s.b.ext(GLSLstd450UMin, s.u32, {s.lo(places32), s.hi(places32)});
  return {abs, exp, s.pair(lo, sig_hi), lowest32, s.test(spv::OpIEqual, {s.op(spv::OpBitwiseOr, {abs, lo}), s.c(0)})};
}

// The far path: x ± y for x of exponent ex and y aligned to it (shifted_below, the sticky
// bit jammed into its low word: 32 guard bits below x's last place), rounded once (borrow:
// whether y had bits below its high words). The sum's leading 1 is at x's,
// one place above (a carry) or one below (a borrow), so normalising is a choice of three
// windows, each rounded beside the others. Where an addition carries from the largest
// exponent it overflows (to inf, which the caller selects).
struct Far {
  Id bits, overflow;
};
Far far_sum(Soft64& s, Id sign, Id ex, Id x, const Words<3>& y, Id borrow, Id subtract) {
  // x 2^32 - y is (x - y's high words - borrow) 2^32 + (-w0): x + ~y + 1 - borrow, that is
  // x + ~y or (x + 1) + ~y.
  Id mask = s.select32(subtract, s.c(~0u), s.c(0));
  Id ym = s.pair(s.op(spv::OpBitwiseXor, {y[1], mask}), s.op(spv::OpBitwiseXor, {y[2], mask}));
  Id top = s.select(s.both(subtract, s.isnt(borrow)), i64_add(s, i64_add(s, x, s.c64(1)), ym), i64_add(s, x, ym));
  Id s2 = s.hi(top), s1 = s.lo(top), s0 = s.op(spv::OpISub, {s.op(spv::OpBitwiseXor, {y[0], mask}), mask});
  // (An addition's sum is below x's leading place only where x is subnormal: it stays.)
  Id carried = s.test(spv::OpUGreaterThanEqual, {s2, s.c(0x200000)});
  Id lowered = s.test(spv::OpULessThan, {s2, s.select32(subtract, s.c(0x100000), s.c(0))});
  auto high = [&](Id e) { return s.op(spv::OpBitwiseOr, {sign, s.op(spv::OpShiftLeftLogical, {e, s.c(20)})}); };
  Id jammed = s.op(spv::OpBitwiseOr, {s.op(spv::OpShiftRightLogical, {s0, s.c(1)}), s.op(spv::OpBitwiseAnd, {s0, s.c(1)})});
  const Window up{s.op(spv::OpBitwiseOr, {s.op(spv::OpShiftRightLogical, {s1, s.c(1)}), s.op(spv::OpShiftLeftLogical, {s2, s.c(31)})}),
                  s.op(spv::OpShiftRightLogical, {s2, s.c(1)}),
                  s.op(spv::OpBitwiseAnd, {s.op(spv::OpShiftRightLogical, {s1, s.c(1)}), s.c(1)}),
                  s.op(spv::OpBitwiseOr, {s.op(spv::OpShiftLeftLogical, {s1, s.c(31)}), jammed}), high(ex)};
  const Window in_place{s1, s2, s.op(spv::OpBitwiseAnd, {s1, s.c(1)}), s0, high(s.op(spv::OpISub, {ex, s.c(1)}))};
  const Window down{s.op(spv::OpBitwiseOr, {s.op(spv::OpShiftLeftLogical, {s1, s.c(1)}), s.op(spv::OpShiftRightLogical, {s0, s.c(31)})}),
                    s.op(spv::OpBitwiseOr, {s.op(spv::OpShiftLeftLogical, {s2, s.c(1)}), s.op(spv::OpShiftRightLogical, {s1, s.c(31)})}),
                    s.op(spv::OpShiftRightLogical, {s0, s.c(31)}), s.op(spv::OpShiftLeftLogical, {s0, s.c(1)}),
                    high(s.op(spv::OpISub, {ex, s.c(2)}))};
  return {s.select(carried, rounded(s, up), s.select(lowered, rounded(s, down), rounded(s, in_place))),
          s.both(s.both(carried, s.isnt(subtract)), s.test(spv::OpIEqual, {ex, s.c(0x7fe)}))};
}

// The near path: |a - b| with `sign` for exponents at most one apart, exact in the cases it
// is chosen for (below 2^53 in units of the smaller exponent's last place, the larger operand
// doubled where the exponents differ), normalised no further down than exponent 1.
struct Near {
  Id bits, fits;
};
Near near_difference(Soft64& s, const Addend& a, const Addend& b, Id sign) {
  Id a2 = i64_shl(s, a.sig, s.c(1)), b2 = i64_shl(s, b.sig, s.c(1));
  Id same = s.test(spv::OpIEqual, {a.exp, b.exp}), a_up = s.test(spv::OpUGreaterThan, {a.exp, b.exp});
  Id ab = i64_sub(s, a.sig, b.sig);
  Id a_less = i64_is_negative(s, ab);
  Id r = s.select(same, s.select(a_less, i64_sub(s, b.sig, a.sig), ab), s.select(a_up, i64_sub(s, a2, b.sig), i64_sub(s, b2, a.sig)));
  Id e0 = s.b.ext(GLSLstd450UMin, s.u32, {a.exp, b.exp});
  // 52 - msb, from either word's: 53 for r = 0 (x - x is +0, chosen apart); it wraps for r
  // of 2^53 up, which the far path takes, so the shift is bounded by 63 too.
  Id msb = s.b.ext(GLSLstd450FindUMsb, s.uvec2, {r});
  Id natural = s.select32(s.test(spv::OpINotEqual, {s.hi(msb), s.c(~0u)}), s.op(spv::OpISub, {s.c(20), s.hi(msb)}),
                          s.op(spv::OpISub, {s.c(52), s.lo(msb)}));
  Id room = s.b.ext(GLSLstd450UMin, s.u32, {s.op(spv::OpISub, {e0, s.c(1)}), s.c(63)});
  Id shift = s.b.ext(GLSLstd450UMin, s.u32, {natural, room});
  Id sig = i64_shl(s, r, shift);
  Id high = s.op(spv::OpBitwiseOr, {sign, s.op(spv::OpShiftLeftLogical, {s.op(spv::OpISub, {s.op(spv::OpISub, {e0, shift}), s.c(1)}), s.c(20)})});
  return {s.pair(s.lo(sig), s.op(spv::OpIAdd, {high, s.hi(sig)})), s.test(spv::OpULessThan, {s.hi(r), s.c(0x200000)})};
}

}  // namespace

Id f64_add_two_path(Soft64& s, Id a, Id b) {
  Id a_hi = s.hi(a), b_hi = s.hi(b), a_lo = s.lo(a), b_lo = s.lo(b);
  const Addend pa = addend(s, a_hi, a_lo), pb = addend(s, b_hi, b_lo);
  Id subtract = s.test(spv::OpSLessThan, {s.op(spv::OpBitwiseXor, {a_hi, b_hi}), s.c(0)});
  Id high_equal = s.test(spv::OpIEqual, {pa.abs, pb.abs});
  // x - x: +0 (and inf - inf: NaN).
  Id cancel = s.both(subtract, s.both(high_equal, s.test(spv::OpIEqual, {a_lo, b_lo})));
  // The operand of the larger magnitude: by the high words alone where the exponents
  // differ (the far path's x; at equal exponents it adds, in either order), by both words
  // for the sign of a difference and for the special cases.
  Id b_above = s.test(spv::OpUGreaterThan, {pb.abs, pa.abs});
  Id swap = s.b.op(spv::OpSelect, s.boolean, {high_equal, s.test(spv::OpULessThan, {a_lo, b_lo}), b_above});
  Id sign = s.op(spv::OpBitwiseAnd, {s.select32(swap, b_hi, a_hi), s.c(0x80000000u)});
  Id ex = s.b.ext(GLSLstd450UMax, s.u32, {pa.exp, pb.exp});
  Id d = s.op(spv::OpISub, {ex, s.b.ext(GLSLstd450UMin, s.u32, {pa.exp, pb.exp})});
  // Whether y has bits below the 32 guard bits, and below its high words (x - y borrows
  // there), from its lowest bit's place (a zero y's sum is chosen apart: x).
  Id y_lowest32 = s.select32(b_above, pa.lowest32, pb.lowest32);
  Id sticky = s.test(spv::OpULessThan, {y_lowest32, d});
  Id borrow = s.test(spv::OpULessThan, {y_lowest32, s.op(spv::OpIAdd, {d, s.c(32)})});
  Words<3> y = shifted_below(s, s.select(b_above, pa.sig, pb.sig), d);
  y[0] = s.op(spv::OpBitwiseOr, {y[0], s.bit(sticky)});
  Far far = far_sum(s, sign, ex, s.select(b_above, pb.sig, pa.sig), y, borrow, subtract);
  Near near = near_difference(s, pa, pb, sign);
  // An inf or NaN operand: the larger one, unless the other is its opposite (x NaN or
  // inf - inf: NaN either way). The paths' results are the last choices made, being the
  // longest to compute.
  Id special = s.test(spv::OpUGreaterThanEqual, {s.select32(swap, pb.abs, pa.abs), s.c(0x7ff00000)});
  Id zero = s.either(pa.zero, pb.zero), larger = s.select(swap, b, a);
  Id apart = s.either(s.either(special, zero), cancel);
  Id other = s.select(special, s.select(cancel, f64_default_nan(s), larger),
                      s.select(cancel, s.c64(0), s.select(zero, larger, f64_signed_inf(s, sign))));
  Id use_near = s.both(s.both(subtract, s.test(spv::OpULessThanEqual, {d, s.c(1)})), near.fits);
  Id chosen = s.select(s.either(apart, far.overflow), other, near.bits);
  return s.select(s.either(s.either(apart, far.overflow), use_near), chosen, far.bits);
}

}  // namespace nxv::codegen::soft
