// fmod, pow and atan2 with C99 Annex F special cases (what Nx gets from
// Erlang's :math and C), wrapped around a core that is only trusted for
// finite, "ordinary" arguments.
#include <cmath>

#include "codegen/emitter.h"

namespace nxv::codegen {

using ir::DType;

namespace {
// Predicates and selects on one float register type, to keep the case analysis readable.
struct F {
  Emitter& e;
  DType t;
  Id rt() { return e.reg_type(t); }
  Id c(double v) { return e.constant(t, v); }
  Id cmp(spv::Op op, Id a, Id b) { return e.b.op(op, e.boolean(), {a, b}); }
  Id eq(Id a, Id b) { return cmp(spv::OpFOrdEqual, a, b); }
  Id lt(Id a, Id b) { return cmp(spv::OpFOrdLessThan, a, b); }
  Id gt(Id a, Id b) { return cmp(spv::OpFOrdGreaterThan, a, b); }
  Id nan(Id a) { return e.b.op(spv::OpIsNan, e.boolean(), {a}); }
  Id inf(Id a) { return e.b.op(spv::OpIsInf, e.boolean(), {a}); }
  Id abs(Id a) { return e.b.ext(GLSLstd450FAbs, rt(), {a}); }
  Id neg(Id a) { return e.b.op(spv::OpFNegate, rt(), {a}); }
  Id and_(Id a, Id b) { return e.b.op(spv::OpLogicalAnd, e.boolean(), {a, b}); }
  Id or_(Id a, Id b) { return e.b.op(spv::OpLogicalOr, e.boolean(), {a, b}); }
  Id not_(Id a) { return e.b.op(spv::OpLogicalNot, e.boolean(), {a}); }
  Id sel(Id cond, Id a, Id b) { return e.select(t, cond, a, b); }
  Id sign_bit(Id a) {  // true for -0.0 and negative NaNs too
    Id it = e.b.type_int(Emitter::register_bits(t));
    return e.b.op(spv::OpSLessThan, e.boolean(), {e.b.op(spv::OpBitcast, it, {a}), e.b.const_int(Emitter::register_bits(t), 0)});
  }
  Id copysign(Id mag, Id sign_of) { return sel(sign_bit(sign_of), neg(abs(mag)), abs(mag)); }
  // y is an odd integer (finite; |y| >= 2^24 is always even in f32).
  Id odd(Id y) { return eq(e.b.ext(GLSLstd450Fract, rt(), {e.b.op(spv::OpFMul, rt(), {y, c(0.5)})}), c(0.5)); }
  Id integral(Id y) { return eq(e.b.ext(GLSLstd450Trunc, rt(), {y}), y); }
};
}  // namespace

Id Emitter::float_rem(Id x, Id y, DType t) {
  F f{*this, t};
  // OpFRem keeps the dividend's sign; a zero result must too, and a finite x rem ±inf is x.
  Id r = f.copysign(b.op(spv::OpFRem, reg_type(t), {x, y}), x);
  r = f.sel(f.and_(f.inf(y), f.not_(f.inf(x))), x, r);
  Id invalid = f.or_(f.or_(f.nan(x), f.nan(y)), f.or_(f.inf(x), f.eq(y, f.c(0))));
  return f.sel(invalid, f.c(NAN), r);
}

Id Emitter::float_pow(Id x, Id y, DType t) {
  F f{*this, t};
  Id ax = f.abs(x);
  Id y_neg = f.lt(y, f.c(0));
  // |x|^y for the cases GLSL leaves undefined (|x| zero or infinite, y infinite).
  Id mag = b.ext(GLSLstd450Pow, reg_type(t), {ax, y});
  mag = f.sel(f.eq(ax, f.c(0)), f.sel(y_neg, f.c(INFINITY), f.c(0)), mag);
  mag = f.sel(f.inf(ax), f.sel(y_neg, f.c(0), f.c(INFINITY)), mag);
  Id y_inf_mag = f.sel(f.eq(ax, f.c(1)), f.c(1), f.sel(f.lt(ax, f.c(1)), f.sel(y_neg, f.c(INFINITY), f.c(0)),
                                                          f.sel(y_neg, f.c(0), f.c(INFINITY))));
  mag = f.sel(f.inf(y), y_inf_mag, mag);
  // Negative x: odd integer powers are negative, non-integer powers of finite x < 0 are NaN.
  Id r = f.sel(f.and_(f.sign_bit(x), f.odd(y)), f.neg(mag), mag);
  Id nan_case = f.or_(f.or_(f.nan(x), f.nan(y)),
                      f.and_(f.and_(f.lt(x, f.c(0)), f.not_(f.inf(x))), f.not_(f.or_(f.integral(y), f.inf(y)))));
  r = f.sel(nan_case, f.c(NAN), r);
  return f.sel(f.or_(f.eq(y, f.c(0)), f.eq(x, f.c(1))), f.c(1), r);  // even for NaN operands
}

Id Emitter::float_atan2(Id y, Id x, DType t) {
  F f{*this, t};
  // The magnitude for |y|, then y's sign (atan2 is odd in y, signed zeros included).
  Id ay = f.abs(y);
  Id x_neg = f.sign_bit(x);  // -0.0 counts as negative: atan2(0, -0) = pi
  Id mag = b.ext(GLSLstd450Atan2, reg_type(t), {ay, x});
  mag = f.sel(f.inf(x), f.sel(x_neg, f.c(M_PI), f.c(0)), mag);
  mag = f.sel(f.inf(ay), f.sel(f.inf(x), f.sel(x_neg, f.c(3 * M_PI_4), f.c(M_PI_4)), f.c(M_PI_2)), mag);
  mag = f.sel(f.eq(ay, f.c(0)), f.sel(x_neg, f.c(M_PI), f.c(0)), mag);
  Id r = f.copysign(mag, y);
  return f.sel(f.or_(f.nan(x), f.nan(y)), f.c(NAN), r);
}

}  // namespace nxv::codegen
