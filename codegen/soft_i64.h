// s64 and u64 in software (codegen/soft64.h's uvec2 form) for devices without shaderInt64:
// SPIR-V's 64-bit integer instructions as 32-bit integer arithmetic, bit-identical to them
// (two's complement, wrap-around), in the manner of IREE's SPIRVEmulateI64.
#pragma once

#include "codegen/soft64.h"

namespace nxv::codegen::soft {

// Arithmetic (wrap-around, as OpIAdd, OpISub, OpSNegate, OpIMul).
Id i64_add(Soft64& s, Id a, Id b);
Id i64_sub(Soft64& s, Id a, Id b);
Id i64_neg(Soft64& s, Id a);
Id i64_mul(Soft64& s, Id a, Id b);  // the low 64 bits of the product
// Division: the quotient truncated toward zero and the remainder with the dividend's sign
// (OpUDiv, OpSDiv, OpUMod, OpSRem). The caller keeps divisors nonzero and MIN / -1 away
// (emit_elementwise.cpp does); what they return then is unspecified.
Id i64_udiv(Soft64& s, Id a, Id b);
Id i64_sdiv(Soft64& s, Id a, Id b);
Id i64_umod(Soft64& s, Id a, Id b);
Id i64_srem(Soft64& s, Id a, Id b);
// Shifts by a u32 count below 64 (OpShiftLeftLogical, OpShiftRightLogical, ...Arithmetic).
Id i64_shl(Soft64& s, Id a, Id count);
Id i64_shr(Soft64& s, Id a, Id count);
Id i64_sar(Soft64& s, Id a, Id count);
// A comparison (spv::OpIEqual, OpINotEqual, OpULessThan, OpULessThanEqual, OpUGreaterThan,
// OpUGreaterThanEqual and the OpS... ones) as a bool.
Id i64_compare(Soft64& s, spv::Op op, Id a, Id b);
// Whether op is one of those.
bool is_integer_compare(spv::Op op);
// Whether a, as an s64, is below 0 (its sign bit), as a bool.
Id i64_is_negative(Soft64& s, Id a);
// |a| as an s64, wrapping at its minimum (soft-f64's fixed-point helpers use it).
Id i64_abs(Soft64& s, Id a);
// GLSL.std.450 SMin, SMax, UMin, UMax (SClamp is max then min).
Id i64_min(Soft64& s, Id a, Id b, bool is_signed);
Id i64_max(Soft64& s, Id a, Id b, bool is_signed);
// OpBitCount: the number of set bits, as a u64; GLSL FindUMsb: the index of the highest set
// bit as a u32, 0xffffffff for 0 (Nx's count_leading_zeros is 63 - it).
Id i64_popcount(Soft64& s, Id a);
Id i64_find_msb(Soft64& s, Id a);
// Conversions with 32-bit integers: the low word (OpUConvert/OpSConvert to 32 bits), and a
// u32 widened by zero or sign extension.
Id i64_from_u32(Soft64& s, Id x);
Id i64_from_s32(Soft64& s, Id x);
// With f32 (bits in a u32): OpConvertSToF / OpConvertUToF round to nearest even;
// OpConvertFToS / OpConvertFToU truncate toward zero, for values the caller keeps in range.
Id f32_from_i64(Soft64& s, Id a, bool is_signed);  // the f32's bits, a u32
Id i64_from_f32(Soft64& s, Id f32_value, bool is_signed);  // f32_value: a float-typed id

}  // namespace nxv::codegen::soft
