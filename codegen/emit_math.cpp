// The math library: transcendental functions as straight-line SPIR-V from arithmetic,
// for the float widths GLSL.std.450 has no instruction for (Vulkan gives Exp, Log, Sin, ...
// only 16- and 32-bit forms), for the f32 functions GLSL lacks (expm1, log1p, cbrt, erf,
// erfc, erf_inv) and for those drivers get wrong in f32 (the inverse trig/hyperbolics,
// atan2; see emit_elementwise.cpp). fdlibm and Cephes are the models.
//
// In f64, each function ends in double-word arithmetic (a value carried as hi + lo): the
// argument reduction's rounding error is kept, the leading terms (x, 1 - x^2/2, e ln2 + f -
// f^2/2, the atan or pi/2 of a reduction) are added with error-free sums, products that
// matter are exact by Dekker's algorithm with Veltkamp's split (never Fma: lavapipe's is not
// always fused), quotients are corrected by their exact residual, and the polynomial's
// smaller terms are added to lo, so that the one rounding of consequence is the last. In
// emulated f64 (codegen/soft_f64.h), where Fma is the software one, fused by construction
// and the dearest operation, a product's error is one Fma and an error-free sum orders its
// operands by magnitude for Fast2Sum: the same exact errors, so the same bits, in fewer
// emulated operations. f32
// keeps the shorter single-rounding forms (a GPU computes it in f32; lavapipe computes f32
// in f64 through the f64 forms and rounds once).
//
// Accuracy, measured per function over a sweep by unit_tests/codegen_math_test.cpp, is
// tabulated in docs/math-accuracy.md: in f64 every function within 1 ulp (erfc's rational
// evaluated in double-words, erf_inv's last Newton step on double-word erf and erfc); pow
// within 2 + |y log x| ulp with exactly rounded products for integer exponents up to 64.
// sin and cos reduce exactly below 2^20 pi/2 (Cody-Waite with a three-part pi/2); beyond, an
// exact remainder by 2 pi keeps results in range.
#include <bit>
#include <cmath>
#include <functional>
#include <optional>
#include <set>

#include "codegen/emitter.h"
#include "codegen/exp2_table.h"
#include "codegen/soft_f64_fixed.h"

namespace nxv::codegen {

using ir::DType;

namespace {

// ln2 = hi + lo with hi short enough that k * hi is exact: per width (fdlibm's e_exp, e_expf).
constexpr double kLn2Hi = 6.93147180369123816490e-01, kLn2Lo = 1.90821492927058770002e-10;
constexpr double kLn2HiF = 6.9313812256e-01, kLn2LoF = 9.0580006145e-06;
constexpr double kLog2e = 1.44269504088896338700e+00;
// (e^r - 1) / r on |r| <= ln2/2: Chebyshev fits (mpmath.chebyfit), relative error of r Q(r)
// 1.2e-18 (f64; that of e^r - 1 + 1/2 too, expm1's k = 1) and 1.2e-8 (f32) with these
// coefficients rounded to double.
const std::vector<double> kExpm1Q64 = {1.0,
                                       0.5,
                                       0.1666666666666667,
                                       0.04166666666666667,
                                       0.008333333333326141,
                                       0.0013888888888883752,
                                       0.00019841269874800493,
                                       2.4801587325533363e-05,
                                       2.7557255425746435e-06,
                                       2.7557273661348637e-07,
                                       2.510520637395701e-08,
                                       2.0914679376583935e-09};
const std::vector<double> kExpm1Q32 = {1.00000001077804,     0.500000001346581,     0.1666650519575811,
                                       0.041666464925285904, 0.008369155667697397, 0.0013933649996309251};
// Emulated f64 e^x for erfc (M::reduce_exp_table): 2^(j/64) from
// codegen/exp2_table.h, ln2/64 = hi + lo with hi short enough that k * hi is exact for |k| < 2^17, and
// (e^r - 1 - r) / r^2 on |r| <= ln2/128 as a cubic (mpmath.chebyfit; r + r^2 Q(r) within
// 2^-57.6 of e^r - 1, relative to e^r, with these coefficients).
constexpr double kTableScale = 0x1.71547652b82fep+6, kTableLnHi = 0x1.62e42fefa0000p-7,
                 kTableLnLo = 0x1.cf79abc9e3b3ap-46;
const std::vector<double> kTableQ = {0x1.ffffffffff574p-2, 0x1.5555555555252p-3, 0x1.55556b3e385f1p-5,
                                     0x1.11111d9625013p-7};
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
  // Double-word arithmetic (hi + lo, |lo| at most half an ulp of hi where normalized): the
  // error-free sums of Knuth (TwoSum) and Dekker (Fast2Sum, |a| >= |x| or a = 0), and a
  // quotient of double-words with one correction by the exact residual.
  struct DW {
    Id hi, lo;
  };
  DW two_sum(Id a, Id x) {
    // Emulated: the larger magnitude first (a compare and two selects) and Fast2Sum, three
    // emulated additions instead of six; the error is the same exact one.
    if (soft_fma()) {
      Id first = ge(abs(a), abs(x));
      return fast_two_sum(sel(first, a, x), sel(first, x, a));
    }
    Id s = exact(add(a, x));
    Id bb = exact(sub(s, a));
    return {s, exact(add(exact(sub(a, exact(sub(s, bb)))), exact(sub(x, bb))))};
  }
  DW fast_two_sum(Id a, Id x) {
    Id s = exact(add(a, x));
    return {s, exact(add(exact(sub(a, s)), x))};
  }
  // (n_hi + n_lo) / (d_hi + d_lo): n_hi - q d_hi is exact (Sterbenz) and its rounding error
  // the product's, so the correction leaves an error of a few 2^-106.
  DW dw_div(Id n_hi, Id n_lo, Id d_hi, Id d_lo) {
    Id q = div(n_hi, d_hi);
    auto [p, pe] = two_product_finite(q, d_hi);
    Id res = add(sub(exact(sub(n_hi, p)), pe), sub(n_lo, mul(q, d_lo)));
    return {q, div(res, d_hi)};
  }
  Id round(const DW& v) { return exact(add(v.hi, v.lo)); }
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
  // rounded). In f32, e^r - 1 = r Q(r) is accurate enough alone. Emulated f64 takes
  // reduce_exp_table's form for erfc's double-words; its exp, expm1, sigmoid, sinh, cosh,
  // tanh, log and log1p are soft_f64_fixed.h's.
  struct Reduced {
    Id k;  // 32-bit; clamped where x is out of range (its result is replaced there)
    Id r;
    Id tail;  // f64: e^r - 1 - r; f32: 0 (r holds all of e^r - 1)
    Id em;    // e^r - 1, rounded
    Id tail_hi, tail_lo;  // f64: tail = r^2/2 (exact) + tail_lo, for expm1's double-word sums
    std::optional<DW> table = std::nullopt;  // reduce_exp_table's e^x / 2^k (the other fields unused)
  };
  // x is clamped to a little beyond where e^x overflows or underflows, where 2^k (1 + e^r - 1)
  // still overflows or underflows by itself: no tests for those ranges (f64 arithmetic is
  // what limits f64 kernels on GPUs). A NaN comes out of the clamp unspecified: callers
  // restore it.
  // exact_square: r^2/2 exact (expm1 and tanh, whose results are e^r - 1 itself); otherwise
  // tail is one double (e^r = 1 + r + tail), within 2^-55 of it.
  Reduced reduce_exp(Id x, bool exact_square = false) {
    x = b().ext(GLSLstd450FClamp, rt(), {x, c(min_log() - 1), c(max_log() + 2)});
    if (soft_fma() && !exact_square) return reduce_exp_table(x);
    Id kf = floor(fma(x, c(kLog2e), c(0.5)));
    Id r_hi = fma(kf, c(-ln2_hi()), x);  // exact: k ln2_hi has trailing zeros, and x is near it
    if (!wide()) {
      Id r = fma(kf, c(-ln2_lo()), r_hi);
      Id em = mul(r, poly(r, kExpm1Q32));
      return {to_i32(kf), em, c(0), em, c(0), c(0)};
    }
    Id lo = mul(kf, c(ln2_lo()));
    Id r = exact(sub(r_hi, lo));
    Id r_lo = exact(sub(exact(sub(r_hi, r)), lo));
    // tail = e^(r + r_lo) - 1 - r = r^2 Q(r) + e^r r_lo, Q = (e^r - 1 - r) / r^2 = q1 + r P(r)
    // (q1 = 1/2 here): r^2/2 exact (Dekker's square) as tail_hi, the rest small (r^3/6 and
    // below) as tail_lo, so that r + tail_hi + tail_lo carries e^r - 1 to about 2^-59.
    std::vector<double> p(kExpm1Q64.begin() + 2, kExpm1Q64.end());
    Id tail_hi, tail_lo, tail;
    if (exact_square) {
      auto [rr, rr_err] = two_square(r);
      tail_hi = mul(c(0.5), rr);
      tail_lo = add(fma(r_lo, r, r_lo), fma(rr, fma(r, poly(r, p), c(kExpm1Q64[1] - 0.5)), mul(c(0.5), rr_err)));
      tail = exact(add(tail_hi, tail_lo));
    } else {
      tail = fma(mul(r, r), fma(r, poly(r, p), c(kExpm1Q64[1])), fma(r_lo, r, r_lo));
      tail_hi = tail, tail_lo = c(0);
    }
    // r = 0 only where x is ±0 (then tail = 0 too): r itself keeps expm1(-0) = -0.
    return {to_i32(kf), r, tail, sel(eq(r, c(0)), r, exact(add(r, tail))), tail_hi, tail_lo};
  }
  // Emulated f64's e^x as a double-word (erfc's): Tang's table-driven
  // reduction, x = (64 m + j) ln2/64 + r with |r| <= ln2/128, e^x = 2^m 2^(j/64) (1 + u),
  // u = e^r - 1 = r + r^2 Q(r) of degree 3. With |r| that small the roundings of r, of u and
  // of 2^(j/64) u stay below 2^-58 of the result, so no error-free sums are needed for the
  // one rounding of consequence to be the last (under 0.53 ulp): 8 Fmas, 3 products and an
  // add where the reduction by ln2 takes 14 Fmas, 4 products and 9 adds. The table is 1 KiB
  // of constants (Builder::constant_words), which native f64 does without: the H200 keeps
  // such an array per invocation, and took 0.61 ms for the f64 chain that the reduction by
  // ln2 runs in 0.28 (bench/results/2026-11-30_h200_a31df7d_emulated-f64.md). Emulated
  // results are within the same bound as native f64's, but not always its bits.
  Reduced reduce_exp_table(Id x) {
    // Below 2^-60, e^x rounds to 1 (and 1/(1 + e^x) to 1/2): x as 0 keeps every step that
    // follows on zero or normal values, which the shorter emulated routines take.
    x = sel(lt(abs(x), c(0x1p-60)), c(0), x);
    NormalRange normal(b(), true);
    Id kf = floor(fma(x, c(kTableScale), c(0.5)));
    Id r = fma(kf, c(-kTableLnLo), fma(kf, c(-kTableLnHi), x));  // the inner one exact, as in reduce_exp
    Id u = fma(mul(r, r), poly(r, kTableQ), r);
    TableEntry t = table_entry(to_i32(kf));
    Reduced red{t.m, c(0), c(0), c(0), c(0), c(0)};
    red.table = DW{t.hi, fma(t.hi, u, t.lo)};  // 2^(j/64) u + its low part; lo times u is below 2^-59
    return red;
  }
  // k = 64 m + j: m, and 2^(j/64) = hi + lo from the table.
  struct TableEntry {
    Id m, hi, lo;
  };
  TableEntry table_entry(Id k) {
    Id row = b().op(spv::OpShiftLeftLogical, e.u32(), {b().op(spv::OpBitwiseAnd, e.u32(), {k, e.u32c(63)}), e.u32c(2)});
    Id table = b().constant_words(exp2_table_words());
    auto entry = [&](uint32_t word) {
      Id lo = b().table_word(table, iadd(row, e.u32c(word))), hi = b().table_word(table, iadd(row, e.u32c(word + 1)));
      return b().op(spv::OpBitcast, rt(), {b().op(spv::OpCompositeConstruct, b().type_vector(e.u32(), 2), {lo, hi})});
    };
    return {b().op(spv::OpShiftRightArithmetic, e.u32(), {k, e.u32c(6)}), entry(0), entry(2)};
  }
  // kExp2Table as little-endian words, hi then lo per row.
  static const std::vector<uint32_t>& exp2_table_words() {
    static const std::vector<uint32_t> words = [] {
      std::vector<uint32_t> w;
      for (const auto& row : kExp2Table)
        for (double v : row) {
          uint64_t bits = std::bit_cast<uint64_t>(v);
          w.push_back(uint32_t(bits));
          w.push_back(uint32_t(bits >> 32));
        }
      return w;
    }();
    return words;
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
    NormalRange general(b(), false);
    Id half = b().op(spv::OpShiftRightArithmetic, e.u32(), {k32, e.u32c(1)});
    Id rest = iadd(b().op(spv::OpISub, e.u32(), {k32, half}), i32(extra));
    return mul(mul(v, pow2(half)), pow2(rest));
  }
  // e^x 2^scale: a negative scale gives e^x / 2^-scale where e^x alone would overflow.
  Id exp(Id x, int scale = 0) {
    if (soft_fma()) return on_words([scale](Soft64& s, Id w) { return soft::f64_exp(s, w, scale); }, x);
    Reduced red = reduce_exp(x);
    return sel(nan(x), x, scale2(e_plus_one(red), red.k, scale));
  }

