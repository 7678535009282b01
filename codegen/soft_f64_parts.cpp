// The shared steps of the software f64 routines (soft_f64_parts.h): fields, normalisation,
// jamming shifts, rounding and the 128-bit product, straight-line on 32-bit words.
#include "codegen/soft_f64_parts.h"

#include "codegen/soft_i64.h"

namespace nxv::codegen::soft {

std::pair<Id, Id> two_words(Soft64& s, spv::Op opcode, Id x, Id y) {
  Id r = s.b.op(opcode, s.b.type_struct({s.u32, s.u32}), {x, y});
  return {s.b.op(spv::OpCompositeExtract, s.u32, {r}, {0}), s.b.op(spv::OpCompositeExtract, s.u32, {r}, {1})};
}

F64Parts f64_unpack(Soft64& s, Id a) {
  Id hi = s.hi(a);
  return {s.op(spv::OpBitwiseAnd, {hi, s.c(0x80000000u)}), f64_exponent_field(s, hi),
          s.pair(s.lo(a), s.op(spv::OpBitwiseAnd, {hi, s.c(0xfffff)}))};
}

Id f64_exponent_field(Soft64& s, Id hi) {
  return s.op(spv::OpBitwiseAnd, {s.op(spv::OpShiftRightLogical, {hi, s.c(20)}), s.c(0x7ff)});
}

Id f64_parts_nan(Soft64& s, const F64Parts& p) {
  Id fraction = s.isnt(s.is_zero64(p.frac));
  return s.both(s.test(spv::OpIEqual, {p.exp, s.c(0x7ff)}), fraction);
}
Id f64_parts_inf(Soft64& s, const F64Parts& p) {
  return s.both(s.test(spv::OpIEqual, {p.exp, s.c(0x7ff)}), s.is_zero64(p.frac));
}
Id f64_parts_zero(Soft64& s, const F64Parts& p) {
  return s.both(s.test(spv::OpIEqual, {p.exp, s.c(0)}), s.is_zero64(p.frac));
}

Id f64_default_nan(Soft64& s) { return s.c64(0x7ff8000000000000ull); }
Id f64_signed_inf(Soft64& s, Id sign) { return s.pair(s.c(0), s.op(spv::OpBitwiseOr, {sign, s.c(0x7ff00000)})); }
Id f64_signed_zero(Soft64& s, Id sign) { return s.pair(s.c(0), sign); }

F64Normal f64_significand(Soft64& s, const F64Parts& p) {
  Id subnormal = s.test(spv::OpIEqual, {p.exp, s.c(0)});
  return {s.select32(subnormal, s.c(1), p.exp),
          s.pair(s.lo(p.frac), s.op(spv::OpBitwiseOr, {s.hi(p.frac), s.select32(subnormal, s.c(0), s.c(0x100000))}))};
}

F64Normal f64_normalize(Soft64& s, const F64Parts& p, uint32_t top) {
  F64Normal m = f64_significand(s, p);
  // top - msb: top - 52 for a normal operand, top + 1 for zero (msb 0xffffffff): below 64.
  Id shift = s.op(spv::OpISub, {s.c(top), i64_find_msb(s, m.sig)});
  return {s.op(spv::OpISub, {s.op(spv::OpIAdd, {m.exp, s.c(top - 52)}), shift}), i64_shl(s, m.sig, shift)};
}

Id halve_jam(Soft64& s, Id a) {
  Id half = i64_shr(s, a, s.c(1));
  return s.pair(s.op(spv::OpBitwiseOr, {s.lo(half), s.op(spv::OpBitwiseAnd, {s.lo(a), s.c(1)})}), s.hi(half));
}

Id shift_right_jam(Soft64& s, Id a, Id dist) {
  // A count past 63 gives what 63 gives: bit 63 (0 or 1) with every other bit jammed into it.
  Id d = s.b.ext(GLSLstd450UMin, s.u32, {dist, s.c(63)});
  if (auto k = s.b.int_constant(d); k && *k == 0) return a;
  // The bits shifted out: the low word's below d % 32, moved to the top of a word as
  // (w << 1) << (31 - d % 32) (zero for d % 32 = 0, like i64_shr's crossing bits), and from
  // 32 on the whole low word too.
  Id m = s.op(spv::OpBitwiseAnd, {d, s.c(31)}), rest = s.op(spv::OpBitwiseXor, {m, s.c(31)});
  Id far = s.test(spv::OpUGreaterThanEqual, {d, s.c(32)});
  Id lost = s.select32(far, s.op(spv::OpBitwiseOr, {s.lo(a), s.low_bits_up(s.hi(a), rest)}), s.low_bits_up(s.lo(a), rest));
  Id r = i64_shr(s, a, d);
  return s.pair(s.op(spv::OpBitwiseOr, {s.lo(r), s.bit(s.test(spv::OpINotEqual, {lost, s.c(0)}))}), s.hi(r));
}

Id pack_rounded(Soft64& s, Id sign, Id exp, Id sig, uint32_t k) {
  // Round up where the bits below the last place exceed half of it, or are half of it and
  // the last place is odd (ties to even).
  const uint32_t half = 1u << (k - 1);
  Id low = s.lo(sig);
  Id above_half = s.test(spv::OpINotEqual, {s.op(spv::OpBitwiseAnd, {low, s.c(half)}), s.c(0)});
  Id odd_or_more = s.test(spv::OpINotEqual, {s.op(spv::OpBitwiseAnd, {low, s.c((half - 1) | (half << 1))}), s.c(0)});
  Id q = i64_shr(s, sig, s.c(k));
  auto [q_lo, carry] = two_words(s, spv::OpIAddCarry, s.lo(q), s.bit(s.both(above_half, odd_or_more)));
  // The hidden bit of q (bit 52) adds one to exp, as SoftFloat's packToF64UI does; a
  // rounding carry to bit 53 adds one more (from exp 0x7fd that gives inf's bits themselves).
  Id hi = s.op(spv::OpIAdd, {s.op(spv::OpShiftLeftLogical, {exp, s.c(20)}), s.op(spv::OpIAdd, {s.hi(q), carry})});
  Id overflow = s.either(s.test(spv::OpUGreaterThan, {exp, s.c(0x7fe)}),
                         s.test(spv::OpUGreaterThanEqual, {hi, s.c(0x7ff00000)}));
  return s.pair(s.select32(overflow, s.c(0), q_lo),
                s.op(spv::OpBitwiseOr, {sign, s.select32(overflow, s.c(0x7ff00000), hi)}));
}

Id rounded(Soft64& s, const Window& w) {
  // Up above half an ulp, or at half where q is odd: below >= 0x80000001 - odd.
  Id up = s.test(spv::OpUGreaterThanEqual, {w.below, s.op(spv::OpISub, {s.c(0x80000001u), w.odd})});
  Id hi = s.op(spv::OpIAdd, {w.q_hi, w.high});
  auto [next_lo, carry] = two_words(s, spv::OpIAddCarry, w.q_lo, s.c(1));
  return s.pair(s.select32(up, next_lo, w.q_lo), s.select32(up, s.op(spv::OpIAdd, {hi, carry}), hi));
}

Id round_pack(Soft64& s, Id sign, Id exp, Id sig, uint32_t k) {
  Id tiny = s.test(spv::OpSLessThan, {exp, s.c(0)});
  sig = shift_right_jam(s, sig, s.select32(tiny, s.op(spv::OpISub, {s.c(0), exp}), s.c(0)));
  Id e = s.select32(s.either(tiny, s.is_zero64(sig)), s.c(0), exp);
  return pack_rounded(s, sign, e, sig, k);
}

Id normalize_round_pack(Soft64& s, Id sign, Id exp, Id sig) {
  Id msb = i64_find_msb(s, sig);
  Id top = s.test(spv::OpIEqual, {msb, s.c(63)});
  // 62 - msb is 63 for sig 0 (msb 0xffffffff): still a valid shift, of zero.
  Id shift = s.select32(top, s.c(0), s.op(spv::OpISub, {s.c(62), msb}));
  Id e = s.select32(top, s.op(spv::OpIAdd, {exp, s.c(1)}), s.op(spv::OpISub, {exp, shift}));
  return round_pack(s, sign, e, s.select(top, halve_jam(s, sig), i64_shl(s, sig, shift)));
}

Wide mul_wide(Soft64& s, Id a, Id b) {
  auto [l00, h00] = two_words(s, spv::OpUMulExtended, s.lo(a), s.lo(b));
  auto [l01, h01] = two_words(s, spv::OpUMulExtended, s.lo(a), s.hi(b));
  auto [l10, h10] = two_words(s, spv::OpUMulExtended, s.hi(a), s.lo(b));
  auto [l11, h11] = two_words(s, spv::OpUMulExtended, s.hi(a), s.hi(b));
  auto [t1, c1a] = two_words(s, spv::OpIAddCarry, h00, l01);
  auto [w1, c1b] = two_words(s, spv::OpIAddCarry, t1, l10);
  auto [t2, c2a] = two_words(s, spv::OpIAddCarry, h01, h10);
  auto [u2, c2b] = two_words(s, spv::OpIAddCarry, t2, l11);
  auto [w2, c2c] = two_words(s, spv::OpIAddCarry, u2, s.op(spv::OpIAdd, {c1a, c1b}));
  Id w3 = s.op(spv::OpIAdd, {h11, s.op(spv::OpIAdd, {c2a, s.op(spv::OpIAdd, {c2b, c2c})})});
  return {s.pair(w2, w3), s.pair(l00, w1)};
}


Id mul32_wide(Soft64& s, Id x, Id y) {
  auto [low, high] = two_words(s, spv::OpUMulExtended, x, y);
  return s.pair(low, high);
}

Words4 select4(Soft64& s, Id cond, const Words4& x, const Words4& y) {
  return {s.select32(cond, x[0], y[0]), s.select32(cond, x[1], y[1]), s.select32(cond, x[2], y[2]),
          s.select32(cond, x[3], y[3])};
}

std::pair<Id, Id> normalize4(Soft64& s, Words4 x) {
  Id zero = s.c(0);
  Id high_zero = s.test(spv::OpIEqual, {s.op(spv::OpBitwiseOr, {x[3], x[2]}), zero});
  x = select4(s, high_zero, {zero, zero, x[0], x[1]}, x);
  // 63 - msb: 64 for x = 0 (msb 0xffffffff), which shifts 0 by 32 places and 0 more.
  Id left = s.op(spv::OpISub, {s.c(63), i64_find_msb(s, s.pair(x[2], x[3]))});
  Id m = s.op(spv::OpBitwiseAnd, {left, s.c(31)}), rest = s.op(spv::OpBitwiseXor, {m, s.c(31)});
  Id odd = s.test(spv::OpINotEqual, {s.op(spv::OpBitwiseAnd, {left, s.c(32)}), zero});
  Id w3 = s.select32(odd, x[2], x[3]), w2 = s.select32(odd, x[1], x[2]), w1 = s.select32(odd, x[0], x[1]);
  Id w0 = s.select32(odd, zero, x[0]);
  // w << m with the next word's top m bits ((v >> 1) >> (31 - m): none for m = 0).
  auto up = [&](Id w, Id next) {
    Id in = s.high_bits_down(next, rest);
    return s.op(spv::OpBitwiseOr, {s.op(spv::OpShiftLeftLogical, {w, m}), in});
  };
  Id lost = s.op(spv::OpBitwiseOr, {s.op(spv::OpShiftLeftLogical, {w1, m}), w0});
  Id low = s.op(spv::OpBitwiseOr, {up(w2, w1), s.bit(s.test(spv::OpINotEqual, {lost, zero}))});
  Id shift = s.op(spv::OpIAdd, {left, s.select32(high_zero, s.c(64), zero)});
  return {s.pair(low, up(w3, w2)), shift};
}

}  // namespace nxv::codegen::soft
