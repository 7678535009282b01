// Mesa lavapipe: invocations of a workgroup run as SIMD lanes of one CPU
// thread and workgroups are spread over a few threads, so a few large groups
// with a grid-stride loop beat many small ones (less per-group overhead).
#include "codegen/targets/launch.h"

namespace nxv::codegen {

LaunchConfig launch_lavapipe(const DeviceCaps& caps, const KernelShape& k) {
  // A workgroup is SIMD lanes on one thread: cooperating buys vector width for a few long reductions.
  if (k.items < 16 && k.reduction >= 1024) return cooperate(caps, k.items, 64, 64);
  return cover(caps, k.items, 64, 64);
}

}  // namespace nxv::codegen
