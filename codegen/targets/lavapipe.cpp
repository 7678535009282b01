// Mesa lavapipe: invocations of a workgroup run as SIMD lanes of one CPU
// thread and workgroups are spread over a few threads, so a few large groups
// with a grid-stride loop beat many small ones (less per-group overhead).
#include "codegen/targets/launch.h"

#include <algorithm>

namespace nxv::codegen {

LaunchConfig launch_lavapipe(const DeviceCaps& caps, const KernelShape& k) {
  // A workgroup is SIMD lanes on one thread: cooperating buys vector width for a few long reductions.
  if (k.items < 16 && k.reduction >= 1024) return cooperate(caps, k.items, 64, 64);
  // 4-wide vectors of 32-bit elements; 64-bit pairs were slower, so 64-bit stays scalar
  // (docs/tuning.md, "lavapipe").
  const uint32_t lanes = k.vector_element_bytes == 4 ? vector_lanes(k, 16) : 1;
  return cover(caps, k.items, 64, 64, 1, lanes);
}

// No shared memory (a workgroup barrier makes lavapipe's LLVM build the shader as a
// coroutine): each invocation computes a register tile from its own loads. Graph inputs laid
// out in whole texels are read through a uniform texel buffer, one 16-byte load per lane
// (Mesa 22.3 compiles a storage-buffer load at an address it cannot prove uniform as a loop
// over the lanes); other operands go through subgroup broadcasts, f32 read as pairs. Small
// tiles in short k-steps keep the shader small: LLVM's compile time and the instruction
// caches, not arithmetic, bound large ones. Measurements: docs/tuning.md, "lavapipe".
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
