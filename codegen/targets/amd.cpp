// AMD: wavefronts of 64 (RDNA can run 32); 256-invocation groups are 4 waves.
#include "codegen/targets/launch.h"

namespace nxv::codegen {

LaunchConfig launch_amd(const DeviceCaps& caps, int64_t items) { return cover(caps, items, 256, 65535); }

}  // namespace nxv::codegen
