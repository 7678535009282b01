// Emulated f64's exp, expm1, sigmoid, sinh, cosh, tanh, log and log1p (soft_f64_fixed.h) on
// 64-bit integers in fixed point.
//
// Each value below is a u64 "in 2^n units" (the integer is the value times 2^n). Tang's
// reduction x = (64 m + j) ln2/64 + r is exact on x's significand modulo 2^64 (only r, which
// is small, is kept); e^r - 1 is Taylor's series to r^6, within 2^-64.6 on |r| <= 0.00565;
// 2^(j/64) comes from a table of 64-bit significands; a quotient is a product by 1/d from
// two Newton steps. log x = e ln2 + log c_j + log1p((m - c_j) / c_j) with c_j = 1 + j/64
// from m's leading bits, summed in 96 bits; near 1, log1p(x - 1) with x - 1 exact; log1p x
// the same on 1 + x aligned in 64 bits, or below 2^-6 on x itself. Near 0, expm1, sinh and
// tanh take their series on x itself. The 64-bit result is within about 2^-61 of the true
// significand and is rounded once (round_pack), subnormals included. The error analysis was
// checked against mpmath on a model of these steps, and unit_tests' math sweep measures the
// emitted code.
#include "codegen/soft_f64_fixed.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <vector>

#include "codegen/exp2_table.h"
#include "codegen/soft_f64.h"
#include "codegen/soft_f64_parts.h"
#include "codegen/soft_i64.h"

