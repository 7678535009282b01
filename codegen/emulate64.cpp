// The builder's lowering of emulated f64 and s64/u64 (Builder::emulate_64): each instruction
// on such a value becomes soft_f64.h / soft_i64.h arithmetic on its uvec2, so that every
// kernel family runs on devices without shaderFloat64 or shaderInt64 unchanged.
#include <stdexcept>
#include <string>

#include "codegen/soft64.h"
#include "codegen/soft_f64.h"
#include "codegen/soft_i64.h"
#include "codegen/spirv_builder.h"

namespace nxv::codegen::spirv {

namespace {

[[noreturn]] void no_lowering(const std::string& what) {
  throw Unsupported("emulated 64-bit types: no lowering for " + what);
}

bool is_float_compare(spv::Op op) {
  switch (op) {
    case spv::OpFOrdEqual: case spv::OpFOrdNotEqual: case spv::OpFOrdLessThan: case spv::OpFOrdLessThanEqual:
    case spv::OpFOrdGreaterThan: case spv::OpFOrdGreaterThanEqual: case spv::OpFUnordEqual: case spv::OpFUnordNotEqual:
    case spv::OpFUnordLessThan: case spv::OpFUnordLessThanEqual: case spv::OpFUnordGreaterThan:
    case spv::OpFUnordGreaterThanEqual:
      return true;
    default:
      return false;
  }
}

}  // namespace

void Builder::emulate_64(bool f64, bool i64) {
  if (!types_.empty())
    throw std::logic_error("spirv::Builder::emulate_64 after types were declared");
  emulate_f64_ = f64;
  emulate_i64_ = i64;
}

std::string Builder::emulated_types() const {
  if (emulated_f64_ && emulated_i64_) return "f64, i64";
  return emulated_f64_ ? "f64" : emulated_i64_ ? "i64" : "";
}

Id Builder::real_type(Id type) { return emulated(type) ? type_vector(type_int(32), 2) : type; }

Id Builder::emulated_constant(Id type, uint64_t bits) {
  auto key = std::pair{type, bits};
  if (auto it = emulated_constants_.find(key); it != emulated_constants_.end()) return it->second;
  // Not through declare_constant: f64 and s64 constants of the same bits are distinct ids.
  const Id lo = const_int(32, uint32_t(bits)), hi = const_int(32, uint32_t(bits >> 32));
  const Id id = fresh_id();
  append_inst(globals_, spv::OpConstantComposite, {real_type(type), id, lo, hi});
  foldable_.emplace(id, std::pair{type, false});
  set_type(id, type);
  emulated_constants_.emplace(key, id);
  return id;
}

Id Builder::named(Id r, Id type) {
  if (type_of(r) == type) return r;
  // A routine's uvec2 takes the name; a value of the other emulated type gets a copy of its own.
  if (type_of(r) == 0 || type_of(r) == real_type(type)) {
    set_type(r, type);
    return r;
  }
  return emit_pure(spv::OpCopyObject, type, {r}, {r});
}

bool Builder::lowers(spv::Op opcode, Id type, const std::vector<Id>& ids) const {
  if (!emulate_f64_ && !emulate_i64_) return false;
  if (emulated(type)) return true;
  // Extracting a word of a uvec2 is what the routines themselves do.
  if (opcode == spv::OpCompositeExtract || opcode == spv::OpVectorExtractDynamic) return false;
  // An emulated value's words as a uvec2 (the value already is one).
  if (opcode == spv::OpBitcast && emulated(type_of(ids.at(0)))) return true;
  auto boolean = types_.find(Words{uint32_t(spv::OpTypeBool)});
  const bool scalar_result = (boolean != types_.end() && type == boolean->second) || scalar_bytes_.count(type);
  return scalar_result && std::any_of(ids.begin(), ids.end(), [&](Id i) { return emulated(type_of(i)); });
}

bool Builder::is_64_bit_type(Id type) const {
  auto bytes = scalar_bytes_.find(type);
  return bytes != scalar_bytes_.end() && bytes->second == 8;
}

Id Builder::lowered(Id r, Id type) {
  const bool to_emulated = emulated(type);
  // A native 64-bit result is bitcast back from the routine's uvec2.
  if (!to_emulated && is_64_bit_type(type)) return emit_pure(spv::OpBitcast, type, {r}, {r});
  return to_emulated ? named(r, type) : r;
}

Id Builder::lower(spv::Op opcode, Id type, const std::vector<Id>& ids, const Words& literals) {
  Soft64 s(*this);
  // Operands as uvec2 where 64-bit (a native 64-bit value is bitcast: mixed emulation).
  std::vector<Id> a;
  for (Id id : ids)
    a.push_back(is_64_bit_type(type_of(id)) && !emulated(type_of(id)) ? emit_pure(spv::OpBitcast, s.uvec2, {id}, {id}) : id);
  switch (opcode) {
    // Moves of whole values: the same instruction on the uvec2.
    case spv::OpLoad: case spv::OpCopyObject: case spv::OpGroupNonUniformShuffle: case spv::OpGroupNonUniformShuffleXor:
    case spv::OpGroupNonUniformBroadcast: case spv::OpGroupNonUniformBroadcastFirst:
    case spv::OpGroupNonUniformShuffleUp: case spv::OpGroupNonUniformShuffleDown: {
      Words operands(ids.begin(), ids.end());
      operands.insert(operands.end(), literals.begin(), literals.end());
      return emit_pure(opcode, type, operands, ids);
    }
    case spv::OpSelect: return lowered(s.select(a[0], a[1], a[2]), type);
    case spv::OpBitwiseAnd: case spv::OpBitwiseOr: case spv::OpBitwiseXor:
      return lowered(emit_pure(opcode, s.uvec2, {a[0], a[1]}, {a[0], a[1]}), type);
    case spv::OpNot: return lowered(emit_pure(opcode, s.uvec2, {a[0]}, {a[0]}), type);
    case spv::OpBitcast: {
      // Every bitcast between 64-bit types and two 32-bit words keeps the words.
      const bool to64 = is_64_bit_type(type);
      if (!(is_64_bit_type(type_of(ids[0])) || type_of(ids[0]) == s.uvec2) || !(to64 || type == s.uvec2))
        no_lowering("OpBitcast between widths");
      return type == s.uvec2 ? a[0] : lowered(a[0], type);
    }
    default:
      if (is_float_compare(opcode)) return soft::f64_compare(s, opcode, a[0], a[1]);
      if (soft::is_integer_compare(opcode)) return soft::i64_compare(s, opcode, a[0], a[1]);
      if (Id r = lower_float(s, opcode, type, ids, a)) return r;
      return lower_integer(s, opcode, type, ids, a);
  }
}

Id Builder::lower_float(Soft64& s, spv::Op opcode, Id type, const std::vector<Id>& ids, const std::vector<Id>& a) {
  using namespace soft;
  const bool to64 = is_64_bit_type(type);
  switch (opcode) {
    case spv::OpFAdd: case spv::OpFSub: {
      const Id b = opcode == spv::OpFSub ? f64_neg(s, a[1]) : a[1];
      return lowered(f64_add(s, a[0], b), type);
    }
    case spv::OpFMul:
      return lowered(normal_range_            ? f64_mul_normal(s, a[0], a[1])
                     : common_case_branches_ ? f64_mul_branching(s, a[0], a[1])
                                             : f64_mul(s, a[0], a[1]),
                     type);
    case spv::OpFDiv: return lowered(normal_range_ ? f64_div_normal(s, a[0], a[1]) : f64_div(s, a[0], a[1]), type);
    case spv::OpFNegate: return lowered(f64_neg(s, a[0]), type);
    case spv::OpIsNan: return f64_is_nan(s, a[0]);
    case spv::OpIsInf: return f64_is_inf(s, a[0]);
    case spv::OpFConvert: return to64 ? lowered(f64_from_f32(s, a[0]), type) : f64_to_f32(s, a[0]);
    case spv::OpConvertSToF: case spv::OpConvertUToF: {
      const bool is_signed = opcode == spv::OpConvertSToF;
      if (to64) return lowered(f64_from_int(s, a[0], is_64_bit_type(type_of(ids[0])) ? 64 : 32, is_signed), type);
      const Id bits = f32_from_i64(s, a[0], is_signed);
      return emit_pure(spv::OpBitcast, type, {bits}, {bits});
    }
    case spv::OpConvertFToS: case spv::OpConvertFToU: {
      const bool is_signed = opcode == spv::OpConvertFToS;
      if (is_64_bit_type(type_of(ids[0]))) return lowered(f64_to_int(s, a[0], to64 ? 64 : 32, is_signed), type);
      return lowered(i64_from_f32(s, a[0], is_signed), type);
    }
    default:
      return 0;
  }
}

Id Builder::lower_integer(Soft64& s, spv::Op opcode, Id type, const std::vector<Id>& ids, const std::vector<Id>& a) {
  using namespace soft;
  const bool to64 = is_64_bit_type(type);
  switch (opcode) {
    case spv::OpIAdd: return lowered(i64_add(s, a[0], a[1]), type);
    case spv::OpISub: return lowered(i64_sub(s, a[0], a[1]), type);
    case spv::OpIMul: return lowered(i64_mul(s, a[0], a[1]), type);
    case spv::OpSNegate: return lowered(i64_neg(s, a[0]), type);
    case spv::OpUDiv: return lowered(i64_udiv(s, a[0], a[1]), type);
    case spv::OpSDiv: return lowered(i64_sdiv(s, a[0], a[1]), type);
    case spv::OpUMod: return lowered(i64_umod(s, a[0], a[1]), type);
    case spv::OpSRem: return lowered(i64_srem(s, a[0], a[1]), type);
    case spv::OpShiftLeftLogical: case spv::OpShiftRightLogical: case spv::OpShiftRightArithmetic: {
      const Id count = is_64_bit_type(type_of(ids[1])) ? s.lo(a[1]) : a[1];
      if (!is_64_bit_type(type_of(ids[0]))) no_lowering("a 32-bit shift by a 64-bit count");
      const Id r = opcode == spv::OpShiftLeftLogical    ? i64_shl(s, a[0], count)
                   : opcode == spv::OpShiftRightLogical ? i64_shr(s, a[0], count)
                                                        : i64_sar(s, a[0], count);
      return lowered(r, type);
    }
    case spv::OpBitCount: return lowered(i64_popcount(s, a[0]), type);
    case spv::OpUConvert: case spv::OpSConvert:
      if (to64 && is_64_bit_type(type_of(ids[0]))) return lowered(a[0], type);
      if (to64) return lowered(opcode == spv::OpSConvert ? i64_from_s32(s, a[0]) : i64_from_u32(s, a[0]), type);
      if (type == s.u32) return s.lo(a[0]);
      no_lowering("a conversion of a 64-bit integer below 32 bits");
    default:
      no_lowering("opcode " + std::to_string(uint32_t(opcode)));
  }
}

Id Builder::lower_ext(GLSLstd450 inst, Id type, const std::vector<Id>& ids) {
  Soft64 s(*this);
  using namespace soft;
  // Ext instructions compute on one type: all 64-bit operands are emulated ones here.
  const auto& a = ids;
  auto done = [&](Id r) { return named(r, type); };
  switch (inst) {
    case GLSLstd450FAbs: return done(f64_abs(s, a[0]));
    case GLSLstd450Sqrt: return done(f64_sqrt(s, a[0]));
    case GLSLstd450InverseSqrt: return done(f64_div(s, const_f64(1.0), f64_sqrt(s, a[0])));
    case GLSLstd450Fma: return done(normal_range_ ? f64_fma_normal(s, a[0], a[1], a[2]) : f64_fma(s, a[0], a[1], a[2]));
    case GLSLstd450Floor: return done(f64_floor(s, a[0]));
    case GLSLstd450Ceil: return done(f64_ceil(s, a[0]));
    case GLSLstd450Trunc: return done(f64_trunc(s, a[0]));
    case GLSLstd450RoundEven: return done(f64_round_even(s, a[0]));
    case GLSLstd450Fract: return done(f64_fract(s, a[0]));
    case GLSLstd450FSign: return done(f64_sign(s, a[0]));
    case GLSLstd450FMin: case GLSLstd450NMin: return done(f64_min(s, a[0], a[1]));
    case GLSLstd450FMax: case GLSLstd450NMax: return done(f64_max(s, a[0], a[1]));
    case GLSLstd450FClamp: return done(f64_min(s, f64_max(s, a[0], a[1]), a[2]));
    case GLSLstd450Ldexp: return done(f64_ldexp(s, a[0], a[1]));
    case GLSLstd450SMin: return done(i64_min(s, a[0], a[1], true));
    case GLSLstd450SMax: return done(i64_max(s, a[0], a[1], true));
    case GLSLstd450UMin: return done(i64_min(s, a[0], a[1], false));
    case GLSLstd450UMax: return done(i64_max(s, a[0], a[1], false));
    case GLSLstd450SClamp: return done(i64_min(s, i64_max(s, a[0], a[1], true), a[2], true));
    case GLSLstd450UClamp: return done(i64_min(s, i64_max(s, a[0], a[1], false), a[2], false));
    case GLSLstd450FindUMsb: return i64_find_msb(s, a[0]);
    default:
      no_lowering("GLSL.std.450 instruction " + std::to_string(uint32_t(inst)));
  }
}

}  // namespace nxv::codegen::spirv
