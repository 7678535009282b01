// Reading Khronos Vulkan Profiles JSON into a modelled DeviceCaps, and restricting a device to a profile.
#include "runtime/profile.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "codegen/targets/launch.h"
#include "runtime/runtime.h"

#ifndef NXV_PROFILE_DIR
#define NXV_PROFILE_DIR ""
#endif

namespace nxv::runtime {
namespace fs = std::filesystem;
using codegen::DeviceCaps;

namespace {

// Every member of VkPhysicalDeviceFeatures and VkPhysicalDeviceLimits (Vulkan 1.3), so that a
// mistyped name in the two structures profiles list most is an error, not silently nothing.
const std::set<std::string> kFeatureNames = {
    "robustBufferAccess", "fullDrawIndexUint32", "imageCubeArray", "independentBlend", "geometryShader",
    "tessellationShader", "sampleRateShading", "dualSrcBlend", "logicOp", "multiDrawIndirect",
    "drawIndirectFirstInstance", "depthClamp", "depthBiasClamp", "fillModeNonSolid", "depthBounds", "wideLines",
    "largePoints", "alphaToOne", "multiViewport", "samplerAnisotropy", "textureCompressionETC2",
    "textureCompressionASTC_LDR", "textureCompressionBC", "occlusionQueryPrecise", "pipelineStatisticsQuery",
    "vertexPipelineStoresAndAtomics", "fragmentStoresAndAtomics", "shaderTessellationAndGeometryPointSize",
    "shaderImageGatherExtended", "shaderStorageImageExtendedFormats", "shaderStorageImageMultisample",
    "shaderStorageImageReadWithoutFormat", "shaderStorageImageWriteWithoutFormat",
    "shaderUniformBufferArrayDynamicIndexing", "shaderSampledImageArrayDynamicIndexing",
    "shaderStorageBufferArrayDynamicIndexing", "shaderStorageImageArrayDynamicIndexing", "shaderClipDistance",
    "shaderCullDistance", "shaderFloat64", "shaderInt64", "shaderInt16", "shaderResourceResidency",
    "shaderResourceMinLod", "sparseBinding", "sparseResidencyBuffer", "sparseResidencyImage2D",
    "sparseResidencyImage3D", "sparseResidency2Samples", "sparseResidency4Samples", "sparseResidency8Samples",
    "sparseResidency16Samples", "sparseResidencyAliased", "variableMultisampleRate", "inheritedQueries"};

const std::set<std::string> kLimitNames = {
    "maxImageDimension1D", "maxImageDimension2D", "maxImageDimension3D", "maxImageDimensionCube",
    "maxImageArrayLayers", "maxTexelBufferElements", "maxUniformBufferRange", "maxStorageBufferRange",
    "maxPushConstantsSize", "maxMemoryAllocationCount", "maxSamplerAllocationCount", "bufferImageGranularity",
    "sparseAddressSpaceSize", "maxBoundDescriptorSets", "maxPerStageDescriptorSamplers",
    "maxPerStageDescriptorUniformBuffers", "maxPerStageDescriptorStorageBuffers",
    "maxPerStageDescriptorSampledImages", "maxPerStageDescriptorStorageImages",
    "maxPerStageDescriptorInputAttachments", "maxPerStageResources", "maxDescriptorSetSamplers",
    "maxDescriptorSetUniformBuffers", "maxDescriptorSetUniformBuffersDynamic", "maxDescriptorSetStorageBuffers",
    "maxDescriptorSetStorageBuffersDynamic", "maxDescriptorSetSampledImages", "maxDescriptorSetStorageImages",
    "maxDescriptorSetInputAttachments", "maxVertexInputAttributes", "maxVertexInputBindings",
    "maxVertexInputAttributeOffset", "maxVertexInputBindingStride", "maxVertexOutputComponents",
    "maxTessellationGenerationLevel", "maxTessellationPatchSize", "maxTessellationControlPerVertexInputComponents",
    "maxTessellationControlPerVertexOutputComponents", "maxTessellationControlPerPatchOutputComponents",
    "maxTessellationControlTotalOutputComponents", "maxTessellationEvaluationInputComponents",
    "maxTessellationEvaluationOutputComponents", "maxGeometryShaderInvocations", "maxGeometryInputComponents",
    "maxGeometryOutputComponents", "maxGeometryOutputVertices", "maxGeometryTotalOutputComponents",
    "maxFragmentInputComponents", "maxFragmentOutputAttachments", "maxFragmentDualSrcAttachments",
    "maxFragmentCombinedOutputResources", "maxComputeSharedMemorySize", "maxComputeWorkGroupCount",
    "maxComputeWorkGroupInvocations", "maxComputeWorkGroupSize", "subPixelPrecisionBits", "subTexelPrecisionBits",
    "mipmapPrecisionBits", "maxDrawIndexedIndexValue", "maxDrawIndirectCount", "maxSamplerLodBias",
    "maxSamplerAnisotropy", "maxViewports", "maxViewportDimensions", "viewportBoundsRange", "viewportSubPixelBits",
    "minMemoryMapAlignment", "minTexelBufferOffsetAlignment", "minUniformBufferOffsetAlignment",
    "minStorageBufferOffsetAlignment", "minTexelOffset", "maxTexelOffset", "minTexelGatherOffset",
    "maxTexelGatherOffset", "minInterpolationOffset", "maxInterpolationOffset", "subPixelInterpolationOffsetBits",
    "maxFramebufferWidth", "maxFramebufferHeight", "maxFramebufferLayers", "framebufferColorSampleCounts",
    "framebufferDepthSampleCounts", "framebufferStencilSampleCounts", "framebufferNoAttachmentsSampleCounts",
    "maxColorAttachments", "sampledImageColorSampleCounts", "sampledImageIntegerSampleCounts",
    "sampledImageDepthSampleCounts", "sampledImageStencilSampleCounts", "storageImageSampleCounts",
    "maxSampleMaskWords", "timestampComputeAndGraphics", "timestampPeriod", "maxClipDistances", "maxCullDistances",
    "maxCombinedClipAndCullDistances", "discreteQueuePriorities", "pointSizeRange", "lineWidthRange",
    "pointSizeGranularity", "lineWidthGranularity", "strictLines", "standardSampleLocations",
    "optimalBufferCopyOffsetAlignment", "optimalBufferCopyRowPitchAlignment", "nonCoherentAtomSize"};

// The limits nx_vulkan reads, at the spec's required minimum (maximum, for an alignment):
// what a profile that does not list one guarantees.
const std::map<std::string, uint64_t> kMinimumLimits = {
    {"maxComputeSharedMemorySize", 16384},     {"maxComputeWorkGroupInvocations", 128},
    {"maxComputeWorkGroupSize", 128},          {"maxComputeWorkGroupCount", 65535},
    {"maxStorageBufferRange", 1ull << 27},     {"maxPerStageDescriptorStorageBuffers", 4},
    {"maxDescriptorSetStorageBuffers", 24},    {"maxPushConstantsSize", 128},
    {"maxTexelBufferElements", 65536},         {"maxMemoryAllocationSize", 1ull << 30}};

const std::set<std::string> kSubgroupBits = {
    "VK_SUBGROUP_FEATURE_BASIC_BIT",    "VK_SUBGROUP_FEATURE_VOTE_BIT",           "VK_SUBGROUP_FEATURE_ARITHMETIC_BIT",
    "VK_SUBGROUP_FEATURE_BALLOT_BIT",   "VK_SUBGROUP_FEATURE_SHUFFLE_BIT",        "VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT",
    "VK_SUBGROUP_FEATURE_CLUSTERED_BIT", "VK_SUBGROUP_FEATURE_QUAD_BIT",          "VK_SUBGROUP_FEATURE_PARTITIONED_BIT_NV",
    "VK_SUBGROUP_FEATURE_ROTATE_BIT_KHR", "VK_SUBGROUP_FEATURE_ROTATE_CLUSTERED_BIT_KHR"};

// What one structure holds that nx_vulkan reads: its feature members, its property members
// (numbers; "subgroup" arrays of bit names), and whether its other members are known valid.
struct Structure {
  std::set<std::string> features, numbers, bits, booleans;
  const std::set<std::string>* all = nullptr;  // every valid member, where checked
};

const std::map<std::string, Structure>& structures() {
  static const std::map<std::string, Structure> s = [] {
    std::map<std::string, Structure> m;
    m["VkPhysicalDeviceFeatures"] = {{"shaderFloat64", "shaderInt64", "shaderInt16"}, {}, {}, {}, &kFeatureNames};
    m["VkPhysicalDeviceVulkan11Features"] = {{"storageBuffer16BitAccess"}};
    m["VkPhysicalDeviceVulkan12Features"] = {
        {"shaderInt8", "shaderFloat16", "storageBuffer8BitAccess", "shaderSubgroupExtendedTypes"}};
    for (const char* suffix : {"", "KHR"}) {
      m[std::string("VkPhysicalDevice16BitStorageFeatures") + suffix] = {{"storageBuffer16BitAccess"}};
      m[std::string("VkPhysicalDevice8BitStorageFeatures") + suffix] = {{"storageBuffer8BitAccess"}};
      m[std::string("VkPhysicalDeviceShaderFloat16Int8Features") + suffix] = {{"shaderInt8", "shaderFloat16"}};
      m[std::string("VkPhysicalDeviceMaintenance3Properties") + suffix] = {{}, {"maxMemoryAllocationSize"}};
      m[std::string("VkPhysicalDeviceShaderSubgroupExtendedTypesFeatures") + suffix] = {{"shaderSubgroupExtendedTypes"}};
      m[std::string("VkPhysicalDeviceFloatControlsProperties") + suffix] = {
          {}, {}, {}, {"shaderSignedZeroInfNanPreserveFloat32", "shaderSignedZeroInfNanPreserveFloat64",
                       "shaderDenormPreserveFloat32", "shaderDenormPreserveFloat64",
                       "shaderSignedZeroInfNanPreserveFloat16", "shaderRoundingModeRTEFloat16"}};
    }
    m["VkPhysicalDeviceCooperativeMatrixFeaturesKHR"] = {{"cooperativeMatrix"}};
    m["VkPhysicalDeviceCooperativeMatrixFeaturesNV"] = {{"cooperativeMatrix"}};
    m["VkPhysicalDeviceVulkan11Properties"] = {
        {}, {"subgroupSize", "maxMemoryAllocationSize"}, {"subgroupSupportedOperations", "subgroupSupportedStages"}};
    m["VkPhysicalDeviceSubgroupProperties"] = {{}, {"subgroupSize"}, {"supportedOperations", "supportedStages"}};
    m["VkPhysicalDeviceVulkan12Properties"] = m["VkPhysicalDeviceFloatControlsProperties"];
    // The vendors' counts of compute units (DeviceCaps::compute_units).
    m["VkPhysicalDeviceShaderSMBuiltinsPropertiesNV"] = {{}, {"shaderSMCount"}};
    m["VkPhysicalDeviceShaderCorePropertiesAMD"] = {{}, {"shaderEngineCount", "shaderArraysPerEngineCount", "computeUnitsPerShaderArray"}};
    m["VkPhysicalDeviceShaderCoreBuiltinsPropertiesARM"] = {{}, {"shaderCoreCount"}};
    return m;
  }();
  return s;
}

// Edit distance, to tell a mistyped member of a structure nx_vulkan reads from another member.
size_t distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (std::tolower(a[i - 1]) != std::tolower(b[j - 1]))});
      diag = up;
    }
  }
  return row[b.size()];
}

