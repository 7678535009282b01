// The math library: transcendental functions as straight-line SPIR-V from arithmetic,
// for the float widths GLSL.std.450 has no instruction for (Vulkan gives Exp, Log, Sin, ...
// only 16- and 32-bit forms), for the f32 functions GLSL lacks (expm1, log1p, cbrt, erf,
// erfc, erf_inv) and for those drivers get wrong in f32 (the inverse trig/hyperbolics,
// atan2; see emit_elementwise.cpp). One implementation serves both widths; the reductions and
// polynomial lengths are chosen for f64 (fdlibm and Cephes are the models), which makes
// them more than accurate enough at f32.
//
// Accuracy, measured per function over a sweep by unit_tests/codegen_math_test.cpp, is
// tabulated in docs/math-accuracy.md: exp and expm1 within 1 ulp (their last step is
// compensated), the others within 0.7-3 ulp, erfc 5.2 (Cody's rational approximations), pow
// within 2 + |y log x| ulp with exactly rounded products for integer exponents up to 64.
// sin and cos reduce exactly below 2^20 pi/2 (Cody-Waite with a three-part pi/2); beyond, an
// exact remainder by 2 pi keeps results in range.
#include <cmath>
#include <functional>
#include <set>

#include "codegen/emitter.h"

namespace nxv::codegen {

using ir::DType;

namespace {

// ln2 = hi + lo with hi short enough that k * hi is exact: per width (fdlibm's e_exp, e_expf).
constexpr double kLn2Hi = 6.93147180369123816490e-01, kLn2Lo = 1.90821492927058770002e-10;
constexpr double kLn2HiF = 6.9313812256e-01, kLn2LoF = 9.0580006145e-06;
constexpr double kLog2e = 1.44269504088896338700e+00;
// (e^r - 1) / r on |r| <= ln2/2: Chebyshev fits (mpmath.chebyfit), relative error of r Q(r)
// 2.4e-17 (f64) and 1.2e-8 (f32) with these coefficients rounded to double.
const std::vector<double> kExpm1Q64 = {1.0,
                                       0.5000000000000006,
                                       0.1666666666666667,
                                       0.041666666666573066,
                                       0.008333333333326136,
                                       0.001388888893251478,
                                       0.00019841269874820627,
                                       2.480150431378554e-05,
                                       2.7557255400206422e-06,
                                       2.7626371065696354e-07,
                                       2.5105217004720745e-08};
const std::vector<double> kExpm1Q32 = {1.00000001077804,     0.500000001346581,     0.1666650519575811,
                                       0.041666464925285904, 0.008369155667697397, 0.0013933649996309251};
// pi/2 as a double-double.
constexpr double kPio2Hi = 1.57079632679489655800e+00, kPio2Lo = 6.12323399573676603587e-17;
constexpr double kPio2_1 = 1.57079632673412561417e+00, kPio2_2 = 6.07710050630396597660e-11,
                 kPio2_3 = 2.02226624871116645580e-21;
constexpr double kPi = 3.14159265358979311600e+00, kPio2 = 1.57079632679489655800e+00,
                 kPio4 = 7.85398163397448278999e-01;
constexpr double kTwoOverSqrtPi = 1.12837916709551255856e+00, kOneOverSqrtPi = 5.64189583547756279280e-01;

struct M {
  Emitter& e;
  DType t;
  std::function<Id(Id, Id)> rem;  // exact fmod (Emitter::float_rem)
  spirv::Builder& b() { return e.b; }
  int bits() { return Emitter::register_bits(t); }
  bool wide() { return bits() == 64; }
  Id rt() { return e.reg_type(t); }
  Id it() { return b().type_int(bits()); }
  Id c(double v) { return b().const_float(bits(), v); }
  Id add(Id a, Id x) { return b().op(spv::OpFAdd, rt(), {a, x}); }
  Id sub(Id a, Id x) { return b().op(spv::OpFSub, rt(), {a, x}); }
  Id mul(Id a, Id x) { return b().op(spv::OpFMul, rt(), {a, x}); }
  Id div(Id a, Id x) { return b().op(spv::OpFDiv, rt(), {a, x}); }
  Id neg(Id a) { return b().op(spv::OpFNegate, rt(), {a}); }
  Id fma(Id a, Id x, Id y) { return b().ext(GLSLstd450Fma, rt(), {a, x, y}); }
  Id abs(Id a) { return b().ext(GLSLstd450FAbs, rt(), {a}); }
  Id floor(Id a) { return b().ext(GLSLstd450Floor, rt(), {a}); }
  Id sqrt(Id a) { return b().ext(GLSLstd450Sqrt, rt(), {a}); }
  Id cmp(spv::Op op, Id a, Id x) { return b().op(op, e.boolean(), {a, x}); }
  Id lt(Id a, Id x) { return cmp(spv::OpFOrdLessThan, a, x); }
  Id le(Id a, Id x) { return cmp(spv::OpFOrdLessThanEqual, a, x); }
  Id gt(Id a, Id x) { return cmp(spv::OpFOrdGreaterThan, a, x); }
  Id ge(Id a, Id x) { return cmp(spv::OpFOrdGreaterThanEqual, a, x); }
  Id eq(Id a, Id x) { return cmp(spv::OpFOrdEqual, a, x); }
  Id nan(Id a) { return b().op(spv::OpIsNan, e.boolean(), {a}); }
  Id inf(Id a) { return b().op(spv::OpIsInf, e.boolean(), {a}); }
  Id or_(Id a, Id x) { return b().op(spv::OpLogicalOr, e.boolean(), {a, x}); }
  Id and_(Id a, Id x) { return b().op(spv::OpLogicalAnd, e.boolean(), {a, x}); }
  Id sel(Id cond, Id a, Id x) { return e.b_select(rt(), cond, a, x); }
  Id bits_of(Id a) { return b().op(spv::OpBitcast, it(), {a}); }
  Id from_bits(Id i) { return b().op(spv::OpBitcast, rt(), {i}); }
  Id k(uint64_t v) { return b().const_int(bits(), v); }
  Id sign_bit(Id a) { return b().op(spv::OpSLessThan, e.boolean(), {bits_of(a), k(0)}); }
  Id copysign(Id mag, Id sign_of) { return sel(sign_bit(sign_of), neg(abs(mag)), abs(mag)); }
  // An integral float to a 32-bit integer register (what Ldexp takes).
  Id to_i32(Id integral) { return b().op(spv::OpConvertFToS, e.u32(), {integral}); }
  Id ldexp(Id x, Id n32) { return b().ext(GLSLstd450Ldexp, rt(), {x, n32}); }
  // An operation whose rounding the algorithm depends on: NoContraction keeps drivers from
  // fusing or reassociating it (NVIDIA's compiler otherwise folds (1 + x) - 1 to x).
  Id exact(Id v) {
    b().decorate(v, spv::DecorationNoContraction);
    return v;
  }
  // c[0] + x (c[1] + x (c[2] + ...)).
  Id poly(Id x, const std::vector<double>& coeffs) {
    Id acc = c(coeffs.back());
    for (size_t i = coeffs.size() - 1; i-- > 0;) acc = fma(acc, x, c(coeffs[i]));
    return acc;
  }
  // 1/n! for n = 0..count-1, the Taylor coefficients of exp.
  static std::vector<double> inverse_factorials(int count) {
    std::vector<double> r(size_t(count), 1.0);
    for (int i = 1; i < count; ++i) r[size_t(i)] = r[size_t(i - 1)] / i;
    return r;
  }
  double max_log() { return wide() ? 709.782712893383973096 : 88.7228391116729996; }
  double min_log() { return wide() ? -745.1332191019412 : -103.97208; }  // below: 0 even as a subnormal
  double ln2_hi() { return wide() ? kLn2Hi : kLn2HiF; }
  double ln2_lo() { return wide() ? kLn2Lo : kLn2LoF; }

