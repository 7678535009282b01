// Unknown vendors, and the device-independent caps used for stable lit output.
#include "codegen/targets/launch.h"

namespace nxv::codegen {

DeviceCaps generic_caps() {
  DeviceCaps c;
  c.name = "generic";
  c.api_version = (1u << 22) | (1u << 12);  // Vulkan 1.1
  c.float64 = c.int64 = c.int16 = c.int8 = c.float16 = true;
  c.storage_buffer_8bit = c.storage_buffer_16bit = true;
  c.subgroup_size = 32;
  return c;
}

LaunchConfig launch_generic(const DeviceCaps& caps, int64_t items) { return cover(caps, items, 64, 65535); }

}  // namespace nxv::codegen
