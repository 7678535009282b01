// The steps soft_f64.h's routines share, in the manner of Berkeley SoftFloat 3's internals:
// an f64's fields, predicates on them, right shifts that keep a sticky bit, and rounding a
// wide significand to the nearest f64 (ties to even) with subnormals and overflow.
#pragma once

#include <array>
#include <cstddef>
#include <utility>

#include "codegen/soft64.h"

namespace nxv::codegen::soft {

// An f64's fields as u32s and a uvec2: sign 0 or 0x80000000 (the bit in place in the high
// word), exp the biased exponent field 0..0x7ff, frac the 52 fraction bits (no hidden bit).
struct F64Parts {
  Id sign, exp, frac;
};
F64Parts f64_unpack(Soft64& s, Id a);
// The biased exponent field (0..0x7ff) of an f64 whose high word is `hi`.
Id f64_exponent_field(Soft64& s, Id hi);

// Predicates on the fields (bools): NaN, ±inf, ±0.
Id f64_parts_nan(Soft64& s, const F64Parts& p);
Id f64_parts_inf(Soft64& s, const F64Parts& p);
Id f64_parts_zero(Soft64& s, const F64Parts& p);

// The quiet NaN the routines return where IEEE gives a NaN (0x7ff8000000000000).
Id f64_default_nan(Soft64& s);
// ±inf and ±0 of `sign` (0 or 0x80000000).
Id f64_signed_inf(Soft64& s, Id sign);
Id f64_signed_zero(Soft64& s, Id sign);

// A finite operand as exponent and significand with its leading 1 at bit `top` (52 to 63): a
// normal one's fraction with the hidden bit, a subnormal one shifted up with the exponent
// lowered below 1 to match (value = sig * 2^(exp - 1023 - top) in both). For ±0, sig is 0
// and exp unspecified.
struct F64Normal {
  Id exp, sig;  // exp a signed u32
};
F64Normal f64_normalize(Soft64& s, const F64Parts& p, uint32_t top = 52);
// The same pair before normalising: a subnormal operand's fraction at exponent 1 (sig below
// 2^52), a normal one's with the hidden bit.
F64Normal f64_significand(Soft64& s, const F64Parts& p);

// a >> 1 with the bit shifted out OR'd into bit 0: a significand one place down, its
// sticky bit kept.
Id halve_jam(Soft64& s, Id a);
// a >> dist with every bit shifted out OR'd into bit 0 (SoftFloat's shiftRightJam64): the
// sticky bit that keeps rounding exact. dist any u32 (64 and more give a != 0).
Id shift_right_jam(Soft64& s, Id a, Id dist);

// SoftFloat's roundPackToF64: the f64 nearest (ties to even) to sig * 2^(exp - 1022 - 52 - k).
// sign 0 or 0x80000000; exp a signed u32, any value; sig a uvec2 whose leading 1 is at bit
// 52 + k (k 10 or 11) for a normal result, with the k bits below the result's last place
// holding guard, round and sticky bits. exp 0 with sig below 2^(52 + k) is a subnormal one;
// exp below 0 shifts sig right (jamming) first, so a result that underflows rounds once. Too
// large an exponent gives ±inf; sig 0 gives ±0 whatever exp is.
Id round_pack(Soft64& s, Id sign, Id exp, Id sig, uint32_t k = 10);
// round_pack's last step, for exp 0 up (any larger than 0x7fe gives ±inf) and sig whose
// leading 1 is at bit 52 + k for a normal result (exp 0 with sig below 2^(52 + k) is a
// subnormal one), the k bits below the last place holding guard, round and sticky bits.
// sig 0 gives ±0 at exp 0 only: callers that underflow or cancel to 0 pass exp 0 with it.
Id pack_rounded(Soft64& s, Id sign, Id exp, Id sig, uint32_t k);
// round_pack after shifting any 64-bit sig so that its leading 1 is at bit 62 (adjusting
// exp; a sig with bit 63 set is shifted right one place, jamming).
Id normalize_round_pack(Soft64& s, Id sign, Id exp, Id sig);

// One way to normalise a wide result where the choice waits on its leading bit: its
// significand q (leading 1 at bit 52), q's last bit (from the result's words, not through
// q), the word below q's last place (the round bit at its top, the sticky bits under it),
// and the high word's part from the sign and the exponent less one. Routines of the shortest
// dependent chain round each window beside the others and choose last.
struct Window {
  Id q_lo, q_hi, odd, below, high;
};
// The window's f64: q rounded to nearest even, packed by adding high to its high word (q's
// hidden bit adds the one that high's exponent is short of; a rounding carry into bit 53
// moves the exponent up, from the largest one to inf's bits). q + 1 is formed beside q.
Id rounded(Soft64& s, const Window& w);

// A struct-valued u32 instruction (OpIAddCarry, OpISubBorrow, OpUMulExtended) as its two
// members: the low word and the carry, borrow or high word.
std::pair<Id, Id> two_words(Soft64& s, spv::Op opcode, Id x, Id y);

// A value of N u32 words, least significant first: fma's 128-bit sums, log's 96-bit ones.
template <size_t N>
using Words = std::array<Id, N>;

// x + y + carry (carry 0 or 1; a null id for none), a carry chain through OpIAddCarry.
template <size_t N>
Words<N> add_words(Soft64& s, const Words<N>& x, const Words<N>& y, Id carry = 0) {
  Words<N> r;
  for (size_t i = 0; i + 1 < N; ++i) {
    auto [sum, out] = two_words(s, spv::OpIAddCarry, x[i], y[i]);
    if (!carry) {
      r[i] = sum, carry = out;
      continue;
    }
    auto [with_carry, out2] = two_words(s, spv::OpIAddCarry, sum, carry);
    r[i] = with_carry;
    carry = s.op(spv::OpBitwiseOr, {out, out2});  // never both
  }
  Id top = s.op(spv::OpIAdd, {x[N - 1], y[N - 1]});
  r[N - 1] = carry ? s.op(spv::OpIAdd, {top, carry}) : top;
  return r;
}

// x with every word XOR'd with `mask` (0 or ~0), plus `carry`: -x where mask is ~0 and
// carry 1, x where both are 0.
template <size_t N>
Words<N> negate_words_if(Soft64& s, const Words<N>& x, Id mask, Id carry) {
  Words<N> r;
  for (size_t i = 0; i < N; ++i) {
    Id w = s.op(spv::OpBitwiseXor, {x[i], mask});
    if (i + 1 == N) {
      r[i] = s.op(spv::OpIAdd, {w, carry});
    } else {
      auto [sum, out] = two_words(s, spv::OpIAddCarry, w, carry);
      r[i] = sum, carry = out;
    }
  }
  return r;
}

// 128-bit values: fma's exact sums, the wide sums' accumulators.
using Words4 = Words<4>;
Words4 select4(Soft64& s, Id cond, const Words4& x, const Words4& y);
// The top 64 bits of x shifted left until its leading 1 is at bit 127, with the bits below
// jammed into bit 0, and the shift: a significand for round_pack (k 11). For x = 0, 0.
std::pair<Id, Id> normalize4(Soft64& s, Words4 x);

// The full 128-bit product of two uvec2s, as its high and low uvec2.
struct Wide {
  Id hi, lo;
};
Wide mul_wide(Soft64& s, Id a, Id b);
// The 64-bit product of two u32s, as a uvec2.
Id mul32_wide(Soft64& s, Id x, Id y);

}  // namespace nxv::codegen::soft