  // x = k ln2 + r, |r| <= ln2/2, and e^r - 1 kept apart from the 1 so that expm1 does not lose
  // it to cancellation. In f64, r is r + r_lo (the reduction's rounding error carried on) and
  // e^r - 1 = r + tail, tail = r_lo + r^2 P(r): exp adds the 1 compensated (e_plus_one), so
  // its only rounding of consequence is the last one (under 0.51 ulp; exp(1) is e correctly
  // rounded). In f32, e^r - 1 = r Q(r) is accurate enough alone.
  struct Reduced {
    Id k;  // 32-bit; clamped where x is out of range (its result is replaced there)
    Id r;
    Id tail;  // f64: e^r - 1 - r; f32: 0 (r holds all of e^r - 1)
    Id em;    // e^r - 1, rounded
  };
  // x is clamped to a little beyond where e^x overflows or underflows, where 2^k (1 + e^r - 1)
  // still overflows or underflows by itself: no tests for those ranges (f64 arithmetic is
  // what limits f64 kernels on GPUs). A NaN comes out of the clamp unspecified: callers
  // restore it.
  Reduced reduce_exp(Id x) {
    x = b().ext(GLSLstd450FClamp, rt(), {x, c(min_log() - 1), c(max_log() + 2)});
    Id kf = floor(fma(x, c(kLog2e), c(0.5)));
    Id r_hi = fma(kf, c(-ln2_hi()), x);  // exact: k ln2_hi has trailing zeros, and x is near it
    if (!wide()) {
      Id r = fma(kf, c(-ln2_lo()), r_hi);
      Id em = mul(r, poly(r, kExpm1Q32));
      return {to_i32(kf), em, c(0), em};
    }
    Id lo = mul(kf, c(ln2_lo()));
    Id r = exact(sub(r_hi, lo));
    Id r_lo = exact(sub(exact(sub(r_hi, r)), lo));
    std::vector<double> p(kExpm1Q64.begin() + 1, kExpm1Q64.end());  // (e^r - 1 - r) / r^2
    Id tail = fma(mul(r, r), poly(r, p), r_lo);
    // r = 0 only where x is ±0 (then tail = 0 too): r itself keeps expm1(-0) = -0.
    return {to_i32(kf), r, tail, sel(eq(r, c(0)), r, exact(add(r, tail)))};
  }
  // 1 + e^r - 1 with one rounding of consequence: 1 + r split exactly into s + err (Fast2Sum,
  // |r| < 1), the small parts added to err first.
  Id e_plus_one(const Reduced& red) {
    if (!wide()) return add(c(1), red.em);
    Id s = exact(add(c(1), red.r));
    Id err = exact(add(exact(sub(c(1), s)), red.r));
    return exact(add(s, exact(add(err, red.tail))));
  }
  // 2^n, for n in the normal exponent range: the exponent field alone (no ldexp, which
  // drivers expand into range checks), built in 32-bit words (GPUs emulate 64-bit integers).
  Id pow2(Id n32) {
    const int bias = wide() ? 1023 : 127, shift = wide() ? 20 : 23;
    Id field = b().op(spv::OpShiftLeftLogical, e.u32(), {iadd(n32, i32(bias)), e.u32c(uint32_t(shift))});
    if (!wide()) return from_bits(field);
    Id words = b().op(spv::OpCompositeConstruct, b().type_vector(e.u32(), 2), {e.u32c(0), field});  // little-endian: high word second
    return b().op(spv::OpBitcast, rt(), {words});
  }
  Id i32(int32_t v) { return e.u32c(uint32_t(v)); }
  Id iadd(Id a, Id x) { return b().op(spv::OpIAdd, e.u32(), {a, x}); }
  // v 2^(k + extra) in two steps, each factor normal, so that a subnormal result is rounded once.
  Id scale2(Id v, Id k32, int extra) {
    Id half = b().op(spv::OpShiftRightArithmetic, e.u32(), {k32, e.u32c(1)});
    Id rest = iadd(b().op(spv::OpISub, e.u32(), {k32, half}), i32(extra));
    return mul(mul(v, pow2(half)), pow2(rest));
  }
  // e^x 2^scale: a negative scale gives e^x / 2^-scale where e^x alone would overflow.
  Id exp(Id x, int scale = 0) {
    Reduced red = reduce_exp(x);
    return sel(nan(x), x, scale2(e_plus_one(red), red.k, scale));
  }

