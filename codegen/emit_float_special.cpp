// fmod, pow and atan2 with C99 Annex F special cases (what Nx gets from
// Erlang's :math and C), wrapped around a core that is only trusted for
// finite, "ordinary" arguments.
#include <cmath>
#include <tuple>
#include <utility>

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
  // A subnormal a as the zero of its sign, on the bits (exponent field zero). A driver that
  // flushes subnormals may flush an operand in one comparison and not in another (NVIDIA's f32
  // pow(inf, -2^-149) took y < 0 as false and y == 0 as false too, and gave inf): code whose
  // special cases compare an operand several times flushes it once, first.
  Id flush_subnormal(Id a) {
    const int bits = Emitter::register_bits(t);
    const uint64_t sign = 1ull << (bits - 1), exponent = bits == 64 ? 0x7FF0000000000000ull : 0x7F800000ull;
    Id it = e.b.type_int(bits);
    Id v = e.b.op(spv::OpBitcast, it, {a});
    Id subnormal = e.b.op(spv::OpIEqual, e.boolean(), {e.b.op(spv::OpBitwiseAnd, it, {v, e.b.const_int(bits, exponent)}),
                                                        e.b.const_int(bits, 0)});
    Id zero = e.b.op(spv::OpBitcast, rt(), {e.b.op(spv::OpBitwiseAnd, it, {v, e.b.const_int(bits, sign)})});
    return e.b.op(spv::OpSelect, rt(), {subnormal, zero, a});
  }
  // Every value of t of magnitude >= 2^p (p its significand bits: 11 f16, 8 bf16, 24 f32,
  // 53 f64; registers hold values of t) is an even integer. Decided by magnitude first, so
  // that no huge value reaches Fract or Trunc, whose results drivers do not all get right
  // there (lavapipe's constant folder made f16 pow(-0.5, 4096) -0).
  Id big(Id y) {
    const double p = t == DType::F16 ? 0x1p11 : t == DType::BF16 ? 0x1p8 : t == DType::F64 ? 0x1p53 : 0x1p24;
    return cmp(spv::OpFOrdGreaterThanEqual, abs(y), c(p));
  }
  Id odd(Id y) {
    return and_(not_(big(y)), eq(e.b.ext(GLSLstd450Fract, rt(), {e.b.op(spv::OpFMul, rt(), {y, c(0.5)})}), c(0.5)));
  }
  Id integral(Id y) { return or_(and_(big(y), not_(inf(y))), eq(e.truncate(y, t), y)); }
};
}  // namespace

Id Emitter::truncate(Id x, DType t) {
  Id rt = reg_type(t);
  if (register_bits(t) != 64) return b.ext(GLSLstd450Trunc, rt, {x});
  Id negative = b.op(spv::OpFOrdLessThan, boolean(), {x, constant(t, 0)});
  return b.op(spv::OpSelect, rt, {negative, b.ext(GLSLstd450Ceil, rt, {x}), b.ext(GLSLstd450Floor, rt, {x})});
}

