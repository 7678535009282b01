// Shared between the runtime's files: Vulkan result checking, validation and content hashes.
#pragma once

#include <vulkan/vulkan.h>

#include <string>

#include "runtime/runtime.h"

namespace nxv::runtime {

// Maps a VkResult to the Error kind a caller can act on.
void vk_check(VkResult r, const char* what);

// The validation layer (runtime/validation.cpp), where NXV_VALIDATE asks for it.
bool validation_requested();
std::string validation_layer_missing();  // "" where the loader has the layer, else the error
const char* validation_layer_name();
VkDebugUtilsMessengerCreateInfoEXT validation_messenger_info();
VkValidationFeaturesEXT validation_features(const void* next);  // chained before `next`
// Throws Error(Vulkan) with the first validation error reported since the last check.
void check_validation(const std::string& during);
// Names a Vulkan object in validation messages (a no-op without VK_EXT_debug_utils).
void name_object(VkDevice device, VkObjectType type, uint64_t handle, const std::string& name);

// Content hash used for pipeline and executable caches: two independent FNV-1a-64 streams
// (128 bits), so accidental collisions among the few thousand modules a process sees are
// negligible; this is no defence against an adversary, which a local cache does not need.
std::string content_hash(const void* data, size_t bytes, const std::string& salt = "");

}  // namespace nxv::runtime