  // e^x - 1 = 2^k (e^r - 1 - (2^-k - 1)): where 2^-k - 1 is exact (-1 <= k <= significand bits)
  // the only rounding is that difference's (fdlibm's s_expm1), and -0 stays -0 at k = 0;
  // elsewhere e^x - 1 loses nothing.
  // In f64, r + (1 - 2^-k) is summed exactly (TwoSum) and the tail added before the one
  // rounding of consequence.
  Id expm1_near(const Reduced& red) {
    Id minus_k = b().op(spv::OpSNegate, e.u32(), {red.k});
    if (!wide()) return mul(sub(red.em, sub(pow2(minus_k), c(1))), pow2(red.k));
    Id d = sub(c(1), pow2(minus_k));
    Id s = exact(add(red.r, d));
    Id bb = exact(sub(s, red.r));
    Id err = exact(add(exact(sub(red.r, exact(sub(s, bb)))), exact(sub(d, bb))));
    Id v = mul(exact(add(s, exact(add(err, red.tail)))), pow2(red.k));
    return sel(eq(red.r, c(0)), red.r, v);  // ±0 (x = ±0) stays itself
  }
  Id expm1(Id x) {
    Reduced red = reduce_exp(x);
    Id near = expm1_near(red);
    Id far = sub(scale2(e_plus_one(red), red.k, 0), c(1));
    Id in_near = b().op(spv::OpLogicalAnd, e.boolean(),
                        {b().op(spv::OpSGreaterThanEqual, e.boolean(), {red.k, i32(-1)}),
                         b().op(spv::OpSLessThanEqual, e.boolean(), {red.k, i32(wide() ? 53 : 24)})});
    return sel(nan(x), x, sel(in_near, near, far));
  }

