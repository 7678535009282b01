// Mesa lavapipe: invocations of a workgroup run as SIMD lanes of one CPU
// thread and workgroups are spread over a few threads, so a few large groups
// with a grid-stride loop beat many small ones (less per-group overhead).
#include "codegen/targets/launch.h"

namespace nxv::codegen {

LaunchConfig launch_lavapipe(const DeviceCaps& caps, int64_t items) { return cover(caps, items, 64, 64); }

}  // namespace nxv::codegen
