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
// a storage-buffer load as a loop over the SIMD lanes that bounds-checks each component and
// inserts it into the result through the stack (a store-forwarding stall per lane and
// component); sampled with perf (the JIT code disassembled with gdb), those loops took about
// three quarters of the kernel's time, the f64 multiply-adds and their spills the rest. So
// the kernel loads as little as it can: the lanes of a subgroup (a SIMD row) share a row of
// the first operand by subgroup broadcasts, and f32 operands are read four elements per load
// as two 64-bit components (pairs), a component costing the same at 32 or 64 bits. f32
// 1024^2 on 2 cores, CPU seconds per product (2026-11-26): 64x64 tiles of 8x8 2.58; with
// broadcasts 128x32 of 16x4 1.40; with vectors of 4, 128x64 of 16x8 1.22 (256x64 of 32x8
// 1.24); with pairs 0.63-0.71 against 0.90-0.93 on a quiet machine (wall 320-352 ms against
// 458-482, 6.1-6.7 GFLOP/s), median 0.94 against 1.27 in 8 alternating runs on a loaded one.
// Not kept: 4 pairs (runs of 8, k-steps of 64) doubled the shader, and LLVM's
// compile time, for no clear gain; 256x32 of 32x4 in pairs measured 1.6-1.8 (loaded); terms ordered
// by register blocks of 2x2 or 4x2 accumulators took LLVM minutes to compile; f32
// accumulators (f64 gives Nx.BinaryBackend's digits) saved about 10% more, within the noise.
// f64 1024^2: 2.31, 1.35 with broadcasts.
MatmulTiles matmul_tiles_lavapipe(const DeviceCaps& caps, const MatmulShape& s) {
  if (!matmul_worth_tiling(s)) return {};
  MatmulTiles t;
  if (s.texel_operands && s.batch * std::max(s.m, s.n) * s.k / kTexelElements <= int64_t(caps.max_texel_buffer_elements)) {
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
