// Unknown vendors, and the device-independent caps used for stable lit output.
#include "codegen/targets/launch.h"

namespace nxv::codegen {

DeviceCaps generic_caps() {
  DeviceCaps c;
  c.name = "generic";
  c.api_version = (1u << 22) | (1u << 12);  // Vulkan 1.1
  c.float64 = c.int64 = c.int16 = c.int8 = c.float16 = true;
  c.storage_buffer_8bit = c.storage_buffer_16bit = true;
  c.preserve_signed_zero_inf_nan_f32 = c.preserve_signed_zero_inf_nan_f64 = true;
  c.preserve_denorms_f32 = c.preserve_denorms_f64 = true;
  c.subgroup_size = 32;
  return c;
}

LaunchConfig launch_generic(const DeviceCaps& caps, const KernelShape& k) {
  // Fewer outputs than a GPU has lanes, each with a long reduction: let a workgroup share each one.
  if (k.items < 8192 && k.reduction >= 256) return cooperate(caps, k.items, 128, 65535);
  return cover(caps, k.items, 64, 65535);
}

}  // namespace nxv::codegen
