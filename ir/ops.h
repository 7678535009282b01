// The op table: which family each IR op belongs to. The verifier, the passes, the
// interpreter and the code generator all classify ops through it, so an op added
// here is known everywhere at once.
#pragma once

#include <string>

namespace nxv::ir {

enum class OpFamily {
  Source,      // parameter constant tensor iota eye
  FloatUnary,  // exp log ... erf_inv: result to_floating(x)
  Unary,       // negate abs sign floor ceil round bitwise_not population_count count_leading_zeros
  Predicate,   // is_nan is_infinity logical_not: result u8
  Binary,      // add ... right_shift: result merge(a, b) (divide/atan2: to_floating)
  Compare,     // equal ... logical_xor: result u8
  Select,      // select clip
  Convert,     // as_type bitcast
  IndexMap,    // reshape squeeze broadcast transpose reverse slice pad concatenate stack
  PutSlice,
  Reduction,   // sum product reduce_max reduce_min all any
  ArgReduction,
  Dot,
  Tuple,       // elem
  Control,     // while cond
  Metadata,
  Kernel,
  Repeat,      // inside kernel bodies: a step region run attrs.count times over carried values
  Unknown,
};

OpFamily op_family(const std::string& op);
inline bool is_known_op(const std::string& op) { return op_family(op) != OpFamily::Unknown; }
// Computed per element from the same element of its operands (with broadcasting).
bool is_elementwise(OpFamily f);

}  // namespace nxv::ir