namespace {
// Integer arithmetic on the bit patterns of one float type (w bits, m mantissa bits).
struct Bits {
  Emitter& e;
  int w, m;
  Id it;
  Bits(Emitter& em, DType t) : e(em), w(Emitter::register_bits(t)), m(w == 64 ? 52 : 23), it(em.b.type_int(w)) {}
  Id k(uint64_t v) { return e.b.const_int(w, v); }
  Id op(spv::Op o, Id a, Id c) { return e.b.op(o, it, {a, c}); }
  Id cmp(spv::Op o, Id a, Id c) { return e.b.op(o, e.boolean(), {a, c}); }
  Id sel(Id cond, Id a, Id c) { return e.b_select(it, cond, a, c); }
  // Index of the highest set bit (FindUMsb is 32-bit only in Vulkan); -1 for 0.
  Id msb(Id v) {
    if (w == 32) return e.b.ext(GLSLstd450FindUMsb, it, {v});
    Id hi = e.b.op(spv::OpUConvert, e.u32(), {op(spv::OpShiftRightLogical, v, k(32))});
    Id lo = e.b.op(spv::OpUConvert, e.u32(), {v});
    Id r32 = e.b_select(e.u32(), e.b.op(spv::OpINotEqual, e.boolean(), {hi, e.u32c(0)}),
                        e.b.op(spv::OpIAdd, e.u32(), {e.b.ext(GLSLstd450FindUMsb, e.u32(), {hi}), e.u32c(32)}),
                        e.b.ext(GLSLstd450FindUMsb, e.u32(), {lo}));
    return e.b.op(spv::OpSConvert, it, {r32});
  }
  // (mantissa with the implicit bit at position m, unbiased-ish exponent) of a nonzero magnitude.
  std::pair<Id, Id> split(Id a) {
    const uint64_t implicit = uint64_t(1) << m;
    Id ex = op(spv::OpShiftRightLogical, a, k(m));
    Id normal_m = op(spv::OpBitwiseOr, op(spv::OpBitwiseAnd, a, k(implicit - 1)), k(implicit));
    Id shift = op(spv::OpISub, k(m), msb(a));
    Id is_sub = cmp(spv::OpIEqual, ex, k(0));
    return {sel(is_sub, op(spv::OpShiftLeftLogical, a, shift), normal_m), sel(is_sub, op(spv::OpISub, k(1), shift), ex)};
  }
  // One step of the long division: subtract y's mantissa my when it fits (an exact zero stops it).
  std::pair<Id, Id> step(Id mx, Id my, Id zero) {
    Id diff = op(spv::OpISub, mx, my);
    Id fits = cmp(spv::OpSGreaterThanEqual, diff, k(0));
    Id exact = e.b.op(spv::OpLogicalAnd, e.boolean(), {fits, cmp(spv::OpIEqual, diff, k(0))});
    return {sel(fits, diff, mx), e.b.op(spv::OpLogicalOr, e.boolean(), {zero, exact})};
  }
  // The magnitude m·2^(ex - m) rebuilt as a normal or subnormal bit pattern (m nonzero).
  Id rebuild(Id mx, Id ex) {
    Id shift = op(spv::OpISub, k(m), msb(mx));
    mx = op(spv::OpShiftLeftLogical, mx, shift);
    ex = op(spv::OpISub, ex, shift);
    Id normal = op(spv::OpBitwiseOr, op(spv::OpISub, mx, k(uint64_t(1) << m)), op(spv::OpShiftLeftLogical, ex, k(m)));
    Id sub = op(spv::OpShiftRightLogical, mx, op(spv::OpISub, k(1), ex));
    return sel(cmp(spv::OpSGreaterThan, ex, k(0)), normal, sub);
  }
};
}  // namespace

