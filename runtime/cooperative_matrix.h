// VK_KHR_cooperative_matrix as its registry defines it: Debian 12's Vulkan headers
// (1.3.239) predate the extension, so its structures, structure types and query are
// declared here (values from the Vulkan registry, vk.xml). VK_NV_cooperative_matrix's are
// in those headers already.
#pragma once

#include <vulkan/vulkan.h>

namespace nxv::runtime {

inline constexpr const char* kCooperativeMatrixKhr = "VK_KHR_cooperative_matrix";
inline constexpr auto kStructurePhysicalDeviceCooperativeMatrixFeaturesKhr = VkStructureType(1000506000);
inline constexpr auto kStructureCooperativeMatrixPropertiesKhr = VkStructureType(1000506001);
inline constexpr auto kStructurePhysicalDeviceShaderBfloat16FeaturesKhr = VkStructureType(1000141000);
inline constexpr const char* kShaderBfloat16Khr = "VK_KHR_shader_bfloat16";

// VkComponentTypeKHR values (the NV type's are the same numbers) and VkScopeKHR's subgroup.
inline constexpr int32_t kComponentFloat16 = 0;
inline constexpr int32_t kComponentFloat32 = 1;
inline constexpr int32_t kComponentBfloat16 = 1000141000;
inline constexpr int32_t kScopeSubgroup = 3;

struct PhysicalDeviceCooperativeMatrixFeaturesKhr {
  VkStructureType sType = kStructurePhysicalDeviceCooperativeMatrixFeaturesKhr;
  void* pNext = nullptr;
  VkBool32 cooperativeMatrix = VK_FALSE;
  VkBool32 cooperativeMatrixRobustBufferAccess = VK_FALSE;
};

struct CooperativeMatrixPropertiesKhr {
  VkStructureType sType = kStructureCooperativeMatrixPropertiesKhr;
  void* pNext = nullptr;
  uint32_t MSize = 0, NSize = 0, KSize = 0;
  int32_t AType = 0, BType = 0, CType = 0, ResultType = 0;  // VkComponentTypeKHR
  VkBool32 saturatingAccumulation = VK_FALSE;
  int32_t scope = 0;  // VkScopeKHR
};

struct PhysicalDeviceShaderBfloat16FeaturesKhr {
  VkStructureType sType = kStructurePhysicalDeviceShaderBfloat16FeaturesKhr;
  void* pNext = nullptr;
  VkBool32 shaderBFloat16Type = VK_FALSE;
  VkBool32 shaderBFloat16DotProduct = VK_FALSE;
  VkBool32 shaderBFloat16CooperativeMatrix = VK_FALSE;
};

using PfnGetPhysicalDeviceCooperativeMatrixPropertiesKhr = VkResult(VKAPI_PTR*)(VkPhysicalDevice, uint32_t*,
                                                                                 CooperativeMatrixPropertiesKhr*);

}  // namespace nxv::runtime
