// The fusion cost model: how often the elemental emitter evaluates each node of a fused
// region per output element, and the work, code size and loop steps that add up to.
#pragma once

#include <map>
#include <set>
#include <vector>

#include "ir/ir.h"

namespace nxv::passes {

// How big one fused kernel may grow before fuse splits it. The numbers are per target
// (codegen/targets: kernel_bounds); these defaults are the device-independent ones that
// lit tests and callers without a device use.
struct KernelBounds {
  // Work per output element may reach this multiple of the work a kernel needs (every value
  // it evaluates computed once where it is needed, see Estimate::needed).
  double max_duplication = 8;
  // Below this much work per element a kernel is never split for duplication: a dispatch
  // and a round trip through memory cost more than a few dozen instructions recomputed.
  double min_split_work = 64;
  // A producer inlined into several kernels (of different shapes) is computed in each; past
  // this much work per element in its inlined cone it gets a buffer of its own instead.
  double max_recompute_work = 128;
  // Instructions the emitter writes for one kernel (Estimate::code); compile time grows
  // with it, faster than linearly on some drivers. 0: no bound.
  double max_code = 0;
  // How many instructions one instruction on f64 / s64 / u64 values becomes where the
  // target computes them in software (codegen/soft64.h; 135 for an f64 add, 179 for a
  // multiply or 352 where it branches to its common case, against a handful native; a few
  // for 64-bit integer steps), as an average per instruction: max_code counts those
  // kernels' code so.
  double emulated_f64_code = 1, emulated_i64_code = 1;
  // Loop steps one output element may take in the math library's loops (Estimate::loop_steps);
  // 0: no bound. Where the driver ends an invocation's loops after a number of steps, a
  // kernel whose one element needs more cannot be launched at all.
  double max_loop_steps = 0;
  // A scan along an axis longer than this is split in blocks of this many elements
  // (passes/split-scan), each rescanned from its carry as one line of a scan kernel. Per
  // target, from the device's limits (codegen/scan.h: set_scan_bounds).
  int64_t scan_block = 1024;
  // Where a workgroup scans each block, the most blocks of a line whose carries the rescan
  // folds itself from the blocks' totals (each workgroup reading the totals before its
  // own, a cost growing with their square, read from cache), sparing the totals' own scan
  // and the dispatch between. 0: the totals are scanned (codegen/scan.h: set_scan_bounds).
  int64_t scan_fold_totals = 0;
  // The longest line of 4-byte elements a workgroup sorts in shared memory (half that of
  // 8-byte ones); passes/split-sort merges longer lines across dispatches. Per target, from
  // the device's limits (codegen/sort.h: set_sort_bounds).
  int64_t sort_block = 1024;
  // The widest row of q, k or v (head dim times the bytes of the type attention computes
  // in: f32 for f16, bf16 and f32; f64 for f64) that the fused attention kernel holds in
  // shared memory; passes/fuse-attention leaves wider attention unfused. 0: never fused.
  // Per target, from the device's shared memory (codegen/attention.h: set_attention_bounds).
  int64_t attention_row_bytes = 0;
  // The widest such row the kernel holds at all, where the target also runs it without
  // forming it (lavapipe): an `attention` node given on input with wider rows is unfused.
  // 0: not known (no device), the node kept.
  int64_t attention_kernel_row_bytes = 0;
  // f32 attention with no mask (causal or not) and no bias, over this many keys or more, or
  // whose two products take separate_attention_work multiply-adds or more, stays unfused
  // where its scores take at most separate_attention_bytes: the target's products and row
  // softmax outrun its fused kernel there, at the cost of the scores in memory. 0: always
  // fused. Per target (codegen/targets: kernel_bounds).
  int64_t separate_attention_keys = 0, separate_attention_work = 0, separate_attention_bytes = 0;

  // Storage buffers one kernel may bind (its inputs and results): fuse and narrow-operands
  // keep every kernel within this. The device's maxPerStageDescriptorStorageBuffers where
  // that is smaller (kernel_bounds); the default leaves room under Metal's 31 (MoltenVK).
  size_t max_bindings = 30;