  // log x = e ln2 + log m, m in [sqrt(1/2), sqrt(2)), log m = 2 atanh((m-1)/(m+1)) as a series.
  Id log(Id x) {
    const int mant = wide() ? 52 : 23, bias = wide() ? 1023 : 127;
    // Subnormals: scale into the normal range first.
    Id tiny = lt(x, c(wide() ? 2.2250738585072014e-308 : 1.17549435e-38));
    Id xs = sel(tiny, mul(x, c(18014398509481984.0)), x);  // 2^54
    Id ebias = b().op(spv::OpISub, it(), {b().op(spv::OpShiftRightLogical, it(), {bits_of(xs), k(uint64_t(mant))}), k(uint64_t(bias - 1))});
    Id m = from_bits(b().op(spv::OpBitwiseOr, it(), {b().op(spv::OpBitwiseAnd, it(), {bits_of(xs), k((uint64_t(1) << mant) - 1)}),
                                                      k(uint64_t(bias - 1) << mant)}));  // [0.5, 1)
    Id ef = b().op(spv::OpConvertSToF, rt(), {ebias});
    ef = sel(tiny, sub(ef, c(54)), ef);
    Id small = lt(m, c(0.70710678118654752440));
    m = sel(small, add(m, m), m);
    ef = sel(small, sub(ef, c(1)), ef);
    Id f = div(sub(m, c(1)), add(m, c(1)));
    Id s = mul(f, f);
    std::vector<double> coeffs;
    for (int n = 0; n < (wide() ? 12 : 6); ++n) coeffs.push_back(2.0 / (2 * n + 1));
    Id logm = mul(f, poly(s, coeffs));
    Id v = add(mul(ef, c(ln2_hi())), fma(ef, c(ln2_lo()), logm));
    v = sel(eq(x, c(0)), c(-INFINITY), v);
    v = sel(lt(x, c(0)), c(NAN), v);
    v = sel(eq(x, c(INFINITY)), x, v);
    return sel(nan(x), x, v);
  }

  Id log1p(Id x) {
    // log(u) * x / (u - 1) with u = 1 + x cancels the rounding of u (Goldberg).
    Id u = exact(add(c(1), x));
    // (x / (u - 1) first: near 1, where log(u) * x overflows for x near the largest finite)
    Id v = mul(log(u), div(x, exact(sub(u, c(1)))));
    v = sel(eq(u, c(1)), x, v);
    return sel(eq(x, c(INFINITY)), x, v);
  }

  Id sinh(Id x) {
    Id a = abs(x);
    Id em = expm1(a);
    Id near = mul(c(0.5), add(em, div(em, add(em, c(1)))));
    return copysign(sel(gt(a, c(22)), half_exp(a), near), x);
  }
  Id cosh(Id x) {
    Id a = abs(x);
    Id ea = exp(a);
    Id near = mul(c(0.5), add(ea, div(c(1), ea)));
    return sel(gt(a, c(22)), half_exp(a), near);
  }
  Id half_exp(Id a) { return exp(a, -1); }
  Id tanh(Id x) {
    Id a = abs(x);
    // 2a >= 0, and tanh is 1 beyond a = 22: the k <= 64 used take expm1's form near 0 alone
    // (past the significand, 2^-k - 1 rounds to -1, off by 2^-k of a value near 2^k).
    Id em = expm1_near(reduce_exp(add(a, a)));
    Id v = div(em, add(em, c(2)));
    return sel(nan(x), x, copysign(sel(gt(a, c(wide() ? 22 : 9)), c(1), v), x));
  }
  Id sigmoid(Id x) { return div(c(1), add(c(1), exp(neg(x)))); }

  Id cbrt(Id x) {
    // Tiny inputs are scaled by 2^(3k) first: the Newton step cubes y, which must not underflow.
    const double up = wide() ? 0x1p600 : 0x1p90, down = wide() ? 0x1p-200 : 0x1p-30;
    Id tiny = lt(abs(x), c(wide() ? 1e-290 : 1e-30));
    Id a = sel(tiny, mul(abs(x), c(up)), abs(x));
    Id y = exp(div(log(a), c(3)));
    y = sub(y, div(sub(mul(mul(y, y), y), a), mul(c(3), mul(y, y))));  // one Newton step
    y = sel(tiny, mul(y, c(down)), y);
    a = abs(x);
    y = sel(or_(eq(a, c(0)), inf(a)), a, y);
    return sel(nan(x), x, copysign(y, x));
  }

