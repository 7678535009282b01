// Device profiles: a device described in the Khronos Vulkan Profiles JSON format, read and
// applied to codegen::DeviceCaps, so that code runs as it would on a device with less.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/target.h"

namespace nxv::runtime {

// A profile as read: the capabilities it guarantees, as the DeviceCaps of a device with
// exactly those capabilities. What the profile does not list, a device meeting it need not
// have: features it does not name are off, limits it does not name are the Vulkan spec's
// required minimums ("Required Limits"), as in vulkan-minimum.json.
struct Profile {
  std::string name;         // the profile's key under "profiles"
  std::string file;         // where it was read from ("" for one parsed from memory)
  std::string description;  // the profile's description: what it models and where its numbers come from
  codegen::DeviceCaps caps; // the modelled device (name "profile NAME"; vendor_id 0)
  bool has_api_version = false;
  uint32_t subgroup_size = 0;       // subgroupSize as listed; 0: not listed
  bool cooperative_matrix = false;  // VkPhysicalDeviceCooperativeMatrixFeatures{KHR,NV}::cooperativeMatrix
  // Structures and fields that are valid Vulkan but that nx_vulkan does not use.
  std::vector<std::string> ignored;
};

// Parses the profile `name` of a Khronos profiles document (`name` empty: its only profile).
// Throws Error(InvalidArgument) naming `file`, the profile and the field for malformed input.
Profile parse_profile(const nlohmann::json& doc, const std::string& name, const std::string& file);

// NAME (a shipped profile, or NAME.json in a directory of $NXV_PROFILE_PATH, colon-separated),
// FILE.json, or FILE.json#PROFILE for a file holding several. Throws Error(InvalidArgument).
Profile load_profile(const std::string& spec);

// Names of the profiles shipped with nx_vulkan (profiles/*.json), sorted.
std::vector<std::string> shipped_profiles();

// Restricts `device` to its intersection with `p`: a feature stays where both have it, a limit
// is the smaller of the two. Returns what the profile asks for that the device cannot meet,
// one line each ("maxComputeSharedMemorySize 65536 (the device: 32768)"). The device's
// subgroup size stays: the hardware fixes it, and kernels are generated for it.
std::vector<std::string> restrict_to_profile(codegen::DeviceCaps& device, const Profile& p);

// The device a profile models, for generating code without one (`nxv explore --profile`):
// `base` (a --target's vendor tuning) with every capability the profile governs replaced.
codegen::DeviceCaps model_profile(const Profile& p, codegen::DeviceCaps base);

// Per capability that `restricted` lacks and `device` has, what that costs graphs, one line
// each ("no shaderFloat64: ..."): what the code does today, for `nxv devices --profile`.
std::vector<std::string> profile_costs(const codegen::DeviceCaps& restricted, const codegen::DeviceCaps& device);

}  // namespace nxv::runtime