  // e^x - 1 = 2^k (e^r - 1 - (2^-k - 1)): where 2^-k - 1 is exact (-1 <= k <= significand bits)
  // the only rounding is that difference's (fdlibm's s_expm1), and -0 stays -0 at k = 0;
  // elsewhere e^x - 1 loses nothing.
  // In f64, r + (1 - 2^-k) + r^2/2 is summed exactly (TwoSum, Fast2Sum) and the rest of the
  // tail added before the one rounding of consequence.
  Id expm1_near(const Reduced& red) {
    Id minus_k = b().op(spv::OpSNegate, e.u32(), {red.k});
    if (!wide()) return mul(sub(red.em, sub(pow2(minus_k), c(1))), pow2(red.k));
    Id d = sub(c(1), pow2(minus_k));
    Id s = exact(add(red.r, d));
    Id bb = exact(sub(s, red.r));
    Id err = exact(add(exact(sub(red.r, exact(sub(s, bb)))), exact(sub(d, bb))));
    DW s2 = fast_two_sum(s, red.tail_hi);  // |r^2/2| < |r + 1 - 2^-k|
    Id v = mul(exact(add(s2.hi, exact(add(s2.lo, exact(add(err, red.tail_lo)))))), pow2(red.k));
    return sel(eq(red.r, c(0)), red.r, v);  // ±0 (x = ±0) stays itself
  }
  Id expm1(Id x) {
    if (soft_fma()) return on_words(soft::f64_expm1, x);
    Reduced red = reduce_exp(x, true);
    Id near = expm1_near(red);
    Id far;
    if (wide()) {
      // 2^k (hi + lo) - 1 with one rounding: the 1 subtracted from 2^k hi error-free.
      DW ep = exp_parts(red);
      Id eh = scale2(ep.hi, red.k, 0);
      DW d = two_sum(eh, c(-1));
      far = sel(inf(eh), eh, add(d.hi, add(d.lo, scale2(ep.lo, red.k, 0))));
    } else {
      far = sub(scale2(e_plus_one(red), red.k, 0), c(1));
    }
    Id in_near = b().op(spv::OpLogicalAnd, e.boolean(),
                        {b().op(spv::OpSGreaterThanEqual, e.boolean(), {red.k, i32(-1)}),
                         b().op(spv::OpSLessThanEqual, e.boolean(), {red.k, i32(wide() ? 53 : 24)})});
    return sel(nan(x), x, sel(in_near, near, far));
  }

