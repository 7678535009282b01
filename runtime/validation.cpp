// NXV_VALIDATE=1: the Khronos validation layer (synchronization validation included) as a
// test oracle, its errors turned into runtime errors naming the kernel being created or dispatched.
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "runtime/vk_util.h"

namespace nxv::runtime {
namespace {

constexpr const char* kLayer = "VK_LAYER_KHRONOS_validation";

std::mutex pending_mutex;
std::vector<std::string> pending;  // errors reported since the last check, from any thread

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
    std::lock_guard<std::mutex> lock(pending_mutex);
    pending.push_back(data->pMessage ? data->pMessage : "(no message)");
  }
  return VK_FALSE;  // the call goes on; check_validation reports it
}

}  // namespace

bool validation_requested() {
  const char* v = std::getenv("NXV_VALIDATE");
  return v && *v && std::strcmp(v, "0") != 0;
}

VkDebugUtilsMessengerCreateInfoEXT validation_messenger_info() {
  VkDebugUtilsMessengerCreateInfoEXT mi{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
  mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
  mi.pfnUserCallback = on_message;
  return mi;
}

// Synchronization validation as well: it reports a missing or too narrow barrier between
// the commands of a submission (runtime/hazards.h) as a hazard error.
VkValidationFeaturesEXT validation_features(const void* next) {
  static const VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkValidationFeaturesEXT f{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT, next};
  f.enabledValidationFeatureCount = 1;
  f.pEnabledValidationFeatures = enables;
  return f;
}

std::string validation_layer_missing() {
  uint32_t n = 0;
  vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> layers(n);
  vkEnumerateInstanceLayerProperties(&n, layers.data());
  for (const auto& l : layers)
    if (std::strcmp(l.layerName, kLayer) == 0) return "";
  return std::string("NXV_VALIDATE is set but the Vulkan loader finds no ") + kLayer +
         " (install vulkan-validationlayers, or unset NXV_VALIDATE)";
}

const char* validation_layer_name() { return kLayer; }

void check_validation(const std::string& during) {
  std::vector<std::string> errors;
  {
    std::lock_guard<std::mutex> lock(pending_mutex);
    errors.swap(pending);
  }
  if (errors.empty()) return;
  std::string msg = "Vulkan validation error while " + during + ": " + errors.front();
  if (errors.size() > 1) msg += " (and " + std::to_string(errors.size() - 1) + " more)";
  throw Error(Error::Kind::Vulkan, msg);
}

void name_object(VkDevice device, VkObjectType type, uint64_t handle, const std::string& name) {
  auto set_name = reinterpret_cast<PFN_vkSetDebugUtilsObjectNameEXT>(
      vkGetDeviceProcAddr(device, "vkSetDebugUtilsObjectNameEXT"));
  if (!set_name) return;
  VkDebugUtilsObjectNameInfoEXT ni{VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_NAME_INFO_EXT, nullptr, type, handle, name.c_str()};
  set_name(device, &ni);
}

}  // namespace nxv::runtime
