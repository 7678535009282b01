// IEEE binary64 in software (codegen/soft64.h's uvec2 form) for devices without shaderFloat64,
// after Mesa's soft-fp64: every result is the correctly rounded (nearest even) IEEE one, bit
// for bit what native f64 gives, subnormals kept (never flushed), NaN inputs give a NaN.
#pragma once

#include "codegen/soft64.h"

namespace nxv::codegen::soft {

// Arithmetic (OpFAdd, OpFMul, OpFDiv, OpFNegate, GLSL Fma with one rounding, Sqrt; OpFSub
// adds the negated operand).
Id f64_add(Soft64& s, Id a, Id b);
Id f64_mul(Soft64& s, Id a, Id b);
Id f64_div(Soft64& s, Id a, Id b);
Id f64_fma(Soft64& s, Id a, Id b, Id c);
Id f64_sqrt(Soft64& s, Id a);
Id f64_neg(Soft64& s, Id a);  // flips the sign bit, NaN included
Id f64_abs(Soft64& s, Id a);  // clears it

// The same where every operand is zero or normal and the exact result zero or of a normal
// magnitude (no subnormal, inf or NaN in or out): the math library's steps on reduced
// arguments (Builder::set_normal_range). Outside those conditions their results are
// unspecified.
Id f64_mul_normal(Soft64& s, Id a, Id b);
Id f64_div_normal(Soft64& s, Id a, Id b);
Id f64_fma_normal(Soft64& s, Id a, Id b, Id c);

// f64_mul's result, through f64_mul_normal in a branch where both operands are normal and
// their exact product lies in the normal range even once rounded (their exponent fields sum
// to 1024..3067); in the other, a signed zero where one operand is zero and the other
// finite, else f64_mul. On a GPU, whose branch skips the side no invocation of a subgroup
// takes, about 100 instructions on the common path against 179.
Id f64_mul_branching(Soft64& s, Id a, Id b);

// Comparisons (OpFOrdEqual ... OpFOrdGreaterThanEqual, OpFUnordEqual ... OpFUnordNotEqual:
// ordered ones false with a NaN, unordered ones true; -0 == +0) and classes, as bools.
Id f64_compare(Soft64& s, spv::Op op, Id a, Id b);
Id f64_is_nan(Soft64& s, Id a);
Id f64_is_inf(Soft64& s, Id a);

// GLSL.std.450 Floor, Ceil, Trunc, RoundEven, Fract (x - floor x), FSign (±1, ±0, NaN
// kept), FMin / FMax (the other operand where one is NaN), Ldexp (a u32 holding an s32
// exponent; overflow to ±inf and underflow through the subnormals rounded once).
Id f64_floor(Soft64& s, Id a);
Id f64_ceil(Soft64& s, Id a);
Id f64_trunc(Soft64& s, Id a);
Id f64_round_even(Soft64& s, Id a);
Id f64_fract(Soft64& s, Id a);
Id f64_sign(Soft64& s, Id a);
Id f64_min(Soft64& s, Id a, Id b);
Id f64_max(Soft64& s, Id a, Id b);
Id f64_ldexp(Soft64& s, Id a, Id exponent);

// Conversions (OpFConvert, OpConvertSToF, OpConvertUToF, OpConvertFToS, OpConvertFToU).
// f32 operands and results are float-typed ids (narrower floats live in f32 registers); to
// f32 and from 64-bit integers, round to nearest even; to integers, truncate toward zero for
// values the caller keeps in range (emit_types.cpp clamps first).
Id f64_from_f32(Soft64& s, Id x);
Id f64_to_f32(Soft64& s, Id a);
Id f64_from_int(Soft64& s, Id x, int bits, bool is_signed);  // bits 32 (a u32) or 64 (a uvec2)
Id f64_to_int(Soft64& s, Id a, int bits, bool is_signed);    // a u32 or a uvec2

}  // namespace nxv::codegen::soft
