// Emulated 64-bit values for devices without shaderFloat64 or shaderInt64: each f64, s64 or u64
// is a uvec2 of its two 32-bit words (x low, y high: Nx's little-endian layout, so buffers need
// no conversion), and soft_i64.h / soft_f64.h compute on them with 32-bit integer arithmetic.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "codegen/spirv_builder.h"

namespace nxv::codegen {

using spirv::Id;

// The types and small steps every emulated routine uses. Routines are straight-line code of
// pure instructions where they can be (value-numbered and hoisted by the builder like any
// other arithmetic); loops only where a bounded loop is much smaller (long division).
class Soft64 {
 public:
  explicit Soft64(spirv::Builder& b)
      : b(b), u32(b.type_int(32)), boolean(b.type_bool()), uvec2(b.type_vector(u32, 2)),
        bvec2(b.type_vector(boolean, 2)) {}

  spirv::Builder& b;
  const Id u32, boolean, uvec2, bvec2;

  Id c(uint32_t v) { return b.const_int(32, v); }
  Id c64(uint64_t v) { return pair(c(uint32_t(v)), c(uint32_t(v >> 32))); }
  // The words of a pair this routine made are the words it was made of (no extract): where
  // the pair is in reach, so are they.
  Id lo(Id v) { return word(v, 0); }
  Id hi(Id v) { return word(v, 1); }
  Id pair(Id low, Id high) {
    Id v = b.op(spv::OpCompositeConstruct, uvec2, {low, high});
    made_.emplace(v, std::pair{low, high});
    return v;
  }
  // Where the builder computes on native 64-bit integers (Builder::native_int64), a pair as
  // the u64 of the same bits, and back.
  Id as_u64(Id v) { return b.op(spv::OpBitcast, b.type_int(64), {v}); }
  Id from_u64(Id v) { return b.op(spv::OpBitcast, uvec2, {v}); }
  // A u32 operation (op(OpIAdd, x, y), ...).
  Id op(spv::Op opcode, const std::vector<Id>& ids) { return b.op(opcode, u32, ids); }
  Id test(spv::Op opcode, const std::vector<Id>& ids) { return b.op(opcode, boolean, ids); }
  Id all(Id v2) { return b.op(spv::OpAll, boolean, {v2}); }
  Id both(Id x, Id y) { return b.op(spv::OpLogicalAnd, boolean, {x, y}); }
  Id either(Id x, Id y) { return b.op(spv::OpLogicalOr, boolean, {x, y}); }
  Id isnt(Id x) { return b.op(spv::OpLogicalNot, boolean, {x}); }
  Id bit(Id cond) { return select32(cond, c(1), c(0)); }  // 1 or 0
  Id is_zero64(Id v) { return test(spv::OpIEqual, {op(spv::OpBitwiseOr, {lo(v), hi(v)}), c(0)}); }
  // SPIR-V 1.3 selects a vector by a vector of conditions: a scalar one is splatted.
  Id select(Id cond, Id x, Id y) {
    return b.op(spv::OpSelect, uvec2, {b.op(spv::OpCompositeConstruct, bvec2, {cond, cond}), x, y});
  }
  Id select32(Id cond, Id x, Id y) { return b.op(spv::OpSelect, u32, {cond, x, y}); }
  // The bits that cross between words in a shift by m < 32, given rest = 31 - m: SPIR-V
  // leaves a shift by 32 undefined, so they move in two steps, and are 0 for m = 0.
  // w's low m bits at the top of a word, (w << 1) << rest; w's high m bits at the bottom,
  // (w >> 1) >> rest.
  Id low_bits_up(Id w, Id rest) { return op(spv::OpShiftLeftLogical, {op(spv::OpShiftLeftLogical, {w, c(1)}), rest}); }
  Id high_bits_down(Id w, Id rest) { return op(spv::OpShiftRightLogical, {op(spv::OpShiftRightLogical, {w, c(1)}), rest}); }

 private:
  Id word(Id v, uint32_t i) {
    if (auto it = made_.find(v); it != made_.end()) return i ? it->second.second : it->second.first;
    return b.op(spv::OpCompositeExtract, u32, {v}, {i});
  }
  std::unordered_map<Id, std::pair<Id, Id>> made_;
};

}  // namespace nxv::codegen
