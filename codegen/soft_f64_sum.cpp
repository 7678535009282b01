// soft_f64_sum.h's wide accumulator: an element's significand shifted into place, added with
// its sign as a 128-bit integer, and one rounding at the end.
#include "codegen/soft_f64_sum.h"

#include <array>

#include "codegen/soft_i64.h"

namespace nxv::codegen::soft {

namespace {

// x >> dist, arithmetic (rounding toward -inf), dist any u32.
Words4 shift_right_arithmetic4(Soft64& s, const Words4& x, Id dist) {
  Id d = s.b.ext(GLSLstd450UMin, s.u32, {dist, s.c(127)});
  Id r = s.op(spv::OpBitwiseAnd, {d, s.c(31)}), rest = s.op(spv::OpBitwiseXor, {r, s.c(31)});
  Id q = s.op(spv::OpShiftRightLogical, {d, s.c(5)});
  Id sx = s.op(spv::OpShiftRightArithmetic, {x[3], s.c(31)});
  const Id w[7] = {x[0], x[1], x[2], x[3], sx, sx, sx};
  Id q0 = s.test(spv::OpIEqual, {q, s.c(0)}), q1 = s.test(spv::OpIEqual, {q, s.c(1)});
  Id q2 = s.test(spv::OpIEqual, {q, s.c(2)});
  // The word q places up from word j.
  auto from = [&](int j) {
    return s.select32(q0, w[j], s.select32(q1, w[j + 1], s.select32(q2, w[j + 2], w[j + 3])));
  };
  Id src[5] = {from(0), from(1), from(2), from(3), sx};
  Words4 out;
  for (int j = 0; j < 4; ++j)
    out[j] = s.op(spv::OpBitwiseOr, {s.op(spv::OpShiftRightLogical, {src[j], r}), s.low_bits_up(src[j + 1], rest)});
  return out;
}

// x << dist for dist below 128, bits past bit 127 dropped.
Words4 shift_left4(Soft64& s, const Words4& x, Id dist) {
  Id r = s.op(spv::OpBitwiseAnd, {dist, s.c(31)}), rest = s.op(spv::OpBitwiseXor, {r, s.c(31)});
  Id q = s.op(spv::OpShiftRightLogical, {dist, s.c(5)});
  Id q0 = s.test(spv::OpIEqual, {q, s.c(0)}), q1 = s.test(spv::OpIEqual, {q, s.c(1)});
  Id q2 = s.test(spv::OpIEqual, {q, s.c(2)});
  const Id zero = s.c(0);
  const Id w[7] = {zero, zero, zero, x[0], x[1], x[2], x[3]};
  // The word q places down from word j (w is x offset by 3).
  auto from = [&](int j) {
    return s.select32(q0, w[j + 3], s.select32(q1, w[j + 2], s.select32(q2, w[j + 1], w[j])));
  };
  Words4 out;
  Id below = zero;
  for (int j = 0; j < 4; ++j) {
    Id src = from(j);
    Id in = s.high_bits_down(below, rest);
    out[j] = s.op(spv::OpBitwiseOr, {s.op(spv::OpShiftLeftLogical, {src, r}), in});
    below = src;
  }
  return out;
}

// Whether |m| is below about 2^64 (its two high words are its sign's): 2^-20 of an element
// at acc's exponent, after a cancellation.
Id small(Soft64& s, const Words4& m) {
  // The high word 0 or ~0 (m[3] + 1 at most 1), and the next the same.
  Id top_is_sign = s.test(spv::OpULessThanEqual, {s.op(spv::OpIAdd, {m[3], s.c(1)}), s.c(1)});
  return s.both(top_is_sign, s.test(spv::OpIEqual, {m[2], m[3]}));
}

// acc on the lowest exponent (1 at least) at which |m| keeps 86 bits, so that the elements
// added next are not cut short on the exponent of a larger sum that cancelled: exponent 1
// for 0. For code in a branch: its first instruction is made in place.
WideSum normalized(Soft64& s, const WideSum& acc) {
  Id sx = s.b.op_in_place(spv::OpShiftRightArithmetic, s.u32, {acc.m[3], s.c(31)});
  // The bit length of m ^ sx (that of |m|, or one less for a negative power of 2).
  Words4 mag;
  for (int i = 0; i < 4; ++i) mag[i] = s.op(spv::OpBitwiseXor, {acc.m[i], sx});
  // (FindUMsb is 0xffffffff for 0: the low half's length is then 0.)
  Id top = i64_find_msb(s, s.pair(mag[2], mag[3]));
  Id length = s.select32(s.test(spv::OpINotEqual, {top, s.c(~0u)}), s.op(spv::OpIAdd, {top, s.c(65)}),
                         s.op(spv::OpIAdd, {i64_find_msb(s, s.pair(mag[0], mag[1])), s.c(1)}));
  Id room = s.select32(s.test(spv::OpIEqual, {length, s.c(0)}), s.c(0xffff),
                       s.op(spv::OpISub, {s.b.ext(GLSLstd450UMax, s.u32, {length, s.c(86)}), length}));
  // (In place: hoisted, exp - 1 would be computed on every step's common path.)
  Id up = s.b.ext(GLSLstd450UMin, s.u32, {room, s.b.op_in_place(spv::OpISub, s.u32, {acc.exp, s.c(1)})});
  return {s.op(spv::OpISub, {acc.exp, up}), shift_left4(s, acc.m, s.b.ext(GLSLstd450UMin, s.u32, {up, s.c(127)})), acc.flags,
          acc.adds};
}

// An element's significand as words (0, lo, hi, 0) of m at its own exponent.
struct Significand {
  Id lo, hi;
};
using Words3 = std::array<Id, 3>;

// The significand's three low words shifted right by dist below 32: shift_right_arithmetic4's
// work for a value of two nonzero words and no sign, with no selects, on every element.
// A zero element comes here at any dist: its words are 0 at dist mod 32, where a shift by 32
// or more would be SPIR-V's undefined value (AMD's, Intel's and NIR's shifts take the count
// mod 32 anyway and NVIDIA's funnel shift has a wrapping form, so drivers fold the mask).
Words3 placed_near(Soft64& s, const Significand& sig, Id dist) {
  Id d = s.op(spv::OpBitwiseAnd, {dist, s.c(31)}), rest = s.op(spv::OpBitwiseXor, {d, s.c(31)});
  return {s.low_bits_up(sig.lo, rest),
          s.op(spv::OpBitwiseOr, {s.op(spv::OpShiftRightLogical, {sig.lo, d}), s.low_bits_up(sig.hi, rest)}),
          s.op(spv::OpShiftRightLogical, {sig.hi, d})};
}

// The same for any dist (96 or more leave 0, bits shifted out dropped). Each word is
// shifted before the choice by dist's word count, so that the shifts wait only on dist's
// low bits.
Words3 placed_far(Soft64& s, const Significand& sig, Id dist) {
  Id m = s.op(spv::OpBitwiseAnd, {dist, s.c(31)}), rest = s.op(spv::OpBitwiseXor, {m, s.c(31)});
  auto from = [&](uint32_t k) { return s.test(spv::OpUGreaterThanEqual, {dist, s.c(k)}); };
  Id words1 = from(32), words2 = from(64), words3 = from(96), zero = s.c(0);
  // The words for dist below 32; each further 32 places move them one word down.
  Id top = s.op(spv::OpShiftRightLogical, {sig.hi, m});
  Id mid = s.op(spv::OpBitwiseOr, {s.op(spv::OpShiftRightLogical, {sig.lo, m}), s.low_bits_up(sig.hi, rest)});
  Id low = s.low_bits_up(sig.lo, rest);
  return {s.select32(words1, s.select32(words2, s.select32(words3, zero, top), mid), low),
          s.select32(words1, s.select32(words2, zero, top), mid), s.select32(words1, zero, top)};
}

// An element's words, exponent (a subnormal's as 1, an inf's or NaN's as 0x7ff) and
// significand, and whether it is nonzero.
struct Element {
  Id hi, lo, e;
  Significand sig;
  Id nonzero;
};
Element element(Soft64& s, Id x) {
  Id hi = s.hi(x), lo = s.lo(x);
  Id field = f64_exponent_field(s, hi);
  Id frac_hi = s.op(spv::OpBitwiseAnd, {hi, s.c(0xfffff)});
  Id hidden = s.op(spv::OpShiftLeftLogical, {s.b.ext(GLSLstd450UMin, s.u32, {field, s.c(1)}), s.c(20)});
  Id nonzero = s.test(spv::OpINotEqual, {s.op(spv::OpBitwiseOr, {s.op(spv::OpShiftLeftLogical, {hi, s.c(1)}), lo}), s.c(0)});
  return {hi, lo, s.b.ext(GLSLstd450UMax, s.u32, {field, s.c(1)}), {lo, s.op(spv::OpBitwiseOr, {frac_hi, hidden})}, nonzero};
}

// Whether the element leaves the common step: nonzero and not less than 32 binades below
// exp (gap = exp - e, which wraps past 32 for an element above exp).
Id far(Soft64& s, const Element& x, Id gap) {
  return s.both(s.test(spv::OpUGreaterThanEqual, {gap, s.c(32)}), x.nonzero);
}

// m plus the placed words w with the element's sign: m + (w ^ mask) + 1 is m - w for mask ~0.
Words4 add_signed(Soft64& s, const Words4& m, const Words3& w, Id hi) {
  Id mask = s.op(spv::OpShiftRightArithmetic, {hi, s.c(31)});
  return add_words(s, m,
                   {s.op(spv::OpBitwiseXor, {w[0], mask}), s.op(spv::OpBitwiseXor, {w[1], mask}),
                    s.op(spv::OpBitwiseXor, {w[2], mask}), mask},
                   s.op(spv::OpShiftRightLogical, {hi, s.c(31)}));
}

// SumAdds::int64: m's words as two u64 (low, high) and an element as a signed 128-bit value
// in two more: the add is then two 64-bit adds, whose carries drivers keep in their
// add-with-carry instructions (on NVIDIA's, 32-bit words' carries are compares and
// predicated moves).
Id as_u64(Soft64& s, Id low, Id high) { return s.as_u64(s.pair(low, high)); }
std::pair<Id, Id> words_of(Soft64& s, Id v) {
  Id w = s.from_u64(v);
  return {s.lo(w), s.hi(w)};
}
Words4 add_wide(Soft64& s, const Words4& m, std::pair<Id, Id> v) {
  const Id u64 = s.b.type_int(64);
  Id carry_type = s.b.type_struct({u64, u64});
  Id low = s.b.op(spv::OpIAddCarry, carry_type, {as_u64(s, m[0], m[1]), v.first});
  Id carry = s.b.op(spv::OpCompositeExtract, u64, {low}, {1});
  Id high = s.b.op(spv::OpIAdd, u64, {s.b.op(spv::OpIAdd, u64, {as_u64(s, m[2], m[3]), v.second}), carry});
  auto [m0, m1] = words_of(s, s.b.op(spv::OpCompositeExtract, u64, {low}, {0}));
  auto [m2, m3] = words_of(s, high);
  return {m0, m1, m2, m3};
}

// An element ready for adding into m: its placed words and sign (add_signed), or, as 64-bit
// integers, its signed value (add_wide).
struct Addend {
  std::vector<Id> values;
};
std::vector<Id> addend_types(Soft64& s, SumAdds adds) {
  return adds == SumAdds::int64 ? std::vector<Id>(2, s.b.type_int(64)) : std::vector<Id>(3, s.u32);
}
Words4 plus(Soft64& s, const Words4& m, const Addend& a, const Element& x, SumAdds adds) {
  const auto& v = a.values;
  return adds == SumAdds::int64 ? add_wide(s, m, {v.at(0), v.at(1)}) : add_signed(s, m, {v.at(0), v.at(1), v.at(2)}, x.hi);
}

// The element at gap below acc's exponent, gap below 32 (or the element 0). In 64-bit
// integers: the signed significand v times 2^(32 - d) is v << (32 - d) in the low u64 and
// v's high word shifted right by d, arithmetically, in the high one.
Addend near_addend(Soft64& s, const Element& x, Id gap, SumAdds adds) {
  if (adds == SumAdds::words) {
    Words3 w = placed_near(s, x.sig, gap);
    return {{w[0], w[1], w[2]}};
  }
  const Id u64 = s.b.type_int(64);
  Id mask = s.op(spv::OpShiftRightArithmetic, {x.hi, s.c(31)});
  Id mask64 = as_u64(s, mask, mask);
  Id v = s.b.op(spv::OpISub, u64, {s.b.op(spv::OpBitwiseXor, u64, {as_u64(s, x.sig.lo, x.sig.hi), mask64}), mask64});
  Id d = s.op(spv::OpBitwiseAnd, {gap, s.c(31)});
  Id v_high = words_of(s, v).second;
  return {{s.b.op(spv::OpShiftLeftLogical, u64, {v, s.op(spv::OpISub, {s.c(32), d})}),
           as_u64(s, s.op(spv::OpShiftRightArithmetic, {v_high, d}), s.op(spv::OpShiftRightArithmetic, {v_high, s.c(31)}))}};
}

// The element dist below the exponent it is added on, for any dist; for code in a branch.
Addend far_addend(Soft64& s, const Element& x, Id dist, SumAdds adds) {
  Words3 w = placed_far(s, x.sig, dist);
  if (adds == SumAdds::words) return {{w[0], w[1], w[2]}};
  Id mask = s.op(spv::OpShiftRightArithmetic, {x.hi, s.c(31)});
  Words4 v = negate_words_if(s, Words4{w[0], w[1], w[2], s.c(0)}, mask, s.op(spv::OpShiftRightLogical, {x.hi, s.c(31)}));
  return {{as_u64(s, v[0], v[1]), as_u64(s, v[2], v[3])}};
}

}  // namespace

std::vector<Id> WideSum::values() const { return {exp, m[0], m[1], m[2], m[3], flags}; }
WideSum WideSum::of(const std::vector<Id>& v, SumAdds adds) {
  return {v.at(0), {v.at(1), v.at(2), v.at(3), v.at(4)}, v.at(5), adds};
}

WideSum wide_sum_zero(Soft64& s, SumAdds adds) { return {s.c(1), {s.c(0), s.c(0), s.c(0), s.c(0)}, s.c(0), adds}; }

WideSum wide_sum_add(Soft64& s, const WideSum& acc, Id x) {
  const Element el = element(s, x);
  const Id hi = el.hi, lo = el.lo, e = el.e;
  const Significand sig = el.sig;
  // An inf's or a NaN's exponent, 0x7ff, lies above every finite one: it takes the branch
  // below, which leaves acc and sets a flag, and lies above exp there, so that its
  // significand is shifted out entirely.
  //
  // The common step places an element less than 32 binades below acc's exponent, exactly.
  // Any other nonzero element takes a branch, rare after the first elements: one whose
  // exponent exceeds acc's moves acc up to it (gap wraps past 32 then); one further below
  // normalises acc where it has cancelled, so that the element is not cut short on the
  // exponent of a larger sum that cancelled, and is shifted by the general routine. A zero
  // adds nothing at any gap. The branch's code its first instruction keeps inside.
  Id gap = s.op(spv::OpISub, {acc.exp, e});
  std::vector<Id> types(6, s.u32);
  for (Id t : addend_types(s, acc.adds)) types.push_back(t);
  auto moved = s.b.if_else(
      far(s, el, gap), types,
      [&] {
        // The flag's work from a copy made here, so that none of it is hoisted out.
        Id hi_here = s.b.op_in_place(spv::OpCopyObject, s.u32, {hi});
        Id special = s.test(spv::OpIEqual, {s.op(spv::OpBitwiseAnd, {hi_here, s.c(0x7ff00000)}), s.c(0x7ff00000)});
        Id frac = s.op(spv::OpBitwiseOr, {s.op(spv::OpBitwiseAnd, {hi_here, s.c(0xfffff)}), lo});
        Id nan = s.test(spv::OpINotEqual, {frac, s.c(0)});
        Id sign = s.op(spv::OpShiftRightLogical, {hi_here, s.c(31)});
        Id flag = s.select32(special, s.select32(nan, s.c(4), s.op(spv::OpShiftLeftLogical, {s.c(1), sign})), s.c(0));
        WideSum n = normalized(s, acc);
        Id exp = s.select32(special, acc.exp, s.b.ext(GLSLstd450UMax, s.u32, {e, n.exp}));
        Words4 m = shift_right_arithmetic4(s, n.m, s.op(spv::OpISub, {exp, n.exp}));
        Addend a = far_addend(s, {hi_here, lo, e, sig, el.nonzero}, s.op(spv::OpISub, {exp, e}), acc.adds);
        std::vector<Id> v{exp};
        for (int i = 0; i < 4; ++i) v.push_back(s.select32(special, acc.m[i], m[i]));
        v.push_back(s.op(spv::OpBitwiseOr, {acc.flags, flag}));
        v.insert(v.end(), a.values.begin(), a.values.end());
        return v;
      },
      [&] {
        Addend a = near_addend(s, el, gap, acc.adds);
        std::vector<Id> v{acc.exp, acc.m[0], acc.m[1], acc.m[2], acc.m[3], acc.flags};
        v.insert(v.end(), a.values.begin(), a.values.end());
        return v;
      });
  const Words4 m{moved[1], moved[2], moved[3], moved[4]};
  return {moved[0], plus(s, m, {{moved.begin() + 6, moved.end()}}, el, acc.adds), moved[5], acc.adds};
}

WideSum wide_sum_start(Soft64& s, const std::vector<Id>& xs, SumAdds adds) {
  Id exp = s.c(1);
  for (Id x : xs) {
    const Element el = element(s, x);
    exp = s.b.ext(GLSLstd450UMax, s.u32, {exp, s.select32(s.test(spv::OpIEqual, {el.e, s.c(0x7ff)}), s.c(1), el.e)});
  }
  return {exp, {s.c(0), s.c(0), s.c(0), s.c(0)}, s.c(0), adds};
}

WideSum wide_sum_add_many(Soft64& s, const WideSum& acc, const std::vector<Id>& xs) {
  std::vector<Element> els;
  std::vector<Id> gaps;
  Id any_far = 0;
  for (Id x : xs) {
    els.push_back(element(s, x));
    gaps.push_back(s.op(spv::OpISub, {acc.exp, els.back().e}));
    Id f = far(s, els.back(), gaps.back());
    any_far = any_far ? s.either(any_far, f) : f;
  }
  // Where any is not near, they go one by one through wide_sum_add, from copies of acc made
  // in the branch so that its code stays there; else all are added on acc's exponent.
  const int level = s.b.level();
  auto v = s.b.if_else(
      any_far, std::vector<Id>(WideSum::kValues, s.u32),
      [&] {
        std::vector<Id> v = acc.values();
        for (Id& w : v)
          if (s.b.level_of(w) >= level) w = s.b.op_in_place(spv::OpCopyObject, s.u32, {w});
        WideSum a = WideSum::of(v, acc.adds);
        for (Id x : xs) a = wide_sum_add(s, a, x);
        return a.values();
      },
      [&] {
        Words4 m = acc.m;
        for (size_t i = 0; i < els.size(); ++i) m = plus(s, m, near_addend(s, els[i], gaps[i], acc.adds), els[i], acc.adds);
        return WideSum{acc.exp, m, acc.flags, acc.adds}.values();
      });
  return WideSum::of(v, acc.adds);
}

WideSum wide_sum_settled(Soft64& s, const WideSum& acc) {
  auto v = s.b.if_else(
      small(s, acc.m), std::vector<Id>(5, s.u32),
      [&] {
        auto n = normalized(s, acc).values();
        n.pop_back();
        return n;
      },
      [&] { return std::vector<Id>{acc.exp, acc.m[0], acc.m[1], acc.m[2], acc.m[3]}; });
  return {v[0], {v[1], v[2], v[3], v[4]}, acc.flags, acc.adds};
}

WideSum wide_sum_rescaled(Soft64& s, const WideSum& acc, Id exp) {
  return {exp, shift_right_arithmetic4(s, acc.m, s.op(spv::OpISub, {exp, acc.exp})), acc.flags, acc.adds};
}

WideSum wide_sum_combine(Soft64& s, const WideSum& a, const WideSum& b) {
  Words4 m = a.adds == SumAdds::int64 ? add_wide(s, a.m, {as_u64(s, b.m[0], b.m[1]), as_u64(s, b.m[2], b.m[3])}) : add_words(s, a.m, b.m);
  return {a.exp, m, s.op(spv::OpBitwiseOr, {a.flags, b.flags}), a.adds};
}

Id wide_sum_round(Soft64& s, const WideSum& acc) {
  Id mask = s.op(spv::OpShiftRightArithmetic, {acc.m[3], s.c(31)});
  Id negative = s.test(spv::OpINotEqual, {mask, s.c(0)});
  auto [sig, shift] = normalize4(s, negate_words_if(s, acc.m, mask, s.bit(negative)));
  // m * 2^(exp - 1107) = sig * 2^(exp + 42 - shift - 1085): round_pack's exponent at k = 11.
  Id exp = s.op(spv::OpISub, {s.op(spv::OpIAdd, {acc.exp, s.c(42)}), shift});
  Id r = round_pack(s, s.select32(negative, s.c(0x80000000u), s.c(0)), exp, sig, 11);
  Id f = acc.flags;
  Id nan = s.either(s.test(spv::OpINotEqual, {s.op(spv::OpBitwiseAnd, {f, s.c(4)}), s.c(0)}),
                    s.test(spv::OpIEqual, {f, s.c(3)}));
  Id inf = f64_signed_inf(s, s.op(spv::OpShiftLeftLogical, {s.op(spv::OpBitwiseAnd, {f, s.c(2)}), s.c(30)}));
  return s.select(nan, f64_default_nan(s), s.select(s.test(spv::OpINotEqual, {f, s.c(0)}), inf, r));
}

}  // namespace nxv::codegen::soft