  // x = m 2^e with m in [sqrt(1/2), sqrt(2)), e as a float (plus extra_e): for finite
  // x > 0, subnormals scaled into the normal range first.
  std::pair<Id, Id> log_reduce(Id x, Id extra_e = 0) {
    const int mant = wide() ? 52 : 23, bias = wide() ? 1023 : 127;
    Id tiny = lt(x, c(wide() ? 2.2250738585072014e-308 : 1.17549435e-38));
    Id xs = sel(tiny, mul(x, c(18014398509481984.0)), x);  // 2^54
    Id ebias = b().op(spv::OpISub, it(), {b().op(spv::OpShiftRightLogical, it(), {bits_of(xs), k(uint64_t(mant))}), k(uint64_t(bias - 1))});
    Id m = from_bits(b().op(spv::OpBitwiseOr, it(), {b().op(spv::OpBitwiseAnd, it(), {bits_of(xs), k((uint64_t(1) << mant) - 1)}),
                                                      k(uint64_t(bias - 1) << mant)}));  // [0.5, 1)
    Id ef = b().op(spv::OpConvertSToF, rt(), {ebias});
    ef = sel(tiny, sub(ef, c(54)), ef);
    if (extra_e) ef = add(ef, extra_e);
    Id small = lt(m, c(0.70710678118654752440));
    return {sel(small, add(m, m), m), sel(small, sub(ef, c(1)), ef)};
  }

  // log x = e ln2 + log m, m in [sqrt(1/2), sqrt(2)).
  // f64: log m = log1p(f), f = m - 1 exact, as fdlibm's e_log: f - f^2/2 + s (f^2/2 + R(s^2)),
  // s = f / (2 + f), with f^2/2 exact (Dekker's product) and the sum e ln2_hi + f - f^2/2
  // error-free, so that the one rounding of consequence is the last (hi + lo). x_lo, a low
  // part of the argument, enters as x_lo / x; extra_e is added to the exponent (log 2x for
  // x beyond 2x's range). For finite x > 0; log() handles the rest. lo holds the series'
  // cubic term too (it is not normalized: round() or fast_two_sum it).
  DW log_dw(Id x, Id x_lo = 0, Id extra_e = 0) {
    auto [m, ef] = log_reduce(x, extra_e);
    Id f = exact(sub(m, c(1)));
    Id s = div(f, add(c(2), f));
    Id z = mul(s, s);
    // fdlibm's Lg1..Lg7: 2 atanh(s) = 2s + s R(s^2) within 2^-58.45 on |s| <= 0.1716.
    Id r = mul(z, poly(z, {6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01,
                           2.222219843214978396e-01, 1.818357216161805012e-01, 1.531383769920937332e-01,
                           1.479819860511658591e-01}));
    auto [ff, ffe] = two_square(f);
    Id hfsq = mul(c(0.5), ff), hfsq_lo = mul(c(0.5), ffe);
    DW t = fast_two_sum(f, neg(hfsq));                            // |f| > f^2/2
    DW u = fast_two_sum(mul(ef, c(kLn2Hi)), t.hi);                // e ln2_hi exact, 0 or larger than |t|
    Id lo = add(mul(s, add(hfsq, r)), fma(ef, c(kLn2Lo), neg(hfsq_lo)));
    if (x_lo) lo = add(lo, div(x_lo, x));
    return {u.hi, add(u.lo, add(t.lo, lo))};
  }
  Id log_specials(Id x, Id v) {
    v = sel(eq(x, c(0)), c(-INFINITY), v);
    v = sel(lt(x, c(0)), c(NAN), v);
    v = sel(eq(x, c(INFINITY)), x, v);
    return sel(nan(x), x, v);
  }
  Id log(Id x) {
    if (soft_fma()) return on_words(soft::f64_log, x);
    if (wide()) return log_specials(x, round(log_dw(x)));
    auto [m, ef] = log_reduce(x);
    // f32: 2 atanh((m-1)/(m+1)) as a series.
    Id f = div(sub(m, c(1)), add(m, c(1)));
    Id s = mul(f, f);
    std::vector<double> coeffs;
    for (int n = 0; n < 6; ++n) coeffs.push_back(2.0 / (2 * n + 1));
    Id logm = mul(f, poly(s, coeffs));
    Id v = add(mul(ef, c(ln2_hi())), fma(ef, c(ln2_lo()), logm));
    return log_specials(x, v);
  }

  Id log1p(Id x) {
    if (soft_fma()) return on_words(soft::f64_log1p, x);
    if (wide()) {
      // 1 + x = u + u_lo exactly (TwoSum), log(u) + u_lo / u as fdlibm's s_log1p.
      DW u = two_sum(c(1), x);
      Id v = round(log_dw(u.hi, u.lo));
      // below 2^-28, x - x^2/2 (to 2^-57.6; the log's double-word sum would round twice near 2^-52)
      v = sel(lt(abs(x), c(0x1p-28)), fma(mul(c(-0.5), x), x, x), v);
      v = sel(eq(u.hi, c(0)), c(-INFINITY), v);
      v = sel(lt(x, c(-1)), c(NAN), v);
      v = sel(or_(eq(x, c(0)), eq(x, c(INFINITY))), x, v);  // keeps -0
      return sel(nan(x), x, v);
    }
    // log(u) * x / (u - 1) with u = 1 + x cancels the rounding of u (Goldberg).
    Id u = exact(add(c(1), x));
    // (x / (u - 1) first: near 1, where log(u) * x overflows for x near the largest finite)
    Id v = mul(log(u), div(x, exact(sub(u, c(1)))));
    v = sel(eq(u, c(1)), x, v);
    // Beyond 2^24, log x (log(1 + 1/x) is below a thousandth of its ulp); there u - 1 may
    // pass 2^126, Vulkan's bound for a divisor, and NVIDIA's quotient was 0
    // (log1p(3e38) = 0, not 88.6).
    v = sel(gt(x, c(0x1p24)), log(x), v);
    return sel(eq(x, c(INFINITY)), x, v);
  }

