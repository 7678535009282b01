// Workgroup size and group count for a kernel's grid-stride loop, chosen per
// vendor from DeviceCaps only (one file per vendor in this folder).
#pragma once

#include <cstdint>

#include "codegen/target.h"

namespace nxv::codegen {

struct LaunchConfig {
  uint32_t workgroup_size;  // local_size_x
  uint32_t group_count;     // dispatch x; the kernel loops when items exceed size * count
};

// `items`: the number of output elements the grid-stride loop covers.
LaunchConfig choose_launch(const DeviceCaps& caps, int64_t items);

// Per-vendor choices, dispatched on caps.vendor_id by choose_launch.
LaunchConfig launch_generic(const DeviceCaps& caps, int64_t items);
LaunchConfig launch_lavapipe(const DeviceCaps& caps, int64_t items);
LaunchConfig launch_nvidia(const DeviceCaps& caps, int64_t items);
LaunchConfig launch_amd(const DeviceCaps& caps, int64_t items);

// Enough groups to give each invocation one item, capped at max_groups.
LaunchConfig cover(const DeviceCaps& caps, int64_t items, uint32_t workgroup_size, uint32_t max_groups);

}  // namespace nxv::codegen
