// s64 and u64 in software (soft_i64.h): each 64-bit integer instruction as 32-bit integer
// SPIR-V on the uvec2 form, straight-line code of selects except the long division's loop.
#include "codegen/soft_i64.h"

#include <stdexcept>
#include <string>

namespace nxv::codegen::soft {
namespace {

// OpIAddCarry / OpISubBorrow on both words at once: the sums and, per word, the carries.
Id carry_struct(Soft64& s) { return s.b.type_struct({s.uvec2, s.uvec2}); }
Id member(Soft64& s, Id type, Id composite, uint32_t i) { return s.b.op(spv::OpCompositeExtract, type, {composite}, {i}); }
// (0, v.x): the low word's carry moved up to where it lands, the high word's dropped.
Id carry_up(Soft64& s, Id v) { return s.b.op(spv::OpVectorShuffle, s.uvec2, {s.c64(0), v}, {0, 2}); }

// a < b (strict_low = OpULessThan) or a <= b (OpULessThanEqual), the high words compared by
// high_less (OpULessThan, or OpSLessThan for s64): the low words decide when the high ones tie.
Id less(Soft64& s, Id a, Id b, spv::Op low_op, spv::Op high_less) {
  Id high_equal = s.test(spv::OpIEqual, {s.hi(a), s.hi(b)});
  return s.b.op(spv::OpSelect, s.boolean,
                {high_equal, s.test(low_op, {s.lo(a), s.lo(b)}), s.test(high_less, {s.hi(a), s.hi(b)})});
}

}  // namespace

Id i64_add(Soft64& s, Id a, Id b) {
  Id sum = s.b.op(spv::OpIAddCarry, carry_struct(s), {a, b});
  return s.b.op(spv::OpIAdd, s.uvec2, {member(s, s.uvec2, sum, 0), carry_up(s, member(s, s.uvec2, sum, 1))});
}

Id i64_sub(Soft64& s, Id a, Id b) {
  Id diff = s.b.op(spv::OpISubBorrow, carry_struct(s), {a, b});
  return s.b.op(spv::OpISub, s.uvec2, {member(s, s.uvec2, diff, 0), carry_up(s, member(s, s.uvec2, diff, 1))});
}

Id i64_neg(Soft64& s, Id a) { return i64_sub(s, s.c64(0), a); }

Id i64_mul(Soft64& s, Id a, Id b) {
  // (ah 2^32 + al)(bh 2^32 + bl) mod 2^64: al bl in full, the cross products' low words.
  Id al = s.lo(a), ah = s.hi(a), bl = s.lo(b), bh = s.hi(b);
  Id low = s.b.op(spv::OpUMulExtended, s.b.type_struct({s.u32, s.u32}), {al, bl});
  Id cross = s.op(spv::OpIAdd, {s.op(spv::OpIMul, {al, bh}), s.op(spv::OpIMul, {ah, bl})});
  return s.pair(member(s, s.u32, low, 0), s.op(spv::OpIAdd, {member(s, s.u32, low, 1), cross}));
}

// Shifts: SPIR-V leaves a 32-bit shift by 32 or more undefined, so every word shift here
// counts below 32: the bits crossing between words move as (w >> 1) >> (31 - m), which is
// zero for m = 0, and counts of 32 and more select the single word shift by m - 32.
Id i64_shl(Soft64& s, Id a, Id count) {
  Id al = s.lo(a), ah = s.hi(a);
  Id m = s.op(spv::OpBitwiseAnd, {count, s.c(31)}), rest = s.op(spv::OpBitwiseXor, {m, s.c(31)});
  Id low = s.op(spv::OpShiftLeftLogical, {al, m});
  Id crossing = s.op(spv::OpShiftRightLogical, {s.op(spv::OpShiftRightLogical, {al, s.c(1)}), rest});
  Id high = s.op(spv::OpBitwiseOr, {s.op(spv::OpShiftLeftLogical, {ah, m}), crossing});
  Id far = s.test(spv::OpUGreaterThanEqual, {count, s.c(32)});
  return s.pair(s.select32(far, s.c(0), low), s.select32(far, low, high));
}

namespace {
// shr and sar: the high word shifted by `high_shift`, its vacated word `fill` for counts of 32 on.
Id shift_right(Soft64& s, Id a, Id count, spv::Op high_shift, Id fill) {
  Id al = s.lo(a), ah = s.hi(a);
  Id m = s.op(spv::OpBitwiseAnd, {count, s.c(31)}), rest = s.op(spv::OpBitwiseXor, {m, s.c(31)});
  Id high = s.op(high_shift, {ah, m});
  Id crossing = s.op(spv::OpShiftLeftLogical, {s.op(spv::OpShiftLeftLogical, {ah, s.c(1)}), rest});
  Id low = s.op(spv::OpBitwiseOr, {s.op(spv::OpShiftRightLogical, {al, m}), crossing});
  Id far = s.test(spv::OpUGreaterThanEqual, {count, s.c(32)});
  return s.pair(s.select32(far, high, low), s.select32(far, fill, high));
}
}  // namespace

Id i64_shr(Soft64& s, Id a, Id count) { return shift_right(s, a, count, spv::OpShiftRightLogical, s.c(0)); }

Id i64_sar(Soft64& s, Id a, Id count) {
  return shift_right(s, a, count, spv::OpShiftRightArithmetic, s.op(spv::OpShiftRightArithmetic, {s.hi(a), s.c(31)}));
}

Id i64_compare(Soft64& s, spv::Op op, Id a, Id b) {
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
    default: throw std::invalid_argument("soft::i64_compare: opcode " + std::to_string(op) + " is not an integer comparison");
  }
}

Id i64_find_msb(Soft64& s, Id a) {
  // Both words' highest bits at once; FindUMsb of a zero high word is 0xffffffff.
  Id msb = s.b.ext(GLSLstd450FindUMsb, s.uvec2, {a});
  Id high = s.hi(msb);
  return s.select32(s.test(spv::OpINotEqual, {high, s.c(~0u)}), s.op(spv::OpIAdd, {high, s.c(32)}), s.lo(msb));
}

Id i64_from_u32(Soft64& s, Id x) { return s.pair(x, s.c(0)); }
Id i64_from_s32(Soft64& s, Id x) { return s.pair(x, s.op(spv::OpShiftRightArithmetic, {x, s.c(31)})); }

}  // namespace nxv::codegen::soft
