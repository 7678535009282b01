// AMD: wavefronts of 64 (RDNA can run 32); 256-invocation groups are 4 waves. Elementwise
// kernels read and write 16 bytes per access where they can, as on NVIDIA (not yet measured
// on AMD hardware).
#include "codegen/targets/launch.h"

namespace nxv::codegen {

LaunchConfig launch_amd(const DeviceCaps& caps, const KernelShape& k) {
  if (k.items < 16384 && k.reduction >= 256) return cooperate_reductions(caps, k, 256);
  if (reduces_many_rows(caps, k)) return cooperate_rows(caps, k);
  if (LaunchConfig c = segment_rows(caps, k); c.workgroup_size) return c;
  return cover(caps, k.items, 256, 65535, 1, vector_lanes(k, 16));
}

MatmulTiles matmul_tiles_amd(const DeviceCaps& caps, const MatmulShape& s) {
  return matmul_worth_tiling(s) ? staged_tiles(caps, s, 64, 64, 4) : MatmulTiles{};
}

}  // namespace nxv::codegen
