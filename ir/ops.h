// The op table: which family each IR op belongs to. The verifier, the passes, the
// interpreter and the code generator all classify ops through it, so an op added
// here is known everywhere at once.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

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
  Gather,      // gather: elementwise in the output, reading the source where the indices point
  Scatter,     // indexed_add indexed_put: each output element folds the updates aimed at it
  Reduction,   // sum product reduce_max reduce_min all any
  ArgReduction,
  Scan,        // cumulative_sum cumulative_product cumulative_min cumulative_max: attrs axis, reverse
  Sort,        // argsort argsort_merge: attrs axis, direction (stages of a bitonic network after split-sort)
  Dot,
  Attention,   // attention: softmax(q·kᵀ, scaled, biased, masked) · v (ir/attention.h)
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
// An index map whose every element is one element of its first operand, read once (reshape,
// squeeze, broadcast, transpose, reverse, slice; not pad, concatenate or stack).
bool reads_one_element(const std::string& op);

// The Gather and Scatter ops' attrs.axes (Nx's :axes option): the axes of a rank-`rank`
// operand that the `depth` components of an index address, increasing; the leading `depth`
// axes when absent. Throws IrError naming the node when malformed.
struct IndexedAxes {
  std::vector<int64_t> indexed;
  std::vector<int64_t> rest;  // the other axes, in order: a gathered or updated window's
};
IndexedAxes indexed_axes(const Node& n, size_t rank, int64_t depth);
// A Reduction's attrs.axes or an ArgReduction's attrs.axis (also a Dot's contract axes): an
// axis, a list of distinct axes, or absent/null for every axis of the operand x, returned
// increasing. Throws IrError naming the node when an axis is out of range or repeated.
std::vector<int64_t> reduced_axes(const Node& n, const char* key, const TensorType& x);
// An indexed_add/put in the sorted form (attrs.sorted, passes/sort-indexed): its operands
// [target, indices, updates, sorted_key, perm] apply the update rows perm[0], perm[1], ...
// in that order, sorted_key[p] the linear position of row perm[p] on the indexed axes.
inline bool is_sorted_indexed(const Node& n) { return n.attrs.value("sorted", false); }

}  // namespace nxv::ir
