// Register and storage types, loads/stores, normalisation and conversions.
//
// f16 and bf16 are stored as 16-bit integers. f16 converts with the hardware's
// conversions where the device rounds f16 results to nearest even and keeps Inf and NaN,
// else with integer code, which needs only 16-bit storage; both are exact. bf16 rounding
// follows Nx, which writes the high half of the f32 value (truncation), NaN as 0x7FC0.
// Without 8/16-bit storage, narrow tensors keep their host layout in buffers declared as
// 32-bit words (Emitter::packed): loads extract an element, stores replace it with two
// atomics, since neighbours in a word may be written by other invocations.
#include <cmath>
#include <cstring>

#include "codegen/emitter.h"
#include "codegen/targets/launch.h"
#include "ir/literal.h"

namespace nxv::codegen {

using ir::DType;

int Emitter::register_bits(DType t) { return ir::dtype_bits(t) == 64 ? 64 : 32; }

DType Emitter::compute_type(DType t) const { return t == DType::F32 && computes_f32_in_f64(caps) ? DType::F64 : t; }

DType Emitter::math_type(DType t) const {
  return ir::is_float(t) && register_bits(t) == 32 && computes_f32_in_f64(caps) ? DType::F64 : t;
}

Id Emitter::u32() { return b.type_int(32); }
Id Emitter::boolean() { return b.type_bool(); }

Id Emitter::reg_type(DType t) {
  return ir::is_float(t) ? b.type_float(register_bits(t)) : b.type_int(register_bits(t));
}

bool Emitter::packed(DType t) const {
  const int bits = ir::dtype_bits(t);
  return (bits == 8 && !caps.storage_buffer_8bit) || (bits == 16 && !caps.storage_buffer_16bit);
}

uint32_t Emitter::storage_stride(DType t) const { return packed(t) ? 4 : uint32_t(ir::dtype_bytes(t)); }

Id Emitter::storage_type(DType t) {
  if (packed(t)) return u32();
  if (t == DType::F16 || t == DType::BF16) return b.type_int(16);
  return ir::is_float(t) ? b.type_float(ir::dtype_bits(t)) : b.type_int(ir::dtype_bits(t));
}

void Emitter::require_type(const ir::Node& node, DType t) const {
  auto lacks = [&](const char* what, const char* feature) {
    throw ir::IrError(node, std::string(what) + " needs the device's " + feature + " feature, which " + caps.name +
                                " lacks");
  };
  std::string tn = ir::dtype_name(t);
  if (caps.emulated(t)) return;
  if (t == DType::F64 && !caps.float64) lacks("f64", "shaderFloat64");
  if ((t == DType::S64 || t == DType::U64) && !caps.int64) lacks(tn.c_str(), "shaderInt64");
}

namespace {
// f32 value → f16 bits (round to nearest even, overflow to ±inf, NaN → 0x7E00 as Nx writes it).
Id f32_to_f16_bits(Emitter& e, Id f) {
  auto& b = e.b;
  Id u = e.u32();
  Id bits = b.op(spv::OpBitcast, u, {f});
  Id sign = b.op(spv::OpBitwiseAnd, u, {b.op(spv::OpShiftRightLogical, u, {bits, e.u32c(16)}), e.u32c(0x8000)});
  Id mag = b.op(spv::OpBitwiseAnd, u, {bits, e.u32c(0x7FFFFFFF)});
  // Normal halves: rebias the exponent, round the 13 dropped mantissa bits to even.
  Id shifted = b.op(spv::OpShiftRightLogical, u, {b.op(spv::OpISub, u, {mag, e.u32c(0x38000000)}), e.u32c(13)});
  Id rest = b.op(spv::OpBitwiseAnd, u, {mag, e.u32c(0x1FFF)});
  Id odd = b.op(spv::OpBitwiseAnd, u, {shifted, e.u32c(1)});
  Id round_up = b.op(spv::OpUGreaterThan, e.boolean(), {b.op(spv::OpIAdd, u, {rest, odd}), e.u32c(0x1000)});
  Id normal = b.op(spv::OpIAdd, u, {shifted, e.b_select(u, round_up, e.u32c(1), e.u32c(0))});
  // Subnormal halves: |f| * 2^24 is exact, so rounding it to an even integer gives the mantissa.
  Id f32 = b.type_float(32);
  Id scaled = b.op(spv::OpFMul, f32, {b.ext(GLSLstd450FAbs, f32, {f}), b.const_f32(16777216.0f)});
  Id sub = b.op(spv::OpConvertFToU, u, {b.ext(GLSLstd450RoundEven, f32, {scaled})});
  Id is_normal = b.op(spv::OpUGreaterThanEqual, e.boolean(), {mag, e.u32c(0x38800000)});
  Id h = e.b_select(u, is_normal, normal, sub);
  h = e.b_select(u, b.op(spv::OpUGreaterThanEqual, e.boolean(), {mag, e.u32c(0x477FF000)}), e.u32c(0x7C00), h);
  h = b.op(spv::OpBitwiseOr, u, {sign, h});
  return e.b_select(u, b.op(spv::OpUGreaterThan, e.boolean(), {mag, e.u32c(0x7F800000)}), e.u32c(0x7E00), h);
}

Id f16_bits_to_f32(Emitter& e, Id h) {
  auto& b = e.b;
  Id u = e.u32(), f32 = b.type_float(32);
  Id sign = b.op(spv::OpShiftLeftLogical, u, {b.op(spv::OpBitwiseAnd, u, {h, e.u32c(0x8000)}), e.u32c(16)});
  Id exp = b.op(spv::OpBitwiseAnd, u, {b.op(spv::OpShiftRightLogical, u, {h, e.u32c(10)}), e.u32c(0x1F)});
  Id man = b.op(spv::OpBitwiseAnd, u, {h, e.u32c(0x3FF)});
  Id man_hi = b.op(spv::OpShiftLeftLogical, u, {man, e.u32c(13)});
  Id normal = b.op(spv::OpBitwiseOr, u,
                   {b.op(spv::OpShiftLeftLogical, u, {b.op(spv::OpIAdd, u, {exp, e.u32c(112)}), e.u32c(23)}), man_hi});
  Id special = b.op(spv::OpBitwiseOr, u, {e.u32c(0x7F800000), man_hi});
  Id sub_f = b.op(spv::OpFMul, f32, {b.op(spv::OpConvertUToF, f32, {man}), b.const_f32(1.0f / 16777216.0f)});
  Id sub = b.op(spv::OpBitcast, u, {sub_f});
  Id mag = e.b_select(u, b.op(spv::OpIEqual, e.boolean(), {exp, e.u32c(0)}), sub,
                      e.b_select(u, b.op(spv::OpIEqual, e.boolean(), {exp, e.u32c(31)}), special, normal));
  return b.op(spv::OpBitcast, f32, {b.op(spv::OpBitwiseOr, u, {sign, mag})});
}

// A half's bits in the low 16 of a 32-bit word, and the half of such a word: halves travel
// as a 2-vector bitcast, so that no 16-bit integer register is needed.
Id half_to_word(Emitter& e, Id half) {
  auto& b = e.b;
  Id pair = b.type_vector(b.type_float(16), 2);
  return b.op(spv::OpBitwiseAnd, e.u32(), {b.op(spv::OpBitcast, e.u32(), {b.op(spv::OpCompositeConstruct, pair, {half, half})}), e.u32c(0xFFFF)});
}

Id word_to_half(Emitter& e, Id word) {
  auto& b = e.b;
  Id f16 = b.type_float(16);
  return b.op(spv::OpCompositeExtract, f16, {b.op(spv::OpBitcast, b.type_vector(f16, 2), {word})}, {0});
}

// f's bits, and its magnitude as bits and as a float: the hardware conversions below take
// magnitudes, the sign going on and off as a bit.
struct Magnitude {
  Id bits, mag_bits, mag;
};
Magnitude magnitude_of(Emitter& e, Id f) {
  auto& b = e.b;
  Id bits = b.op(spv::OpBitcast, e.u32(), {f});
  Id mag_bits = b.op(spv::OpBitwiseAnd, e.u32(), {bits, e.u32c(0x7FFFFFFF)});
  return {bits, mag_bits, b.op(spv::OpBitcast, b.type_float(32), {mag_bits})};
}

// The f16 bits of a magnitude, in the low 16 of a word: the hardware's conversion. The word
// is made opaque (a zero the driver cannot see XOR'd in) so that no compiler can prove a
// conversion back to f32 reads the value it came from: NVIDIA's dropped the whole f32 ->
// f16 -> f32 pair, its rounding and overflow to inf, in a kernel that also calls its 64-bit
// division (lit_tests/codegen/f16-overflow.test, H100, driver 580).
Id f16_word_hw(Emitter& e, Id mag) {
  return e.b.opaque(half_to_word(e, e.b.op(spv::OpFConvert, e.b.type_float(16), {mag})), e.u32());
}

// a 2^24 rounded to even, in f32: a magnitude a below 2^-14 counted in f16's subnormal steps
// of 2^-24 (2^-14 itself is 1024 of them).
Id f16_subnormal_steps(Emitter& e, Id a) {
  return e.b.ext(GLSLstd450RoundEven, e.b.type_float(32), {e.b.op(spv::OpFMul, e.b.type_float(32), {a, e.b.const_f32(16777216.0f)})});
}

// The hardware's conversions (Emitter::hardware_f16), of magnitudes only: the sign goes on
// and off as a bit, and NaN is told on the bits, so that no rounding mode or float rule of
// the driver's can touch a zero's sign. f16's subnormal range is done in f32 arithmetic
// unless the module keeps f16 denormals (Emitter::hardware_f16_subnormals): the device may
// flush them (few promise shaderDenormPreserveFloat16, lavapipe included); the bits of |f|
// below 2^-14 are then f16_subnormal_steps, 0x0400 (2^-14 itself) included.
Id f32_to_f16_bits_hw(Emitter& e, Id f) {
  auto& b = e.b;
  b.note_f16_conversion();
  Id u = e.u32();
  const Magnitude m = magnitude_of(e, f);
  Id hw = f16_word_hw(e, m.mag);
  Id sign = b.op(spv::OpBitwiseAnd, u, {b.op(spv::OpShiftRightLogical, u, {m.bits, e.u32c(16)}), e.u32c(0x8000)});
  if (!e.hardware_f16_subnormals()) {
    Id steps = b.op(spv::OpConvertFToU, u, {f16_subnormal_steps(e, m.mag)});
    Id tiny = b.op(spv::OpULessThan, e.boolean(), {m.mag_bits, e.u32c(0x38800000)});  // below 2^-14
    hw = e.b_select(u, tiny, steps, hw);
  }
  Id h = b.op(spv::OpBitwiseOr, u, {hw, sign});
  return e.b_select(u, b.op(spv::OpUGreaterThan, e.boolean(), {m.mag_bits, e.u32c(0x7F800000)}), e.u32c(0x7E00), h);
}

Id f16_bits_to_f32_hw(Emitter& e, Id h) {
  auto& b = e.b;
  b.note_f16_conversion();
  Id u = e.u32(), f32 = b.type_float(32);
  Id mag = b.op(spv::OpBitwiseAnd, u, {h, e.u32c(0x7FFF)});
  Id hw = b.op(spv::OpFConvert, f32, {word_to_half(e, mag)});
  if (!e.hardware_f16_subnormals()) {
    Id sub = b.op(spv::OpFMul, f32, {b.op(spv::OpConvertUToF, f32, {b.op(spv::OpBitwiseAnd, u, {h, e.u32c(0x3FF)})}),
                                     b.const_f32(1.0f / 16777216.0f)});
    hw = e.b_select(f32, b.op(spv::OpULessThan, e.boolean(), {mag, e.u32c(0x0400)}), sub, hw);
  }
  Id r = b.op(spv::OpBitcast, u, {hw});
  Id sign = b.op(spv::OpShiftLeftLogical, u, {b.op(spv::OpBitwiseAnd, u, {h, e.u32c(0x8000)}), e.u32c(16)});
  return b.op(spv::OpBitcast, f32, {b.op(spv::OpBitwiseOr, u, {r, sign})});
}

// f rounded to f16 and back, for a rounding step whose result stays in a register: the
// two hardware conversions of the magnitude and the sign as a bit, as above, without the
// sign, NaN and subnormal handling of the bits in between (about half the operations of
// f32_to_f16_bits_hw and back). NaN stays a NaN. f16's subnormal range as in
// f32_to_f16_bits_hw.
Id f16_round_trip_hw(Emitter& e, Id f) {
  auto& b = e.b;
  b.note_f16_conversion();
  Id u = e.u32(), f32 = b.type_float(32);
  const Magnitude m = magnitude_of(e, f);
  // The half goes through its 32-bit word (f16_word_hw): NVIDIA's compiler drops a direct
  // f32 -> f16 -> f32 pair as if it did nothing (SpecialValues.F16HardwareRoundingStepsAreExact
  // caught it on the H200).
  Id back = b.op(spv::OpFConvert, f32, {word_to_half(e, f16_word_hw(e, m.mag))});
  if (!e.hardware_f16_subnormals()) {
    Id sub = b.op(spv::OpFMul, f32, {f16_subnormal_steps(e, m.mag), b.const_f32(1.0f / 16777216.0f)});
    back = e.b_select(f32, b.op(spv::OpULessThan, e.boolean(), {m.mag_bits, e.u32c(0x38800000)}), sub, back);  // below 2^-14
  }
  Id sign = b.op(spv::OpBitwiseAnd, u, {m.bits, e.u32c(0x80000000)});
  return b.op(spv::OpBitcast, f32, {b.op(spv::OpBitwiseOr, u, {b.op(spv::OpBitcast, u, {back}), sign})});
}

Id f32_to_bf16_bits(Emitter& e, Id f) {
  auto& b = e.b;
  Id u = e.u32();
  Id bits = b.op(spv::OpShiftRightLogical, u, {b.op(spv::OpBitcast, u, {f}), e.u32c(16)});
  return e.b_select(u, b.op(spv::OpIsNan, e.boolean(), {f}), e.u32c(0x7FC0), bits);
}

// d rounded to f32 toward zero with the last bit set where inexact ("round to odd"): rounding
// that to f16 rounds d once, as Nx and the interpreter do, where rounding d to nearest f32
// first can turn a value just off a tie between two halves into the tie (1 + 2^-11 + 2^-40
// became 1, not 1 + 2^-10).
Id f64_to_f32_odd(Emitter& e, Id d) {
  auto& b = e.b;
  Id u = e.u32(), f64 = b.type_float(64);
  Id f = b.op(spv::OpFConvert, b.type_float(32), {d});
  Id back = b.op(spv::OpFConvert, f64, {f});
  Id away = b.op(spv::OpFOrdGreaterThan, e.boolean(), {b.ext(GLSLstd450FAbs, f64, {back}), b.ext(GLSLstd450FAbs, f64, {d})});
  Id bits = b.op(spv::OpBitcast, u, {f});
  bits = e.b_select(u, away, b.op(spv::OpISub, u, {bits, e.u32c(1)}), bits);
  Id inexact = b.op(spv::OpFOrdNotEqual, e.boolean(), {back, d});
  bits = e.b_select(u, inexact, b.op(spv::OpBitwiseOr, u, {bits, e.u32c(1)}), bits);
  return b.op(spv::OpBitcast, b.type_float(32), {bits});
}

Id bf16_bits_to_f32(Emitter& e, Id h) {
  return e.b.op(spv::OpBitcast, e.b.type_float(32), {e.b.op(spv::OpShiftLeftLogical, e.u32(), {h, e.u32c(16)})});
}
}  // namespace

Id Emitter::to_bits(Id v, DType t) {
  switch (t) {
    case DType::F16: {
      auto known = f16_bits_.find(v);
      if (known != f16_bits_.end()) return known->second;
      if (!hardware_f16()) return f32_to_f16_bits(*this, v);
      auto unrounded = f16_unrounded_.find(v);
      return f32_to_f16_bits_hw(*this, unrounded == f16_unrounded_.end() ? v : unrounded->second);
    }
    case DType::BF16: return f32_to_bf16_bits(*this, v);
    case DType::F32:
    case DType::F64: return b.op(spv::OpBitcast, b.type_int(register_bits(t)), {v});
    default: return v;
  }
}

Id Emitter::from_bits(Id bits, DType t) {
  switch (t) {
    case DType::F16: return hardware_f16() ? f16_bits_to_f32_hw(*this, bits) : f16_bits_to_f32(*this, bits);
    case DType::BF16: return bf16_bits_to_f32(*this, bits);
    case DType::F32:
    case DType::F64: return b.op(spv::OpBitcast, reg_type(t), {bits});
    default: return normalize(bits, t);
  }
}

Id Emitter::buffer_entry_type(const BufferRef& buf) {
  Id st = storage_type(buf.dtype);
  return buf.lanes > 1 ? b.type_vector(st, buf.lanes) : st;
}

// In an array of vectors, element `linear` is a component of one: reads at other than the
// output position (a broadcast, a reversal) stay scalar.
Id Emitter::element_pointer(const BufferRef& buf, Id linear) {
  Id ptr = b.type_pointer(spv::StorageClassStorageBuffer, storage_type(buf.dtype));
  if (buf.base) linear = b.op(spv::OpIAdd, u32(), {buf.base, linear});
  if (buf.lanes == 1) return b.op(spv::OpAccessChain, ptr, {buf.variable, u32c(0), linear});
  Id entry = b.op(spv::OpUDiv, u32(), {linear, u32c(buf.lanes)});
  Id lane = b.op(spv::OpUMod, u32(), {linear, u32c(buf.lanes)});
  return b.op(spv::OpAccessChain, ptr, {buf.variable, u32c(0), entry, lane});
}

Id Emitter::entry_pointer(const BufferRef& buf, Id at) {
  return b.op(spv::OpAccessChain, b.type_pointer(spv::StorageClassStorageBuffer, buffer_entry_type(buf)),
              {buf.variable, u32c(0), at});
}

Id Emitter::load(const BufferRef& buf, Id linear) {
  if (packed(buf.dtype)) {
    const PackedElement at = packed_element(buf, linear);
    Id word = buf.written_in_kernel ? b.op_in_place(spv::OpLoad, u32(), {at.word})
                                    : b.op(spv::OpLoad, u32(), {at.word});
    return from_bits(b.op(spv::OpShiftRightLogical, u32(), {word, at.shift}), buf.dtype);
  }
  Id ptr = element_pointer(buf, linear);
  Id raw = buf.written_in_kernel ? b.op_in_place(spv::OpLoad, storage_type(buf.dtype), {ptr})
                                 : b.op(spv::OpLoad, storage_type(buf.dtype), {ptr});
  if (ir::dtype_bits(buf.dtype) >= 32) return raw;
  Id bits = b.op(spv::OpUConvert, u32(), {raw});
  Id v = from_bits(bits, buf.dtype);
  if (buf.dtype == DType::F16) f16_bits_.emplace(v, bits);
  return v;
}

Id Emitter::select(DType t, Id cond, Id x, Id y) {
  Id r = b_select(reg_type(t), cond, x, y);
  if (t == DType::F16)
    if (Id bx = known_f16_bits(x), by = known_f16_bits(y); bx && by) f16_bits_.emplace(r, b_select(u32(), cond, bx, by));
  return r;
}

void Emitter::store(const BufferRef& buf, Id linear, Id value) {
  if (packed(buf.dtype)) {
    const PackedElement at = packed_element(buf, linear);
    const uint32_t mask = (1u << ir::dtype_bits(buf.dtype)) - 1;
    Id bits = b.op(spv::OpBitwiseAnd, u32(), {to_bits(value, buf.dtype), u32c(mask)});
    Id keep = b.op(spv::OpNot, u32(), {b.op(spv::OpShiftLeftLogical, u32(), {u32c(mask), at.shift})});
    // Relaxed device-scope atomics: each changes only this element's bits of the word.
    Id scope = u32c(spv::ScopeDevice), relaxed = u32c(spv::MemorySemanticsMaskNone);
    b.op_in_place(spv::OpAtomicAnd, u32(), {at.word, scope, relaxed, keep});
    b.op_in_place(spv::OpAtomicOr, u32(), {at.word, scope, relaxed, b.op(spv::OpShiftLeftLogical, u32(), {bits, at.shift})});
    return;
  }
  Id st = storage_type(buf.dtype);
  Id v = ir::dtype_bits(buf.dtype) >= 32 ? value : b.op(spv::OpUConvert, st, {to_bits(value, buf.dtype)});
  b.op_void(spv::OpStore, {element_pointer(buf, linear), v});
}

Emitter::PackedElement Emitter::packed_element(const BufferRef& buf, Id linear) {
  if (buf.base) linear = b.op(spv::OpIAdd, u32(), {buf.base, linear});
  const uint32_t bits = uint32_t(ir::dtype_bits(buf.dtype)), per_word = 32 / bits;
  Id word = b.op(spv::OpUDiv, u32(), {linear, u32c(per_word)});
  Id shift = b.op(spv::OpIMul, u32(), {b.op(spv::OpUMod, u32(), {linear, u32c(per_word)}), u32c(bits)});
  Id ptr = b.op(spv::OpAccessChain, b.type_pointer(spv::StorageClassStorageBuffer, u32()), {buf.variable, u32c(0), word});
  return {ptr, shift};
}

Id Emitter::load_vector(const BufferRef& buf, Id at) {
  if (buf.texels) return b.op(spv::OpImageFetch, buffer_entry_type(buf), {b.op(spv::OpLoad, b.type_texel_buffer(), {buf.variable}), at});
  Id ptr = entry_pointer(buf, at);
  return b.op(spv::OpLoad, buffer_entry_type(buf), {ptr});
}

void Emitter::store_vector(const BufferRef& buf, Id at, Id vector) {
  b.op_void(spv::OpStore, {entry_pointer(buf, at), vector});
}

Id Emitter::normalize(Id v, DType t) {
  switch (t) {
    case DType::S8:
    case DType::S16:
      return b.op(spv::OpBitFieldSExtract, u32(), {v, u32c(0), u32c(ir::dtype_bits(t))});
    case DType::U8: return b.op(spv::OpBitwiseAnd, u32(), {v, u32c(0xFF)});
    case DType::U16: return b.op(spv::OpBitwiseAnd, u32(), {v, u32c(0xFFFF)});
    case DType::F16: {
      if (f16_bits_.count(v) || f16_unrounded_.count(v)) return v;
      if (hardware_f16()) {
        Id r = f16_round_trip_hw(*this, v);
        f16_unrounded_.emplace(r, v);
        return r;
      }
      Id bits = to_bits(v, t);
      Id r = from_bits(bits, t);
      f16_bits_[r] = bits;
      return r;
    }
    case DType::BF16:
      // Truncation to the upper half in place, one operation. A NaN stays NaN because every
      // bf16 value in a register has a NaN's upper half when it is NaN: loads and literals
      // have no lower half, arithmetic gives quiet NaNs (bit 22) or passes its operand's on,
      // and conversions into bf16 (convert) quiet theirs first.
      return b.op(spv::OpBitcast, b.type_float(32), {b.op(spv::OpBitwiseAnd, u32(), {b.op(spv::OpBitcast, u32(), {v}), u32c(0xFFFF0000)})});
    default: return v;
  }
}

Id Emitter::convert(Id v, DType from, DType to) {
  if (from == to) return v;
  const int fb = register_bits(from), tb = register_bits(to);
  if (ir::is_integer(from) && ir::is_integer(to)) {
    if (fb == tb) return normalize(v, to);
    if (fb < tb && ir::is_signed_int(from)) {
      // Sign-extend by shifts rather than OpSConvert: Mesa 22's lavapipe folds a comparison
      // of an OpSConvert result with a constant wrongly (s32 x > s64 1 was true for all x).
      Id wide = b.op(spv::OpUConvert, reg_type(to), {v});
      Id shift = b.const_int(tb, uint64_t(tb - fb));
      return b.op(spv::OpShiftRightArithmetic, reg_type(to), {b.op(spv::OpShiftLeftLogical, reg_type(to), {wide, shift}), shift});
    }
    if (fb < tb) return b.op(spv::OpUConvert, reg_type(to), {v});
    return normalize(b.op(spv::OpUConvert, reg_type(to), {v}), to);
  }
  if (ir::is_integer(from)) {
    // The integer XOR'd with the push-constant zero (float_literal says why): an integer the
    // driver derives itself (x < x is 0, an iota over an axis of one is 0) would otherwise
    // convert to a 0.0 it folds as it folds literal zeros, 0.0 * Inf to 0 (Mesa 22.3's
    // lavapipe, in spite of SignedZeroInfNanPreserve).
    Id zero = b.push_constant_zero();
    if (fb != 32) zero = b.op(spv::OpUConvert, b.type_int(fb), {zero});
    Id hidden = b.op(spv::OpBitwiseOr, reg_type(from), {v, zero});
    Id f = b.op(ir::is_signed_int(from) ? spv::OpConvertSToF : spv::OpConvertUToF, reg_type(to), {hidden});
    return normalize(f, to);
  }
  if (ir::is_float(to)) {
    if (from == DType::F64 && to == DType::F16) return normalize(f64_to_f32_odd(*this, v), to);
    Id f = fb == tb ? v : b.op(spv::OpFConvert, reg_type(to), {v});
    if (to == DType::BF16) {
      // A NaN whose payload lies in the lower half (an f32 tensor's 0x7f800001) quieted, so
      // that truncation keeps it NaN (normalize relies on it).
      Id bits = b.op(spv::OpBitcast, u32(), {f});
      Id quiet = b.op(spv::OpBitcast, b.type_float(32), {b.op(spv::OpBitwiseOr, u32(), {bits, u32c(0x00400000)})});
      f = b_select(b.type_float(32), b.op(spv::OpIsNan, boolean(), {f}), quiet, f);
    }
    return normalize(f, to);
  }
  // float → integer: truncate toward zero, saturate, NaN → 0 (docs/ir.md, as XLA).
  const int bits = ir::dtype_bits(to);
  const bool is_signed = ir::is_signed_int(to);
  Id ft = reg_type(from);
  double lo = is_signed ? -std::ldexp(1.0, bits - 1) : 0.0;
  double hi = std::ldexp(1.0, is_signed ? bits - 1 : bits);  // first value out of range
  Id too_low = b.op(spv::OpFOrdLessThanEqual, boolean(), {v, b.const_float(fb, lo)});
  Id too_high = b.op(spv::OpFOrdGreaterThanEqual, boolean(), {v, b.const_float(fb, hi)});
  Id nan = b.op(spv::OpIsNan, boolean(), {v});
  Id out_of_range = b.op(spv::OpLogicalOr, boolean(), {b.op(spv::OpLogicalOr, boolean(), {too_low, too_high}), nan});
  Id safe = b_select(ft, out_of_range, b.const_float(fb, 0.0), v);
  Id r;
  if (to == DType::U64) {
    // Through the signed conversion: NVIDIA's compiler fused f32 -> u64 and a later cast to
    // a narrower integer into one saturating conversion (u8 255 for 1.0987e18, whose low
    // byte is 0; SpecialValues.CastsOfLargeFloatsToWideIntegers). From 2^63, where the signed
    // one would saturate, it converts v - 2^63 (exact: both are multiples of v's ulp) and
    // sets the top bit.
    Id high = b.op(spv::OpFOrdGreaterThanEqual, boolean(), {safe, b.const_float(fb, 0x1p63)});
    Id low = b_select(ft, high, b.op(spv::OpFSub, ft, {safe, b.const_float(fb, 0x1p63)}), safe);
    r = b.op(spv::OpConvertFToS, reg_type(to), {low});
    r = select(to, high, b.op(spv::OpBitwiseOr, reg_type(to), {r, constant_int(to, uint64_t(1) << 63)}), r);
  } else {
    r = b.op(is_signed ? spv::OpConvertFToS : spv::OpConvertFToU, reg_type(to), {safe});
  }
  uint64_t max_bits = is_signed ? (uint64_t(1) << (bits - 1)) - 1 : (bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1);
  uint64_t min_bits = is_signed ? ~max_bits : 0;  // two's complement MIN, sign-extended to the register
  r = select(to, too_low, constant_int(to, min_bits), r);
  return select(to, too_high, constant_int(to, max_bits), r);
}

Id Emitter::constant_int(DType t, uint64_t bits) {
  const int n = ir::dtype_bits(t);
  if (n < 64) {
    bits &= (uint64_t(1) << n) - 1;
    if (ir::is_signed_int(t) && (bits >> (n - 1)) & 1) bits |= ~((uint64_t(1) << n) - 1);  // sign-extend
  }
  return b.const_int(register_bits(t), bits);
}

Id Emitter::constant(DType t, double v) {
  if (ir::is_float(t)) return normalize(b.const_float(register_bits(t), v), t);
  if (ir::is_signed_int(t)) return constant_int(t, uint64_t(int64_t(v)));
  return constant_int(t, uint64_t(v));
}

// Drivers fold float arithmetic on constant operands without IEEE semantics, even under
// SignedZeroInfNanPreserve: Mesa 22.3's lavapipe, with a constant ±0.0 operand and the same
// ops correct on values read from memory, gives x / 0.0 = 0 (0/0 too; 1/0 = -Inf in f32 and
// f64, NaN in bf16), x * 0.0 = +0.0 for negative x, x + 0.0 = x and x - (-0.0) = x at x = -0.0,
// max/min keeping the wrong zero, abs(-0.0) = -0.0, sign(-0.0) = +0.0, atan(-0.0) = +0.0 and
// atan2(±1, -0.0) = ±Inf in f64, and a sum or dot starting from 0.0 ends at -0.0 over -0.0s
// (it folds 0.0 + x to x). A float literal that is ±0, ±Inf, NaN or subnormal in its register
// width is therefore built at run time from its bit pattern XOR'd with a push-constant word
// the runtime sets to zero (spirv::Builder::push_constant_zero), which no driver can fold.
// Infinities, NaNs and subnormals folded right on lavapipe, but they take the same path: a
// folder that flushes or canonicalises them (as NVIDIA's flushes f32 subnormals at run time)
// would otherwise make a literal differ from the same value in a tensor. Other literals stay
// plain constants (foldable); the compiler's own constants stay as they are, but for the +0.0
// that sums and dots start from (emit_reduce.cpp).
Id Emitter::float_literal(DType t, double v) {
  const int bits = register_bits(t);
  double r = bits == 64 ? v : double(float(v));  // the register value (constant() rounds alike)
  if (t == DType::F16) r = ir::f16_to_f32(ir::f32_to_f16(float(r)));
  if (t == DType::BF16) r = ir::bf16_to_f32(ir::f32_to_bf16(float(r)));
  const double smallest_normal = bits == 64 ? 0x1p-1022 : 0x1p-126;
  if (std::isfinite(r) && std::fabs(r) >= smallest_normal) return constant(t, v);
  uint64_t pattern;
  if (bits == 64) {
    std::memcpy(&pattern, &r, 8);
  } else {
    const float f = float(r);
    uint32_t w;
    std::memcpy(&w, &f, 4);
    pattern = w;
  }
  Id value = b.op(spv::OpBitcast, reg_type(t), {b.opaque(b.const_int(bits, pattern), b.type_int(bits))});
  // Integer bits, which no driver's float rules touch (a padded f16 operand packs them).
  if (t == DType::F16) f16_bits_.emplace(value, u32c(ir::f32_to_f16(float(r))));
  return value;
}

Id Emitter::constant_attr(const ir::Node& node, const nlohmann::json& v, DType t) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    double d = s == "nan" ? NAN : s == "inf" ? INFINITY : s == "-inf" ? -INFINITY : s == "-0.0" ? -0.0 : 1.0;
    if (d == 1.0 || !ir::is_float(t))
      throw ir::IrError(node, "constant value \"" + s + "\" is not valid for " + ir::dtype_name(t));
    return float_literal(t, d);
  }
  if (v.is_boolean()) {
    const double d = v.get<bool>() ? 1.0 : 0.0;
    return ir::is_float(t) ? float_literal(t, d) : constant(t, d);
  }
  if (!v.is_number()) throw ir::IrError(node, "constant value must be a number, got " + v.dump());
  if (ir::is_float(t)) return float_literal(t, v.get<double>());
  if (v.is_number_unsigned()) return constant_int(t, v.get<uint64_t>());
  if (v.is_number_integer()) return constant_int(t, uint64_t(v.get<int64_t>()));
  return constant(t, std::trunc(v.get<double>()));
}