namespace nxv::codegen::soft {

namespace {

// Taylor's coefficients of Q(r) = (e^r - 1 - r) / r^2 = 1/2 + r/6 + r^2/24 + r^3/120 +
// r^4/720 in 2^64 units (1/2 is 2^63).
constexpr uint64_t kSixth = 0x2aaaaaaaaaaaaaabull, k24th = 0x0aaaaaaaaaaaaaabull, k120th = 0x0222222222222222ull,
                   k720th = 0x005b05b05b05b05bull;
// ln2 2^92 (= ln2/64 in 2^98 units) in three words, low first.
constexpr uint32_t kLn2Words[3] = {0xbc9e3b3au, 0x7d1cf79au, 0x0b17217fu};
// |c_n| of tanh(a)/a = sum c_n a^2n (alternating signs) in 2^63 units, to n = 8: the rest is
// below 2^-66 for a < 1/8 (mpmath).
constexpr uint64_t kTanhSeries[9] = {0x8000000000000000ull, 0x2aaaaaaaaaaaaaabull, 0x1111111111111111ull,
                                     0x06e86e86e86e86e8ull, 0x02cc9e9105821f3eull, 0x01226e355e6c23c9ull,
                                     0x0075b4f43855f77full, 0x002fb46c8a56ebc5ull, 0x0013558248036744ull};

// 1/(n + 1)! of expm1(x)/x = sum x^n/(n + 1)! in 2^63 units, to n = 12: the rest is below
// 2^-68 for |x| < 1/8.
constexpr uint64_t kExpm1Series[13] = {0x8000000000000000ull, 0x4000000000000000ull, 0x1555555555555555ull,
                                       0x0555555555555555ull, 0x0111111111111111ull, 0x002d82d82d82d82eull,
                                       0x0006806806806807ull, 0x0000d00d00d00d01ull, 0x0000171de3a556c7ull,
                                       0x0000024fc9f6ef14ull, 0x00000035cc8acfebull, 0x000000047bb63bfeull,
                                       0x000000005849184full};
// 1/(2n + 1)! of sinh(a)/a = sum a^2n/(2n + 1)! in 2^63 units, to n = 5: the rest is below
// 2^-68 for a < 1/8.
constexpr uint64_t kSinhSeries[6] = {0x8000000000000000ull, 0x1555555555555555ull, 0x0111111111111111ull,
                                     0x0006806806806807ull, 0x0000171de3a556c7ull, 0x00000035cc8acfebull};
// |c_n| of log1p(t)/t = sum (-t)^n / (n + 1) in 2^63 units, to n = 10: the rest is below
// 2^-66 for |t| < 2^-6.
constexpr uint64_t kLog1pSeries[11] = {0x8000000000000000ull, 0x4000000000000000ull, 0x2aaaaaaaaaaaaaabull,
                                       0x2000000000000000ull, 0x199999999999999aull, 0x1555555555555555ull,
                                       0x1249249249249249ull, 0x1000000000000000ull, 0x0e38e38e38e38e39ull,
                                       0x0ccccccccccccccdull, 0x0ba2e8ba2e8ba2e9ull};
// Per j = 0..63, c_j = 1 + j/64: 1/c_j in 2^64 units (two words, low first; 0 for j = 0, where
// c_j is 1) and log c_j in 2^84 units (three words), from mpmath at 50 digits.
constexpr uint32_t kLogTable[64][5] = {
    {0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000}, {0x0fc0fc10, 0xfc0fc0fc, 0xc79f3db5, 0x5161f807, 0x00003f81},
    {0xe0f83e10, 0xf83e0f83, 0x0133e3f0, 0x6c39e0cc, 0x00007e0a}, {0x85bb3950, 0xf4898d5f, 0xe231a795, 0xc7b196e7, 0x0000bba2},
    {0xf0f0f0f1, 0xf0f0f0f0, 0x330be64c, 0x86008b15, 0x0000f851}, {0xcc0ed730, 0xed7303b5, 0x09299837, 0x7961bd1d, 0x0001341d},
    {0x0ea0ea0f, 0xea0ea0ea, 0xb9be499c, 0x28ae56b4, 0x00016f0d}, {0x1cd85689, 0xe6c2b448, 0x3650bd23, 0xd3a4ad56, 0x0001a926},
    {0x8e38e38e, 0xe38e38e3, 0x5e9ea880, 0x76e2af2e, 0x0001e270}, {0x0e070382, 0xe070381c, 0x2cd2ee2f, 0xcf9a11cb, 0x00021aef},
    {0x0dd67c8a, 0xdd67c8a6, 0x6980bb8e, 0x5f03fea4, 0x000252aa}, {0x40da740e, 0xda740da7, 0xccfa7b2a, 0x6d996fa3, 0x000289a5},
    {0x0d79435e, 0xd79435e5, 0x790e7c41, 0x0e14f27a, 0x0002bfe6}, {0x531dec0d, 0xd4c77b03, 0x237c6d66, 0x20421b21, 0x0002f571},
    {0x0d20d20d, 0xd20d20d2, 0x8ec8260f, 0x539e8ad6, 0x00032a4b}, {0x819ec8e9, 0xcf6474a8, 0x5b19cc03, 0x29d017fe, 0x00035e79},
    {0xcccccccd, 0xcccccccc, 0x3584bb04, 0xf8f35344, 0x000391fe}, {0xb74f0329, 0xca4587e6, 0xbd3d5100, 0xedc55e5c, 0x0003c4e0},
    {0xe0c7ce0c, 0xc7ce0c7c, 0x51aaa8ce, 0x0dabc7c5, 0x0003f723}, {0x5f9d4d1c, 0xc565c87b, 0xd7dcfde8, 0x389ce438, 0x000428c9},
    {0x0c30c30c, 0xc30c30c3, 0x80e731f5, 0x2aeae983, 0x000459d7}, {0xc0c0c0c1, 0xc0c0c0c0, 0x6890a14f, 0x7ef3de59, 0x00048a50},
    {0xe82fa0bf, 0xbe82fa0b, 0x270b3247, 0xaeb8474c, 0x0004ba38}, {0xc52640bc, 0xbc52640b, 0x71cbcd73, 0x155a517a, 0x0004e993},
    {0xe8ba2e8c, 0xba2e8ba2, 0x9f42dece, 0xf08717b0, 0x00051862}, {0x5c0b8170, 0xb81702e0, 0x42724f58, 0x61cb7e0b, 0x000546ab},
    {0x0b60b60b, 0xb60b60b6, 0x94236384, 0x6fd60272, 0x0005746f}, {0x0b40b40b, 0xb40b40b4, 0xb110af84, 0x07a6c52b, 0x0005a1b2},
    {0x590b2164, 0xb21642c8, 0xa7389315, 0xfdaef401, 0x0005ce75}, {0xc0b02c0b, 0xb02c0b02, 0xd92ce97a, 0x0ee0abf0, 0x0005fabe},
    {0x9882b931, 0xae4c415c, 0xad69c620, 0xe1b05096, 0x0006268c}, {0x0ac76918, 0xac769184, 0xae933745, 0x070845be, 0x000651e5},
    {0xaaaaaaab, 0xaaaaaaaa, 0xfcada35e, 0xfb2fe612, 0x00067cc8}, {0x17c0a8e8, 0xa8e83f57, 0x635213fd, 0x26a68212, 0x0006a73b},
    {0x7829cbc1, 0xa72f0539, 0xa32fbb6b, 0xdef323d8, 0x0006d13d}, {0x95fad40a, 0xa57eb502, 0xfde1874e, 0x6769c6de, 0x0006fad3},
    {0x70a3d70a, 0xa3d70a3d, 0x6b097608, 0xf1e6a688, 0x000723fd}, {0x16cfd772, 0xa237c32b, 0x5877b233, 0x9f803af5, 0x00074cbf},
    {0xa0a0a0a1, 0xa0a0a0a0, 0x2fb989a9, 0x81307128, 0x0007751a}, {0x254813e2, 0x9f1165e7, 0xf8df68dc, 0x9875a1e1, 0x00079d10},
    {0x89d89d8a, 0x9d89d89d, 0x2cd720ec, 0xd7ebc1bb, 0x0007c4a3}, {0x09c09c0a, 0x9c09c09c, 0xb66becf9, 0x23de3cc7, 0x0007ebd6},
    {0x5bc609a9, 0x9a90e7d9, 0x634e34af, 0x52d2e87f, 0x000812a9}, {0x5885fb37, 0x991f1a51, 0x272bcb1c, 0x2e0e6fa0, 0x0008391f},
    {0x097b425f, 0x97b425ed, 0x5b4c4bde, 0x72129541, 0x00085f39}, {0x0964fda7, 0x964fda6c, 0x7ef1f64e, 0xcf16a64b, 0x000884f9},
    {0x2094f209, 0x94f2094f, 0xd4c799d2, 0xe97a6af4, 0x0008aa61}, {0x0939a85c, 0x939a85c4, 0x662e5eec, 0x5a33e4b7, 0x0008cf73},
    {0x49249249, 0x92492492, 0x1ef62cd3, 0xaf382068, 0x0008f42f}, {0x0fdbc091, 0x90fdbc09, 0x416f1b44, 0x6bdf5fa1, 0x00091898},
    {0x08fb823f, 0x8fb823ee, 0x75bc1f9f, 0x0944d88d, 0x00093caf}, {0x1408e783, 0x8e78356d, 0xdcbd4e19, 0xf6a24745, 0x00096074},
    {0xd3dcb08d, 0x8d3dcb08, 0x0fdac851, 0x99a7885f, 0x000983eb}, {0x08c08c09, 0x8c08c08c, 0x8b75c96c, 0x4ece70e9, 0x0009a714},
    {0xa9386823, 0x8ad8f2fb, 0xd4e22130, 0x69ab150c, 0x0009c9f0}, {0xae4089ae, 0x89ae4089, 0x5202131f, 0x3538ab7d, 0x0009ec81},
    {0x88888889, 0x88888888, 0x32325e61, 0xf4233957, 0x000a0ec7}, {0x34e47ef1, 0x8767ab5f, 0x3e85bd9c, 0xe10e2f61, 0x000a30c5},
    {0xe6d1d608, 0x864b8a7d, 0x8113dfa4, 0x2ed81f5d, 0x000a527c}, {0x40853408, 0x85340853, 0x4e584c2b, 0x08dbadd8, 0x000a73ec},
    {0x10842108, 0x84210842, 0x773be458, 0x932de2d5, 0x000a9516}, {0x8d4fdf3b, 0x83126e97, 0xa08e310c, 0xead9f9cc, 0x000ab5fc},
    {0x08208208, 0x82082082, 0x7d94d553, 0x261acf96, 0x000ad6a0}, {0x10204081, 0x81020408, 0xb86b04b0, 0x54920b3a, 0x000af701},
};
// ln2 in 2^84 units, low word first: kLn2Words 8 places down (the byte shifted out, 0x3a, is
// below half of the last place kept, so this is ln2 2^84 rounded too).
constexpr uint32_t kLn2Words84[3] = {kLn2Words[0] >> 8 | kLn2Words[1] << 24, kLn2Words[1] >> 8 | kLn2Words[2] << 24,
                                     kLn2Words[2] >> 8};

// The high 64 bits of a b, short of them by less than 3: the low words' product and the low
// halves of the cross products are left out.
Id mul_high(Soft64& s, Id a, Id b) {
  Id h01 = two_words(s, spv::OpUMulExtended, s.lo(a), s.hi(b)).second;
  Id h10 = two_words(s, spv::OpUMulExtended, s.hi(a), s.lo(b)).second;
  auto [l11, h11] = two_words(s, spv::OpUMulExtended, s.hi(a), s.hi(b));
  auto [t, c1] = two_words(s, spv::OpIAddCarry, l11, h01);
  auto [w2, c2] = two_words(s, spv::OpIAddCarry, t, h10);
  return s.pair(w2, s.op(spv::OpIAdd, {h11, s.op(spv::OpIAdd, {c1, c2})}));
}

// a - b where `minus`, else a + b.
Id add_or_sub(Soft64& s, Id minus, Id a, Id b) { return s.select(minus, i64_sub(s, a, b), i64_add(s, a, b)); }
// v >> n for any u32 n: 0 from 64 on.
Id shift_right_any(Soft64& s, Id v, Id n) {
  Id r = i64_shr(s, v, s.b.ext(GLSLstd450UMin, s.u32, {n, s.c(63)}));
  return s.select(s.test(spv::OpUGreaterThanEqual, {n, s.c(64)}), s.c64(0), r);
}
// sig 2^(e - 1011) for a signed e: a significand in 2^64 units for an exponent field e,
// modulo 2^64.
Id scaled_by_exponent(Soft64& s, Id sig, Id e) {
  Id left = s.op(spv::OpISub, {e, s.c(1011)});
  Id up = s.test(spv::OpSGreaterThanEqual, {left, s.c(0)});
  Id l = i64_shl(s, sig, s.b.ext(GLSLstd450UMin, s.u32, {left, s.c(63)}));
  Id r = i64_shr(s, sig, s.b.ext(GLSLstd450UMin, s.u32, {s.op(spv::OpISub, {s.c(1011), e}), s.c(63)}));
  return s.select(up, l, r);
}

// 2^(j/64) in 2^63 units for j = 0..63, as little-endian word pairs.
const std::vector<uint32_t>& exp2_significands() {
  static const std::vector<uint32_t> words = [] {
    std::vector<uint32_t> w;
    for (const auto& [hi, lo] : kExp2Table) {
      const uint64_t v = uint64_t(std::ldexp(hi, 63)) + uint64_t(std::llround(std::ldexp(lo, 63)));
      w.push_back(uint32_t(v));
      w.push_back(uint32_t(v >> 32));
    }
    return w;
  }();
  return words;
}

// kLogTable's rows, one after another.
const std::vector<uint32_t>& log_table_words() {
  static const std::vector<uint32_t> words = [] {
    std::vector<uint32_t> w;
    for (const auto& row : kLogTable) w.insert(w.end(), std::begin(row), std::end(row));
    return w;
  }();
  return words;
}

// e^x = sig 2^(m - 63), sig in 2^63 units within (0.98, 2).
struct FixedExp {
  Id m;  // a signed u32
  Id sig;
};
using Words3 = Words<3>;  // a 96-bit value

// a u32 times a 96-bit constant, modulo 2^96.
Words3 mul96(Soft64& s, Id a, const uint32_t (&c)[3]) {
  auto [w0, h0] = two_words(s, spv::OpUMulExtended, a, s.c(c[0]));
  auto [l1, h1] = two_words(s, spv::OpUMulExtended, a, s.c(c[1]));
  auto [w1, carry] = two_words(s, spv::OpIAddCarry, h0, l1);
  return {w0, w1, s.op(spv::OpIAdd, {h1, s.op(spv::OpIAdd, {s.op(spv::OpIMul, {a, s.c(c[2])}), carry})})};
}

// x = k ln2/64 + r: k a signed u32, r in 2^66 units (|r| <= 0.00565). For |x| < 747, not NaN.
std::pair<Id, Id> reduce_by_ln2_64(Soft64& s, Id x) {
  Id hi = s.hi(x), lo = s.lo(x);
  F64Parts p = f64_unpack(s, x);
  Id e = p.exp;
  // Below 2^-60 (exponent field 963), e^x rounds to 1: x is taken as 0.
  Id tiny = s.test(spv::OpULessThan, {e, s.c(963)});
  // k = x 64/ln2 rounded, in f32 from x's leading bits (exponent rebased, fraction truncated):
  // one off where x 64/ln2 is within 0.02 of a half, which keeps |r| <= 0.00565.
  Id fraction = s.op(spv::OpBitwiseOr, {s.op(spv::OpShiftLeftLogical, {s.op(spv::OpBitwiseAnd, {hi, s.c(0xfffff)}), s.c(3)}),
                                        s.op(spv::OpShiftRightLogical, {lo, s.c(29)})});
  Id exponent = s.op(spv::OpShiftLeftLogical, {s.op(spv::OpISub, {e, s.c(896)}), s.c(23)});
  Id fbits = s.op(spv::OpBitwiseOr, {s.op(spv::OpBitwiseAnd, {hi, s.c(0x80000000u)}), s.op(spv::OpBitwiseOr, {exponent, fraction})});
  const Id f32 = s.b.type_float(32);
  Id xf = s.b.op(spv::OpBitcast, f32, {s.select32(tiny, s.c(0), fbits)});
  Id kf = s.b.ext(GLSLstd450RoundEven, f32, {s.b.op(spv::OpFMul, f32, {xf, s.b.const_f32(0x1.715476p+6f)})});
  Id k = s.b.op(spv::OpConvertFToS, s.u32, {kf});
  // x 2^66 modulo 2^64 (two's complement): the significand moved left by at most 23.
  F64Normal m = f64_significand(s, p);
  Id xs = s.select(tiny, s.c64(0), scaled_by_exponent(s, m.sig, s.op(spv::OpIAdd, {m.exp, s.c(2)})));
  xs = s.select(s.test(spv::OpSLessThan, {hi, s.c(0)}), i64_neg(s, xs), xs);
  // k ln2/64 2^66 = k (ln2 2^92) / 2^32 modulo 2^64, |k| < 2^17.
  Id k_neg = s.test(spv::OpSLessThan, {k, s.c(0)});
  Id ak = s.select32(k_neg, s.op(spv::OpISub, {s.c(0), k}), k);
  Words3 product = mul96(s, ak, kLn2Words);
  Id kl = s.pair(product[1], product[2]);
  return {k, i64_sub(s, xs, s.select(k_neg, i64_neg(s, kl), kl))};
}

// For |x| < 747, not NaN.
FixedExp exp_fixed(Soft64& s, Id x) {
  auto [k, r] = reduce_by_ln2_64(s, x);
  Id r_neg = i64_is_negative(s, r);
  Id a66 = i64_abs(s, r), a = i64_shr(s, a66, s.c(2));
  Id z = mul_high(s, a, a);  // r^2 2^64
  // Q(r) from its even and odd parts in |r|.
  Id even = i64_add(s, s.c64(uint64_t(1) << 63), mul_high(s, z, i64_add(s, s.c64(k24th), mul_high(s, z, s.c64(k720th)))));
  Id odd = i64_add(s, s.c64(kSixth), mul_high(s, z, s.c64(k120th)));
  Id q = add_or_sub(s, r_neg, even, mul_high(s, a, odd));
  Id u = add_or_sub(s, r_neg, a66, i64_shl(s, mul_high(s, z, q), s.c(2)));  // |e^r - 1| 2^66
  Id table = s.b.constant_words(exp2_significands());
  Id row = s.op(spv::OpShiftLeftLogical, {s.op(spv::OpBitwiseAnd, {k, s.c(63)}), s.c(1)});
  Id t = s.pair(s.b.table_word(table, row), s.b.table_word(table, s.op(spv::OpIAdd, {row, s.c(1)})));
  // 2^(j/64) (1 + (e^r - 1)) 2^63.
  Id sig = add_or_sub(s, r_neg, t, i64_shr(s, mul_high(s, t, u), s.c(2)));
  return {s.op(spv::OpShiftRightArithmetic, {k, s.c(6)}), sig};
}

// 2^63 / D for d = D 2^62, D in [1, 2]: an f32 quotient (within 2^-21), then two Newton
// steps y += y (1 - D y), the first with 1 - D y in 2^61 units, the second from the middle
// words of the exact product (1 - D y in 2^93 units, below 2^-40 there): within 2^-62.
Id reciprocal(Soft64& s, Id d) {
  const Id f32 = s.b.type_float(32);
  Id df = s.b.op(spv::OpConvertUToF, f32, {s.hi(d)});
  Id y = s.pair(s.c(0), s.b.op(spv::OpConvertFToU, s.u32, {s.b.op(spv::OpFDiv, f32, {s.b.const_f32(0x1p61f), df})}));
  Id e = i64_sub(s, s.c64(uint64_t(1) << 61), mul_high(s, d, y));
  y = add_or_sub(s, i64_is_negative(s, e), y, i64_shl(s, mul_high(s, y, i64_abs(s, e)), s.c(3)));
  Wide p = mul_wide(s, d, y);
  e = i64_neg(s, s.pair(s.hi(p.lo), s.lo(p.hi)));
  return add_or_sub(s, i64_is_negative(s, e), y, i64_shr(s, mul_high(s, y, i64_abs(s, e)), s.c(29)));
}

// A result as the significand and exponent normalize_round_pack takes (its value is sig
// 2^(exp - 1084)), and whether it is negative.
struct Rounding {
  Id sig, exp, negative;
};
// n where `near`, else f, rounded.
Id rounded(Soft64& s, Id near, const Rounding& n, const Rounding& f) {
  Id negative = s.b.op(spv::OpSelect, s.boolean, {near, n.negative, f.negative});
  return normalize_round_pack(s, s.select32(negative, s.c(0x80000000u), s.c(0)), s.select32(near, n.exp, f.exp),
                              s.select(near, n.sig, f.sig));
}

// x with |x| limited to the f64 whose high word is `limit` (low word 0), sign kept; ±inf and
// NaN become ±that limit.
Id clamp_magnitude(Soft64& s, Id x, uint32_t limit) {
  Id hi = s.hi(x);
  Id beyond = s.test(spv::OpUGreaterThanEqual, {s.op(spv::OpBitwiseAnd, {hi, s.c(0x7fffffff)}), s.c(limit)});
  Id sign = s.op(spv::OpBitwiseAnd, {hi, s.c(0x80000000u)});
  return s.pair(s.select32(beyond, s.c(0), s.lo(x)), s.select32(beyond, s.op(spv::OpBitwiseOr, {sign, s.c(limit)}), hi));
}
// Where sinh x and tanh x are x itself: below 2^-30, where they round to it (zeros and
// subnormals included), and a NaN.
Id rounds_to_itself(Soft64& s, Id x) {
  Id tiny = s.test(spv::OpULessThan, {s.op(spv::OpBitwiseAnd, {s.hi(x), s.c(0x7fffffff)}), s.c(0x3e100000)});
  return s.either(tiny, f64_is_nan(s, x));
}
// |x| up to 747 (its high word): e^747 overflows and e^-747 rounds to 0, even halved.
constexpr uint32_t k747 = 0x40875800;

}  // namespace

Id f64_exp(Soft64& s, Id x, int scale) {
  FixedExp f = exp_fixed(s, clamp_magnitude(s, x, k747));
  // normalize_round_pack's value is sig 2^(exp - 1084).
  Id r = normalize_round_pack(s, s.c(0), s.op(spv::OpIAdd, {f.m, s.c(uint32_t(1021 + scale))}), f.sig);
  return s.select(f64_is_nan(s, x), x, r);
}

Id f64_expm1(Soft64& s, Id x) {
  // From |x| = 1/8: 2^m sig - 1 (sig in 2^63 units), 1 subtracted from sig at m's place,
  // or sig at 1's place subtracted from 1 for m < 0 (x <= -1/8; the result at least 0.11).
  FixedExp f = exp_fixed(s, clamp_magnitude(s, x, k747));
  Id negative = i64_is_negative(s, x);
  Id above = i64_sub(s, f.sig, shift_right_any(s, s.c64(uint64_t(1) << 63), f.m));
  Id below = i64_sub(s, s.c64(uint64_t(1) << 63), shift_right_any(s, f.sig, s.op(spv::OpISub, {s.c(0), f.m})));
  Rounding far{s.select(negative, below, above), s.select32(negative, s.c(1021), s.op(spv::OpIAdd, {f.m, s.c(1021)})), negative};
  // Below: x's significand times expm1(x)/x, whose partial sums stay positive.
  F64Normal n = f64_normalize(s, f64_unpack(s, x), 52);
  Id t = scaled_by_exponent(s, n.sig, s.op(spv::OpIAdd, {n.exp, s.c(3)}));  // |x| 2^67
  Id series = s.c64(kExpm1Series[12]);
  for (int k = 11; k >= 0; --k)
    series = add_or_sub(s, negative, s.c64(kExpm1Series[k]), i64_shr(s, mul_high(s, t, series), s.c(3)));
  Rounding near{mul_high(s, i64_shl(s, n.sig, s.c(11)), series), s.op(spv::OpISub, {n.exp, s.c(1)}), negative};
  Id small = s.test(spv::OpULessThan, {s.op(spv::OpBitwiseAnd, {s.hi(x), s.c(0x7fffffff)}), s.c(0x3fc00000)});
  return s.select(f64_is_nan(s, x), x, rounded(s, small, near, far));
}

namespace {

// e^a and e^-a for a = |x| up to 747, as 2^m d and 2^-m / d with d and 1/d in 2^62 and 2^63
// units (d = sig / 2 in [0.98, 2), so that their sum below stays under 2^64).
struct ExpPair {
  Id m, d, inverse;
};
ExpPair exp_pair(Soft64& s, Id x) {
  Id a = clamp_magnitude(s, x, k747);
  FixedExp f = exp_fixed(s, s.pair(s.lo(a), s.op(spv::OpBitwiseAnd, {s.hi(a), s.c(0x7fffffff)})));
  Id d = i64_shr(s, f.sig, s.c(1));
  return {f.m, d, reciprocal(s, d)};
}
// 2^-2m / d in d's units.
Id inverse_at(Soft64& s, const ExpPair& e) {
  return shift_right_any(s, e.inverse, s.op(spv::OpIAdd, {s.op(spv::OpShiftLeftLogical, {e.m, s.c(1)}), s.c(1)}));
}

}  // namespace

Id f64_cosh(Soft64& s, Id x) {
  // (e^a + e^-a) / 2 = 2^(m - 1) (d + 2^-2m / d).
  ExpPair e = exp_pair(s, x);
  Id r = normalize_round_pack(s, s.c(0), s.op(spv::OpIAdd, {e.m, s.c(1021)}), i64_add(s, e.d, inverse_at(s, e)));
  return s.select(f64_is_nan(s, x), x, r);
}

Id f64_sinh(Soft64& s, Id x) {
  Id negative = i64_is_negative(s, x);
  // From a = 1/8 up: 2^(m - 1) (d - 2^-2m / d), d at least 1.13 and the difference 0.24.
  ExpPair e = exp_pair(s, x);
  Rounding far{i64_sub(s, e.d, inverse_at(s, e)), s.op(spv::OpIAdd, {e.m, s.c(1021)}), negative};
  // Below: a sinh(a)/a from its series in a^2.
  Id hi = s.op(spv::OpBitwiseAnd, {s.hi(x), s.c(0x7fffffff)});
  F64Normal a = f64_significand(s, f64_unpack(s, x));
  Id a64 = scaled_by_exponent(s, a.sig, a.exp);
  Id z = mul_high(s, a64, a64);
  Id series = s.c64(kSinhSeries[5]);
  for (int n = 4; n >= 0; --n) series = i64_add(s, s.c64(kSinhSeries[n]), mul_high(s, z, series));
  Rounding near{mul_high(s, i64_shl(s, a.sig, s.c(11)), series), s.op(spv::OpISub, {a.exp, s.c(1)}), negative};
  Id r = rounded(s, s.test(spv::OpULessThan, {hi, s.c(0x3fc00000)}), near, far);
  return s.select(rounds_to_itself(s, x), x, r);
}

Id f64_sigmoid(Soft64& s, Id x) {
  // 1 / (1 + e^-|x|), or e^-|x| / (1 + e^-|x|) where x < 0.
  Id minus_abs = clamp_magnitude(s, x, k747);
  minus_abs = s.pair(s.lo(minus_abs), s.op(spv::OpBitwiseOr, {s.hi(minus_abs), s.c(0x80000000u)}));
  FixedExp f = exp_fixed(s, minus_abs);  // m <= 0
  Id d = i64_add(s, s.c64(uint64_t(1) << 62), shift_right_any(s, f.sig, s.op(spv::OpISub, {s.c(1), f.m})));
  Id y = reciprocal(s, d);
  Id negative = i64_is_negative(s, x);
  Id sig = s.select(negative, mul_high(s, f.sig, y), y);  // 2^(126 - m) and 2^63 units
  Id r = normalize_round_pack(s, s.c(0), s.select32(negative, s.op(spv::OpIAdd, {f.m, s.c(1022)}), s.c(1021)), sig);
  return s.select(f64_is_nan(s, x), x, r);
}

Id f64_tanh(Soft64& s, Id x) {
  Id hi = s.hi(x), lo = s.lo(x);
  Id sign = s.op(spv::OpBitwiseAnd, {hi, s.c(0x80000000u)});
  // a = |x| up to 23, past which tanh rounds to 1 (±inf and NaN too).
  Id a = clamp_magnitude(s, s.pair(lo, s.op(spv::OpBitwiseXor, {hi, sign})), 0x40370000);
  Id a_hi = s.hi(a), a_lo = s.lo(a);
  // From a = 1/8 up: (1 - e^-2a) / (1 + e^-2a), the numerator at least 0.22.
  FixedExp f = exp_fixed(s, s.pair(a_lo, s.op(spv::OpBitwiseOr, {s.op(spv::OpIAdd, {a_hi, s.c(0x100000)}), s.c(0x80000000u)})));
  Id num = i64_sub(s, s.c64(uint64_t(1) << 63), shift_right_any(s, f.sig, s.op(spv::OpISub, {s.c(0), f.m})));
  Id den = i64_add(s, s.c64(uint64_t(1) << 62), shift_right_any(s, f.sig, s.op(spv::OpISub, {s.c(1), f.m})));
  Id quotient = mul_high(s, num, reciprocal(s, den));  // 2^62 units
  // Below: a (tanh(a)/a), the series in a^2 with every partial sum positive.
  F64Normal n = f64_significand(s, f64_unpack(s, a));
  Id a64 = scaled_by_exponent(s, n.sig, n.exp);
  Id z = mul_high(s, a64, a64);
  Id series = s.c64(kTanhSeries[8]);
  for (int k = 7; k >= 0; --k) series = i64_sub(s, s.c64(kTanhSeries[k]), mul_high(s, z, series));
  Id product = mul_high(s, i64_shl(s, n.sig, s.c(11)), series);  // 2^(1085 - exp) units
  Id small = s.test(spv::OpULessThan, {a_hi, s.c(0x3fc00000)});
  Id r = normalize_round_pack(s, sign, s.select32(small, s.op(spv::OpISub, {n.exp, s.c(1)}), s.c(1022)),
                              s.select(small, product, quotient));
  return s.select(rounds_to_itself(s, x), x, r);
}

namespace {

// v 2^15 for a v below 2^64.
Words3 shifted_up_15(Soft64& s, Id v) {
  return {s.op(spv::OpShiftLeftLogical, {s.lo(v), s.c(15)}),
          s.op(spv::OpBitwiseOr, {s.op(spv::OpShiftLeftLogical, {s.hi(v), s.c(15)}), s.op(spv::OpShiftRightLogical, {s.lo(v), s.c(17)})}),
          s.op(spv::OpShiftRightLogical, {s.hi(v), s.c(17)})};
}
// The leading 64 bits of x, the rest jammed into bit 0, for x's high word in [1, 2^31): as
// the significand and how far x was moved up for it (x = sig 2^(32 - up)).
std::pair<Id, Id> leading64(Soft64& s, const Words3& x) {
  Id up = s.b.ext(GLSLstd450UMin, s.u32, {s.op(spv::OpISub, {s.c(31), s.b.ext(GLSLstd450FindUMsb, s.u32, {x[2]})}), s.c(31)});
  Id down = s.op(spv::OpISub, {s.c(32), up});
  auto window = [&](Id high, Id low) {
    return s.op(spv::OpBitwiseOr, {s.op(spv::OpShiftLeftLogical, {high, up}), s.op(spv::OpShiftRightLogical, {low, down})});
  };
  Id lost = s.test(spv::OpINotEqual, {s.op(spv::OpShiftLeftLogical, {x[0], up}), s.c(0)});
  return {s.pair(s.op(spv::OpBitwiseOr, {window(x[1], x[0]), s.bit(lost)}), window(x[2], x[1])), up};
}

// log x's argument for the series log1p(t)/t, x = 2^e m with sig = m 2^63 (m in [1, 2)):
// within 2^-6 of 1 (`near`: e 0 and j 0, or e -1 and j 63), t = x - 1, exact; elsewhere t =
// (m - c_j) / c_j, c_j = 1 + j/64 from m's leading bits. t in 2^70 units, negative only near
// 1 below it; `row`, the index of j's row in kLogTable's words.
struct LogArgument {
  Id e, row, near, negative, t;
};
LogArgument log_argument(Soft64& s, Id e, Id sig, Id table) {
  Id j = s.op(spv::OpBitwiseAnd, {s.op(spv::OpShiftRightLogical, {s.hi(sig), s.c(25)}), s.c(63)});
  Id row = s.op(spv::OpIMul, {j, s.c(5)});
  Id inverse = s.pair(s.b.table_word(table, row), s.b.table_word(table, s.op(spv::OpIAdd, {row, s.c(1)})));
  Id at_zero = s.test(spv::OpIEqual, {e, s.c(0)}), below = s.test(spv::OpIEqual, {e, s.c(~0u)});
  Id near = s.either(s.both(at_zero, s.test(spv::OpIEqual, {j, s.c(0)})), s.both(below, s.test(spv::OpIEqual, {j, s.c(63)})));
  Id f = s.select(at_zero, i64_shl(s, i64_sub(s, sig, s.c64(uint64_t(1) << 63)), s.c(7)), i64_shl(s, i64_neg(s, sig), s.c(6)));
  // m - c_j: sig's low 57 bits.
  Id d = i64_shl(s, s.pair(s.lo(sig), s.op(spv::OpBitwiseAnd, {s.hi(sig), s.c(0x1ffffff)})), s.c(7));
  Id r = s.select(s.test(spv::OpIEqual, {j, s.c(0)}), d, mul_high(s, d, inverse));
  return {e, row, near, s.both(near, below), s.select(near, f, r)};
}

// log1p(t)/t in 2^63 units for |t| < 2^-6 (in 2^70 units), every partial sum positive.
Id log1p_series(Soft64& s, Id t, Id negative) {
  Id series = s.c64(kLog1pSeries[10]);
  for (int k = 9; k >= 0; --k)
    series = add_or_sub(s, s.isnt(negative), s.c64(kLog1pSeries[k]), i64_shr(s, mul_high(s, t, series), s.c(6)));
  return series;
}

// Away from 1 (a.near false): |e| ln2 + log c_j + log1p(r), or |e| ln2 less the rest where e
// < 0, in 2^84 units (at least 2^76).
Rounding log_far(Soft64& s, const LogArgument& a, Id series, Id table) {
  auto word = [&](uint32_t k) { return s.b.table_word(table, s.op(spv::OpIAdd, {a.row, s.c(k)})); };
  Words3 rest = add_words(s, {word(2), word(3), word(4)}, shifted_up_15(s, mul_high(s, a.t, series)));
  Id e_neg = s.test(spv::OpSLessThan, {a.e, s.c(0)});
  Id ae = s.select32(e_neg, s.op(spv::OpISub, {s.c(0), a.e}), a.e);
  Words3 signed_rest = negate_words_if(s, rest, s.select32(e_neg, s.c(~0u), s.c(0)), s.bit(e_neg));
  auto [sig, up] = leading64(s, add_words(s, mul96(s, ae, kLn2Words84), signed_rest));
  return {sig, s.op(spv::OpISub, {s.c(1032), up}), e_neg};
}
// t (2^70 units) times its series, t normalised first.
Rounding times_series(Soft64& s, Id t, Id series, Id negative) {
  Id shift = s.b.ext(GLSLstd450UMin, s.u32, {s.op(spv::OpISub, {s.c(63), i64_find_msb(s, t)}), s.c(63)});
  return {mul_high(s, i64_shl(s, t, shift), series), s.op(spv::OpISub, {s.c(1015), shift}), negative};
}

// Where `at_minus_inf` (log's ±0, log1p's -1): -inf; where `below` it: NaN; +inf and NaN:
// themselves; elsewhere r.
Id log_specials(Soft64& s, Id x, Id at_minus_inf, Id below, Id r) {
  F64Parts p = f64_unpack(s, x);
  r = s.select(at_minus_inf, s.c64(0xfff0000000000000ull), s.select(below, f64_default_nan(s), r));
  Id keep = s.either(f64_parts_nan(s, p), s.both(f64_parts_inf(s, p), s.test(spv::OpIEqual, {p.sign, s.c(0)})));
  return s.select(keep, x, r);
}

}  // namespace

Id f64_log(Soft64& s, Id x) {
  F64Parts p = f64_unpack(s, x);
  F64Normal n = f64_normalize(s, p, 52);  // subnormals normalised
  Id table = s.b.constant_words(log_table_words());
  LogArgument a = log_argument(s, s.op(spv::OpISub, {n.exp, s.c(1023)}), i64_shl(s, n.sig, s.c(11)), table);
  Id series = log1p_series(s, a.t, a.negative);
  Id r = rounded(s, a.near, times_series(s, a.t, series, a.negative), log_far(s, a, series, table));
  Id zero = f64_parts_zero(s, p);
  return log_specials(s, x, zero, s.both(s.test(spv::OpINotEqual, {p.sign, s.c(0)}), s.isnt(zero)), r);
}

Id f64_log1p(Soft64& s, Id x) {
  F64Parts p = f64_unpack(s, x);
  F64Normal n = f64_normalize(s, p, 52);
  Id negative = s.test(spv::OpINotEqual, {p.sign, s.c(0)});
  Id ex = s.op(spv::OpISub, {n.exp, s.c(1023)});  // x = sig 2^(ex - 52)
  // Below 2^-6: x itself as t (2^70 units), and x's significand times the series.
  Id small = s.test(spv::OpULessThan, {s.op(spv::OpBitwiseAnd, {s.hi(x), s.c(0x7fffffff)}), s.c(0x3f900000)});
  Id x_t = scaled_by_exponent(s, n.sig, s.op(spv::OpIAdd, {n.exp, s.c(6)}));
  // Elsewhere u = 1 + x as 2^e0 sig (sig in 2^63 units), 1 and x's significand aligned to the
  // larger exponent: exact, but where x is 2^11 or more (then within 2^-63).
  Id e0 = s.b.ext(GLSLstd450SMax, s.u32, {ex, s.c(0)});
  Id one = shift_right_any(s, s.c64(uint64_t(1) << 63), e0);
  Id xs = i64_shr(s, i64_shl(s, n.sig, s.c(11)), s.b.ext(GLSLstd450UMin, s.u32, {s.op(spv::OpISub, {e0, ex}), s.c(63)}));
  Id sum = add_or_sub(s, negative, one, xs);
  Id carry = s.both(s.isnt(negative), i64_compare(s, spv::OpULessThan, sum, xs));
  Id halved = halve_jam(s, sum);
  sum = s.select(carry, s.pair(s.lo(halved), s.op(spv::OpBitwiseOr, {s.hi(halved), s.c(0x80000000u)})), sum);
  // 1 - |x| below 1: moved up to bit 63.
  Id up = s.b.ext(GLSLstd450UMin, s.u32, {s.op(spv::OpISub, {s.c(63), i64_find_msb(s, sum)}), s.c(63)});
  Id e = s.op(spv::OpISub, {s.op(spv::OpIAdd, {e0, s.bit(carry)}), up});
  Id table = s.b.constant_words(log_table_words());
  LogArgument a = log_argument(s, e, i64_shl(s, sum, up), table);
  a.t = s.select(small, x_t, a.t);
  Id series = log1p_series(s, a.t, s.b.op(spv::OpSelect, s.boolean, {small, negative, a.negative}));
  // x's significand times the series: x's exponent, one place down (2^(1085 - exp) units).
  Rounding near{mul_high(s, i64_shl(s, n.sig, s.c(11)), series), s.op(spv::OpISub, {n.exp, s.c(1)}), negative};
  Id r = rounded(s, small, near, log_far(s, a, series, table));
  Id magnitude_bits = s.pair(s.lo(x), s.op(spv::OpBitwiseAnd, {s.hi(x), s.c(0x7fffffff)}));
  Id minus_one = s.both(negative, i64_compare(s, spv::OpIEqual, magnitude_bits, s.c64(0x3ff0000000000000ull)));
  Id below = s.both(negative, i64_compare(s, spv::OpUGreaterThan, magnitude_bits, s.c64(0x3ff0000000000000ull)));
  return log_specials(s, x, minus_one, below, r);
}

}  // namespace nxv::codegen::soft
