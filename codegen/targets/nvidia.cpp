// NVIDIA: warps of 32; 256-invocation groups keep occupancy high, and a
// bounded grid with a stride loop avoids tail groups on very large tensors.
#include "codegen/targets/launch.h"

namespace nxv::codegen {

LaunchConfig launch_nvidia(const DeviceCaps& caps, int64_t items) { return cover(caps, items, 256, 65535); }

}  // namespace nxv::codegen
