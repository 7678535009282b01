// Workgroup size and group count for a kernel's grid-stride loop, chosen per
// vendor from DeviceCaps only (one file per vendor in this folder).
#pragma once

#include <cstdint>

#include "codegen/target.h"

namespace nxv::codegen {

struct LaunchConfig {
  uint32_t workgroup_size;  // local_size_x
  uint32_t group_count;     // dispatch x; the kernel loops when items exceed what one pass covers
  // One output element per workgroup at a time, its reductions split over the
  // invocations (for few outputs with long reductions). workgroup_size is then a power of two.
  bool cooperative = false;
  // Plain launches: positions each invocation computes per loop iteration (see kernel.cpp).
  uint32_t unroll = 1;
  // Plain launches: consecutive elements per position, read and written as one vector
  // (kernel.cpp); 1, or a power of two that divides the items.
  uint32_t vector_width = 1;
  // Each workgroup computes kTransposeTile x kTransposeTile output tiles, staging transposed
  // arguments through shared memory (kernel.cpp). workgroup_size divides the tile.
  bool tiles = false;
};

constexpr int64_t kTransposeTile = 32;

struct KernelShape {
  int64_t items;      // output elements the kernel's outer loop covers
  int64_t reduction;  // the longest reduction (or dot contraction) in the body; 0 if none
  // The widest element of the buffers the kernel would access as vectors; 0 where it
  // cannot compute consecutive elements together (kernel.cpp decides).
  int64_t vector_element_bytes = 0;
};

LaunchConfig choose_launch(const DeviceCaps& caps, const KernelShape& k);

// For `tiles` transposed tiles: one workgroup per tile up to the device's group limit.
LaunchConfig launch_tiles(const DeviceCaps& caps, int64_t tiles);

// Whether kernels that transpose the innermost axis should visit the output in tiles
// (codegen/kernel.cpp): a GPU's caches then coalesce the reads; a CPU's do not need it.
bool tile_transposes(const DeviceCaps& caps);

// Whether f32 sums, products and dot products accumulate in f64, and f32 transcendental
// functions (exp, log, sin, pow, ...) are computed in f64, each rounded once, as
// Nx.BinaryBackend computes them (so results match the evaluator's to the last digit):
// where f64 arithmetic costs about what f32 does, a CPU (lavapipe). A GPU's f64 is a
// fraction of its f32 rate, which a dot product would pay in full.
bool computes_f32_in_f64(const DeviceCaps& caps);

// Whether a 32-bit float division takes one correction by its exact residual (a fused
// multiply-add) to be correctly rounded: Vulkan allows OpFDiv 2.5 ulp and GPUs use it
// (NVIDIA's x / x gave 0.99999994). Not on lavapipe, whose division is the CPU's, already
// correctly rounded, and whose Fma need not be fused.
bool corrects_f32_division(const DeviceCaps& caps);

// The size of a serial loop's one workgroup (codegen/serial_loop.h): one subgroup (a warp,
// a wave, a SIMD row of lavapipe's lanes).
uint32_t serial_workgroup_size(const DeviceCaps& caps);
// Whether the barrier after each stage of a serial loop is a subgroup's, not the
// workgroup's (the same invocations): on lavapipe a workgroup barrier makes LLVM compile the
// shader as a coroutine (minutes over a large serial loop, building the coroutine frame)
// and switch coroutines at each barrier. Elsewhere the workgroup's: a driver may run a
// compute shader in subgroups smaller than the size it reports.
bool serial_subgroup_barriers(const DeviceCaps& caps);
// The largest serial loop (in SPIR-V words) worth compiling for the device; 0: any. The
// driver's compile time grows faster than the module (see launch.cpp).
uint64_t serial_loop_max_words(const DeviceCaps& caps);

// Per-vendor choices, dispatched on caps.vendor_id by choose_launch.
LaunchConfig launch_generic(const DeviceCaps& caps, const KernelShape& k);
LaunchConfig launch_lavapipe(const DeviceCaps& caps, const KernelShape& k);
LaunchConfig launch_nvidia(const DeviceCaps& caps, const KernelShape& k);
LaunchConfig launch_amd(const DeviceCaps& caps, const KernelShape& k);

// One invocation per `unroll` * `lanes` items: enough groups to cover them, capped at max_groups.
LaunchConfig cover(const DeviceCaps& caps, int64_t items, uint32_t workgroup_size, uint32_t max_groups,
                   uint32_t unroll = 1, uint32_t lanes = 1);
// Elements per vector access of at most `bytes`: the largest power of two up to 4 (SPIR-V's
// widest vector) that divides the items; 1 where the kernel cannot be vectorised.
uint32_t vector_lanes(const KernelShape& k, uint32_t bytes);
// One workgroup per item: the largest power of two <= workgroup_size the device allows.
LaunchConfig cooperate(const DeviceCaps& caps, int64_t items, uint32_t workgroup_size, uint32_t max_groups);

}  // namespace nxv::codegen
