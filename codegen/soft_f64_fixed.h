// Emulated f64's exponentials and logarithms in fixed point: where every f64 step costs a
// hundred or more 32-bit instructions, these work on 64-bit integer significands instead and
// round once.
#pragma once

#include "codegen/soft64.h"

namespace nxv::codegen::soft {

// On soft64.h's uvec2 form, for every input: a NaN comes out as itself, ±inf and the
// overflow and underflow ranges give what IEEE gives (subnormal results rounded once).
// Errors, measured over the f64 math sweep (docs/math-accuracy.md): under 0.52 ulp.
// e^x 2^scale (scale 0 or -1).
Id f64_exp(Soft64& s, Id x, int scale = 0);
// e^x - 1.
Id f64_expm1(Soft64& s, Id x);
// 1 / (1 + e^-x).
Id f64_sigmoid(Soft64& s, Id x);
Id f64_sinh(Soft64& s, Id x);
Id f64_cosh(Soft64& s, Id x);
Id f64_tanh(Soft64& s, Id x);
// The natural logarithm: -inf at ±0, NaN below 0; and log(1 + x).
Id f64_log(Soft64& s, Id x);
Id f64_log1p(Soft64& s, Id x);

}  // namespace nxv::codegen::soft
