// Mesa lavapipe: invocations of a workgroup run as SIMD lanes of one CPU
// thread and workgroups are spread over a few threads, so a few large groups
// with a grid-stride loop beat many small ones (less per-group overhead).
#include "codegen/targets/launch.h"

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
// coroutine): each invocation computes a register tile from its own loads. A storage-buffer
// load is a loop over the SIMD lanes with a bounds check and a spill per lane, and costs far
// more than the arithmetic, so the kernel loads as little as it can: the lanes of a subgroup
// (a SIMD row) share a row of the first operand by subgroup broadcasts, and f32 operands are
// read four elements per load. f32 1024^2 on 2 cores, CPU seconds per product (2026-11-26):
// 64x64 tiles of 8x8 2.58; with broadcasts 128x32 of 16x4 1.40; and vectors of 4 128x64 of
// 16x8 1.22 (256x64 of 32x8 1.24). f64 1024^2: 2.31, 1.35 with broadcasts.
MatmulTiles matmul_tiles_lavapipe(const DeviceCaps& caps, const MatmulShape& s) {
  if (!matmul_worth_tiling(s)) return {};
  const uint32_t lanes = caps.subgroup_size;
  MatmulTiles t;
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
