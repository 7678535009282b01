// s64 and u64 in software (soft_i64.h): each 64-bit integer instruction as 32-bit integer
// SPIR-V on the uvec2 form, straight-line code of selects except the long division's loop.
#include "codegen/soft_i64.h"

#include <optional>
#include <stdexcept>
#include <string>

namespace nxv::codegen::soft {
namespace {

// OpIAddCarry / OpISubBorrow on both words at once: the sums and, per word, the carries.
Id carry_struct(Soft64& s) { return s.b.type_struct({s.uvec2, s.uvec2}); }
Id member(Soft64& s, Id type, Id composite, uint32_t i) {
  return s.b.op(spv::OpCompositeExtract, type, {composite}, {i});
}
// (0, v.x): the low word's carry moved up to where it lands, the high word's dropped.
Id carry_up(Soft64& s, Id v) { return s.b.op(spv::OpVectorShuffle, s.uvec2, {s.c64(0), v}, {0, 2}); }

// a < b (low_op OpULessThan) or a <= b (OpULessThanEqual), the high words compared by
// high_less (OpULessThan, or OpSLessThan for s64): the low words decide when the high ones tie.
Id less(Soft64& s, Id a, Id b, spv::Op low_op, spv::Op high_less) {
  Id high_equal = s.test(spv::OpIEqual, {s.hi(a), s.hi(b)});
  return s.b.op(spv::OpSelect, s.boolean,
                {high_equal, s.test(low_op, {s.lo(a), s.lo(b)}), s.test(high_less, {s.hi(a), s.hi(b)})});
}

// Where the builder computes on native 64-bit integers (Builder::native_int64: emulated
// f64 on a device with shaderInt64), a 64-bit instruction on the u64 the pairs are bitcast
// to: drivers' own 64-bit code (add-with-carry, funnel shifts) is shorter than the words'.
Id native(Soft64& s, spv::Op op, Id a, Id b) { return s.from_u64(s.b.op(op, s.b.type_int(64), {s.as_u64(a), s.as_u64(b)})); }
Id native_shift(Soft64& s, spv::Op op, Id a, Id count) {
  return s.from_u64(s.b.op(op, s.b.type_int(64), {s.as_u64(a), count}));
}

}  // namespace

Id i64_add(Soft64& s, Id a, Id b) {
  if (s.b.native_int64()) return native(s, spv::OpIAdd, a, b);
  Id sum = s.b.op(spv::OpIAddCarry, carry_struct(s), {a, b});
  return s.b.op(spv::OpIAdd, s.uvec2, {member(s, s.uvec2, sum, 0), carry_up(s, member(s, s.uvec2, sum, 1))});
}

Id i64_sub(Soft64& s, Id a, Id b) {
  if (s.b.native_int64()) return native(s, spv::OpISub, a, b);
  Id diff = s.b.op(spv::OpISubBorrow, carry_struct(s), {a, b});
  return s.b.op(spv::OpISub, s.uvec2, {member(s, s.uvec2, diff, 0), carry_up(s, member(s, s.uvec2, diff, 1))});
}

Id i64_neg(Soft64& s, Id a) { return i64_sub(s, s.c64(0), a); }

Id i64_mul(Soft64& s, Id a, Id b) {
  if (s.b.native_int64()) return native(s, spv::OpIMul, a, b);
  // (ah 2^32 + al)(bh 2^32 + bl) mod 2^64: al bl in full, the cross products' low words.
  Id al = s.lo(a), ah = s.hi(a), bl = s.lo(b), bh = s.hi(b);
  Id low = s.b.op(spv::OpUMulExtended, s.b.type_struct({s.u32, s.u32}), {al, bl});
  // Cross products with a zero word (a widened u32) are left out.
  auto zero = [&](Id w) { return s.b.int_constant(w) == std::optional<uint64_t>(0); };
  Id high = member(s, s.u32, low, 1);
  if (!zero(al) && !zero(bh)) high = s.op(spv::OpIAdd, {high, s.op(spv::OpIMul, {al, bh})});
  if (!zero(ah) && !zero(bl)) high = s.op(spv::OpIAdd, {high, s.op(spv::OpIMul, {ah, bl})});
  return s.pair(member(s, s.u32, low, 0), high);
}

namespace {
// Shifts by a constant count below 64: the words moved and shifted directly.
Id shl_by(Soft64& s, Id a, uint32_t k) {
  if (k == 0) return a;
  if (k >= 32) return s.pair(s.c(0), s.op(spv::OpShiftLeftLogical, {s.lo(a), s.c(k - 32)}));
  Id high = s.op(spv::OpShiftLeftLogical, {s.hi(a), s.c(k)});
  return s.pair(s.op(spv::OpShiftLeftLogical, {s.lo(a), s.c(k)}),
                s.op(spv::OpBitwiseOr, {high, s.op(spv::OpShiftRightLogical, {s.lo(a), s.c(32 - k)})}));
}
Id shift_right_by(Soft64& s, Id a, uint32_t k, spv::Op high_shift, Id fill) {
  if (k == 0) return a;
  if (k >= 32) return s.pair(s.op(high_shift, {s.hi(a), s.c(k - 32)}), fill);
  Id low = s.op(spv::OpShiftRightLogical, {s.lo(a), s.c(k)});
  return s.pair(s.op(spv::OpBitwiseOr, {low, s.op(spv::OpShiftLeftLogical, {s.hi(a), s.c(32 - k)})}),
                s.op(high_shift, {s.hi(a), s.c(k)}));
}
}  // namespace

// Shifts: SPIR-V leaves a 32-bit shift by 32 or more undefined, so every word shift here
// counts below 32: the bits crossing between words move as (w >> 1) >> (31 - m), which is
// zero for m = 0, and counts of 32 and more select the other word shifted by count - 32 = m.
Id i64_shl(Soft64& s, Id a, Id count) {
  if (auto k = s.b.int_constant(count)) return shl_by(s, a, uint32_t(*k));
  if (s.b.native_int64()) return native_shift(s, spv::OpShiftLeftLogical, a, count);
  Id al = s.lo(a), ah = s.hi(a);
  Id m = s.op(spv::OpBitwiseAnd, {count, s.c(31)}), rest = s.op(spv::OpBitwiseXor, {m, s.c(31)});
  Id low = s.op(spv::OpShiftLeftLogical, {al, m});
  Id crossing = s.high_bits_down(al, rest);
  Id high = s.op(spv::OpBitwiseOr, {s.op(spv::OpShiftLeftLogical, {ah, m}), crossing});
  Id far = s.test(spv::OpUGreaterThanEqual, {count, s.c(32)});
  return s.pair(s.select32(far, s.c(0), low), s.select32(far, low, high));
}

namespace {
// shr and sar: the high word shifted by `high_shift`, its vacated word `fill` for counts of 32 on.
Id shift_right(Soft64& s, Id a, Id count, spv::Op high_shift, Id fill) {
  if (auto k = s.b.int_constant(count)) return shift_right_by(s, a, uint32_t(*k), high_shift, fill);
  if (s.b.native_int64()) return native_shift(s, high_shift, a, count);
  Id al = s.lo(a), ah = s.hi(a);
  Id m = s.op(spv::OpBitwiseAnd, {count, s.c(31)}), rest = s.op(spv::OpBitwiseXor, {m, s.c(31)});
  Id high = s.op(high_shift, {ah, m});
  Id crossing = s.low_bits_up(ah, rest);
  Id low = s.op(spv::OpBitwiseOr, {s.op(spv::OpShiftRightLogical, {al, m}), crossing});
  Id far = s.test(spv::OpUGreaterThanEqual, {count, s.c(32)});
  return s.pair(s.select32(far, high, low), s.select32(far, fill, high));
}
}  // namespace

Id i64_shr(Soft64& s, Id a, Id count) { return shift_right(s, a, count, spv::OpShiftRightLogical, s.c(0)); }

Id i64_sar(Soft64& s, Id a, Id count) {
  return shift_right(s, a, count, spv::OpShiftRightArithmetic, s.op(spv::OpShiftRightArithmetic, {s.hi(a), s.c(31)}));
}

bool is_integer_compare(spv::Op op) {
  switch (op) {
    case spv::OpIEqual: case spv::OpINotEqual: case spv::OpULessThan: case spv::OpULessThanEqual:
    case spv::OpUGreaterThan: case spv::OpUGreaterThanEqual: case spv::OpSLessThan: case spv::OpSLessThanEqual:
    case spv::OpSGreaterThan: case spv::OpSGreaterThanEqual:
      return true;
    default:
      return false;
  }
}

Id i64_compare(Soft64& s, spv::Op op, Id a, Id b) {
  if (s.b.native_int64() && is_integer_compare(op)) return s.test(op, {s.as_u64(a), s.as_u64(b)});
  switch (op) {
    case spv::OpIEqual: return s.all(s.b.op(spv::OpIEqual, s.bvec2, {a, b}));
    case spv::OpINotEqual: return s.b.op(spv::OpAny, s.boolean, {s.b.op(spv::OpINotEqual, s.bvec2, {a, b})});
    case spv::OpULessThan: return less(s, a, b, spv::OpULessThan, spv::OpULessThan);
    case spv::OpULessThanEqual: return less(s, a, b, spv::OpULessThanEqual, spv::OpULessThan);
    case spv::OpUGreaterThan: return less(s, b, a, spv::OpULessThan, spv::OpULessThan);
    case spv::OpUGreaterThanEqual: return less(s, b, a, spv::OpULessThanEqual, spv::OpULessThan);
    case spv::OpSLessThan: return less(s, a, b, spv::OpULessThan, spv::OpSLessThan);
    case spv::OpSLessThanEqual: return less(s, a, b, spv::OpULessThanEqual, spv::OpSLessThan);
    case spv::OpSGreaterThan: return less(s, b, a, spv::OpULessThan, spv::OpSLessThan);
    case spv::OpSGreaterThanEqual: return less(s, b, a, spv::OpULessThanEqual, spv::OpSLessThan);
    default:
      throw std::invalid_argument("soft::i64_compare: opcode " + std::to_string(op) + " is not an integer comparison");
  }
}

Id i64_find_msb(Soft64& s, Id a) {
  // Both words' highest bits at once; FindUMsb of a zero high word is 0xffffffff.
  Id msb = s.b.ext(GLSLstd450FindUMsb, s.uvec2, {a});
  Id high = s.hi(msb);
  return s.select32(s.test(spv::OpINotEqual, {high, s.c(~0u)}), s.op(spv::OpIAdd, {high, s.c(32)}), s.lo(msb));
}

Id i64_is_negative(Soft64& s, Id a) { return s.test(spv::OpSLessThan, {s.hi(a), s.c(0)}); }

Id i64_abs(Soft64& s, Id a) { return s.select(i64_is_negative(s, a), i64_neg(s, a), a); }

Id i64_min(Soft64& s, Id a, Id b, bool is_signed) {
  return s.select(less(s, a, b, spv::OpULessThan, is_signed ? spv::OpSLessThan : spv::OpULessThan), a, b);
}

Id i64_max(Soft64& s, Id a, Id b, bool is_signed) {
  return s.select(less(s, a, b, spv::OpULessThan, is_signed ? spv::OpSLessThan : spv::OpULessThan), b, a);
}

Id i64_popcount(Soft64& s, Id a) {
  Id counts = s.b.op(spv::OpBitCount, s.uvec2, {a});
  return s.pair(s.op(spv::OpIAdd, {s.lo(counts), s.hi(counts)}), s.c(0));
}

namespace {

struct DivMod {
  Id quotient, remainder;
};

// The memo tag of a division's results: above every opcode (the value-numbering keys' first
// word), below the emitters' tags (counting down from 0xffffffff).
constexpr uint32_t kDivModTag = 0x10000u + uint32_t(spv::OpUDiv);

// v << 1 with `in` (0 or 1) shifted into the low bit.
Id shl1(Soft64& s, Id v, Id in) {
  Id doubled = s.b.op(spv::OpShiftLeftLogical, s.uvec2, {v, s.pair(s.c(1), s.c(1))});
  return s.b.op(spv::OpBitwiseOr, s.uvec2, {doubled, s.pair(in, s.op(spv::OpShiftRightLogical, {s.lo(v), s.c(31)}))});
}

// Restoring long division, a bit a step: the dividend shifts out of n into the remainder r
// at the top while the quotient's bits shift into n at the bottom. OpUDiv and OpUMod of the
// same operands share the loop (memoised).
DivMod udivmod(Soft64& s, Id a, Id d) {
  auto key = [&](uint32_t which) { return spirv::Words{kDivModTag, a, d, which}; };
  if (const Id* q = s.b.memo_find(key(0))) return {*q, *s.b.memo_find(key(1))};
  auto out = s.b.at_level(s.b.level_of({a, d}), [&] {
    return s.b.loop(
        {s.u32, s.uvec2, s.uvec2}, {s.c(0), a, s.c64(0)},
        [&](const spirv::Builder::Values& v) { return s.test(spv::OpULessThan, {v[0], s.c(64)}); },
        [&](const spirv::Builder::Values& v) {
          Id n = v[1], r = v[2];
          // r is at most the k dividend bits shifted in so far, so 2r + 1 never carries out.
          Id shifted = shl1(s, r, s.op(spv::OpShiftRightLogical, {s.hi(n), s.c(31)}));
          Id fits = i64_compare(s, spv::OpUGreaterThanEqual, shifted, d);
          return spirv::Builder::Values{s.op(spv::OpIAdd, {v[0], s.c(1)}), shl1(s, n, s.select32(fits, s.c(1), s.c(0))),
                                        s.select(fits, i64_sub(s, shifted, d), shifted)};
        },
        64);
  });
  s.b.memo_put(key(0), out[1], s.b.level_of(out[1]));
  s.b.memo_put(key(1), out[2], s.b.level_of(out[2]));
  return {out[1], out[2]};
}

// |a| / |d| and |a| % |d| (|MIN| is 2^63 as a u64).
DivMod sdivmod(Soft64& s, Id a, Id d) { return udivmod(s, i64_abs(s, a), i64_abs(s, d)); }

}  // namespace

Id i64_udiv(Soft64& s, Id a, Id b) { return udivmod(s, a, b).quotient; }
Id i64_umod(Soft64& s, Id a, Id b) { return udivmod(s, a, b).remainder; }

Id i64_sdiv(Soft64& s, Id a, Id b) {
  Id q = sdivmod(s, a, b).quotient;
  Id signs_differ = s.b.op(spv::OpLogicalNotEqual, s.boolean, {i64_is_negative(s, a), i64_is_negative(s, b)});
  return s.select(signs_differ, i64_neg(s, q), q);
}

Id i64_srem(Soft64& s, Id a, Id b) {
  Id r = sdivmod(s, a, b).remainder;
  return s.select(i64_is_negative(s, a), i64_neg(s, r), r);
}

Id i64_from_u32(Soft64& s, Id x) { return s.pair(x, s.c(0)); }
Id i64_from_s32(Soft64& s, Id x) { return s.pair(x, s.op(spv::OpShiftRightArithmetic, {x, s.c(31)})); }

Id f32_from_i64(Soft64& s, Id a, bool is_signed) {
  Id magnitude = is_signed ? i64_abs(s, a) : a;
  Id msb = i64_find_msb(s, magnitude);
  // The leading one moved to bit 63: the high word holds the 24 bits kept (bits 31..8), the
  // rounding bit (7) and, with the low word, the sticky bits below it.
  Id normalized = i64_shl(s, magnitude, s.op(spv::OpISub, {s.c(63), msb}));
  Id top = s.hi(normalized), low = s.lo(normalized);
  Id half = s.test(spv::OpINotEqual, {s.op(spv::OpBitwiseAnd, {top, s.c(0x80)}), s.c(0)});
  // Up from a half when anything lies below it or the kept bits are odd (nearest even).
  Id below_or_odd = s.op(spv::OpBitwiseOr, {s.op(spv::OpBitwiseAnd, {top, s.c(0x17f)}), low});
  Id odd_or_sticky = s.test(spv::OpINotEqual, {below_or_odd, s.c(0)});
  Id up = s.select32(s.b.op(spv::OpLogicalAnd, s.boolean, {half, odd_or_sticky}), s.c(1), s.c(0));
  // The kept bits' leading one adds 1 to the exponent field (msb + 127 - 1), and a carry out
  // of rounding up lands in the exponent as it should.
  Id exponent = s.op(spv::OpShiftLeftLogical, {s.op(spv::OpIAdd, {msb, s.c(126)}), s.c(23)});
  Id bits = s.op(spv::OpIAdd, {s.op(spv::OpIAdd, {exponent, s.op(spv::OpShiftRightLogical, {top, s.c(8)})}), up});
  bits = s.select32(s.test(spv::OpIEqual, {msb, s.c(~0u)}), s.c(0), bits);
  if (is_signed) bits = s.op(spv::OpBitwiseOr, {bits, s.op(spv::OpBitwiseAnd, {s.hi(a), s.c(0x80000000u)})});
  return bits;
}

Id i64_from_f32(Soft64& s, Id f32_value, bool is_signed) {
  Id bits = s.b.op(spv::OpBitcast, s.u32, {f32_value});
  Id biased = s.op(spv::OpBitwiseAnd, {s.op(spv::OpShiftRightLogical, {bits, s.c(23)}), s.c(0xff)});
  Id mantissa = s.op(spv::OpBitwiseOr, {s.op(spv::OpBitwiseAnd, {bits, s.c(0x7fffff)}), s.c(0x800000)});
  // |value| = mantissa 2^(biased - 150): shifted left from 2^23 on, else right (by at most
  // 31, which clears all 24 bits: |value| < 1).
  Id whole = s.test(spv::OpUGreaterThanEqual, {biased, s.c(150)});
  Id left = i64_shl(s, s.pair(mantissa, s.c(0)), s.op(spv::OpISub, {biased, s.c(150)}));
  Id right = s.op(spv::OpShiftRightLogical,
                  {mantissa, s.b.ext(GLSLstd450UMin, s.u32, {s.op(spv::OpISub, {s.c(150), biased}), s.c(31)})});
  Id magnitude = s.select(whole, left, s.pair(right, s.c(0)));
  if (!is_signed) return magnitude;  // a negative value in range is above -1: zero
  Id negative = s.test(spv::OpINotEqual, {s.op(spv::OpShiftRightLogical, {bits, s.c(31)}), s.c(0)});
  return s.select(negative, i64_neg(s, magnitude), magnitude);
}

}  // namespace nxv::codegen::soft