  // f64 e^x as the double-word 2^k (hi + lo), unscaled: the table entry times e^r, or 1 + r +
  // tail as e_plus_one adds it.
  DW exp_parts(const Reduced& red) {
    if (red.table) return fast_two_sum(red.table->hi, red.table->lo);
    DW s = fast_two_sum(c(1), red.r);
    return fast_two_sum(s.hi, exact(add(s.lo, red.tail)));
  }
  // f64 e^x - 1 as 2^k (hi + lo), for k in [0, 64]: expm1_near's sum, unrounded.
  DW expm1_parts(const Reduced& red) {
    Id minus_k = b().op(spv::OpSNegate, e.u32(), {red.k});
    DW s = two_sum(red.r, sub(c(1), pow2(minus_k)));
    DW s2 = fast_two_sum(s.hi, red.tail_hi);
    return fast_two_sum(s2.hi, exact(add(s2.lo, exact(add(s.lo, red.tail_lo)))));
  }
  // v 2^k for 2^k normal (exact where v's parts stay normal).
  DW dw_scale(const DW& v, Id k32) {
    Id p = pow2(k32);
    return {mul(v.hi, p), mul(v.lo, p)};
  }
  // 1 / (hi + lo) for hi >= 1 (to 2^-100 or so).
  DW dw_recip(const DW& v) {
    Id y = div(c(1), v.hi);
    auto [p, pe] = two_product_finite(y, v.hi);
    return {y, mul(y, sub(sub(exact(sub(c(1), p)), pe), mul(y, v.lo)))};
  }
  // f64 sinh and cosh below 22 from e^a and e^-a as double-words (sinh below 1/2 from its
  // Taylor series to a^15: the difference would cancel); beyond, e^a / 2.
  Id sinh(Id x) {
    if (soft_fma()) return on_words(soft::f64_sinh, x);
    Id a = abs(x);
    if (wide()) {
      Reduced red = reduce_exp(a);
      DW ep = exp_parts(red);
      DW ea = dw_scale(ep, red.k), inv = dw_recip(ea);
      DW d = fast_two_sum(ea.hi, neg(inv.hi));
      Id mid = mul(c(0.5), add(d.hi, add(d.lo, sub(ea.lo, inv.lo))));
      std::vector<double> coeffs;
      for (int n = 1; n <= 7; ++n) coeffs.push_back(M::inverse_factorials(2 * n + 2)[size_t(2 * n + 1)]);
      Id z = mul(a, a);
      Id small = fma(mul(a, z), poly(z, coeffs), a);
      Id big = scale2(ep.hi, red.k, -1);
      return sel(nan(x), x, copysign(sel(gt(a, c(22)), big, sel(lt(a, c(0.5)), small, mid)), x));
    }
    Id em = expm1(a);
    Id near = mul(c(0.5), add(em, div(em, add(em, c(1)))));
    return copysign(sel(gt(a, c(22)), half_exp(a), near), x);
  }
  Id cosh(Id x) {
    if (soft_fma()) return on_words(soft::f64_cosh, x);
    Id a = abs(x);
    if (wide()) {
      Reduced red = reduce_exp(a);
      DW ep = exp_parts(red);
      DW ea = dw_scale(ep, red.k), inv = dw_recip(ea);
      DW s = fast_two_sum(ea.hi, inv.hi);
      Id mid = mul(c(0.5), add(s.hi, add(s.lo, add(ea.lo, inv.lo))));
      Id big = scale2(ep.hi, red.k, -1);
      return sel(nan(x), x, sel(gt(a, c(22)), big, mid));
    }
    Id ea = exp(a);
    Id near = mul(c(0.5), add(ea, div(c(1), ea)));
    return sel(gt(a, c(22)), half_exp(a), near);
  }
  Id half_exp(Id a) { return exp(a, -1); }
  Id tanh(Id x) {
    if (soft_fma()) return on_words(soft::f64_tanh, x);
    Id a = abs(x);
    // 2a >= 0, and tanh is 1 beyond a = 22: the k <= 64 used take expm1's form near 0 alone
    // (past the significand, 2^-k - 1 rounds to -1, off by 2^-k of a value near 2^k).
    Id v;
    if (wide()) {
      // (e^2a - 1) / (e^2a - 1 + 2) as a quotient of double-words; a itself below 2^-30.
      Reduced red = reduce_exp(add(a, a), true);
      DW em = dw_scale(expm1_parts(red), red.k);
      DW d = two_sum(em.hi, c(2));
      v = round(dw_div(em.hi, em.lo, d.hi, add(d.lo, em.lo)));
      v = sel(lt(a, c(0x1p-30)), a, v);
    } else {
      Id em = expm1_near(reduce_exp(add(a, a), true));
      v = div(em, add(em, c(2)));
    }
    return sel(nan(x), x, copysign(sel(gt(a, c(wide() ? 22 : 9)), c(1), v), x));
  }
  // f64 only: f32 sigmoid is emit_elementwise's (float_unary).
  Id sigmoid(Id x) {
    if (soft_fma()) return on_words(soft::f64_sigmoid, x);
    // 1 / (1 + e^-|x|) or e^-|x| / (1 + e^-|x|) by x's sign, as a quotient of double-words;
    // beyond |x| = 40, 1 or e^x (1 + e^x rounds to 1 there).
    Id ax = abs(x);
    Reduced red = reduce_exp(neg(ax));
    DW ep = exp_parts(red);
    Id negx = sign_bit(x);
    DW em = dw_scale(ep, red.k);
    DW d = fast_two_sum(c(1), em.hi);
    Id v = round(dw_div(sel(negx, em.hi, c(1)), sel(negx, em.lo, c(0)), d.hi, add(d.lo, em.lo)));
    v = sel(gt(ax, c(40)), sel(negx, scale2(ep.hi, red.k, 0), c(1)), v);
    return sel(nan(x), x, v);
  }