  // passes/split-dot: a dot of one of dot_split_types whose output has fewer than
  // dot_min_tiles tiles of dot_tile x dot_tile (the target's tiles for large products; fewer
  // than its compute units leave some idle) is computed as parts of its contraction, which a
  // sum then adds: enough parts for dot_fill_tiles tiles (the compute units times the
  // workgroups of such tiles each runs at once), each contracting dot_min_part or more terms.
  // The count is chosen by the waves of dot_wave_tiles tiles (those the device runs at once)
  // its parts take, each wave costing its terms per part plus dot_part_overhead terms, among
  // counts that bring the tiles to dot_min_tiles. A dot of one of dot_whole_types whose
  // outputs make dot_min_tiles tiles of dot_whole_tile outputs or more, and which reads its
  // operands in place (not a convolution's gathered windows), stays whole: the target takes
  // smaller tiles of that size for it, and they fill the device unsplit.
  // dot_tile 0: dots stay whole (targets without the count of their compute units). Per
  // target (codegen/targets: kernel_bounds).
  int64_t dot_tile = 0, dot_min_tiles = 0, dot_fill_tiles = 0, dot_min_part = 256;
  int64_t dot_wave_tiles = 1, dot_part_overhead = 0, dot_whole_tile = 0;
  std::set<ir::DType> dot_split_types, dot_whole_types;

  // A product of one of cooperative_epilogue_types (which the target computes on cooperative
  // matrices, whose kernels unroll the epilogue over every accumulator an invocation holds)
  // keeps an elementwise epilogue only up to this much work per element (Estimate::work,
  // the product itself left out); past it the product gets a buffer and the epilogue a
  // kernel of its own. 0: no bound. Per target (codegen/targets: kernel_bounds).
  double max_cooperative_epilogue_work = 0;
  std::set<ir::DType> cooperative_epilogue_types;

  // A pad of edges alone (a convolution's) that one product of one of pad_product_types,
  // of pad_product_work multiply-adds or more and not cut into parts, reads through index
  // maps gets a kernel of its own, so that the product's gather reads each tap without
  // testing it against the padding: where these are set, the copy costs less than the tests.
  // Per target (codegen/targets: kernel_bounds).
  std::set<ir::DType> pad_product_types;
  int64_t pad_product_work = 0;

  // Not a bound: the target's kernels accumulate f32 sums, products and dots in f64
  // (codegen's computes_f32_in_f64), so split-reduction keeps f64 partial results for them.
  bool f32_accumulates_in_f64 = false;
};

struct Estimate {
  // Evaluations of each member per output element (recomputation included) and how many
  // copies of its code the emitter writes.
  std::map<ir::NodeId, double> evaluations, copies;
  double work = 0;        // instructions executed per output element, recomputation included
  double needed = 0;      // the same with each member evaluated only where its value is used
  double code = 0;        // instructions emitted (a loop's body once)
  double code_f64 = 0, code_i64 = 0;  // the part of `code` of members with f64 / s64 or u64 results
  double loop_steps = 0;  // math-library loop steps per output element (reduction loops aside)
  // Elements one invocation takes in turn along a line where the root is a scan (its axis's
  // length), each with its prologue's loop steps; 1 otherwise.
  double walk = 1;
  double duplication() const { return needed > 0 ? work / needed : 1; }
};

// Math-library loop steps one invocation takes: a scan kernel walks up to a block
// (KernelBounds::scan_block) of its line, evaluating the prologue at each element.
double invocation_loop_steps(const Estimate& e, const KernelBounds& bounds);

// What fuse lets a dot or attention compute in its prologue: moving or converting elements.
// Its operands' elements are read once per output tile (more often by a dot too small to
// tile, once per output element), so arithmetic there is recomputed; it gets a buffer instead.
bool cheap_prologue(const ir::Node& n);

// A concatenate's or stack's operands that are chains of index maps (through `members`) of
// one value read that value once (Emitter::select_common_source): the value, or nullptr.
const ir::Node* common_source(const ir::Node& n, const ir::Graph& g, const std::set<ir::NodeId>& members);

// The estimate for a kernel that computes `roots` (all of one shape, or reductions into
// it) from `members` (which include the roots); other nodes they read are buffers.
Estimate estimate(const ir::Graph& g, const std::set<ir::NodeId>& members, const std::vector<ir::NodeId>& roots);
// The estimate for a kernel body (its parameters are buffers), or a `kernel` node's.
Estimate estimate_body(const ir::Graph& body);
Estimate estimate_kernel(const ir::Node& kernel);

// By how much `e` passes `bounds` (the largest ratio of an estimate to its bound); at most 1
// when it fits.
double excess(const Estimate& e, const KernelBounds& bounds);

}  // namespace nxv::passes