class Reader {
 public:
  Reader(const std::string& file, const std::string& profile) : where_((file.empty() ? "" : file + ": ") + "profile " + profile) {
    limits_ = kMinimumLimits;
  }

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw Error(Error::Kind::InvalidArgument, where_ + ": " + field + ": " + what);
  }

  void capability(const std::string& name, const nlohmann::json& c) {
    if (!c.is_object()) fail("capabilities." + name, "expected an object");
    for (const auto& [key, block] : c.items()) {
      const std::string path = "capabilities." + name + "." + key;
      if (key == "extensions" || key == "formats" || key == "queueFamiliesProperties" || key == "videoProfiles") {
        if (key == "extensions") extensions(path, block);
        continue;
      }
      if (key != "features" && key != "properties") fail(path, "unknown block (features, properties, extensions, formats)");
      if (!block.is_object()) fail(path, "expected an object of Vulkan structures");
      for (const auto& [sname, members] : block.items()) structure(path + "." + sname, sname, members, key == "features");
    }
  }

  Profile finish(Profile p) {
    auto& c = p.caps;
    c = DeviceCaps{};
    c.name = "profile " + p.name;
    c.api_version = api_version_;
    c.float64 = features_["shaderFloat64"];
    c.int64 = features_["shaderInt64"];
    c.int16 = features_["shaderInt16"];
    c.int8 = features_["shaderInt8"];
    c.float16 = features_["shaderFloat16"];
    c.storage_buffer_8bit = features_["storageBuffer8BitAccess"];
    c.storage_buffer_16bit = features_["storageBuffer16BitAccess"];
    c.preserve_signed_zero_inf_nan_f32 = features_["shaderSignedZeroInfNanPreserveFloat32"];
    c.preserve_signed_zero_inf_nan_f64 = features_["shaderSignedZeroInfNanPreserveFloat64"];
    c.preserve_denorms_f32 = features_["shaderDenormPreserveFloat32"];
    c.preserve_denorms_f64 = features_["shaderDenormPreserveFloat64"];
    c.round_to_even_f16 = features_["shaderRoundingModeRTEFloat16"];
    c.preserve_signed_zero_inf_nan_f16 = features_["shaderSignedZeroInfNanPreserveFloat16"];
    c.preserve_denorms_f16 = features_["shaderDenormPreserveFloat16"];
    c.subgroup_arithmetic = subgroup_ops_.count("VK_SUBGROUP_FEATURE_ARITHMETIC_BIT");
    c.subgroup_shuffle = subgroup_ops_.count("VK_SUBGROUP_FEATURE_SHUFFLE_BIT");
    c.subgroup_ballot = subgroup_ops_.count("VK_SUBGROUP_FEATURE_BALLOT_BIT");
    c.subgroup_extended_types = features_["shaderSubgroupExtendedTypes"];
    if (subgroup_size_) c.subgroup_size = subgroup_size_;
    c.max_workgroup_invocations = uint32_t(std::min(limits_["maxComputeWorkGroupInvocations"], limits_["maxComputeWorkGroupSize"]));
    c.max_workgroup_count_x = uint32_t(limits_["maxComputeWorkGroupCount"]);
    c.max_shared_memory_bytes = uint32_t(limits_["maxComputeSharedMemorySize"]);
    c.max_storage_buffers =
        uint32_t(std::min(limits_["maxPerStageDescriptorStorageBuffers"], limits_["maxDescriptorSetStorageBuffers"]));
    c.max_storage_buffer_range = limits_["maxStorageBufferRange"];
    c.max_texel_buffer_elements = uint32_t(limits_["maxTexelBufferElements"]);
    c.max_memory_allocation_bytes = limits_["maxMemoryAllocationSize"];
    c.max_push_constant_bytes = uint32_t(limits_["maxPushConstantsSize"]);
    c.compute_units = compute_units();
    p.cooperative_matrix = features_["cooperativeMatrix"];
    p.subgroup_size = subgroup_size_;
    p.ignored.assign(ignored_.begin(), ignored_.end());
    return p;
  }

  // As the runtime counts them (runtime/devices.cpp): NVIDIA's SMs, else AMD's CUs, else Arm's cores; 0: none listed.
  uint32_t compute_units() const {
    auto listed = [&](const char* m) {
      const auto it = limits_.find(m);
      return it == limits_.end() ? uint64_t(0) : it->second;
    };
    const uint64_t amd = listed("shaderEngineCount") * listed("shaderArraysPerEngineCount") * listed("computeUnitsPerShaderArray");
    return uint32_t(std::min<uint64_t>(UINT32_MAX, listed("shaderSMCount") ? listed("shaderSMCount") : amd ? amd : listed("shaderCoreCount")));
  }

  void api_version(const nlohmann::json& v) {
    int major = 0, minor = 0, patch = 0;
    if (!v.is_string() || std::sscanf(v.get<std::string>().c_str(), "%d.%d.%d", &major, &minor, &patch) < 2)
      fail("api-version", "expected \"MAJOR.MINOR.PATCH\", got " + v.dump());
    api_version_ = (uint32_t(major) << 22) | (uint32_t(minor) << 12) | uint32_t(patch);
    has_api_version_ = true;
  }
  bool has_api_version() const { return has_api_version_; }

 private:
  void extensions(const std::string& path, const nlohmann::json& block) {
    if (!block.is_object()) fail(path, "expected an object of extension names and spec versions");
    for (const auto& [ext, version] : block.items())
      if (!version.is_number_integer()) fail(path + "." + ext, "expected an integer spec version, got " + version.dump());
  }

  void structure(const std::string& path, const std::string& sname, const nlohmann::json& members, bool features) {
    if (!members.is_object()) fail(path, "expected an object of members");
    if (sname == "VkPhysicalDeviceProperties") return device_properties(path, members);
    auto it = structures().find(sname);
    if (it == structures().end()) {
      if (sname.rfind("VkPhysicalDevice", 0) != 0) fail(path, "not a Vulkan physical-device structure");
      ignored_.insert(sname);
      return;
    }
    const Structure& s = it->second;
    for (const auto& [m, v] : members.items()) {
      const std::string field = path + "." + m;
      if (features && s.features.count(m)) {
        if (!v.is_boolean()) fail(field, "expected true or false, got " + v.dump());
        set_feature(m, v.get<bool>());
      } else if (s.booleans.count(m)) {
        if (!v.is_boolean()) fail(field, "expected true or false, got " + v.dump());
        set_feature(m, v.get<bool>());
      } else if (s.numbers.count(m)) {
        const uint64_t n = number(field, v);
        if (m == "subgroupSize") subgroup_size_ = uint32_t(n);
        else set_limit(m, n);
      } else if (s.bits.count(m)) {
        bit_names(field, m, v);
      } else {
        unknown(field, sname, m, s);
      }
    }
  }

  // A member nx_vulkan does not read: valid if the structure's full member list has it, or,
  // where the list is not kept, if it is not one edit or two from a member nx_vulkan reads.
  void unknown(const std::string& field, const std::string& sname, const std::string& m, const Structure& s) {
    if (s.all) {
      if (!s.all->count(m)) fail(field, "no such member of " + sname);
    } else {
      for (const auto* set : {&s.features, &s.numbers, &s.bits, &s.booleans})
        for (const auto& known : *set)
          if (distance(m, known) <= 2) fail(field, "no such member of " + sname + " (did you mean " + known + "?)");
    }
    ignored_.insert(sname + "." + m);
  }

  void device_properties(const std::string& path, const nlohmann::json& members) {
    for (const auto& [m, v] : members.items()) {
      if (m != "limits") {
        ignored_.insert("VkPhysicalDeviceProperties." + m);
        continue;
      }
      if (!v.is_object()) fail(path + ".limits", "expected an object");
      for (const auto& [l, value] : v.items()) {
        const std::string field = path + ".limits." + l;
        if (!kLimitNames.count(l)) fail(field, "no such member of VkPhysicalDeviceLimits");
        if (!kMinimumLimits.count(l)) {
          ignored_.insert("VkPhysicalDeviceLimits." + l);
          continue;
        }
        // Workgroup sizes and counts are [x, y, z]: workgroups are one-dimensional, x counts.
        if (l == "maxComputeWorkGroupSize" || l == "maxComputeWorkGroupCount") {
          if (!value.is_array() || value.size() != 3) fail(field, "expected [x, y, z], got " + value.dump());
          for (size_t d = 0; d < 3; ++d) number(field + "[" + std::to_string(d) + "]", value[d]);
          set_limit(l, number(field, value[0]));
        } else {
          set_limit(l, number(field, value));
        }
      }
    }
  }

  uint64_t number(const std::string& field, const nlohmann::json& v) const {
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
      fail(field, "expected a non-negative integer, got " + v.dump());
    return v.get<uint64_t>();
  }

  void bit_names(const std::string& field, const std::string& m, const nlohmann::json& v) {
    if (!v.is_array()) fail(field, "expected an array of flag names, got " + v.dump());
    const bool operations = m.find("Operations") != std::string::npos;
    for (const auto& bit : v) {
      if (!bit.is_string()) fail(field, "expected flag names, got " + bit.dump());
      const std::string name = bit.get<std::string>();
      if (operations) {
        if (!kSubgroupBits.count(name)) fail(field, "unknown subgroup operation " + name);
        subgroup_ops_.insert(name);
      } else if (name.rfind("VK_SHADER_STAGE_", 0) != 0) {
        fail(field, "unknown shader stage " + name);
      }
    }
  }

  // Where several structures hold one member (Vulkan11Features and 16BitStorageFeatures), the
  // profile guarantees the most any of them says.
  void set_feature(const std::string& m, bool v) { features_[m] = features_[m] || v; }
  void set_limit(const std::string& m, uint64_t v) {
    auto& l = limits_[m];
    l = set_limits_.insert(m).second ? v : std::max(l, v);
  }

  std::string where_;
  std::map<std::string, bool> features_;
  std::map<std::string, uint64_t> limits_;
  std::set<std::string> set_limits_, subgroup_ops_, ignored_;
  uint32_t subgroup_size_ = 0, api_version_ = (1u << 22) | (2u << 12);
  bool has_api_version_ = false;
};

