// Mesa lavapipe: invocations of a workgroup run as SIMD lanes of one CPU
// thread and workgroups are spread over a few threads, so a few large groups
// with a grid-stride loop beat many small ones (less per-group overhead).
#include "codegen/targets/launch.h"

#include <algorithm>

namespace nxv::codegen {

LaunchConfig launch_lavapipe(const DeviceCaps& caps, const KernelShape& k) {
  // A workgroup is SIMD lanes on one thread: cooperating buys vector width for a few long reductions.
  if (k.items < 16 && k.reduction >= 1024) return cooperate(caps, k.items, 64, 64);
  // 4-wide vectors of 32-bit elements: 1M-element f32 x + y 1.9 -> 1.2 ms, the f32 chain
  // 3.0 -> 2.1 ms. Pairs of f64 made x + y over 2x slower (2.7 -> 5.6 ms): 64-bit stays scalar.
  const uint32_t lanes = k.vector_element_bytes == 4 ? vector_lanes(k, 16) : 1;
  return cover(caps, k.items, 64, 64, 1, lanes);
}

// No shared memory (a workgroup barrier makes lavapipe's LLVM build the shader as a
// coroutine): each invocation computes a register tile from its own loads. Mesa 22.3 compiles
// a storage-buffer load whose address NIR cannot prove uniform (a k-loop's never is) as a
// loop over the SIMD lanes that bounds-checks each component and inserts it into the result
// through the stack (a store-forwarding stall per lane and component): sampled with perf
// (the JIT code disassembled with gdb), those loops took three quarters of a storage-buffer
// kernel's time. A texel fetch from a uniform texel buffer compiles to one 16-byte load per
// lane, a transpose and a bounds mask, no branch: so f32 and f64 graph inputs laid out for it
// (MatmulShape::texel_run) are read as R32G32B32A32_UINT texels, four f32 or two f64 each,
// every lane its own rows and columns. A subgroup broadcast (OpGroupNonUniformBroadcast)
// compiles to a loop over the lanes for the first active one and an extract through the
// stack, dearer than the fetch it saves, and a tile of 16x8 f64 accumulators unrolled over
// k-steps of 32 is ~300 KB of code, past the instruction caches; small tiles in short steps
// keep the shader small. f32 1024^2 on 2 cores (2026-11-26), CPU seconds per product and
// median wall on a quiet machine: storage buffers, 64x64 tiles of 8x8 2.58; with broadcasts
// 128x32 of 16x4 1.40; with vectors of 4, 128x64 of 16x8 1.22; read as 64-bit pairs
// (two 64-bit components per four elements) 0.70-0.83, 336-366 ms; texels, 64x32 of 8x4 in
// k-steps of 16, 0.26-0.29, 135-145 ms (15 GFLOP/s). Texels by register tile and k-step, in
// alternating runs on a loaded machine: 16x8 with broadcasts, k 32, 0.47-0.93; direct 16x8
// k 32 0.53, k 16 0.47; 8x4 k 16 0.20-0.61, k 4 0.22-0.45; 4x4 k 4-16 0.27-0.50; 8x8 and
// 16x4 0.47-0.66; 2x4 0.45. f64 1024^2 as texels, loaded: 0.48-0.50 against 1.15-1.22 with
// broadcasts. Transposed operands take the same kernel where they are graph inputs laid out
// in whole texels (or transposes of them, read in place): a second operand [N][K] (x·wᵀ,
// q·kᵀ, dy·wᵀ) in runs along k, as the first's; a first [K][M] (xᵀ·dy) in runs of a texel's
// rows at one k, an invocation's 8 rows two runs of 4 (f64: four of 2), those of 4 (2)
// k-steps fetched together: the same fetches per k-step. 1024^2 CPU s per product against the
// broadcast kernel, alternating, load 1.3-10: f32 x·wᵀ 0.35-0.51 against 0.90-1.38, xᵀ·w
// 0.31-0.35 against 0.73-0.90, both 0.40-0.46 against 0.95-1.05; f64 x·wᵀ 0.49-0.57 against
// 1.08-1.43, xᵀ·w 0.71-0.87 against 1.17-1.24, both 0.53-0.62 against 1.17-1.35; attention's
// q·kᵀ (16x512x64x512) f32 0.14-0.20 against 0.37-0.56, f64 0.17-0.28 against 0.33-0.47; an
// MLP training step (784-1024-1024-10, batch 256) f32 0.53-0.58 against 0.86-0.87, f64
// 0.75-0.87 against 1.34-1.37; Nx.dot(x, Nx.transpose(w)) of 256x784 by 1024x784 f32 0.07
// against 0.26. Fetching xᵀ·w's rows a k-step at a time: f32 0.35-0.47 against 0.29-0.38
// together, f64 0.65-0.99 against 0.57-0.76. Tiles of 128x32 in 16x4, 32x64 in 4x8 and
// k-steps of 8 did no better for xᵀ·w. Beyond maxTexelBufferElements, and for operands
// gathered, computed in the kernel, or not whole texels along the axis read (a row or
// contraction not a multiple of the run), the broadcast kernels, f32 read as pairs. Not kept
// there: 4 pairs (runs of 8, k-steps of 64) doubled the shader, and LLVM's compile time, for
// no clear gain; 256x32 of 32x4 in pairs measured 1.6-1.8 (loaded); terms ordered by register
// blocks of 2x2 or 4x2 accumulators took LLVM minutes to compile; f32 accumulators (f64 gives
// Nx.BinaryBackend's digits) saved about 10%, within the noise. f64 1024^2 (quiet): 2.31,
// 1.35 with broadcasts.
// LLVM compiles each kernel when its pipeline is created, in time that grows faster than
// the kernel's size: the code bound keeps a cold compile of one kernel near a second.
passes::KernelBounds kernel_bounds_lavapipe(const DeviceCaps& caps) {
  passes::KernelBounds b = kernel_bounds_generic(caps);
  b.max_code = 20000;
  return b;
}

MatmulTiles matmul_tiles_lavapipe(const DeviceCaps& caps, const MatmulShape& s) {
  if (!matmul_worth_tiling(s)) return {};
  MatmulTiles t;
  if (s.texel_run && s.batch * std::max(s.m, s.n) * s.k / s.texel_run <= int64_t(caps.max_texel_buffer_elements)) {
    t.texels = true;
    t.m = 64, t.n = 32, t.k = 16, t.thread_m = 8, t.thread_n = 4;
    return t;
  }
  const uint32_t lanes = caps.subgroup_size;
  if (!caps.subgroup_ballot || lanes < 2 || lanes > 16) {
    t.m = t.n = 64, t.k = 4, t.thread_m = t.thread_n = 8;
    return t;
  }
  t.pairs = s.f32_operands && caps.int64;
  const uint32_t vector = t.pairs ? 2 : s.f32_operands ? 4 : 1, thread_n = s.f32_operands ? 8 : 4;
  t.m = 128, t.n = lanes * thread_n, t.k = lanes * vector * (t.pairs ? 2 : 1), t.thread_m = 16, t.thread_n = thread_n;
  t.broadcast = true;
  t.vector = vector;
  return t;
}

}  // namespace nxv::codegen
