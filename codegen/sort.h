// Sort kernels (codegen/emit_sort.cpp): a kernel whose one result is an argsort or an
// argsort_merge (passes/split-sort's stages) runs comparators of a bitonic sorting network
// over each line along the axis, the line padded logically to a power of two. The network's
// comparators all put the element that goes first at the lower position, so the padding,
// greater than every element, never moves: comparators that reach past the line are skipped.
// Elements compare by Nx's order (NaN last ascending, first descending; floats as integers
// of their bits, so that a device that flushes subnormals in float comparisons still orders
// them), then by position, so the network gives the stable order.
#pragma once

#include <cstdint>
#include <string>

#include "codegen/emitter.h"
#include "codegen/targets/launch.h"

namespace nxv::codegen {

// What a sort kernel runs: for merge sizes `merge_from` to `merge_to` (doubling), comparator
// strides from `first_stride` (for merge_from; merge / 2 after it) down to `last_stride`,
// over `lines` lines of `length` elements, consecutive ones `inner` apart in memory. In
// shared memory (group > 0): a workgroup loads aligned groups of `group` elements (every
// comparator's partner lies in its own group), `tile / group` of them at once (short lines
// share a workgroup), runs them all and stores the order; else one comparator step
// (first_stride == last_stride) across the line in global memory.
struct SortStage {
  int64_t lines = 0, length = 0, inner = 1, padded = 1;
  int64_t merge_from = 2, merge_to = 2, first_stride = 1, last_stride = 1, group = 0, tile = 0;
  bool desc = false, from_order = false;  // from_order: argsort_merge, reading the order so far
  int key_bytes = 4;
  int64_t groups_per_line() const { return group ? (length + group - 1) / group : 0; }
  int64_t groups() const { return lines * groups_per_line(); }
  // Throws IrError naming the node when its attrs describe no stage the device can run (a
  // line longer than shared memory holds that split-sort did not split).
  static SortStage of(const ir::Graph& body, const ir::Node& sort, const DeviceCaps& caps);
};

// The longest group of elements of `bytes` each a workgroup sorts in shared memory: a power
// of two whose keys and positions fit the device's shared memory, at most 16 elements per
// invocation of its widest workgroup.
int64_t sort_block(const DeviceCaps& caps, int bytes);
// KernelBounds::sort_block for the device (codegen/targets: kernel_bounds).
void set_sort_bounds(const DeviceCaps& caps, passes::KernelBounds& bounds);

// The body's argsort or argsort_merge when the kernel is a sort kernel.
const ir::Node* sort_root(const ir::Node& kernel, const ir::Graph& body);

// In shared memory: a workgroup of up to tile / 2 invocations per tile; a global step: an
// invocation per comparator.
LaunchConfig launch_sort(const DeviceCaps& caps, const SortStage& s);
// The position loop's count: the tiles of all lines' groups, or the comparators of a global step.
int64_t sort_positions(const SortStage& s);

// Emits main's body for launch_sort's launch. Adds the shared memory it declares to *shared_bytes.
void emit_sort_kernel(const ir::Graph& body, const ir::Node& sort, Emitter& e, const BufferRef& output,
                      const LaunchConfig& launch, uint64_t* shared_bytes);

// "sort 4 lines of 1024, ..." for KernelBinary::launch.
std::string describe_sort(const SortStage& s, const LaunchConfig& launch);

}  // namespace nxv::codegen