  // sin and cos of r in [-pi/4, pi/4].
  Id sin_kernel(Id r) {
    std::vector<double> coeffs;
    for (int n = 0; n < (wide() ? 9 : 5); ++n) coeffs.push_back((n % 2 ? -1.0 : 1.0) * M::inverse_factorials(2 * n + 2)[size_t(2 * n + 1)]);
    return mul(r, poly(mul(r, r), coeffs));
  }
  Id cos_kernel(Id r) {
    std::vector<double> coeffs;
    for (int n = 0; n < (wide() ? 10 : 6); ++n) coeffs.push_back((n % 2 ? -1.0 : 1.0) * M::inverse_factorials(2 * n + 1)[size_t(2 * n)]);
    return poly(mul(r, r), coeffs);
  }
  // x = q pi/2 + r: r and the quadrant q mod 4.
  std::pair<Id, Id> reduce(Id x) {
    // Beyond 2^20 pi/2 the three-part pi/2 is not exact enough (no Payne–Hanek here): an exact
    // remainder by the double nearest 2 pi keeps the results in range, not accurate.
    x = sel(gt(abs(x), c(1647099.0)), rem(x, c(6.28318530717958623200)), x);
    Id q = floor(fma(x, c(0.63661977236758134308), c(0.5)));
    Id r;
    if (wide()) {
      // fdlibm's 33-bit parts: q p1 is exact in a double, so an unfused Fma (lavapipe) is exact too.
      r = fma(q, c(-kPio2_1), x);
      r = fma(q, c(-kPio2_2), r);
      r = fma(q, c(-kPio2_3), r);
    } else {
      // 24-bit parts leave no room for an exact q p1 in a float: Dekker's product makes it
      // exact, and x - q p1 is then exact by Sterbenz's lemma.
      const float p1 = float(kPio2Hi);
      const double tail = (kPio2Hi - double(p1)) + kPio2Lo;
      const float p2 = float(tail), p3 = float(tail - double(p2));
      auto [ph, pl] = two_product(q, c(p1));
      r = exact(sub(exact(sub(x, ph)), pl));
      r = fma(q, c(-p2), r);
      r = fma(q, c(-p3), r);
    }
    // The quadrant from q mod 4 computed in floats (q may exceed 32 bits).
    Id q4 = sub(q, mul(c(4), floor(mul(q, c(0.25)))));
    return {r, b().op(spv::OpConvertFToU, e.u32(), {sel(nan(q4), c(0), q4)})};
  }
  Id quadrant_is(Id q, uint32_t v) { return b().op(spv::OpIEqual, e.boolean(), {q, e.u32c(v)}); }
  Id sin(Id x) {
    auto [r, q] = reduce(x);
    Id s = sin_kernel(r), co = cos_kernel(r);
    Id v = sel(quadrant_is(q, 0), s, sel(quadrant_is(q, 1), co, sel(quadrant_is(q, 2), neg(s), neg(co))));
    return sel(eq(x, c(0)), x, v);  // keeps -0.0
  }
  Id cos(Id x) {
    auto [r, q] = reduce(x);
    Id s = sin_kernel(r), co = cos_kernel(r);
    return sel(quadrant_is(q, 0), co, sel(quadrant_is(q, 1), neg(s), sel(quadrant_is(q, 2), neg(co), s)));
  }
  Id tan(Id x) {
    auto [r, q] = reduce(x);
    Id s = sin_kernel(r), co = cos_kernel(r);
    Id odd = b().op(spv::OpIEqual, e.boolean(), {b().op(spv::OpBitwiseAnd, e.u32(), {q, e.u32c(1)}), e.u32c(1)});
    Id v = sel(odd, neg(div(co, s)), div(s, co));
    return sel(eq(x, c(0)), x, v);
  }

