// NVIDIA: warps of 32; 256-invocation groups keep occupancy high, and a
// bounded grid with a stride loop avoids tail groups on very large tensors. Large
// elementwise kernels compute 4 elements per iteration: one load in flight per
// invocation does not cover HBM latency (x + y reached 54% of a copy's bandwidth).
// Where the kernel allows, those are 16-byte vector accesses (4 f32, 2 f64, as XLA
// vectorises): with 4-byte ones f32 x + y reached 59% of copy, index math and one load
// instruction per element the suspects (vectors not yet measured on an H100).
#include "codegen/targets/launch.h"

#include <algorithm>

namespace nxv::codegen {

LaunchConfig launch_nvidia(const DeviceCaps& caps, const KernelShape& k) {
  // Rows of 4096 or more take 512-wide groups: an 8192-wide f64 softmax row then holds 16
  // positions per invocation, few enough registers for two groups per SM, which overlap one
  // group's barriers with the other's loads (H100, 8192x8192 softmax, ms: f64 0.605 at 256
  // wide, 0.478 at 1024, 0.377 at 512 (the copy's bandwidth); f32 0.186, 0.198, 0.186).
  if (k.items < 16384 && k.reduction >= 256) return cooperate(caps, k.items, k.reduction >= 4096 ? 512 : 256, 65535);
  const uint32_t lanes = vector_lanes(k, 16);
  const uint32_t unroll = k.items >= (1 << 20) && k.reduction == 0 ? std::max<uint32_t>(1, 4 / lanes) : 1;
  return cover(caps, k.items, 256, 65535, unroll, lanes);
}

// 64 x 64 output tiles of 4 x 4 per invocation (256 invocations), operand slices staged
// through shared memory.
MatmulTiles matmul_tiles_nvidia(const DeviceCaps& caps, const MatmulShape& s) {
  return matmul_worth_tiling(s) ? staged_tiles(caps, s, 64, 64, 4) : MatmulTiles{};
}

}  // namespace nxv::codegen