std::vector<fs::path> search_dirs() {
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("NXV_PROFILE_PATH"))
    for (std::string s = env; !s.empty();) {
      const size_t e = std::min(s.find(':'), s.size());
      if (e) dirs.emplace_back(s.substr(0, e));
      s.erase(0, e + 1);
    }
  dirs.emplace_back(NXV_PROFILE_DIR);
  return dirs;
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream f(path);
  if (!f) throw Error(Error::Kind::InvalidArgument, "cannot read profile file " + path.string());
  try {
    return nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {  // a syntax error, or a number beyond a double
    throw Error(Error::Kind::InvalidArgument, path.string() + ": malformed JSON: " + e.what());
  }
}

}  // namespace

Profile parse_profile(const nlohmann::json& doc, const std::string& name, const std::string& file) {
  const std::string in = file.empty() ? "" : file + ": ";
  if (!doc.is_object() || !doc.contains("profiles") || !doc["profiles"].is_object() || doc["profiles"].empty())
    throw Error(Error::Kind::InvalidArgument, in + "profiles: expected an object of profiles (the Khronos Vulkan Profiles format)");
  const auto& profiles = doc["profiles"];
  std::string pick = name;
  if (pick.empty()) {
    if (profiles.size() != 1)
      throw Error(Error::Kind::InvalidArgument, in + "profiles: the file holds " + std::to_string(profiles.size()) +
                                                    " profiles; name one (FILE.json#PROFILE)");
    pick = profiles.begin().key();
  }
  if (!profiles.contains(pick)) {
    std::string names;
    for (const auto& [k, v] : profiles.items()) names += (names.empty() ? "" : ", ") + k;
    throw Error(Error::Kind::InvalidArgument, in + "profiles: no profile " + pick + " (the file has " + names + ")");
  }
  const auto& p = profiles[pick];
  Reader r(file, pick);
  if (!p.is_object()) r.fail("profiles." + pick, "expected an object");
  Profile out;
  out.name = pick;
  out.file = file;
  if (p.contains("description")) {
    if (!p["description"].is_string()) r.fail("description", "expected a string");
    out.description = p["description"];
  }
  if (p.contains("api-version")) r.api_version(p["api-version"]);
  if (!p.contains("capabilities") || !p["capabilities"].is_array()) r.fail("capabilities", "expected an array of capability names");
  const auto& caps = doc.contains("capabilities") ? doc["capabilities"] : nlohmann::json::object();
  for (const auto& entry : p["capabilities"]) {
    // A list of alternatives: a device meets one of them. The first is the one read; the
    // others may guarantee more, which a restriction must not assume.
    const auto& cname = entry.is_array() && !entry.empty() ? entry[0] : entry;
    if (!cname.is_string()) r.fail("capabilities", "expected capability names, got " + entry.dump());
    const std::string n = cname;
    if (!caps.is_object() || !caps.contains(n)) r.fail("capabilities", "no capability block " + n + " in \"capabilities\"");
    r.capability(n, caps[n]);
  }
  out.has_api_version = r.has_api_version();
  return r.finish(std::move(out));
}

