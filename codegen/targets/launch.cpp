#include "codegen/targets/launch.h"

#include <algorithm>

namespace nxv::codegen {

LaunchConfig cover(const DeviceCaps& caps, int64_t items, uint32_t workgroup_size, uint32_t max_groups,
                   uint32_t unroll, uint32_t lanes) {
  uint32_t wg = std::max<uint32_t>(1, std::min(workgroup_size, caps.max_workgroup_invocations));
  const int64_t per_group = int64_t(wg) * unroll * lanes;
  int64_t groups = (std::max<int64_t>(items, 1) + per_group - 1) / per_group;
  groups = std::min<int64_t>({groups, max_groups, caps.max_workgroup_count_x});
  LaunchConfig c{wg, uint32_t(std::max<int64_t>(groups, 1)), false, unroll};
  c.vector_width = lanes;
  return c;
}

uint32_t vector_lanes(const KernelShape& k, uint32_t bytes) {
  uint32_t lanes = 1;
  if (k.vector_element_bytes == 0 || k.items == 0) return lanes;
  while (lanes < 4 && int64_t(lanes) * 2 * k.vector_element_bytes <= bytes && k.items % (lanes * 2) == 0) lanes *= 2;
  return lanes;
}

LaunchConfig cooperate(const DeviceCaps& caps, int64_t items, uint32_t workgroup_size, uint32_t max_groups) {
  uint32_t wg = 1;
  while (wg * 2 <= std::min(workgroup_size, caps.max_workgroup_invocations)) wg *= 2;
  int64_t groups = std::min<int64_t>({std::max<int64_t>(items, 1), max_groups, caps.max_workgroup_count_x});
  return {wg, uint32_t(groups), true};
}

LaunchConfig launch_tiles(const DeviceCaps& caps, int64_t tiles) {
  uint32_t wg = 256;  // 4 elements of a 32x32 tile per invocation
  while (wg > caps.max_workgroup_invocations) wg /= 2;
  const int64_t groups = std::min<int64_t>({std::max<int64_t>(tiles, 1), 65535, caps.max_workgroup_count_x});
  LaunchConfig c{wg, uint32_t(groups), false, 1};
  c.tiles = true;
  return c;
}

// Measured on 8192x8192 f32: H100 127 -> 337 GB/s in tile order; lavapipe 1.2 -> 3.6 ms, and
// 1.4 -> 30 ms (1024x1024) with tiles staged through shared memory (its barriers are costly).
bool tile_transposes(const DeviceCaps& caps) { return caps.vendor_id != 0x10005; }

bool computes_f32_in_f64(const DeviceCaps& caps) { return caps.vendor_id == 0x10005 && caps.float64; }

LaunchConfig choose_launch(const DeviceCaps& caps, const KernelShape& k) {
  switch (caps.vendor_id) {
    case 0x10005: return launch_lavapipe(caps, k);
    case 0x10DE: return launch_nvidia(caps, k);
    case 0x1002: return launch_amd(caps, k);
    default: return launch_generic(caps, k);
  }
}

uint32_t serial_workgroup_size(const DeviceCaps& caps) {
  uint32_t wg = 0;
  switch (caps.vendor_id) {
    case 0x10005: wg = serial_workgroup_lavapipe(caps); break;
    case 0x10DE: wg = serial_workgroup_nvidia(caps); break;
    case 0x1002: wg = serial_workgroup_amd(caps); break;
    default: wg = serial_workgroup_generic(caps);
  }
  return std::max<uint32_t>(1, std::min(wg, caps.max_workgroup_invocations));
}

}  // namespace nxv::codegen
