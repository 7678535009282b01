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
// coroutine): each invocation computes 8 x 8 outputs from its own loads, which the CPU's
// caches share between the lanes of a group. f32 1024^2 on 2 cores (2026-11-26, a loaded
// machine): one output per invocation 29.9 s, 32x32 tiles of 4x4 6.2 s, 64x64 of 8x8 1.2 s
// (wider groups or k-steps of 1 to 8 within 5%).
MatmulTiles matmul_tiles_lavapipe(const DeviceCaps&, const MatmulShape& s) {
  if (!matmul_worth_tiling(s)) return {};
  return MatmulTiles{64, 64, 4, 8, 8, false};
}

}  // namespace nxv::codegen
