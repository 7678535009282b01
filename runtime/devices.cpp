// Instance creation, device enumeration/ordering and capability queries.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string_view>

#include "runtime/cooperative_matrix.h"
#include "runtime/fragment_probe.h"
#include "runtime/profile.h"
#include "runtime/device_impl.h"
#include "runtime/vk_util.h"

namespace nxv::runtime {
namespace {

struct Instance {
  VkInstance handle = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  std::vector<VkPhysicalDevice> physical;  // in preference order
  std::vector<DeviceInfo> infos;
};

bool has_extension(VkPhysicalDevice pd, const char* name) {
  uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> exts(n);
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, exts.data());
  for (const auto& e : exts)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

int type_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 4;
    default: return 3;
  }
}

const char* type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

codegen::MatrixComponent matrix_component(int32_t t, bool bf16) {
  if (t == kComponentFloat16) return codegen::MatrixComponent::F16;
  if (t == kComponentFloat32) return codegen::MatrixComponent::F32;
  if (t == kComponentBfloat16 && bf16) return codegen::MatrixComponent::BF16;
  return codegen::MatrixComponent::None;
}

// The subgroup-scope float products the kernels can use (operands of one type, accumulator
// and result of one type, no saturation). The query is called only where the extension is
// listed: the loader's entry point for an absent device extension is a null call.
std::vector<codegen::CooperativeMatrixShape> cooperative_matrix_shapes(VkInstance inst, VkPhysicalDevice pd) {
  const bool khr = has_extension(pd, kCooperativeMatrixKhr), nv = has_extension(pd, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  PhysicalDeviceCooperativeMatrixFeaturesKhr kf;
  VkPhysicalDeviceCooperativeMatrixFeaturesNV nf{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  PhysicalDeviceShaderBfloat16FeaturesKhr bf;
  VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  auto chain = [&](auto& s) {
    s.pNext = feats.pNext;
    feats.pNext = &s;
  };
  if (khr) chain(kf);
  if (nv) chain(nf);
  if (has_extension(pd, kShaderBfloat16Khr)) chain(bf);
  vkGetPhysicalDeviceFeatures2(pd, &feats);
  const bool bf16 = bf.shaderBFloat16Type && bf.shaderBFloat16CooperativeMatrix;
  std::vector<codegen::CooperativeMatrixShape> out;
  auto add = [&](uint32_t m, uint32_t n, uint32_t k, int32_t a, int32_t b, int32_t c, int32_t r, bool sat, int32_t scope,
                 bool from_nv) {
    const auto operands = matrix_component(a, bf16), accumulator = matrix_component(c, false);
    if (a != b || c != r || sat || scope != kScopeSubgroup || operands == codegen::MatrixComponent::None ||
        operands == codegen::MatrixComponent::F32 || accumulator == codegen::MatrixComponent::None)
      return;
    for (auto& s : out)
      if (s.m == m && s.n == n && s.k == k && s.operands == operands && s.accumulator == accumulator) {
        (from_nv ? s.nv : s.khr) = true;
        return;
      }
    out.push_back({m, n, k, operands, accumulator, !from_nv, from_nv});
  };
  if (khr && kf.cooperativeMatrix) {
    auto query = reinterpret_cast<PfnGetPhysicalDeviceCooperativeMatrixPropertiesKhr>(
        vkGetInstanceProcAddr(inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
    uint32_t n = 0;
    if (query && query(pd, &n, nullptr) == VK_SUCCESS) {
      std::vector<CooperativeMatrixPropertiesKhr> props(n);
      if (query(pd, &n, props.data()) == VK_SUCCESS)
        for (const auto& p : props)
          add(p.MSize, p.NSize, p.KSize, p.AType, p.BType, p.CType, p.ResultType, p.saturatingAccumulation, p.scope, false);
    }
  }
  if (nv && nf.cooperativeMatrix) {
    auto query = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
        vkGetInstanceProcAddr(inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
    uint32_t n = 0;
    if (query && query(pd, &n, nullptr) == VK_SUCCESS) {
      std::vector<VkCooperativeMatrixPropertiesNV> props(n, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
      if (query(pd, &n, props.data()) == VK_SUCCESS)
        for (const auto& p : props)
          add(p.MSize, p.NSize, p.KSize, p.AType, p.BType, p.CType, p.DType, false, p.scope, true);
    }
  }
  return out;
}

// The compute units the driver counts, through whichever vendor extension it lists (each
// structure is chained only where its extension is listed); 0 where none is.
uint32_t compute_units(VkPhysicalDevice pd) {
  VkPhysicalDeviceShaderSMBuiltinsPropertiesNV nv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
  VkPhysicalDeviceShaderCorePropertiesAMD amd{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD};
  VkPhysicalDeviceShaderCoreBuiltinsPropertiesARM arm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_BUILTINS_PROPERTIES_ARM};
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  auto chain = [&](auto& s) {
    s.pNext = props.pNext;
    props.pNext = &s;
  };
  const bool has_nv = has_extension(pd, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME);
  const bool has_amd = has_extension(pd, VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME);
  const bool has_arm = has_extension(pd, VK_ARM_SHADER_CORE_BUILTINS_EXTENSION_NAME);
  if (has_nv) chain(nv);
  if (has_amd) chain(amd);
  if (has_arm) chain(arm);
  if (!props.pNext) return 0;
  vkGetPhysicalDeviceProperties2(pd, &props);
  if (has_nv && nv.shaderSMCount) return nv.shaderSMCount;
  if (has_amd) {
    const uint64_t n = uint64_t(amd.shaderEngineCount) * amd.shaderArraysPerEngineCount * amd.computeUnitsPerShaderArray;
    if (n && n <= UINT32_MAX) return uint32_t(n);
  }
  return has_arm ? arm.shaderCoreCount : 0;
}

DeviceInfo describe(VkInstance inst, VkPhysicalDevice pd) {
  VkPhysicalDeviceSubgroupProperties sub{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceFloatControlsProperties fc{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES};
  VkPhysicalDeviceDriverProperties drv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceMaintenance3Properties m3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  sub.pNext = &fc;
  fc.pNext = &drv;
  drv.pNext = &m3;
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &sub};
  vkGetPhysicalDeviceProperties2(pd, &props);

  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  f11.pNext = &f12;
  VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &f11};
  vkGetPhysicalDeviceFeatures2(pd, &feats);

  const auto& p = props.properties;
  DeviceInfo info;
  info.name = p.deviceName;
  info.type = type_name(p.deviceType);
  info.driver = std::string(drv.driverName) + " " + drv.driverInfo;
  auto& c = info.caps;
  c.name = p.deviceName;
  c.vendor_id = p.vendorID;
  c.api_version = p.apiVersion;
  c.float64 = feats.features.shaderFloat64;
  c.int64 = feats.features.shaderInt64;
  c.int16 = feats.features.shaderInt16;
  c.int8 = f12.shaderInt8;
  c.float16 = f12.shaderFloat16;
  c.storage_buffer_8bit = f12.storageBuffer8BitAccess;
  c.storage_buffer_16bit = f11.storageBuffer16BitAccess;
  c.preserve_signed_zero_inf_nan_f32 = fc.shaderSignedZeroInfNanPreserveFloat32;
  c.preserve_signed_zero_inf_nan_f64 = fc.shaderSignedZeroInfNanPreserveFloat64;
  c.preserve_denorms_f32 = fc.shaderDenormPreserveFloat32;
  c.preserve_denorms_f64 = fc.shaderDenormPreserveFloat64;
  c.round_to_even_f16 = fc.shaderRoundingModeRTEFloat16;
  c.preserve_signed_zero_inf_nan_f16 = fc.shaderSignedZeroInfNanPreserveFloat16;
  c.preserve_denorms_f16 = fc.shaderDenormPreserveFloat16;
  c.denorms_independent = fc.denormBehaviorIndependence == VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_ALL;
  c.subgroup_arithmetic = (sub.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
                          (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT);
  c.subgroup_shuffle = (sub.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT) &&
                       (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT);
  c.subgroup_ballot = (sub.supportedOperations & VK_SUBGROUP_FEATURE_BALLOT_BIT) &&
                      (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT);
  c.subgroup_size = sub.subgroupSize;
  c.compute_units = compute_units(pd);
  c.subgroup_extended_types = f12.shaderSubgroupExtendedTypes;
  // Cooperative matrices hold f16 values: the kernels that use them declare Float16.
  if (c.float16) c.cooperative_matrix_shapes = cooperative_matrix_shapes(inst, pd);
  c.max_workgroup_invocations = std::min(p.limits.maxComputeWorkGroupInvocations, p.limits.maxComputeWorkGroupSize[0]);
  c.max_workgroup_count_x = p.limits.maxComputeWorkGroupCount[0];
  c.max_shared_memory_bytes = p.limits.maxComputeSharedMemorySize;
  c.max_storage_buffers = std::min(p.limits.maxPerStageDescriptorStorageBuffers, p.limits.maxDescriptorSetStorageBuffers);
  c.max_storage_buffer_range = p.limits.maxStorageBufferRange;
  VkPhysicalDeviceMemoryProperties mem;
  vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  c.max_heap_bytes = 0;
  for (uint32_t i = 0; i < mem.memoryHeapCount; ++i)
    if (mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) c.max_heap_bytes = std::max(c.max_heap_bytes, uint64_t(mem.memoryHeaps[i].size));
  if (c.max_heap_bytes == 0) c.max_heap_bytes = ~0ull;  // no device-local heap named: no bound from heaps
  c.max_texel_buffer_elements = p.limits.maxTexelBufferElements;
  c.max_memory_allocation_bytes = m3.maxMemoryAllocationSize;
  c.max_push_constant_bytes = p.limits.maxPushConstantsSize;
  if (drv.driverID == VK_DRIVER_ID_MESA_LLVMPIPE) c.max_loop_steps = 65535;  // gallivm's LP_MAX_TGSI_LOOP_ITERATIONS
  return info;
}

bool has_compute_queue(VkPhysicalDevice pd) {
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
  std::vector<VkQueueFamilyProperties> qs(n);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, qs.data());
  for (const auto& q : qs)
    if (q.queueFlags & VK_QUEUE_COMPUTE_BIT) return true;
  return false;
}

// The instance, with the validation layer and its messenger where NXV_VALIDATE asks for
// them; else why there is none.
std::string create_instance(Instance& inst) {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "nx_vulkan";
  app.apiVersion = VK_API_VERSION_1_2;
  uint32_t n = 0;
  vkEnumerateInstanceExtensionProperties(nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> exts(n);
  vkEnumerateInstanceExtensionProperties(nullptr, &n, exts.data());
  std::vector<const char*> enabled;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  for (const auto& e : exts)
    if (std::strcmp(e.extensionName, "VK_KHR_portability_enumeration") == 0) {  // MoltenVK
      enabled.push_back("VK_KHR_portability_enumeration");
      ci.flags |= 0x00000001;  // VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR
    }
  // The messenger in pNext also reports errors of vkCreateInstance itself.
  const bool validate = validation_requested();
  const char* layer = validation_layer_name();
  VkDebugUtilsMessengerCreateInfoEXT messenger = validation_messenger_info();
  VkValidationFeaturesEXT features = validation_features(&messenger);
  if (validate) {
    if (std::string missing = validation_layer_missing(); !missing.empty()) return missing;
    enabled.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    enabled.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
    ci.enabledLayerCount = 1;
    ci.ppEnabledLayerNames = &layer;
    ci.pNext = &features;
  }
  ci.pApplicationInfo = &app;
  ci.enabledExtensionCount = uint32_t(enabled.size());
  ci.ppEnabledExtensionNames = enabled.data();
  VkResult r = vkCreateInstance(&ci, nullptr, &inst.handle);
  if (r != VK_SUCCESS)
    return "cannot create a Vulkan instance (VkResult " + std::to_string(int(r)) +
           "): is a Vulkan driver installed (mesa-vulkan-drivers for lavapipe)?";
  if (validate) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(inst.handle, "vkCreateDebugUtilsMessengerEXT"));
    if (!create || create(inst.handle, &messenger, nullptr, &inst.messenger) != VK_SUCCESS)
      return "NXV_VALIDATE: cannot create the VK_EXT_debug_utils messenger";
  }
  return "";
}

// The devices of Vulkan 1.2 or later with a compute queue, discrete GPUs first.
void find_devices(Instance& inst) {
  uint32_t n = 0;
  vkEnumeratePhysicalDevices(inst.handle, &n, nullptr);
  std::vector<VkPhysicalDevice> pds(n);
  vkEnumeratePhysicalDevices(inst.handle, &n, pds.data());
  std::vector<std::pair<int, VkPhysicalDevice>> ranked;
  for (auto pd : pds) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(pd, &p);
    if (p.apiVersion >= VK_API_VERSION_1_2 && has_compute_queue(pd)) ranked.push_back({type_rank(p.deviceType), pd});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](auto& a, auto& b) { return a.first < b.first; });
  for (auto& [rank, pd] : ranked) {
    inst.physical.push_back(pd);
    inst.infos.push_back(describe(inst.handle, pd));
    inst.infos.back().index = int(inst.infos.size()) - 1;
  }
}

// One instance per process: creating instances is slow on some loaders and the devices
// found do not change while the process runs.
const Instance& instance() {
  static std::once_flag once;
  static Instance inst;
  static std::string failure;
  std::call_once(once, [] {
    failure = create_instance(inst);
    if (failure.empty()) find_devices(inst);
  });
  if (!failure.empty()) throw Error(Error::Kind::NoDevice, failure);
  return inst;
}

std::string lower(std::string s) {
  for (auto& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

}  // namespace

std::vector<DeviceInfo> list_devices() { return instance().infos; }

void restrict_device(DeviceInfo& info, const Profile& p) {
  info.unmet = restrict_to_profile(info.caps, p);
  info.profile = p.name;
}

namespace {
// RuntimeOptions::emulate's comma-separated items (an Error naming a bad one).
struct EmulateItems {
  bool f64 = false, i64 = false, automatic = false, none = false;
};
EmulateItems parse_emulate(const std::string& emulate) {
  EmulateItems e;
  for (size_t start = 0; !emulate.empty() && start <= emulate.size();) {
    const size_t end = std::min(emulate.find(',', start), emulate.size());
    const std::string item = emulate.substr(start, end - start);
    if (item == "f64") e.f64 = true;
    else if (item == "i64") e.i64 = true;
    else if (item == "auto") e.automatic = true;
    else if (item == "none") e.none = true;
    else
      throw Error(Error::Kind::InvalidArgument, "emulate: '" + item + "' is none of auto, none, f64, i64 (in '" + emulate + "')");
    start = end + 1;
  }
  return e;
}

void emulate_types(codegen::DeviceCaps& caps, bool f64, bool i64) {
  caps.emulate_f64 = f64 || !caps.float64 || caps.emulate_f64;
  caps.emulate_i64 = i64 || !caps.int64 || caps.emulate_i64;
  if (caps.emulate_f64) caps.float64 = false;
  if (caps.emulate_i64) caps.int64 = false;
}
}  // namespace

codegen::DeviceCaps compile_caps(const DeviceInfo& device, const CompileOptions& opts) {
  codegen::DeviceCaps caps = device.caps;
  if (opts.as_vendor) caps.vendor_id = opts.as_vendor;
  if (opts.as_compute_units) caps.compute_units = opts.as_compute_units;
  caps.f32_products = opts.precision;
  if (opts.emulate.empty()) return caps;
  const EmulateItems e = parse_emulate(opts.emulate);
  if (e.automatic || e.none)
    throw Error(Error::Kind::InvalidArgument, "emulate: '" + opts.emulate + "' is none of f64, i64, f64,i64 (a compile option only adds emulated types)");
  emulate_types(caps, e.f64, e.i64);
  return caps;
}

void apply_emulation(codegen::DeviceCaps& caps, const std::string& emulate) {
  const EmulateItems e = parse_emulate(emulate);
  if (e.none && (e.f64 || e.i64 || e.automatic))
    throw Error(Error::Kind::InvalidArgument, "emulate: 'none' cannot go with others (in '" + emulate + "')");
  if (!e.none) emulate_types(caps, e.f64, e.i64);
}

namespace {
bool all_digits(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); });
}