  // atan on [0, inf]: 1/a above 1, then (t-1)/(t+1) above tan(pi/8), then the series.
  Id atan_pos(Id a) {
    Id big = gt(a, c(1));
    Id t = sel(big, div(c(1), a), a);
    Id mid = gt(t, c(0.41421356237309504880));
    Id u = sel(mid, div(sub(t, c(1)), add(t, c(1))), t);
    std::vector<double> coeffs;
    for (int n = 0; n < (wide() ? 22 : 10); ++n) coeffs.push_back((n % 2 ? -1.0 : 1.0) / (2 * n + 1));
    Id v = mul(u, poly(mul(u, u), coeffs));
    v = sel(mid, add(c(kPio4), v), v);
    return sel(big, sub(c(kPio2), v), v);
  }
  Id atan(Id x) { return sel(nan(x), x, copysign(atan_pos(abs(x)), x)); }
  Id asin(Id x) {
    Id v = atan(div(x, sqrt(mul(sub(c(1), x), add(c(1), x)))));
    return sel(gt(abs(x), c(1)), c(NAN), v);
  }
  Id acos(Id x) {
    Id v = mul(c(2), atan_pos(sqrt(div(sub(c(1), x), add(c(1), x)))));
    return sel(or_(gt(abs(x), c(1)), nan(x)), c(NAN), v);
  }
  // The magnitude of atan2(y >= 0, x) for finite, nonzero arguments.
  Id atan2_core(Id ay, Id x) {
    Id v = atan_pos(div(ay, abs(x)));
    return sel(sign_bit(x), sub(c(kPi), v), v);
  }

  Id asinh(Id x) {
    Id a = abs(x);
    Id huge = add(log(a), c(0.69314718055994530942));
    Id big = log(add(add(a, a), div(c(1), add(sqrt(fma(a, a, c(1))), a))));
    Id a2 = mul(a, a);
    Id small = log1p(add(a, div(a2, add(c(1), sqrt(add(c(1), a2))))));
    Id v = sel(gt(a, c(268435456.0)), huge, sel(gt(a, c(2)), big, small));
    return sel(nan(x), x, copysign(v, x));
  }
  Id acosh(Id x) {
    Id huge = add(log(x), c(0.69314718055994530942));
    Id big = log(sub(add(x, x), div(c(1), add(x, sqrt(fma(x, x, c(-1)))))));
    Id t = sub(x, c(1));
    Id small = log1p(add(t, sqrt(fma(t, t, add(t, t)))));
    Id v = sel(gt(x, c(268435456.0)), huge, sel(gt(x, c(2)), big, small));
    return sel(lt(x, c(1)), c(NAN), v);
  }
  Id atanh(Id x) {
    Id a = abs(x);
    Id small = mul(c(0.5), log1p(add(add(a, a), div(mul(add(a, a), a), sub(c(1), a)))));
    Id big = mul(c(0.5), log1p(div(add(a, a), sub(c(1), a))));
    Id v = sel(lt(a, c(0.5)), small, big);
    v = sel(eq(a, c(1)), c(INFINITY), v);
    v = sel(gt(a, c(1)), c(NAN), v);
    return sel(nan(x), x, copysign(v, x));
  }