Profile load_profile(const std::string& spec) {
  std::string path = spec, name;
  if (auto hash = spec.find('#'); hash != std::string::npos) path = spec.substr(0, hash), name = spec.substr(hash + 1);
  const bool is_file = path.find('/') != std::string::npos || (path.size() > 5 && path.ends_with(".json"));
  if (is_file) return parse_profile(read_json(path), name, path);
  for (const auto& dir : search_dirs()) {
    fs::path f = dir / (path + ".json");
    if (!dir.empty() && fs::exists(f)) return parse_profile(read_json(f), name, f.string());
  }
  std::string names;
  for (const auto& n : shipped_profiles()) names += (names.empty() ? "" : ", ") + n;
  throw Error(Error::Kind::InvalidArgument, "unknown profile '" + path + "' (shipped: " + names +
                                                "; or a FILE.json, or NAME.json in $NXV_PROFILE_PATH)");
}

std::vector<std::string> shipped_profiles() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(NXV_PROFILE_DIR, ec))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> restrict_to_profile(DeviceCaps& d, const Profile& p) {
  std::vector<std::string> unmet;
  const auto& c = p.caps;
  auto feature = [&](bool DeviceCaps::*m, const char* name) {
    if (c.*m && !(d.*m)) unmet.push_back(std::string(name) + " (the device lacks it)");
    d.*m = d.*m && c.*m;
  };
  feature(&DeviceCaps::float64, "shaderFloat64");
  feature(&DeviceCaps::int64, "shaderInt64");
  feature(&DeviceCaps::int16, "shaderInt16");
  feature(&DeviceCaps::int8, "shaderInt8");
  feature(&DeviceCaps::float16, "shaderFloat16");
  feature(&DeviceCaps::storage_buffer_8bit, "storageBuffer8BitAccess");
  feature(&DeviceCaps::storage_buffer_16bit, "storageBuffer16BitAccess");
  feature(&DeviceCaps::preserve_signed_zero_inf_nan_f32, "shaderSignedZeroInfNanPreserveFloat32");
  feature(&DeviceCaps::preserve_signed_zero_inf_nan_f64, "shaderSignedZeroInfNanPreserveFloat64");
  feature(&DeviceCaps::preserve_denorms_f32, "shaderDenormPreserveFloat32");
  feature(&DeviceCaps::preserve_denorms_f64, "shaderDenormPreserveFloat64");
  feature(&DeviceCaps::round_to_even_f16, "shaderRoundingModeRTEFloat16");
  feature(&DeviceCaps::preserve_signed_zero_inf_nan_f16, "shaderSignedZeroInfNanPreserveFloat16");
  feature(&DeviceCaps::preserve_denorms_f16, "shaderDenormPreserveFloat16");
  feature(&DeviceCaps::subgroup_arithmetic, "VK_SUBGROUP_FEATURE_ARITHMETIC_BIT");
  feature(&DeviceCaps::subgroup_shuffle, "VK_SUBGROUP_FEATURE_SHUFFLE_BIT");
  feature(&DeviceCaps::subgroup_ballot, "VK_SUBGROUP_FEATURE_BALLOT_BIT");
  feature(&DeviceCaps::subgroup_extended_types, "shaderSubgroupExtendedTypes");
  if (p.cooperative_matrix && d.cooperative_matrix_shapes.empty()) unmet.push_back("cooperativeMatrix (the device lacks it)");
  if (!p.cooperative_matrix || !d.float16) d.cooperative_matrix_shapes.clear();  // fragments hold f16
  auto limit = [&](auto DeviceCaps::*m, const char* name) {
    if (c.*m > d.*m) unmet.push_back(std::string(name) + " " + std::to_string(c.*m) + " (the device: " + std::to_string(d.*m) + ")");
    d.*m = std::min(d.*m, c.*m);
  };
  limit(&DeviceCaps::max_workgroup_invocations, "maxComputeWorkGroupInvocations");
  limit(&DeviceCaps::max_workgroup_count_x, "maxComputeWorkGroupCount[0]");
  limit(&DeviceCaps::max_shared_memory_bytes, "maxComputeSharedMemorySize");
  limit(&DeviceCaps::max_storage_buffers, "maxPerStageDescriptorStorageBuffers");
  limit(&DeviceCaps::max_storage_buffer_range, "maxStorageBufferRange");
  limit(&DeviceCaps::max_texel_buffer_elements, "maxTexelBufferElements");
  limit(&DeviceCaps::max_memory_allocation_bytes, "maxMemoryAllocationSize");
  limit(&DeviceCaps::max_push_constant_bytes, "maxPushConstantsSize");
  if (p.has_api_version) limit(&DeviceCaps::api_version, "api-version");
  if (p.subgroup_size && p.subgroup_size != d.subgroup_size)
    unmet.push_back("subgroupSize " + std::to_string(p.subgroup_size) + " (the device: " + std::to_string(d.subgroup_size) +
                    "; kernels are generated for the device's)");
  return unmet;
}

