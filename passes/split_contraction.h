// A dot's contraction cut into parts that a sum adds: split-reduction (long contractions into
// few outputs) and split-dot (mid-size products with too few output tiles) share it.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace nxv::passes {

// The type of the partial results of a split `op` into t: f16 and bf16 sums and products
// accumulate in f32 on every device, f32 ones and dots in f64 where the target does so
// (f32_in_f64). f16 and bf16 dots keep their type, which the matrix units take (each part
// then rounds once).
ir::DType partial_type(const std::string& op, ir::DType t, bool f32_in_f64);

// The dot's contraction and batch axes as its attrs list them (absent: none).
struct ContractionAxes {
  std::vector<int64_t> c1, c2, b1, b2;
  static ContractionAxes of(const ir::Node& dot);
};

// Appends to `out` the dot `n` with its contracted axes c1[pick] and c2[pick] cut into
// `parts` chunks each, the chunks a new batch axis after the dot's own, then, under n's id,
// the sum of the partial products over that axis. A whole axis (parts == its extent) becomes
// the batch axis itself; an axis that `parts` does not divide is first padded with zeros to
// a multiple of it: a zero term adds nothing, exactly, to an accumulator that starts at +0.
// Partials are of partial_type("dot", ...): widened ones are converted back after the sum.
void split_contraction(const ir::Graph& g, const ir::Node& n, size_t pick, int64_t parts, bool f32_in_f64,
                       ir::NodeId& next, std::vector<ir::Node>& out);

}  // namespace nxv::passes