  Id cbrt(Id x) {
    // Tiny inputs are scaled by 2^(3k) first: the Newton step cubes y, which must not underflow.
    const double up = wide() ? 0x1p600 : 0x1p90, down = wide() ? 0x1p-200 : 0x1p-30;
    Id tiny = lt(abs(x), c(wide() ? 1e-290 : 1e-30));
    Id a = sel(tiny, mul(abs(x), c(up)), abs(x));
    Id y = exp(div(log(a), c(3)));
    // One Newton step, y - (y^3 - a) / (3 y^2), in a form without y^3: near the largest
    // finite a, y^3 may round past it to infinity.
    y = sub(y, div(sub(y, div(a, mul(y, y))), c(3)));
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
  // f64: x = q pi/2 + r_hi + r_lo, the parts of pi/2 fdlibm's (33 bits: q p1 and q p2 are
  // exact), x - q p1 exact and its difference with q p2 summed error-free.
  std::pair<DW, Id> reduce_dw(Id x) {
    x = sel(gt(abs(x), c(1647099.0)), rem(x, c(6.28318530717958623200)), x);
    Id q = floor(fma(x, c(0.63661977236758134308), c(0.5)));
    Id r1 = fma(q, c(-kPio2_1), x);  // exact, fused or not
    DW r2 = two_sum(r1, neg(mul(q, c(kPio2_2))));
    Id tail = sub(r2.lo, fma(q, c(8.47842766036889956997e-32), mul(q, c(kPio2_3))));  // fdlibm's pio2_3t
    Id q4 = sub(q, mul(c(4), floor(mul(q, c(0.25)))));
    return {fast_two_sum(r2.hi, tail), b().op(spv::OpConvertFToU, e.u32(), {sel(nan(q4), c(0), q4)})};
  }
  // sin and cos of r_hi + r_lo, |r| <= pi/4 (and a little beyond), as double-words: fdlibm's
  // k_sin and k_cos polynomials (within 2^-58), the leading terms r and 1 - r^2/2 added
  // error-free (r^2 exact by Dekker's product).
  DW sin_dw(const DW& r) {
    Id z = mul(r.hi, r.hi);
    Id p = poly(z, {8.33333333332248946124e-03, -1.98412698298579493134e-04, 2.75573137070700676789e-06,
                    -2.50507602534068634195e-08, 1.58969099521155010221e-10});
    Id v = mul(z, r.hi);
    Id lo = sub(fma(v, fma(z, p, c(-1.66666666666666324348e-01)), r.lo), mul(mul(c(0.5), z), r.lo));
    return fast_two_sum(r.hi, lo);
  }
  DW cos_dw(const DW& r) {
    auto [z, ze] = two_square(r.hi);
    Id p = poly(z, {4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05,
                    -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11});
    DW w = fast_two_sum(c(1), mul(c(-0.5), z));
    Id lo = add(sub(w.lo, fma(c(0.5), ze, mul(r.hi, r.lo))), mul(mul(z, z), p));
    return fast_two_sum(w.hi, lo);
  }
  DW dw_neg(const DW& v) { return {neg(v.hi), neg(v.lo)}; }
  DW dw_sel(Id cond, const DW& a, const DW& x) { return {sel(cond, a.hi, x.hi), sel(cond, a.lo, x.lo)}; }
  Id sin(Id x) {
    if (wide()) {
      auto [r, q] = reduce_dw(x);
      DW s = sin_dw(r), co = cos_dw(r);
      DW v = dw_sel(quadrant_is(q, 0), s, dw_sel(quadrant_is(q, 1), co, dw_sel(quadrant_is(q, 2), dw_neg(s), dw_neg(co))));
      return sel(eq(x, c(0)), x, round(v));  // keeps -0.0
    }
    auto [r, q] = reduce(x);
    Id s = sin_kernel(r), co = cos_kernel(r);
    Id v = sel(quadrant_is(q, 0), s, sel(quadrant_is(q, 1), co, sel(quadrant_is(q, 2), neg(s), neg(co))));
    return sel(eq(x, c(0)), x, v);  // keeps -0.0
  }
  Id cos(Id x) {
    if (wide()) {
      auto [r, q] = reduce_dw(x);
      DW s = sin_dw(r), co = cos_dw(r);
      DW v = dw_sel(quadrant_is(q, 0), co, dw_sel(quadrant_is(q, 1), dw_neg(s), dw_sel(quadrant_is(q, 2), dw_neg(co), s)));
      return round(v);
    }
    auto [r, q] = reduce(x);
    Id s = sin_kernel(r), co = cos_kernel(r);
    return sel(quadrant_is(q, 0), co, sel(quadrant_is(q, 1), neg(s), sel(quadrant_is(q, 2), neg(co), s)));
  }
  Id tan(Id x) {
    if (wide()) {
      // sin / cos (or -cos / sin) as a quotient of double-words.
      auto [r, q] = reduce_dw(x);
      DW s = sin_dw(r), co = cos_dw(r);
      Id odd = b().op(spv::OpIEqual, e.boolean(), {b().op(spv::OpBitwiseAnd, e.u32(), {q, e.u32c(1)}), e.u32c(1)});
      DW n = dw_sel(odd, dw_neg(co), s), d = dw_sel(odd, s, co);
      return sel(eq(x, c(0)), x, round(dw_div(n.hi, n.lo, d.hi, d.lo)));
    }
    auto [r, q] = reduce(x);
    Id s = sin_kernel(r), co = cos_kernel(r);
    Id odd = b().op(spv::OpIEqual, e.boolean(), {b().op(spv::OpBitwiseAnd, e.u32(), {q, e.u32c(1)}), e.u32c(1)});
    Id v = sel(odd, neg(div(co, s)), div(s, co));
    return sel(eq(x, c(0)), x, v);
  }

  // f64 atan on [0, inf]: atan a = atan c + atan u, u = (a - c) / (1 + a c) for c = 0, 1 or
  // inf by a's range (|u| <= 7/16), u to double-word precision (a -+ 1 summed error-free, the
  // quotient corrected by its residual), atan c in two parts, and u + u^3 P(u^2) (fdlibm's
  // s_atan polynomial, within 2^-56 on |u| <= 7/16) added to them error-free.
  Id atan_pos_wide(Id a) {
    Id mid = ge(a, c(7.0 / 16)), big = ge(a, c(39.0 / 16));
    DW n = two_sum(a, c(-1)), d = two_sum(a, c(1));
    DW u = dw_div(sel(big, c(-1), sel(mid, n.hi, a)), sel(big, c(0), sel(mid, n.lo, c(0))), sel(big, a, sel(mid, d.hi, c(1))),
                  sel(big, c(0), sel(mid, d.lo, c(0))));
    u.lo = sel(or_(mid, big), u.lo, c(0));  // u = a exactly
    Id z = mul(u.hi, u.hi);
    Id p = mul(mul(u.hi, z), poly(z, {-3.33333333333329318027e-01, 1.99999999998764832476e-01, -1.42857142725034663711e-01,
                                      1.11111104054623557880e-01, -9.09088713343650656196e-02, 7.69187620504482999495e-02,
                                      -6.66107313738753120669e-02, 5.83357013379057348645e-02, -4.97687799461593236017e-02,
                                      3.65315727442169155270e-02, -1.62858201153657823623e-02}));
    Id hi = sel(big, c(kPio2), sel(mid, c(kPio4), c(0)));
    Id lo = sel(big, c(kPio2Lo), sel(mid, c(3.06161699786838301793e-17), c(0)));
    DW s = fast_two_sum(hi, u.hi);  // |u| < 1/2 <= hi, or hi = 0
    Id v = add(s.hi, add(s.lo, add(lo, add(fma(u.lo, neg(z), u.lo), p))));
    return sel(gt(a, c(0x1p60)), c(kPio2), v);  // (and the infinity, whose 1/a is 0)
  }
  // atan on [0, inf]: 1/a above 1, then (t-1)/(t+1) above tan(pi/8), then the series.
  Id atan_pos(Id a) {
    if (wide()) return atan_pos_wide(a);
    Id big = gt(a, c(1));
    Id t = sel(big, div(c(1), a), a);
    Id mid = gt(t, c(0.41421356237309504880));
    Id u = sel(mid, div(sub(t, c(1)), add(t, c(1))), t);
    std::vector<double> coeffs;
    for (int n = 0; n < 10; ++n) coeffs.push_back((n % 2 ? -1.0 : 1.0) / (2 * n + 1));
    Id v = mul(u, poly(mul(u, u), coeffs));
    v = sel(mid, add(c(kPio4), v), v);
    return sel(big, sub(c(kPio2), v), v);
  }
  Id atan(Id x) { return sel(nan(x), x, copysign(atan_pos(abs(x)), x)); }
  // f64 asin and acos from asin a = a + a R(a^2) for a <= 1/2 and, beyond,
  // asin a = pi/2 - 2 asin s, s = sqrt((1 - a) / 2) (exact square, s to double-word precision
  // by its residual): fdlibm's e_asin rational R (within 2^-58.75), pi/2 and pi in two parts.
  struct AsinParts {
    Id big;    // a > 1/2
    Id v;      // a or s
    DW small;  // (asin v - v) in hi + lo, v's low part included
  };
  AsinParts asin_parts(Id a) {
    Id big = gt(a, c(0.5));
    Id t = mul(sub(c(1), a), c(0.5));  // exact
    Id s = sqrt(t);
    auto [p, pe] = two_square(s);
    Id s_lo = sel(eq(t, c(0)), c(0), div(sub(exact(sub(t, p)), pe), add(s, s)));
    Id z = sel(big, t, mul(a, a));
    Id v = sel(big, s, a);
    Id num = mul(z, poly(z, {1.66666666666666657415e-01, -3.25565818622400915405e-01, 2.01212532134862925881e-01,
                             -4.00555345006794114027e-02, 7.91534994289814532176e-04, 3.47933107596021167570e-05}));
    Id den = poly(z, {1.0, -2.40339491173441421878e+00, 2.02094576023350569471e+00, -6.88283971605453293030e-01,
                      7.70381505559019352791e-02});
    Id r = mul(v, div(num, den));
    // asin(s + s_lo) = asin s + s_lo (1 + t/2)
    return {big, v, {r, sel(big, mul(s_lo, fma(c(0.5), t, c(1))), c(0))}};
  }
  Id asin(Id x) {
    if (!wide()) {
      Id v = atan(div(x, sqrt(mul(sub(c(1), x), add(c(1), x)))));
      return sel(gt(abs(x), c(1)), c(NAN), v);
    }
    Id a = abs(x);
    AsinParts ap = asin_parts(a);
    Id small = add(ap.v, ap.small.hi);
    DW w = fast_two_sum(c(kPio2Hi), mul(c(-2), ap.v));
    Id big = add(w.hi, add(w.lo, sub(c(kPio2Lo), mul(c(2), add(ap.small.lo, ap.small.hi)))));
    Id v = copysign(sel(ap.big, big, small), x);
    v = sel(gt(a, c(1)), c(NAN), v);
    return sel(nan(x), x, v);
  }
  Id acos(Id x) {
    if (!wide()) {
      Id v = mul(c(2), atan_pos(sqrt(div(sub(c(1), x), add(c(1), x)))));
      return sel(or_(gt(abs(x), c(1)), nan(x)), c(NAN), v);
    }
    Id a = abs(x);
    AsinParts ap = asin_parts(a);
    Id neg_x = sign_bit(x);
    Id tail = add(ap.small.lo, ap.small.hi);
    // |x| <= 1/2: pi/2 - x - (asin x - x)
    DW w0 = fast_two_sum(c(kPio2Hi), neg(x));
    Id v0 = add(w0.hi, add(w0.lo, sub(c(kPio2Lo), copysign(ap.small.hi, x))));
    // x > 1/2: 2 asin s; x < -1/2: pi - 2 asin s
    Id v1 = add(mul(c(2), ap.v), mul(c(2), tail));
    DW w2 = fast_two_sum(c(kPi), mul(c(-2), ap.v));
    Id v2 = add(w2.hi, add(w2.lo, sub(c(1.22464679914735317720e-16), mul(c(2), tail))));
    Id v = sel(ap.big, sel(neg_x, v2, v1), v0);
    return sel(or_(gt(a, c(1)), nan(x)), c(NAN), v);
  }
  // The magnitude of atan2(y >= 0, x) for finite, nonzero arguments, given |y| / |x|.
  Id atan2_core(Id ratio, Id x) {
    Id v = atan_pos(ratio);
    return sel(sign_bit(x), sub(c(kPi), v), v);
  }

  // f64 asinh a = log(a + sqrt(a^2 + 1)) with the argument to double-word precision (a^2
  // exact, the square root corrected by its residual, the sums error-free), log 2a beyond 2^28.
  Id asinh(Id x) {
    Id a = abs(x);
    Id v;
    if (wide()) {
      auto [p, pe] = two_square(a);  // (beyond 2^28, discarded)
      DW h = two_sum(c(1), p);
      h = fast_two_sum(h.hi, add(h.lo, pe));  // (a^2 + 1 >= a^2)
      Id s = sqrt(h.hi);
      auto [ss, sse] = two_square(s);
      Id s_lo = div(add(sub(exact(sub(h.hi, ss)), sse), h.lo), add(s, s));
      DW y = fast_two_sum(s, a);  // s > a
      Id huge = gt(a, c(268435456.0));
      v = round(log_dw(sel(huge, a, y.hi), sel(huge, c(0), add(y.lo, s_lo)), sel(huge, c(1), c(0))));
      // below 2^-26, a (to 2^-54.6; the log's double-word sum would round twice near 2^-52)
      v = sel(or_(lt(a, c(0x1p-26)), eq(a, c(INFINITY))), a, v);
    } else {
      Id huge = add(log(a), c(0.69314718055994530942));
      Id big = log(add(add(a, a), div(c(1), add(sqrt(fma(a, a, c(1))), a))));
      Id a2 = mul(a, a);
      Id small = log1p(add(a, div(a2, add(c(1), sqrt(add(c(1), a2))))));
      v = sel(gt(a, c(268435456.0)), huge, sel(gt(a, c(2)), big, small));
    }
    return sel(nan(x), x, copysign(v, x));
  }
  Id acosh(Id x) {
    if (wide()) {
      // log(x + sqrt(x^2 - 1)) with the argument to double-word precision as asinh's, log 2x
      // beyond 2^28.
      auto [p, pe] = two_square(x);  // (beyond 2^28, discarded)
      DW h = two_sum(p, c(-1));
      h = fast_two_sum(h.hi, add(h.lo, pe));
      Id s = sqrt(h.hi);
      auto [ss, sse] = two_square(s);
      Id s_lo = sel(eq(h.hi, c(0)), c(0), div(add(sub(exact(sub(h.hi, ss)), sse), h.lo), add(s, s)));
      DW y = fast_two_sum(x, s);  // x > s
      Id huge = gt(x, c(268435456.0));
      Id v = round(log_dw(sel(huge, x, y.hi), sel(huge, c(0), add(y.lo, s_lo)), sel(huge, c(1), c(0))));
      v = sel(eq(x, c(INFINITY)), x, v);
      return sel(or_(lt(x, c(1)), nan(x)), c(NAN), v);
    }
    Id huge = add(log(x), c(0.69314718055994530942));
    Id big = log(sub(add(x, x), div(c(1), add(x, sqrt(fma(x, x, c(-1)))))));
    Id t = sub(x, c(1));
    Id small = log1p(add(t, sqrt(fma(t, t, add(t, t)))));
    Id v = sel(gt(x, c(268435456.0)), huge, sel(gt(x, c(2)), big, small));
    return sel(lt(x, c(1)), c(NAN), v);
  }
  Id atanh(Id x) {
    Id a = abs(x);
    Id v;
    if (wide()) {
      // 1/2 log((1 + a) / (1 - a)), the quotient of double-words (1 -+ a summed error-free).
      DW n = fast_two_sum(c(1), a), d = fast_two_sum(c(1), neg(a));
      DW q = dw_div(n.hi, n.lo, d.hi, d.lo);
      v = mul(c(0.5), round(log_dw(q.hi, q.lo)));
      v = sel(lt(a, c(0x1p-30)), a, v);
    } else {
      Id small = mul(c(0.5), log1p(add(add(a, a), div(mul(add(a, a), a), sub(c(1), a)))));
      Id big = mul(c(0.5), log1p(div(add(a, a), sub(c(1), a))));
      v = sel(lt(a, c(0.5)), small, big);
    }
    v = sel(eq(a, c(1)), c(INFINITY), v);
    v = sel(gt(a, c(1)), c(NAN), v);
    return sel(nan(x), x, copysign(v, x));
  }

  // x y = p + err exactly (Dekker's product with Veltkamp's split). Not through Fma: a
  // driver may implement it unfused (lavapipe does), which makes err 0; NoContraction keeps
  // the compiler from fusing these steps either.
  std::pair<Id, Id> two_product(Id x, Id y) {
    auto [p, err] = two_product_finite(x, y);
    // Huge operands overflow the split; their products are infinite anyway.
    return {p, sel(inf(p), c(0), sel(nan(err), c(0), err))};
  }
  std::pair<Id, Id> halves(Id v) {
    const double split = wide() ? 134217729.0 : 4097.0;  // 2^27 + 1, 2^12 + 1
    Id p = exact(mul(v, c(split)));
    Id hi = exact(sub(p, exact(sub(p, v))));
    return {hi, exact(sub(v, hi))};
  }
  // Emulated f64 (the header comment): a product's error is one Fma instead of Dekker's
  // dozen emulated operations. Polynomials keep their Fma: a multiply and an add would be
  // 314 emulated instructions a term against 372, but would round differently from native
  // f64 now and then.
  bool soft_fma() { return wide() && e.caps.emulate_f64; }
  // An emulated f64 function computed on its value's words (soft_f64_fixed.h).
  template <class F>
  Id on_words(F f, Id x) {
    Soft64 s(b());
    return b().op(spv::OpBitcast, rt(), {f(s, b().op(spv::OpBitcast, s.uvec2, {x}))});
  }
  // A scope in which emulated f64 multiplies, divides and fmas take their shorter forms for
  // operands and results known zero or normal (Builder::set_normal_range): steps on reduced
  // arguments, whose callers keep subnormals (a scaling by 2^k) and specials out of them.
  struct NormalRange {
    spirv::Builder& b;
    bool was;
    NormalRange(spirv::Builder& builder, bool on) : b(builder), was(builder.normal_range()) { b.set_normal_range(on); }
    ~NormalRange() { b.set_normal_range(was); }
  };
  // The same where the operands are below 2^996 (or the result is discarded beyond).
  std::pair<Id, Id> two_product_finite(Id x, Id y) {
    Id p = exact(mul(x, y));
    if (soft_fma()) return {p, fma(x, y, neg(p))};
    auto [xh, xl] = halves(x);
    auto [yh, yl] = halves(y);
    Id err = exact(add(exact(add(exact(add(exact(sub(exact(mul(xh, yh)), p)), exact(mul(xh, yl)))), exact(mul(xl, yh)))),
                       exact(mul(xl, yl))));
    return {p, err};
  }
  // x^2 = p + err exactly, one split (x below 2^996, or the result discarded beyond).
  std::pair<Id, Id> two_square(Id x) {
    Id p = exact(mul(x, x));
    if (soft_fma()) return {p, fma(x, x, neg(p))};
    auto [xh, xl] = halves(x);
    Id cross = exact(mul(xh, xl));
    Id err = exact(add(exact(add(exact(sub(exact(mul(xh, xh)), p)), exact(add(cross, cross)))), exact(mul(xl, xl))));
    return {p, err};
  }
  // e^{-x^2} with the rounding error of x^2 carried along (it would cost |x|^2 ulp).
  Id exp_minus_square(Id a) {
    auto [s, err] = two_product(a, a);
    return mul(exp(neg(s)), sub(c(1), err));
  }
  // W. J. Cody's rational Chebyshev approximations (Math. Comp. 23, 1969; netlib specfun
  // CALERF): erf(x)/x on |x| <= 0.46875, e^{x^2} erfc(x) on (0.46875, 4] and, in 1/x^2,
  // beyond. Straight-line code, accurate to a few ulp in f64 rounded step by step (f64 erfc
  // evaluates them in double-words, erfc_scaled_dw): f32 erf and erfc can then
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
  // Cody's coefficients for e^{a^2} erfc(a), 0.46875 < a <= 4 (numerator, denominator), and
  // a e^{a^2} erfc(a) in z = 1/a^2 beyond.
  inline static const std::vector<double> kErfcMidP = {
      5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01, 2.98635138197400131e02,
      8.81952221241769090e02, 1.71204761263407058e03, 2.05107837782607147e03, 1.23033935479799725e03,
      2.15311535474403846e-8};
  inline static const std::vector<double> kErfcMidQ = {
      1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02, 1.62138957456669019e03,
      3.29079923573345963e03, 4.36261909014324716e03, 3.43936767414372164e03, 1.23033935480374942e03};
  inline static const std::vector<double> kErfcFarP = {3.05326634961232344e-1, 3.60344899949804439e-1,
                                                       1.25781726111229246e-1, 1.60837851487422766e-2,
                                                       6.58749161529837803e-4, 1.63153871373020978e-2};
  inline static const std::vector<double> kErfcFarQ = {2.56852019228982242e00, 1.87295284992346047e00,
                                                       5.27905102951428412e-1, 6.05183413124413191e-2,
                                                       2.33520497626869185e-3};
  // Cody's Horner scheme in double-word arithmetic, acc = (acc + c[i]) z for all but the
  // last coefficient, then + c[n-1]: each product exact (z split once), each sum error-free,
  // the errors gathered in lo (all terms positive here, so lo stays a few ulp of hi).
  DW horner_dw(Id z, DW acc, const std::vector<double>& coeffs) {
    auto [zh, zl] = halves(z);
    for (size_t i = 0; i < coeffs.size(); ++i) {
      DW s = two_sum(acc.hi, c(coeffs[i]));
      Id lo = add(acc.lo, s.lo);
      if (i + 1 == coeffs.size()) return {s.hi, lo};
      Id p = exact(mul(s.hi, z));
      auto [sh, sl] = halves(s.hi);
      Id pe = exact(add(exact(add(exact(add(exact(sub(exact(mul(sh, zh)), p)), exact(mul(sh, zl)))), exact(mul(sl, zh)))),
                        exact(mul(sl, zl))));
      acc = {p, fma(lo, z, pe)};
    }
    return acc;
  }
  // e^{a^2} erfc(a) for a > 0.46875 as a double-word (f64), the roundings of Horner's steps
  // and of the quotient kept in lo.
  DW erfc_scaled_dw(Id a) {
    const std::vector<double> num(kErfcMidP.begin(), kErfcMidP.end() - 1);
    DW n = horner_dw(a, {mul(c(kErfcMidP.back()), a), c(0)}, num);
    DW d = horner_dw(a, {a, c(0)}, kErfcMidQ);
    DW mid = dw_div(n.hi, n.lo, d.hi, d.lo);
    // Beyond 4: (1/sqrt(pi) - t) / a, t = z P(z) / Q(z) below 0.018 (its roundings scaled
    // down), 1/sqrt(pi) in two parts and the quotient corrected.
    Id z = div(c(1), mul(a, a));
    Id t = div(mul(z, cody_numerator(z, kErfcFarP)), cody_denominator(z, kErfcFarQ));
    DW f = fast_two_sum(c(kOneOverSqrtPi), neg(t));
    DW far = dw_div(f.hi, add(f.lo, c(7.66772980658294e-18)), a, c(0));
    Id is_mid = le(a, c(4));
    return {sel(is_mid, mid.hi, far.hi), sel(is_mid, mid.lo, far.lo)};
  }
  // e^{a^2} erfc(a) for a > 0.46875, rounded step by step.
  Id erfc_scaled(Id a) {
    Id mid = div(cody_numerator(a, kErfcMidP), cody_denominator(a, kErfcMidQ));
    Id z = div(c(1), mul(a, a));
    Id far = div(mul(z, cody_numerator(z, kErfcFarP)), cody_denominator(z, kErfcFarQ));
    far = div(sub(c(kOneOverSqrtPi), far), a);
    return sel(le(a, c(4)), mid, far);
  }
  // f64 erfc(a) for a > 0.46875 as the double-word 2^k (hi + lo): e^{-a^2} as exp_parts
  // gives it (a^2 exact, its rounding error carried), times the double-word rational.
  struct ScaledDW {
    Id hi, lo, k;
  };
  ScaledDW erfc_tail_parts(Id a) {
    DW rat = erfc_scaled_dw(a);
    auto [sq, sq_err] = two_product(a, a);
    Reduced red = reduce_exp(neg(sq));
    DW ep = exp_parts(red);
    auto [p, pe] = two_product_finite(ep.hi, rat.hi);
    Id lo = add(pe, add(mul(sub(ep.lo, mul(ep.hi, sq_err)), rat.hi), mul(ep.hi, rat.lo)));
    return {p, lo, red.k};
  }
  // erfc(a) for a > 0.46875 (0 where it underflows); precise (f64): the double-word product
  // rounded once (and by the scaling, where the result is subnormal).
  Id erfc_tail(Id a, bool precise = false) {
    // beyond this erfc underflows (CALERF's XBIG for the width)
    // (f64: erfc is below half the smallest subnormal beyond 27.3)
    const double big = wide() ? 27.3 : 9.194;
    Id v;
    if (wide() && precise) {
      ScaledDW t = erfc_tail_parts(a);
      return sel(lt(a, c(big)), scale2(add(t.hi, t.lo), t.k, 0), c(0));
    }
    Id rat = erfc_scaled(a);
    if (wide()) {
      // e^{-a^2} as the double-word 2^k (hi + lo) (a^2 exact), multiplied by the rational
      // with one rounding (and the scaling's, where the result is subnormal).
      auto [sq, sq_err] = two_product(a, a);
      Reduced red = reduce_exp(neg(sq));
      DW ep = exp_parts(red);
      auto [p, pe] = two_product_finite(ep.hi, rat);
      v = scale2(add(p, fma(sub(ep.lo, mul(ep.hi, sq_err)), rat, pe)), red.k, 0);
    } else {
      v = mul(exp_minus_square(a), rat);
    }
    return sel(lt(a, c(big)), v, c(0));
  }
  // f64 erf as fdlibm's s_erf: x + x y(x^2) below 0.84375, erx + P(a - 1) / Q(a - 1) below
  // 1.25 (the rationals within 2^-57.9), 1 - erfc beyond (erfc < 0.08 there).
  // fdlibm's erf below 0.84375: erf x = x + x y(x^2). Below 1/4, x (2/sqrt(pi) + z t),
  // t = (y - pp0) / z, as p + lo with 2/sqrt(pi) in two parts and its product by x exact:
  // y's own roundings would cost up to 0.4 ulp near the top of a binade.
  struct ErfSmall {
    Id y, p, lo;
  };
  ErfSmall erf_small_parts(Id x) {
    Id z = mul(x, x);
    const double pp0 = 1.28379167095512558561e-01;
    Id r1 = poly(z, {-3.25042107247001499370e-01, -2.84817495755985104766e-02, -5.77027029648944159157e-03,
                     -2.37630166566501626084e-05});
    Id s1 = poly(z, {3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
                     1.32494738004321644526e-04, -3.96022827877536812320e-06});
    Id den = fma(z, s1, c(1));
    Id y = div(fma(z, r1, c(pp0)), den);
    Id t = div(fma(c(-pp0), s1, r1), den);
    auto [p, pe] = two_product_finite(x, c(1.12837916709551255856e+00));
    return {y, p, fma(x, fma(z, t, c(1.5335459613165881e-17)), pe)};
  }
  Id erf_wide(Id x) {
    Id a = abs(x);
    ErfSmall e = erf_small_parts(x);
    Id y = e.y;
    Id small = add(e.p, e.lo);
    Id x8 = mul(x, c(8));  // subnormal x: scaled, so that the result is rounded once
    Id v0 = sel(lt(a, c(0x1p-1000)), mul(c(0.125), fma(x8, y, x8)), sel(lt(a, c(0.25)), small, fma(x, y, x)));
    Id s = sub(a, c(1));
    Id pq = div(poly(s, {-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
                         3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
                         -2.16637559486879084300e-03}),
                poly(s, {1.0, 1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02,
                         1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02}));
    Id v1 = add(c(8.45062911510467529297e-01), pq);
    Id v2 = sub(c(1), erfc_tail(a));
    Id v = sel(lt(a, c(0.84375)), v0, copysign(sel(lt(a, c(1.25)), v1, v2), x));
    return sel(nan(x), x, v);
  }
  // f64 erf(x) for |x| < 0.84375 as a double-word: erf_wide's forms, the last sum not rounded.
  DW erf_small_dw(Id x) {
    ErfSmall e = erf_small_parts(x);
    Id is_small = lt(abs(x), c(0.25));
    return {sel(is_small, e.p, x), sel(is_small, e.lo, mul(x, e.y))};
  }
  Id erf(Id x) {
    if (wide()) return erf_wide(x);
    Id a = abs(x);
    Id v = sel(le(a, c(0.46875)), erf_small(x), copysign(sub(c(1), erfc_tail(a)), x));
    return sel(nan(x), x, v);
  }
  Id erfc(Id x, bool precise = true) {
    Id a = abs(x);
    if (wide() && precise) {
      // Below 0.46875, (1 - x) error-free minus x y(x^2) (fdlibm's erf rational, below 0.06);
      // beyond, the double-word tail (2 - erfc for negative x, rounded once more).
      Id z = mul(x, x);
      Id y = div(poly(z, {1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
                          -5.77027029648944159157e-03, -2.37630166566501626084e-05}),
                 poly(z, {1.0, 3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
                          1.32494738004321644526e-04, -3.96022827877536812320e-06}));
      DW s = fast_two_sum(c(1), neg(x));
      Id small = add(s.hi, sub(s.lo, mul(x, y)));
      Id tail = erfc_tail(a, true);
      Id v = sel(le(a, c(0.46875)), small, sel(sign_bit(x), sub(c(2), tail), tail));
      return sel(nan(x), x, v);
    }
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
  // exact and erf(y) near 1 is not; in f64 on log erfc but for the last); with no steps,
  // Complex.erf_inv's value.
  Id erf_inv(Id x, int newton_steps, bool fused) {
    Id a = abs(x);
    Id w = neg(log(mul(sub(c(1), a), add(c(1), a))));
    Id y = mul(giles(w, fused), a);
    if (wide() && newton_steps > 0) {
      // Above 0.5, Newton steps on log erfc(y) = log(1 - a): -y^2 + log(e^{y^2} erfc(y)),
      // quadratic even from Giles' start near 1 (0.7 off at 1 - 2^-53), where steps on
      // erfc itself advance by about 1/(2y); below, one step on erf.
      // The steps on log erfc as a loop: one copy of erfc_scaled and log in the module, not
      // one per step (emulated f64 made each copy ~100k instructions for the driver to compile).
      Id log_target = log(sub(c(1), a));
      Id upper = gt(a, c(0.5));
      Id low = add(y, div(sub(a, erf(y)), mul(c(kTwoOverSqrtPi), exp(neg(mul(y, y))))));
      const uint32_t steps = uint32_t(newton_steps - 1);
      auto stepped = b().at_level(b().level_of({y, log_target}), [&] {
        return b().loop(
            {rt(), e.u32()}, {y, e.u32c(0)},
            [&](const spirv::Builder::Values& s) { return b().op(spv::OpULessThan, e.boolean(), {s[1], e.u32c(steps)}); },
            [&](const spirv::Builder::Values& s) {
              Id r = erfc_scaled(s[0]);
              Id g = sub(sub(log(r), mul(s[0], s[0])), log_target);
              return spirv::Builder::Values{add(s[0], mul(mul(g, c(0.88622692545275801365)), r)),
                                            b().op(spv::OpIAdd, e.u32(), {s[1], e.u32c(1)})};
            },
            steps);
      });
      y = sel(upper, stepped[0], low);
      // The last step's residual from double-words: erf(y) or erfc(y) is within a few ulp
      // of a or 1 - a (exact), so hi's difference is exact (Sterbenz) and lo is added to it.
      ScaledDW t = erfc_tail_parts(y);
      Id tail = sub(sub(scale2(t.hi, t.k, 0), sub(c(1), a)), neg(scale2(t.lo, t.k, 0)));
      DW s = erf_small_dw(y);
      Id resid = sel(upper, tail, sub(sub(a, s.hi), s.lo));
      y = add(y, div(resid, mul(c(kTwoOverSqrtPi), exp(neg(mul(y, y))))));
    } else {
      for (int i = 0; i < newton_steps; ++i) {
        Id resid = sel(gt(a, c(0.5)), sub(erfc(y), sub(c(1), a)), sub(a, erf(y)));
        Id deriv = mul(c(kTwoOverSqrtPi), exp(neg(mul(y, y))));
        y = add(y, div(resid, deriv));
      }
    }
    y = sel(eq(a, c(1)), c(INFINITY), y);
    y = sel(gt(a, c(1)), c(NAN), y);
    y = sel(eq(a, c(0)), a, y);
    return sel(nan(x), x, copysign(y, x));
  }

  // exp(y log x) for finite x > 0 and finite y, in f64, with the product's rounding error
  // carried into the exponential.
  Id exp_y_log_x(Id ax, Id y) {
    DW l = log_dw(ax);
    l = fast_two_sum(l.hi, l.lo);  // (log_dw's lo holds the series' cubic term)
    auto [p, perr] = two_product(y, l.hi);
    // Where exp(p) over- or underflows, |y| is so large that y * l.lo need not be small: the
    // correction factor can go negative (pow(3, 1e20) gave -inf), so it applies only to a
    // finite, nonzero exp(p), where it is ~|p| * 2^-53.
    Id ep = exp(p);
    return sel(or_(inf(ep), eq(ep, c(0))), ep, mul(ep, add(c(1), fma(y, l.lo, perr))));
  }

  // |x|^y for finite x > 0: exact repeated squaring for small integer y (x * x is what Nx
  // users write x ** 2 for; GLSL's Pow is exp2(y log2 x), inexact even for 1.5 ** 2), else
  // exp_y_log_x: in f64, and for f32 and bf16 (which truncates its f32 value) wherever the
  // device has f64 (then rounded), since GLSL's Pow loses about |y log2 x| ulp (Vulkan allows
  // 3 + 2|y log2 x|; NVIDIA's was 1e-5 relative off at |y log2 x| ~ 25); on a device without
  // f64, and for f16, which rounds to nearest, GLSL's Pow.
  Id pow_pos(Id ax, Id y) {
    Id general;
    if (wide()) {
      general = exp_y_log_x(ax, y);
    } else if ((t == DType::F32 || t == DType::BF16) && e.caps.float64) {
      M w{e, DType::F64, nullptr};
      general = e.convert(w.exp_y_log_x(e.convert(ax, t, DType::F64), e.convert(y, t, DType::F64)), DType::F64, t);
    } else {
      general = b().ext(GLSLstd450Pow, rt(), {ax, y});
    }
    Id ay = abs(y);
    Id small_int = and_(eq(floor(ay), ay), le(ay, c(64)));
    Id n = b().op(spv::OpConvertFToU, e.u32(), {sel(small_int, ay, c(0))});
    Id r = c(1), base = ax, inv_r = c(1), inv_base = div(c(1), ax);
    for (uint32_t bit = 1; bit <= 64; bit <<= 1) {
      Id set = b().op(spv::OpINotEqual, e.boolean(), {b().op(spv::OpBitwiseAnd, e.u32(), {n, e.u32c(bit)}), e.u32c(0)});
      r = sel(set, mul(r, base), r);
      inv_r = sel(set, mul(inv_r, inv_base), inv_r);
      base = mul(base, base);
      inv_base = mul(inv_base, inv_base);
    }
    // x^-n is 1 / x^n, correctly rounded from x^n, except where x^n fell below the normal
    // range: a device that flushes made it 0 (pow(-0.0985, -38) = 1.8e38 was inf on an
    // H100), one that does not kept fewer bits. There (1 / x)^n, in range, is the result.
    const double smallest_normal = wide() ? 0x1p-1022 : 0x1p-126;
    r = sel(sign_bit(y), sel(lt(r, c(smallest_normal)), inv_r, div(c(1), r)), r);
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
  return m.erf_inv(x, m.wide() ? 4 : 1, true);
}

Id Emitter::math_erf_inv_as_binary_backend(Id x, DType t) { return M{*this, t, nullptr}.erf_inv(x, 0, false); }
Id Emitter::math_pow_magnitude(Id ax, Id y, DType t) { return M{*this, t, nullptr}.pow_pos(ax, y); }
// The ratio takes `divide`'s division: a plain OpFDiv by |x| beyond 2^126 (Vulkan's bound)
// gave 0 on NVIDIA (atan2(3e38, 3e38) = 0, not pi/4). In the register's width: f16 and bf16
// would round it to their own first.
Id Emitter::math_atan2_magnitude(Id ay, Id x, DType t) {
  const DType rt = register_bits(t) == 64 ? t : DType::F32;
  Id ratio = float_divide(ay, b.ext(GLSLstd450FAbs, reg_type(t), {x}), rt);
  return M{*this, t, nullptr}.atan2_core(ratio, x);
}

}  // namespace nxv::codegen