  // x y = p + err exactly (Dekker's product with Veltkamp's split). Not through Fma: a
  // driver may implement it unfused (lavapipe does), which makes err 0; NoContraction keeps
  // the compiler from fusing these steps either.
  std::pair<Id, Id> two_product(Id x, Id y) {
    const double split = wide() ? 134217729.0 : 4097.0;  // 2^27 + 1, 2^12 + 1
    auto halves = [&](Id v) {
      Id p = exact(mul(v, c(split)));
      Id hi = exact(sub(p, exact(sub(p, v))));
      return std::make_pair(hi, exact(sub(v, hi)));
    };
    Id p = exact(mul(x, y));
    auto [xh, xl] = halves(x);
    auto [yh, yl] = halves(y);
    Id err = exact(add(exact(add(exact(add(exact(sub(exact(mul(xh, yh)), p)), exact(mul(xh, yl)))), exact(mul(xl, yh)))),
                       exact(mul(xl, yl))));
    // Huge operands overflow the split; their products are infinite anyway.
    return {p, sel(inf(p), c(0), sel(nan(err), c(0), err))};
  }
  // e^{-x^2} with the rounding error of x^2 carried along (it would cost |x|^2 ulp).
  Id exp_minus_square(Id a) {
    auto [s, err] = two_product(a, a);
    return mul(exp(neg(s)), sub(c(1), err));
  }
  // W. J. Cody's rational Chebyshev approximations (Math. Comp. 23, 1969; netlib specfun
  // CALERF): erf(x)/x on |x| <= 0.46875, e^{x^2} erfc(x) on (0.46875, 4] and, in 1/x^2,
  // beyond. Straight-line code, accurate to a few ulp in f64: f32 erf and erfc can then
  // be computed in f64 even inside reductions (a loop there would multiply past
  // lavapipe's loop limit).
  // (((c[n] z + c[0]) z + c[1]) z + ...) z, then + c[n-1]: CALERF's evaluation order.
  Id cody_numerator(Id z, const std::vector<double>& coeffs) {
    const size_t n = coeffs.size() - 1;
    Id acc = mul(c(coeffs[n]), z);
    for (size_t i = 0; i + 1 < n; ++i) acc = mul(add(acc, c(coeffs[i])), z);
    return add(acc, c(coeffs[n - 1]));
  }
  // ((z + d[0]) z + d[1]) z ... + d[n-1] (a monic denominator).
  Id cody_denominator(Id z, const std::vector<double>& coeffs) {
    Id acc = z;
    for (size_t i = 0; i + 1 < coeffs.size(); ++i) acc = mul(add(acc, c(coeffs[i])), z);
    return add(acc, c(coeffs.back()));
  }
  Id erf_small(Id x) {
    Id z = mul(x, x);
    return div(mul(x, cody_numerator(z, {3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02,
                                         3.20937758913846947e03, 1.85777706184603153e-1})),
               cody_denominator(z, {2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03,
                                    2.84423683343917062e03}));
  }
  // erfc(a) for a > 0.46875 (0 where it underflows).
  Id erfc_tail(Id a) {
    Id mid = div(cody_numerator(a, {5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01,
                                    2.98635138197400131e02, 8.81952221241769090e02, 1.71204761263407058e03,
                                    2.05107837782607147e03, 1.23033935479799725e03, 2.15311535474403846e-8}),
                 cody_denominator(a, {1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02,
                                      1.62138957456669019e03, 3.29079923573345963e03, 4.36261909014324716e03,
                                      3.43936767414372164e03, 1.23033935480374942e03}));
    Id z = div(c(1), mul(a, a));
    Id far = div(mul(z, cody_numerator(z, {3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1,
                                           1.60837851487422766e-2, 6.58749161529837803e-4, 1.63153871373020978e-2})),
                 cody_denominator(z, {2.56852019228982242e00, 1.87295284992346047e00, 5.27905102951428412e-1,
                                      6.05183413124413191e-2, 2.33520497626869185e-3}));
    far = div(sub(c(kOneOverSqrtPi), far), a);
    // beyond this erfc underflows (CALERF's XBIG for the width)
    const double big = wide() ? 26.543 : 9.194;
    Id v = mul(exp_minus_square(a), sel(le(a, c(4)), mid, far));
    return sel(lt(a, c(big)), v, c(0));
  }
  Id erf(Id x) {
    Id a = abs(x);
    Id v = sel(le(a, c(0.46875)), erf_small(x), copysign(sub(c(1), erfc_tail(a)), x));
    return sel(nan(x), x, v);
  }
  Id erfc(Id x) {
    Id a = abs(x);
    Id pos = sel(le(a, c(0.46875)), sub(c(1), erf_small(a)), erfc_tail(a));
    Id v = sel(sign_bit(x), sub(c(2), pos), pos);
    return sel(nan(x), x, v);
  }
  // Giles' single-precision approximation of erf_inv(|x|) from w = -log(1 - x^2), by
  // Horner's rule, fused, or rounded at each step as Complex.erf_inv (Nx.BinaryBackend's)
  // computes it.
  Id giles(Id w, bool fused) {
    auto horner = [&](Id t, const std::vector<double>& coeffs) {
      if (fused) return poly(t, coeffs);
      Id acc = c(coeffs.back());
      for (size_t i = coeffs.size() - 1; i-- > 0;) acc = add(mul(acc, t), c(coeffs[i]));
      return acc;
    };
    Id central = horner(sub(w, c(2.5)), {1.50140941, 0.246640727, -0.00417768164, -0.00125372503, 0.00021858087,
                                         -4.39150654e-06, -3.5233877e-06, 3.43273939e-07, 2.81022636e-08});
    Id tail = horner(sub(sqrt(w), c(3)), {2.83297682, 1.00167406, 0.00943887047, -0.0076224613, 0.00573950773,
                                           -0.00367342844, 0.00134934322, 0.000100950558, -0.000200214257});
    return sel(lt(w, c(5)), central, tail);
  }
  // The approximation, then Newton steps on erf (on erfc in the tails, where 1 - |x| is
  // exact and erf(y) near 1 is not); with no steps, Complex.erf_inv's value.
  Id erf_inv(Id x, int newton_steps, bool fused) {
    Id a = abs(x);
    Id w = neg(log(mul(sub(c(1), a), add(c(1), a))));
    Id y = mul(giles(w, fused), a);
    for (int i = 0; i < newton_steps; ++i) {
      Id resid = sel(gt(a, c(0.5)), sub(erfc(y), sub(c(1), a)), sub(a, erf(y)));
      Id deriv = mul(c(kTwoOverSqrtPi), exp(neg(mul(y, y))));
      y = add(y, div(resid, deriv));
    }
    y = sel(eq(a, c(1)), c(INFINITY), y);
    y = sel(gt(a, c(1)), c(NAN), y);
    y = sel(eq(a, c(0)), a, y);
    return sel(nan(x), x, copysign(y, x));
  }