// A setting: `given`, else the environment's `env` where it is a positive integer, else `fallback`.
uint64_t positive_setting(uint64_t given, const char* env, uint64_t fallback) {
  if (given) return given;
  const char* e = std::getenv(env);
  if (!e || !*e) return fallback;
  // Digits only: strtoull takes "-5" for 2^64 - 5; past 2^64 it saturates (ERANGE).
  const bool digits = all_digits(e);
  errno = 0;
  const unsigned long long n = digits ? std::strtoull(e, nullptr, 10) : 0;
  if (!digits || errno == ERANGE || n == 0)
    throw Error(Error::Kind::InvalidArgument, std::string("$") + env + " must be a positive integer, not '" + e + "'");
  return n;
}
}  // namespace

std::shared_ptr<Device> Device::open(const RuntimeOptions& opts) {
  const Instance& inst = instance();
  if (inst.infos.empty())
    throw Error(Error::Kind::NoDevice, "no Vulkan 1.2 device with a compute queue was found");
  std::string sel = opts.device;
  if (sel.empty())
    if (const char* env = std::getenv("NXV_DEVICE")) sel = env;
  int pick = 0;
  if (!sel.empty()) {
    pick = -1;
    const bool numeric = all_digits(sel);
    for (const auto& info : inst.infos)
      if (numeric ? info.index == std::atoi(sel.c_str()) : lower(info.name).find(lower(sel)) != std::string::npos) {
        pick = info.index;
        break;
      }
    if (pick < 0) {
      std::string names;
      for (const auto& info : inst.infos) names += (names.empty() ? "" : ", ") + std::to_string(info.index) + ": " + info.name;
      throw Error(Error::Kind::NoDevice, "no device matches '" + sel + "'; devices: " + names);
    }
  }
  RuntimeOptions resolved = opts;
  resolved.device = std::to_string(pick);
  if (resolved.profile.empty())
    if (const char* env = std::getenv("NXV_PROFILE")) resolved.profile = env;
  DeviceInfo info = inst.infos[pick];
  if (!resolved.profile.empty() && resolved.profile != "none") restrict_device(info, load_profile(resolved.profile));
  if (resolved.emulate.empty())
    if (const char* env = std::getenv("NXV_EMULATE")) resolved.emulate = env;
  apply_emulation(info.caps, resolved.emulate);
  resolved.executable_cache_size = positive_setting(opts.executable_cache_size, "NXV_EXECUTABLE_CACHE_SIZE", 256);
  resolved.pipeline_cache_size = positive_setting(opts.pipeline_cache_size, "NXV_PIPELINE_CACHE_SIZE", 1024);
  resolved.timeout_ms = positive_setting(opts.timeout_ms, "NXV_TIMEOUT_MS", 120000);
  static std::mutex m;
  // Devices live as long as the process: buffers and executables hold raw pointers to them.
  static std::map<std::string, std::shared_ptr<Device>> open_devices;
  std::string key = resolved.device + "|" + resolved.cache_dir + "|" + std::to_string(resolved.timeout_ms) +
                    (resolved.robust_buffer_access ? "|robust" : "") + (resolved.push_descriptors ? "" : "|sets") +
                    (resolved.pipeline_statistics ? "|statistics" : "") + (resolved.dispatch_times ? "|dispatch-times" : "") + "|" +
                    resolved.profile + "|" + resolved.emulate + "|" +
                    std::to_string(resolved.executable_cache_size) + "|" + std::to_string(resolved.pipeline_cache_size);
  std::lock_guard<std::mutex> lock(m);
  if (auto d = open_devices[key]) return d;
  auto d = std::make_shared<DeviceImpl>(inst.physical[pick], std::move(info), resolved);
  d->set_cooperative_matrix_shapes(probe_fragment_layouts(*d));
  open_devices[key] = d;
  return d;
}

}  // namespace nxv::runtime