DeviceCaps model_profile(const Profile& p, DeviceCaps base) {
  DeviceCaps m = p.caps;
  m.name = base.name + " " + p.caps.name;
  m.vendor_id = base.vendor_id;
  if (!p.has_api_version) m.api_version = base.api_version;
  if (!p.subgroup_size) m.subgroup_size = base.subgroup_size;
  if (!m.compute_units) m.compute_units = base.compute_units;
  if (p.cooperative_matrix && m.float16) m.cooperative_matrix_shapes = base.cooperative_matrix_shapes;
  m.max_loop_steps = base.max_loop_steps;
  m.f32_products = base.f32_products;
  return m;
}

std::vector<std::string> profile_costs(const DeviceCaps& r, const DeviceCaps& d) {
  std::vector<std::string> out;
  auto lost = [&](bool DeviceCaps::*m, const char* what) {
    if (d.*m && !(r.*m)) out.push_back(what);
  };
  lost(&DeviceCaps::float64, "no shaderFloat64: f64 computes in software on 32-bit words, exactly (emulate: auto; "
                             "several times slower); with emulate: none an f64 graph fails to compile naming shaderFloat64");
  lost(&DeviceCaps::int64, "no shaderInt64: s64/u64 compute in software on 32-bit words (emulate: auto; slower); with "
                           "emulate: none such a graph fails to compile naming shaderInt64");
  lost(&DeviceCaps::storage_buffer_8bit, "no storageBuffer8BitAccess: s8/u8 tensors (and predicates) are packed four to a "
                                         "32-bit word; each store is two atomics");
  lost(&DeviceCaps::storage_buffer_16bit, "no storageBuffer16BitAccess: f16/bf16/s16/u16 tensors are packed two to a "
                                          "32-bit word; each store is two atomics");
  lost(&DeviceCaps::int16, "no shaderInt16: no cost today (16-bit integers compute in 32-bit registers)");
  lost(&DeviceCaps::int8, "no shaderInt8: no cost today (8-bit integers compute in 32-bit registers)");
  lost(&DeviceCaps::float16, "no shaderFloat16: no cooperative matrices (their fragments hold f16); f16 elementwise "
                             "math computes in f32 registers either way");
  lost(&DeviceCaps::subgroup_arithmetic, "no subgroup arithmetic: integer scans combine their runs' totals through "
                                         "shared memory");
  lost(&DeviceCaps::subgroup_shuffle, "no subgroup shuffle: workgroup reductions halve through shared memory, one "
                                      "barrier per halving; f16 and bf16 attention not on cooperative matrices");
  lost(&DeviceCaps::subgroup_extended_types, "no shaderSubgroupExtendedTypes: reductions and integer scans of 64-bit "
                                             "values combine through shared memory");
  lost(&DeviceCaps::subgroup_ballot, "no subgroup ballot: lavapipe-tuned dots use plain 8x8 register tiles");
  lost(&DeviceCaps::preserve_denorms_f32, "f32 denormals may be flushed to zero");
  lost(&DeviceCaps::preserve_denorms_f64, "f64 denormals may be flushed to zero");
  if (codegen::converts_f16_in_hardware(d) && !codegen::converts_f16_in_hardware(r))
    out.push_back("f16 rounds in integer arithmetic, not the hardware's conversions (no shaderFloat16, "
                  "shaderRoundingModeRTEFloat16 or shaderSignedZeroInfNanPreserveFloat16): f16 kernels "
                  "slower (up to 1.45x on an H200)");
  if (!d.cooperative_matrix_shapes.empty() && r.cooperative_matrix_shapes.empty())
    out.push_back("no cooperative matrices: dots and f16/bf16 attention run on scalar tiles (slower on tensor cores)");
  if (r.max_shared_memory_bytes < d.max_shared_memory_bytes || r.max_workgroup_invocations < d.max_workgroup_invocations)
    out.push_back("smaller shared memory or workgroups: smaller tiles and workgroups (slower)");
  return out;
}

}  // namespace nxv::runtime
