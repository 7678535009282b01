// NVIDIA: warps of 32; 256-invocation groups keep occupancy high, and a
// bounded grid with a stride loop avoids tail groups on very large tensors. Large
// elementwise kernels compute 4 positions per iteration: one load in flight per
// invocation does not cover HBM latency (x + y reached 54% of a copy's bandwidth).
#include "codegen/targets/launch.h"

namespace nxv::codegen {

LaunchConfig launch_nvidia(const DeviceCaps& caps, const KernelShape& k) {
  if (k.items < 16384 && k.reduction >= 256) return cooperate(caps, k.items, 256, 65535);
  return cover(caps, k.items, 256, 65535, k.items >= (1 << 20) && k.reduction == 0 ? 4 : 1);
}

}  // namespace nxv::codegen