  // |x|^y for finite x > 0: exact repeated squaring for small integer y (x * x is what Nx
  // users write x ** 2 for; GLSL's Pow is exp2(y log2 x), inexact even for 1.5 ** 2), else
  // exp(y log x) with the product's rounding error carried into the exponential (f64), or
  // GLSL's Pow (f32, within its bound of the correctly rounded result).
  Id pow_pos(Id ax, Id y) {
    Id general;
    if (wide()) {
      auto [p, perr] = two_product(y, log(ax));
      general = mul(exp(p), add(c(1), perr));
    } else {
      general = b().ext(GLSLstd450Pow, rt(), {ax, y});
    }
    Id ay = abs(y);
    Id small_int = and_(eq(floor(ay), ay), le(ay, c(64)));
    Id n = b().op(spv::OpConvertFToU, e.u32(), {sel(small_int, ay, c(0))});
    Id r = c(1), base = ax;
    for (uint32_t bit = 1; bit <= 64; bit <<= 1) {
      Id set = b().op(spv::OpINotEqual, e.boolean(), {b().op(spv::OpBitwiseAnd, e.u32(), {n, e.u32c(bit)}), e.u32c(0)});
      r = sel(set, mul(r, base), r);
      base = mul(base, base);
    }
    r = sel(sign_bit(y), div(c(1), r), r);
    // x ** 0.5 is a square root (Nx.LinAlg.norm's): the device's sqrt, exact where it is
    // correctly rounded, as the C library's pow is.
    general = sel(eq(y, c(0.5)), sqrt(ax), general);
    return sel(small_int, r, general);
  }
};

}  // namespace

bool Emitter::math_library_has(const std::string& op) {
  static const std::set<std::string> ops = {"exp",  "expm1", "log",   "log1p", "sigmoid", "cos",  "sin",
                                            "tan",  "cosh",  "sinh",  "tanh",  "acos",    "asin", "atan",
                                            "acosh", "asinh", "atanh", "cbrt", "erf",     "erfc", "erf_inv"};
  return ops.count(op) > 0;
}

Id Emitter::math_unary(const std::string& op, Id x, DType t, std::optional<DType> remainder_type) {
  const DType rem_t = remainder_type.value_or(t);
  M m{*this, t, [&](Id a, Id p) { return convert(float_rem(convert(a, t, rem_t), convert(p, t, rem_t), rem_t), rem_t, t); }};
  if (op == "exp") return m.exp(x);
  if (op == "expm1") return m.expm1(x);
  if (op == "log") return m.log(x);
  if (op == "log1p") return m.log1p(x);
  if (op == "sigmoid") return m.sigmoid(x);
  if (op == "sin") return m.sin(x);
  if (op == "cos") return m.cos(x);
  if (op == "tan") return m.tan(x);
  if (op == "sinh") return m.sinh(x);
  if (op == "cosh") return m.cosh(x);
  if (op == "tanh") return m.tanh(x);
  if (op == "asin") return m.asin(x);
  if (op == "acos") return m.acos(x);
  if (op == "atan") return m.atan(x);
  if (op == "asinh") return m.asinh(x);
  if (op == "acosh") return m.acosh(x);
  if (op == "atanh") return m.atanh(x);
  if (op == "cbrt") return m.cbrt(x);
  if (op == "erf") return m.erf(x);
  if (op == "erfc") return m.erfc(x);
  return m.erf_inv(x, m.wide() ? 3 : 1, true);
}

Id Emitter::math_erf_inv_as_binary_backend(Id x, DType t) { return M{*this, t, nullptr}.erf_inv(x, 0, false); }
Id Emitter::math_pow_magnitude(Id ax, Id y, DType t) { return M{*this, t, nullptr}.pow_pos(ax, y); }
Id Emitter::math_atan2_magnitude(Id ay, Id x, DType t) { return M{*this, t, nullptr}.atan2_core(ay, x); }

}  // namespace nxv::codegen