// Exact fmod on the bit patterns (musl's algorithm): long division of the
// mantissas, one exponent step per iteration. OpFRem is x - y * trunc(x / y)
// in Vulkan, wildly wrong once x / y exceeds the mantissa (fmod(1e30, 7.25)).
Id Emitter::float_rem(Id x, Id y, DType t) {
  F f{*this, t};
  Bits z(*this, t);
  const int w = z.w, m = z.m;
  const uint64_t sign_mask = uint64_t(1) << (w - 1);
  Id ux = b.op(spv::OpBitcast, z.it, {x}), uy = b.op(spv::OpBitcast, z.it, {y});
  Id sx = z.op(spv::OpBitwiseAnd, ux, z.k(sign_mask));
  Id ax = z.op(spv::OpBitwiseAnd, ux, z.k(sign_mask - 1)), ay = z.op(spv::OpBitwiseAnd, uy, z.k(sign_mask - 1));
  // Not structured bindings: the lambdas below capture them, which clang before 16 rejects.
  Id mx0, ex, my, ey;
  std::tie(mx0, ex) = z.split(ax);
  std::tie(my, ey) = z.split(ay);
  // No division when the answer is x, ±0 or NaN: start at y's exponent so the loop does not run
  // (it would run for ~2^w steps on a zero x).
  // On the bits, so that a denormal y is not taken for 0 by a device that flushes denormals.
  const uint64_t exp_mask = ((uint64_t(1) << (w - 1 - m)) - 1) << m;
  Id invalid = f.or_(f.or_(z.cmp(spv::OpUGreaterThanEqual, ax, z.k(exp_mask)), z.cmp(spv::OpUGreaterThan, ay, z.k(exp_mask))),
                     z.cmp(spv::OpIEqual, ay, z.k(0)));
  Id trivial = f.or_(invalid, z.cmp(spv::OpULessThanEqual, ax, ay));
  Id e0 = z.sel(trivial, ey, ex);
  auto r = b.at_level(b.level_of({x, y}), [&] {
    return b.loop(
        {z.it, z.it, boolean()}, {mx0, e0, b.const_bool(false)},
        [&](const spirv::Builder::Values& s) {
          return b.op(spv::OpLogicalAnd, boolean(),
                      {z.cmp(spv::OpSGreaterThan, s[1], ey), b.op(spv::OpLogicalNot, boolean(), {s[2]})});
        },
        [&](const spirv::Builder::Values& s) {
          auto [mx, zero] = z.step(s[0], my, s[2]);
          return spirv::Builder::Values{z.op(spv::OpShiftLeftLogical, mx, z.k(1)), z.op(spv::OpISub, s[1], z.k(1)), zero};
        },
        // One trip per exponent step: split's exponents lie in [1 - m, 2^(w-1-m) - 2].
        (uint64_t(1) << (w - 1 - m)) + uint64_t(m));
  });
  auto [mx, zero] = z.step(r[0], my, r[2]);
  Id bits = z.sel(zero, z.k(0), z.rebuild(mx, r[1]));
  Id res = b.op(spv::OpBitcast, reg_type(t), {z.op(spv::OpBitwiseOr, bits, sx)});
  // |x| < |y|: x itself (including finite x rem ±inf); |x| == |y|: a zero with x's sign.
  res = f.sel(z.cmp(spv::OpULessThan, ax, ay), x, res);
  res = f.sel(z.cmp(spv::OpIEqual, ax, ay), b.op(spv::OpBitcast, reg_type(t), {sx}), res);
  return f.sel(invalid, f.c(NAN), res);
}

Id Emitter::float_pow(Id x, Id y, DType t) {
  F f{*this, t};
  // Emulated f64 keeps subnormals whatever the device's f64 would do (soft_f64.h).
  if (register_bits(t) == 64 ? !caps.emulate_f64 && !caps.preserve_denorms_f64 : !caps.preserve_denorms_f32) {
    x = f.flush_subnormal(x);
    y = f.flush_subnormal(y);
  }
  Id ax = f.abs(x);
  Id y_neg = f.lt(y, f.c(0));
  // |x|^y for the cases GLSL leaves undefined (|x| zero or infinite, y infinite).
  Id mag = math_pow_magnitude(ax, y, t);
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
  // The library's core at every width: GLSL's Atan2 is ~50 ulp off on lavapipe and NaN for
  // a subnormal y over 0.
  Id mag = math_atan2_magnitude(ay, x, t);
  mag = f.sel(f.inf(x), f.sel(x_neg, f.c(M_PI), f.c(0)), mag);
  mag = f.sel(f.inf(ay), f.sel(f.inf(x), f.sel(x_neg, f.c(3 * M_PI_4), f.c(M_PI_4)), f.c(M_PI_2)), mag);
  mag = f.sel(f.eq(ay, f.c(0)), f.sel(x_neg, f.c(M_PI), f.c(0)), mag);
  Id r = f.copysign(mag, y);
  return f.sel(f.or_(f.nan(x), f.nan(y)), f.c(NAN), r);
}

}  // namespace nxv::codegen