Id Emitter::from_bool(Id cond, DType t) { return select(t, cond, constant(t, 1), constant(t, 0)); }

// A float is true unless ±0, tested on its bits: a device that flushes subnormals compares a
// subnormal equal to 0 (the H100's `all` of bf16 subnormals was false), and Nx's is true.
Id Emitter::to_bool(Id v, DType t) {
  if (!ir::is_float(t)) return b.op(spv::OpINotEqual, boolean(), {v, constant(t, 0)});
  if (b.emulated(reg_type(t))) return b.op(spv::OpFUnordNotEqual, boolean(), {v, constant(t, 0)});
  // The bits shifted left by one: the sign dropped.
  const int bits = register_bits(t);
  const Id it = b.type_int(bits);
  Id magnitude = b.op(spv::OpShiftLeftLogical, it, {b.op(spv::OpBitcast, it, {v}), b.const_int(bits, 1)});
  return b.op(spv::OpINotEqual, boolean(), {magnitude, b.const_int(bits, 0)});
}

bool Emitter::hardware_f16() const { return converts_f16_in_hardware(caps); }
bool Emitter::hardware_f16_subnormals() const { return converts_f16_subnormals_in_hardware(caps); }

// Asks the driver to keep Nx's float semantics: no fast-math folding of -0.0/Inf/NaN,
// no flushing of denormals, where the device can promise it for a width the module uses;
// f16 conversions round to nearest even (the hardware path is taken only where the device
// promises both).
void declare_float_controls(spirv::Builder& b, const DeviceCaps& caps) {
  if (b.converts_f16()) {
    b.extension("SPV_KHR_float_controls");
    b.capability(spv::CapabilitySignedZeroInfNanPreserve);
    b.execution_mode(spv::ExecutionModeSignedZeroInfNanPreserve, {16u});
    b.capability(spv::CapabilityRoundingModeRTE);
    b.execution_mode(spv::ExecutionModeRoundingModeRTE, {16u});
    if (converts_f16_subnormals_in_hardware(caps)) {
      b.capability(spv::CapabilityDenormPreserve);
      b.execution_mode(spv::ExecutionModeDenormPreserve, {16u});
    }
  }
  for (int bits : {32, 64}) {
    if (!b.uses_float(bits)) continue;
    bool nan = bits == 32 ? caps.preserve_signed_zero_inf_nan_f32 : caps.preserve_signed_zero_inf_nan_f64;
    bool denorm = bits == 32 ? caps.preserve_denorms_f32 : caps.preserve_denorms_f64;
    if (nan || denorm) b.extension("SPV_KHR_float_controls");
    if (nan) {
      b.capability(spv::CapabilitySignedZeroInfNanPreserve);
      b.execution_mode(spv::ExecutionModeSignedZeroInfNanPreserve, {uint32_t(bits)});
    }
    if (denorm) {
      b.capability(spv::CapabilityDenormPreserve);
      b.execution_mode(spv::ExecutionModeDenormPreserve, {uint32_t(bits)});
    }
  }
}

}  // namespace nxv::codegen
