// Emulated f64 sums in a wide accumulator: elements are added into a 128-bit fixed-point
// significand, exactly down to 32 bits below the largest element's last place, and the total
// is rounded to f64 once, where soft_f64.h's add would round (at 135 instructions) per element.
#pragma once

#include <vector>

#include "codegen/soft_f64_parts.h"

namespace nxv::codegen::soft {

// How elements and partial sums are added into m: as 32-bit words, whose carries are
// compares, or as 64-bit integers (where Builder::native_int64), whose carries drivers keep
// in add-with-carry instructions. The caller chooses (emit_reduce.cpp says by what).
enum class SumAdds { words, int64 };

// A partial sum worth m * 2^(exp - 1107): m a two's complement 128-bit integer, exp an f64
// exponent field (1 or more; past 0x7fe once the sum leaves f64's range). An element of
// exponent field e has its last place at 2^(e - 1075), 32 bits above m's where e = exp.
// flags: the specials seen, bit 0 +inf, bit 1 -inf, bit 2 NaN.
struct WideSum {
  Id exp;
  Words4 m;
  Id flags;
  SumAdds adds;

  // As a fold's u32 values, and back.
  static constexpr size_t kValues = 6;
  std::vector<Id> values() const;
  static WideSum of(const std::vector<Id>& v, SumAdds adds);
};

// The empty sum (+0).
WideSum wide_sum_zero(Soft64& s, SumAdds adds);
// acc + x, for an f64 uvec2 x. An element less than 32 binades below acc's exponent is
// placed by two shifts a word; any other nonzero one takes a branch (rare after the first
// elements), which moves acc up to a larger exponent, or normalises a cancelled acc before
// a smaller element. Bits more than 32 places below the larger exponent's last place are
// dropped; m stays below 2^117 for up to 2^32 elements.
WideSum wide_sum_add(Soft64& s, const WideSum& acc, Id x);
// The same for several elements, under one test: where each is less than 32 binades below
// acc's exponent, or zero, they are placed and added with no branch; else each goes through
// wide_sum_add.
WideSum wide_sum_add_many(Soft64& s, const WideSum& acc, const std::vector<Id>& xs);
// The empty sum on the largest finite exponent among xs (1 at least), so that the elements
// of a share that begins with them seldom move it up: any exponent holds a sum of 0.
WideSum wide_sum_start(Soft64& s, const std::vector<Id>& xs, SumAdds adds);
// Partial sums meet on one exponent, the largest among them (Fold::rescale): each is first
// settled, normalised where it has cancelled (a rare branch), so that the others are not cut
// short on its exponent; its exponent is then the scale to take the largest of. Rescaled to
// an exponent at or above its own, it keeps its bits down to 32 places below that exponent's
// last place; two on one exponent combine by a 128-bit add, exactly (the elements behind all
// of them, at most 2^32, keep m below 2^117).
WideSum wide_sum_settled(Soft64& s, const WideSum& acc);
WideSum wide_sum_rescaled(Soft64& s, const WideSum& acc, Id exp);
WideSum wide_sum_combine(Soft64& s, const WideSum& a, const WideSum& b);
// The total rounded to the nearest f64 (ties to even): NaN where a NaN, or both infinities,
// were added; ±inf where one was, or where the sum overflows; +0 for an exact zero.
Id wide_sum_round(Soft64& s, const WideSum& acc);

}  // namespace nxv::codegen::soft
