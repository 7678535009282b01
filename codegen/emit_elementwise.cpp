// Elementwise ops: unary, binary, comparisons, select/clip/as_type/bitcast.
// Integer edge cases follow docs/ir.md; float NaN/Inf/-0.0 behaviour follows
// Nx's BinaryBackend (see the comments at each op).
#include <cmath>
#include <set>

#include "codegen/emitter.h"
#include "codegen/targets/launch.h"

namespace nxv::codegen {

using ir::DType;

namespace {
bool is_s(DType t) { return ir::is_signed_int(t); }
}  // namespace

// population_count and count_leading_zeros of integer x, within the Nx width of its type.
Id Emitter::count_bits(const ir::Node& node, Id x) {
  const std::string& op = node.op;
  const DType t = node.type().dtype;
  Id rt = reg_type(t);
  if (!ir::is_integer(t)) throw ir::IrError(node, op + " needs an integer operand");
  const int bits = ir::dtype_bits(t);
  // Count within the Nx width: mask off the sign-extension of narrow types. The mask is opaque
  // because NVIDIA's compiler (580) dropped a literal one as redundant after a u8 load, then
  // loaded the byte sign-extended (LDG.E.S8) for the count: u8 255 counted 32.
  Id v = bits < 32 ? b.op(spv::OpBitwiseAnd, u32(), {x, b.opaque(u32c((1u << bits) - 1), u32())}) : x;
  std::vector<Id> halves{v};
  if (bits == 64)
    halves = {b.op(spv::OpUConvert, u32(), {b.op(spv::OpShiftRightLogical, rt, {v, b.const_int(64, 32)})}),
              b.op(spv::OpUConvert, u32(), {v})};
  if (op == "population_count") {
    Id n = b.op(spv::OpBitCount, u32(), {halves[0]});
    if (bits == 64) n = b.op(spv::OpIAdd, u32(), {n, b.op(spv::OpBitCount, u32(), {halves[1]})});
    return convert(n, DType::U32, t);
  }
  // clz of a 32-bit word w within `width` bits: width - 1 - msb(w), and `width` when w == 0.
  auto clz32 = [&](Id w, int width) {
    Id msb = b.ext(GLSLstd450FindUMsb, u32(), {w});  // -1 (all ones) for 0
    Id r = b.op(spv::OpISub, u32(), {u32c(width - 1), msb});
    return b_select(u32(), b.op(spv::OpIEqual, boolean(), {w, u32c(0)}), u32c(width), r);
  };
  Id n;
  if (bits == 64) {
    Id hi = clz32(halves[0], 32);
    n = b_select(u32(), b.op(spv::OpIEqual, boolean(), {halves[0], u32c(0)}),
                 b.op(spv::OpIAdd, u32(), {u32c(32), clz32(halves[1], 32)}), hi);
  } else {
    n = clz32(v, bits);
  }
  return convert(n, DType::U32, t);
}

Id Emitter::emit_unary(const ir::Node& node, Index& index) {
  const std::string& op = node.op;
  const DType t = node.type().dtype;
  const ir::Node& xn = arg(node, 0);
  const DType xt = xn.type().dtype;
  Id x = operand_at(node, 0, index);
  Id rt = reg_type(t);

  if (op == "is_nan" || op == "is_infinity") {
    if (!ir::is_float(xt)) return constant(t, 0);
    return from_bool(b.op(op == "is_nan" ? spv::OpIsNan : spv::OpIsInf, boolean(), {x}), t);
  }
  if (op == "logical_not") return from_bool(b.op(spv::OpLogicalNot, boolean(), {to_bool(x, xt)}), t);
  if (op == "population_count" || op == "count_leading_zeros") return count_bits(node, x);

  if (ir::is_integer(t)) {
    if (op == "negate") return normalize(b.op(spv::OpSNegate, rt, {x}), t);
    if (op == "abs") return is_s(t) ? normalize(int_abs(x, t), t) : x;
    if (op == "sign") {
      // Selects rather than GLSL's SSign: NVIDIA's compiler (driver 580) failed to compile
      // an s64 SSign of a bitwise_not (docs/reliability.md, GPU fuzzer seed 40303757).
      if (!is_s(t)) return from_bool(b.op(spv::OpINotEqual, boolean(), {x, constant(t, 0)}), t);
      Id negative = b.op(spv::OpSLessThan, boolean(), {x, constant(t, 0)});
      Id positive = b.op(spv::OpSGreaterThan, boolean(), {x, constant(t, 0)});
      return select(t, negative, constant(t, -1), from_bool(positive, t));
    }
    if (op == "floor" || op == "ceil" || op == "round") return x;
    if (op == "bitwise_not") return normalize(b.op(spv::OpNot, rt, {x}), t);
    // Float-valued functions of an integer operand: the verifier gives them a float type.
    throw ir::IrError(node, op + " of an integer result type");
  }
  if (op == "bitwise_not") throw ir::IrError(node, "bitwise_not needs an integer operand");

  x = convert(x, xt, t);
  if (op == "negate") return b.op(spv::OpFNegate, rt, {x});
  if (op == "abs") return b.ext(GLSLstd450FAbs, rt, {x});
  if (op == "floor") return b.ext(GLSLstd450Floor, rt, {x});
  if (op == "ceil") return b.ext(GLSLstd450Ceil, rt, {x});
  if (op == "sign") {
    // Nx: -1 below zero, 1 above, the value itself otherwise (keeps -0.0 and NaN).
    Id neg = b.op(spv::OpFOrdLessThan, boolean(), {x, constant(t, 0)});
    Id pos = b.op(spv::OpFOrdGreaterThan, boolean(), {x, constant(t, 0)});
    return select(t, neg, constant(t, -1), select(t, pos, constant(t, 1), x));
  }
  if (op == "round") {
    // Half away from zero (Erlang's round/1); a zero result is +0.0 because Erlang returns the integer 0.
    Id tr = truncate(x, t);
    Id frac = b.ext(GLSLstd450FAbs, rt, {b.op(spv::OpFSub, rt, {x, tr})});
    Id step = b.ext(GLSLstd450FSign, rt, {x});
    Id r = select(t, b.op(spv::OpFOrdGreaterThanEqual, boolean(), {frac, constant(t, 0.5)}),
                  b.op(spv::OpFAdd, rt, {tr, step}), tr);
    return select(t, b.op(spv::OpFOrdEqual, boolean(), {r, constant(t, 0)}), constant(t, 0), r);
  }
  // In f64, the exact remainder that reduces large trig arguments is a loop of up to ~2000
  // steps, which a kernel that evaluates it per reduction step multiplies past lavapipe's
  // loop limit: the trig functions reduce large arguments in f32 (as their f32 forms do)
  // before the f64 rest.
  const DType ct = math_type(t);
  if (ct != t && (op == "sin" || op == "cos" || op == "tan"))
    return convert(math_unary(op, convert(x, t, ct), ct, DType::F32), ct, t);
  // Nx.BinaryBackend's erf_inv is Giles' approximation alone, a few f32 ulp from the
  // true value: where f32 is computed as the backend computes it, so is this.
  if (ct != t && op == "erf_inv") return convert(math_erf_inv_as_binary_backend(convert(x, t, ct), ct), ct, t);
  if (ct != t) return convert(float_unary(node, op, convert(x, t, ct), ct), ct, t);
  return normalize(float_unary(node, op, x, t), t);
}

// Transcendentals in the register precision of t (f32 for f16/bf16/f32).
Id Emitter::float_unary(const ir::Node& node, const std::string& op, Id x, DType t) {
  Id rt = reg_type(t);
  // f32 and bf16 roots through f64 where the device has it: Vulkan allows Sqrt 3 ulp and
  // InverseSqrt 2 (NVIDIA's f32 sqrt(5) is 2.2360678, not 2.2360680), where IEEE 754,
  // Nx.BinaryBackend and XLA round correctly, and bf16 truncates its f32 value (an f32 root
  // an ulp low is a bf16 step low). An f64 root rounded to f32 is the correctly rounded f32
  // root (53 >= 2 * 24 + 2 bits make the double rounding innocuous). f16 rounds to nearest:
  // a few f32 ulp matter only within 2^-13 of a tie, so it keeps the device's.
  if ((op == "sqrt" || op == "rsqrt") && (t == DType::F32 || t == DType::BF16) && caps.float64)
    return convert(float_unary(node, op, convert(x, t, DType::F64), DType::F64), DType::F64, t);
  if (op == "sqrt") return b.ext(GLSLstd450Sqrt, rt, {x});
  // f64 as Nx computes it, 1 / sqrt(x), correctly rounded: NVIDIA's f64 InverseSqrt is an
  // ulp off (Nx 0.13's rsqrt(2) example printed 0.7071067811865476).
  if (op == "rsqrt" && register_bits(t) == 64) return float_divide(constant(t, 1), b.ext(GLSLstd450Sqrt, rt, {x}), t);
  if (op == "rsqrt") return b.ext(GLSLstd450InverseSqrt, rt, {x});
  // GLSL.std.450's transcendentals are 16/32-bit only, and lack some functions altogether.
  // The trig functions and their inverses go through the library in f32 too: Vulkan asks
  // only 2^-11 absolute error of Sin/Cos within [-pi, pi] (NVIDIA's are off by 1e-4 at
  // x = 3e4), lavapipe's asin/acos are accurate to ~4e-4, its atan to ~50 ulp, and GLSL's
  // asinh/acosh overflow in x*x, and NVIDIA's Sinh/Cosh overflow where e^|x| does (cosh 89
  // is 2.24e38, not inf).
  static const std::set<std::string> f32_from_library = {"expm1", "log1p", "cbrt", "erf",   "erfc",  "erf_inv",
                                                         "sin",   "cos",   "tan",  "sinh",  "cosh",  "asin",
                                                         "acos",  "atan",  "asinh", "acosh", "atanh"};
  if (math_library_has(op) && (register_bits(t) == 64 || f32_from_library.count(op))) return math_unary(op, x, t);
  if (op == "log") {
    // A driver may flush a subnormal operand: scale it into the normal range first.
    Id tiny = b.op(spv::OpFOrdLessThan, boolean(), {x, constant(t, 0x1p-126)});
    Id scaled = select(t, tiny, b.op(spv::OpFMul, rt, {x, constant(t, 0x1p24)}), x);
    Id l = b.ext(GLSLstd450Log, rt, {scaled});
    return select(t, tiny, b.op(spv::OpFSub, rt, {l, constant(t, 24 * M_LN2)}), l);
  }
  static const std::map<std::string, GLSLstd450> direct = {
      {"exp", GLSLstd450Exp}, {"cosh", GLSLstd450Cosh}};
  if (auto it = direct.find(op); it != direct.end()) return b.ext(it->second, rt, {x});
  Id one = constant(t, 1);
  // Below 2^-12, sinh x and tanh x are x to f32 precision, and lavapipe's come out as
  // multiples of 2^-25 there.
  Id tiny = b.op(spv::OpFOrdLessThan, boolean(), {b.ext(GLSLstd450FAbs, rt, {x}), constant(t, 0x1p-12)});
  if (op == "sinh") {
    // sinh(-0.0) is -0.0, but lavapipe's (Mesa 22.3) Sinh gives +0.0 there: the result takes
    // x's sign bit (sinh is odd), by integer ops no driver treats as float math.
    Id r = select(t, tiny, x, b.ext(GLSLstd450Sinh, rt, {x}));
    Id sign = b.const_int(32, 0x80000000u);
    Id u = u32();
    Id bits = b.op(spv::OpBitwiseOr, u, {b.op(spv::OpBitwiseAnd, u, {b.op(spv::OpBitcast, u, {r}), b.const_int(32, 0x7FFFFFFFu)}),
                                         b.op(spv::OpBitwiseAnd, u, {b.op(spv::OpBitcast, u, {x}), sign})});
    return b.op(spv::OpBitcast, rt, {bits});
  }
  if (op == "tanh") {
    // GLSL's Tanh may overflow to NaN for large |x|; tanh is ±1 in f32 beyond |x| > 9.
    Id big = b.op(spv::OpFOrdGreaterThan, boolean(), {b.ext(GLSLstd450FAbs, rt, {x}), constant(t, 9)});
    return select(t, tiny, x, select(t, big, b.ext(GLSLstd450FSign, rt, {x}), b.ext(GLSLstd450Tanh, rt, {x})));
  }
  if (op == "sigmoid") {
    // s = e / (1 + e) with e = exp(-|x|) is sigmoid(-|x|), accurate relative to itself; for
    // x > 0 the result is 1 - s, rounded once. 1 / (1 + exp(-x)) rounds 1 + e first, which
    // gave 1.0 at x = 17 where Nx gives 0.99999994 (and log(1 - sigmoid(x)) -inf).
    Id e = b.ext(GLSLstd450Exp, rt, {b.op(spv::OpFNegate, rt, {b.ext(GLSLstd450FAbs, rt, {x})})});
    Id s = b.op(spv::OpFDiv, rt, {e, b.op(spv::OpFAdd, rt, {one, e})});
    Id positive = b.op(spv::OpFOrdGreaterThan, boolean(), {x, constant(t, 0)});
    return select(t, positive, b.op(spv::OpFSub, rt, {one, s}), s);
  }
  throw ir::IrError(node, op + " is not a float function");
}

// One correction by the exact residual a - q c rounds the quotient q = a / c as IEEE does
// (codegen/targets/launch.h; NVIDIA's f32 x / x gave 0.99999994, which Nx's truncation to
// bf16 makes 0.996, and its f64 x / 3.0 is an ulp off, the literal's division folded into a
// product by its reciprocal). Not where q is ±0 (its sign) or the correction is not finite
// (q infinite or NaN).
Id Emitter::corrected_quotient(Id q, Id a, Id c, DType t) {
  Id rt = reg_type(t);
  const int bits = register_bits(t);
  Id r = b.ext(GLSLstd450Fma, rt, {b.op(spv::OpFNegate, rt, {q}), c, a});
  Id corr = b.op(spv::OpFDiv, rt, {r, c});
  Id finite = b.op(spv::OpLogicalNot, boolean(),
                   {b.op(spv::OpLogicalOr, boolean(), {b.op(spv::OpIsNan, boolean(), {corr}), b.op(spv::OpIsInf, boolean(), {corr})})});
  Id it = b.type_int(bits);
  Id magnitude = b.op(spv::OpBitwiseAnd, it, {b.op(spv::OpBitcast, it, {q}), b.const_int(bits, (uint64_t(1) << (bits - 1)) - 1)});
  Id use = b.op(spv::OpLogicalAnd, boolean(), {finite, b.op(spv::OpINotEqual, boolean(), {magnitude, b.const_int(bits, 0)})});
  Id fixed = b.op(spv::OpFAdd, rt, {q, corr});
  b.decorate(fixed, spv::DecorationNoContraction);
  return select(t, use, fixed, q);
}

// a / c for floats, correctly rounded where the device's division is not.
Id Emitter::float_divide(Id a, Id c, DType t) {
  Id rt = reg_type(t);
  const int bits = register_bits(t);
  // Emulated f64 divides exactly (soft_f64.h); f16 and bf16 compute in f32 registers.
  const bool hardware = bits == 32 || (bits == 64 && !caps.emulate_f64);
  // Vulkan bounds OpFDiv's error only for divisors of magnitude in [2^-126, 2^126], and
  // NVIDIA's goes through a reciprocal that loses its precision near the bottom of the
  // normal range and flushes below it (on the H100, bf16 inf / 3.39e38 gave NaN and
  // 3.39e38 / 3.39e38 gave 0, then 0.996 with the divisor scaled to just below 2^126).
  // Divisors above 2^120 (f64: 2^1000) scale both operands by 2^-8 (2^-32) first: exact,
  // the same quotient (a dividend made subnormal only where the quotient is far below
  // the normal range).
  if (hardware) {
    Id big = b.op(spv::OpFOrdGreaterThan, boolean(), {b.ext(GLSLstd450FAbs, rt, {c}), constant(t, bits == 32 ? 0x1p120 : 0x1p1000)});
    Id s = select(t, big, constant(t, bits == 32 ? 0x1p-8 : 0x1p-32), constant(t, 1.0));
    a = b.op(spv::OpFMul, rt, {a, s});
    c = b.op(spv::OpFMul, rt, {c, s});
    b.decorate(a, spv::DecorationNoContraction);
    b.decorate(c, spv::DecorationNoContraction);
  }
  const bool correct = hardware && corrects_division(caps);
  // The correction a - q c is about an ulp of a, below the normal range where a is (a
  // quotient near the bottom of the range, or a tiny a over a tiny c), and a device that
  // flushes subnormals drops it (f64: x / (max / 1.5) an ulp off; f32 on an H100:
  // -6.66e-35 / -6.66e-35 gave 0.99999994): where the quotient is below 2^-900 (f32: 2^-90)
  // or |a| below 2^-960 (2^-100), a is scaled by 2^64 (2^32) and the corrected quotient
  // back, exact where the result is normal (else flushed anyway).
  const bool flushes = bits == 32 ? !caps.preserve_denorms_f32 : !caps.preserve_denorms_f64;
  Id down = 0;
  if (correct && flushes) {
    Id abs_a = b.ext(GLSLstd450FAbs, rt, {a});
    Id bound = b.op(spv::OpFMul, rt, {b.ext(GLSLstd450FAbs, rt, {c}), constant(t, bits == 32 ? 0x1p-90 : 0x1p-900)});
    b.decorate(bound, spv::DecorationNoContraction);
    Id small = b.op(spv::OpLogicalOr, boolean(), {b.op(spv::OpFOrdLessThan, boolean(), {abs_a, bound}),
                                                  b.op(spv::OpFOrdLessThan, boolean(), {abs_a, constant(t, bits == 32 ? 0x1p-100 : 0x1p-960)})});
    // Not for an infinite c, whose quotients are zeros, and beside which a finite a scaled
    // up may overflow (max / inf gave NaN).
    Id tiny = b.op(spv::OpLogicalAnd, boolean(), {small, b.op(spv::OpLogicalNot, boolean(), {b.op(spv::OpIsInf, boolean(), {c})})});
    a = b.op(spv::OpFMul, rt, {a, select(t, tiny, constant(t, bits == 32 ? 0x1p32 : 0x1p64), constant(t, 1.0))});
    b.decorate(a, spv::DecorationNoContraction);
    down = select(t, tiny, constant(t, bits == 32 ? 0x1p-32 : 0x1p-64), constant(t, 1.0));
  }
  Id q = b.op(spv::OpFDiv, rt, {a, c});
  if (correct) {
    q = corrected_quotient(q, a, c, t);
    if (down) {
      q = b.op(spv::OpFMul, rt, {q, down});
      b.decorate(q, spv::DecorationNoContraction);
    }
  }
  return normalize(q, t);
}

// Integer quotient (or remainder) with Nx's results for a zero divisor and MIN / -1.
Id Emitter::int_divide(bool quotient, Id a, Id c, DType t) {
  Id rt = reg_type(t);
  const int rb = register_bits(t);
  // x / 0 = -1 (all bits), x rem 0 = x; MIN / -1 = MIN, MIN rem -1 = 0 (docs/ir.md, as XLA).
  Id zero = b.op(spv::OpIEqual, boolean(), {c, constant(t, 0)});
  Id bad = zero;
  if (is_s(t)) {
    Id min_reg = b.const_int(rb, uint64_t(1) << (rb - 1));
    Id overflow = b.op(spv::OpLogicalAnd, boolean(), {b.op(spv::OpIEqual, boolean(), {a, min_reg}),
                                                      b.op(spv::OpIEqual, boolean(), {c, constant(t, -1)})});
    bad = b.op(spv::OpLogicalOr, boolean(), {zero, overflow});
  }
  Id safe = select(t, bad, constant(t, 1), c);
  if (quotient) {
    Id q = b.op(is_s(t) ? spv::OpSDiv : spv::OpUDiv, rt, {a, safe});  // a / 1 = a covers MIN / -1
    return normalize(select(t, zero, constant_int(t, ~uint64_t(0)), q), t);
  }
  Id r;
  if (is_s(t)) {
    // Vulkan leaves OpSRem undefined for negative operands (NVIDIA differs from the SPIR-V
    // definition), so take the remainder of the magnitudes and give it the dividend's sign.
    Id m = b.op(spv::OpUMod, rt, {int_abs(a, t), int_abs(safe, t)});
    r = select(t, b.op(spv::OpSLessThan, boolean(), {a, constant(t, 0)}), b.op(spv::OpSNegate, rt, {m}), m);
  } else {
    r = b.op(spv::OpUMod, rt, {a, safe});
  }
  return select(t, zero, a, select(t, bad, constant(t, 0), r));
}

Id Emitter::int_abs(Id x, DType t) {
  Id negative = b.op(spv::OpSLessThan, boolean(), {x, constant(t, 0)});
  return select(t, negative, b.op(spv::OpSNegate, reg_type(t), {x}), x);
}

// Integer shifts: out-of-range amounts give 0, or the sign fill for an arithmetic right shift.
Id Emitter::int_shift(bool left, Id a, Id c, DType t) {
  Id rt = reg_type(t);
  const int rb = register_bits(t);
  Id out_of_range = is_s(t) ? b.op(spv::OpLogicalOr, boolean(),
                                   {b.op(spv::OpSLessThan, boolean(), {c, constant(t, 0)}),
                                    b.op(spv::OpSGreaterThanEqual, boolean(), {c, constant(t, rb)})})
                            : b.op(spv::OpUGreaterThanEqual, boolean(), {c, constant(t, rb)});
  Id amount = select(t, out_of_range, constant(t, rb - 1), c);
  if (left)
    return select(t, out_of_range, constant(t, 0), normalize(b.op(spv::OpShiftLeftLogical, rt, {a, amount}), t));
  if (is_s(t)) return b.op(spv::OpShiftRightArithmetic, rt, {a, amount});
  return select(t, out_of_range, constant(t, 0), b.op(spv::OpShiftRightLogical, rt, {a, amount}));
}

Id Emitter::emit_binary(const ir::Node& node, Index& index) {
  const std::string& op = node.op;
  const DType t = node.type().dtype;
  auto v = operands_at(node, index);
  Id a = convert(v[0], arg(node, 0).type().dtype, t);
  Id c = convert(v[1], arg(node, 1).type().dtype, t);
  Id rt = reg_type(t);
  const bool fl = ir::is_float(t);

  if (op == "max" || op == "min") {
    // Erlang's max/min keep the first operand on ties; NaN wins (Nx).
    if (fl) a = b.unknown(a), c = b.unknown(c);
    Id pick_c = fl ? b.op(op == "max" ? spv::OpFOrdLessThan : spv::OpFOrdGreaterThan, boolean(), {a, c})
                   : b.op(op == "max" ? (is_s(t) ? spv::OpSLessThan : spv::OpULessThan)
                                      : (is_s(t) ? spv::OpSGreaterThan : spv::OpUGreaterThan),
                          boolean(), {a, c});
    Id r = select(t, pick_c, c, a);
    if (!fl) return r;
    r = select(t, b.op(spv::OpIsNan, boolean(), {c}), c, r);
    return select(t, b.op(spv::OpIsNan, boolean(), {a}), a, r);
  }
  if (fl) {
    // Rounded one by one in the graph's order, as Nx computes them: NoContraction forbids
    // reassociating and fusing. NVIDIA's compiler made x * (y * x) (x * x) * y, inf * 0 =
    // NaN for x = 3e38 and y = 0 where Nx has 3e38 * 0 = 0, and 3e38 * 10 + -inf a fused
    // -inf where Nx has NaN. Emulated arithmetic is exact integer code already.
    auto exact = [&](spv::Op o) {
      Id r = b.op(o, rt, {a, c});
      if (!b.emulated(rt)) b.decorate(r, spv::DecorationNoContraction);
      return normalize(r, t);
    };
    if (op == "add") return exact(spv::OpFAdd);
    if (op == "subtract") return exact(spv::OpFSub);
    if (op == "multiply") return exact(spv::OpFMul);
    if (op == "divide") return float_divide(a, c, t);
    if (op == "remainder") return normalize(float_rem(a, c, t), t);
    if (op == "atan2" || op == "pow") {
      const DType ct = math_type(t);
      Id r = op == "atan2" ? float_atan2(convert(a, t, ct), convert(c, t, ct), ct)
                           : float_pow(convert(a, t, ct), convert(c, t, ct), ct);
      return normalize(convert(r, ct, t), t);
    }
    throw ir::IrError(node, op + " needs integer operands");
  }

  // Integers: wrap around, then re-normalise narrow types.
  if (op == "add") return normalize(b.op(spv::OpIAdd, rt, {a, c}), t);
  if (op == "subtract") return normalize(b.op(spv::OpISub, rt, {a, c}), t);
  if (op == "multiply") return normalize(b.op(spv::OpIMul, rt, {a, c}), t);
  if (op == "bitwise_and") return b.op(spv::OpBitwiseAnd, rt, {a, c});
  if (op == "bitwise_or") return b.op(spv::OpBitwiseOr, rt, {a, c});
  if (op == "bitwise_xor") return b.op(spv::OpBitwiseXor, rt, {a, c});
  if (op == "quotient" || op == "remainder") return int_divide(op == "quotient", a, c, t);
  if (op == "left_shift" || op == "right_shift") return int_shift(op == "left_shift", a, c, t);
  if (op == "pow") return int_pow(a, c, t);
  throw ir::IrError(node, op + " needs float operands");
}

// Square-and-multiply with wrap-around; a negative exponent gives 0, except for bases ±1.
Id Emitter::int_pow(Id base, Id exponent, DType t) {
  Id rt = reg_type(t);
  const int rb = register_bits(t);
  Id neg = is_s(t) ? b.op(spv::OpSLessThan, boolean(), {exponent, constant(t, 0)}) : b.const_bool(false);
  Id e0 = select(t, neg, constant(t, 0), exponent);
  auto r = b.at_level(b.level_of({base, e0}), [&] {
    return b.loop(
        {rt, rt, rt}, {constant(t, 1), base, e0},
        [&](const spirv::Builder::Values& s) { return b.op(spv::OpINotEqual, boolean(), {s[2], constant(t, 0)}); },
        [&](const spirv::Builder::Values& s) {
          Id bit = b.op(spv::OpINotEqual, boolean(), {b.op(spv::OpBitwiseAnd, rt, {s[2], constant(t, 1)}), constant(t, 0)});
          Id acc = select(t, bit, b.op(spv::OpIMul, rt, {s[0], s[1]}), s[0]);
          return spirv::Builder::Values{acc, b.op(spv::OpIMul, rt, {s[1], s[1]}),
                                        b.op(spv::OpShiftRightLogical, rt, {s[2], b.const_int(rb, 1)})};
        },
        uint64_t(rb));  // the exponent loses a bit per trip
  });
  Id p = normalize(r[0], t);
  if (!is_s(t)) return p;
  // Negative exponents: 1 for base 1, ±1 for base -1 by the exponent's parity, else 0.
  Id odd = b.op(spv::OpINotEqual, boolean(), {b.op(spv::OpBitwiseAnd, rt, {exponent, constant(t, 1)}), constant(t, 0)});
  Id m1 = b.op(spv::OpIEqual, boolean(), {base, constant(t, -1)});
  Id one = b.op(spv::OpIEqual, boolean(), {base, constant(t, 1)});
  Id neg_r = select(t, one, constant(t, 1), select(t, m1, select(t, odd, constant(t, -1), constant(t, 1)), constant(t, 0)));
  return select(t, neg, neg_r, p);
}

Id Emitter::emit_compare(const ir::Node& node, Index& index) {
  const std::string& op = node.op;
  const DType t = node.type().dtype;
  const DType at = arg(node, 0).type().dtype, bt = arg(node, 1).type().dtype;
  auto v = operands_at(node, index);
  if (op == "logical_and" || op == "logical_or" || op == "logical_xor") {
    spv::Op o = op == "logical_and" ? spv::OpLogicalAnd : op == "logical_or" ? spv::OpLogicalOr : spv::OpLogicalNotEqual;
    return from_bool(b.op(o, boolean(), {to_bool(v[0], at), to_bool(v[1], bt)}), t);
  }
  const DType m = ir::merge_types(at, bt);
  Id x = convert(v[0], at, m), y = convert(v[1], bt, m);
  spv::Op o;
  if (ir::is_float(m)) {
    x = b.unknown(x), y = b.unknown(y);
    // Ordered comparisons are false with NaN; not_equal is true (Nx).
    o = op == "equal" ? spv::OpFOrdEqual
        : op == "not_equal" ? spv::OpFUnordNotEqual
        : op == "greater" ? spv::OpFOrdGreaterThan
        : op == "less" ? spv::OpFOrdLessThan
        : op == "less_equal" ? spv::OpFOrdLessThanEqual
                             : spv::OpFOrdGreaterThanEqual;
  } else {
    const bool s = is_s(m);
    o = op == "equal" ? spv::OpIEqual
        : op == "not_equal" ? spv::OpINotEqual
        : op == "greater" ? (s ? spv::OpSGreaterThan : spv::OpUGreaterThan)
        : op == "less" ? (s ? spv::OpSLessThan : spv::OpULessThan)
        : op == "less_equal" ? (s ? spv::OpSLessThanEqual : spv::OpULessThanEqual)
                             : (s ? spv::OpSGreaterThanEqual : spv::OpUGreaterThanEqual);
  }
  return from_bool(b.op(o, boolean(), {x, y}), t);
}

Id Emitter::emit_misc_elementwise(const ir::Node& node, Index& index) {
  const std::string& op = node.op;
  const DType t = node.type().dtype;
  if (op == "as_type") return convert(operand_at(node, 0, index), arg(node, 0).type().dtype, t);
  if (op == "bitcast") {
    const DType xt = arg(node, 0).type().dtype;
    if (ir::dtype_bits(xt) != ir::dtype_bits(t)) throw ir::IrError(node, "bitcast between different bit widths");
    if (xt == t) return operand_at(node, 0, index);
    return from_bits(to_bits(operand_at(node, 0, index), xt), t);
  }
  auto v = operands_at(node, index);
  if (op == "select") {
    Id pred = to_bool(v[0], arg(node, 0).type().dtype);
    return select(t, pred, convert(v[1], arg(node, 1).type().dtype, t), convert(v[2], arg(node, 2).type().dtype, t));
  }
  // clip(x, lo, hi) = min(max(x, lo), hi) with Nx's NaN-propagating max/min.
  Id x = convert(v[0], arg(node, 0).type().dtype, t);
  Id lo = convert(v[1], arg(node, 1).type().dtype, t), hi = convert(v[2], arg(node, 2).type().dtype, t);
  const bool fl = ir::is_float(t), s = is_s(t);
  if (fl) x = b.unknown(x), lo = b.unknown(lo), hi = b.unknown(hi);
  Id below = b.op(fl ? spv::OpFOrdLessThan : s ? spv::OpSLessThan : spv::OpULessThan, boolean(), {x, lo});
  Id r = select(t, below, lo, x);
  Id above = b.op(fl ? spv::OpFOrdGreaterThan : s ? spv::OpSGreaterThan : spv::OpUGreaterThan, boolean(), {r, hi});
  r = select(t, above, hi, r);
  if (!fl) return r;
  // Without SignedZeroInfNanPreserve a driver may turn the compare-selects into min/max,
  // which drop a NaN x (NVIDIA held to vulkan-minimum gave clip(NaN, -0.0, 0.0) = -0.0).
  const bool promised = register_bits(t) == 64 ? caps.preserve_signed_zero_inf_nan_f64 : caps.preserve_signed_zero_inf_nan_f32;
  if (!promised) r = select(t, b.op(spv::OpIsNan, boolean(), {x}), x, r);
  r = select(t, b.op(spv::OpIsNan, boolean(), {lo}), lo, r);
  return select(t, b.op(spv::OpIsNan, boolean(), {hi}), hi, r);
}

}  // namespace nxv::codegen
