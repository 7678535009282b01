// Device profiles: the shipped files, the parser's errors, intersection with a device, and what
// codegen and the runtime see on a device opened with a profile.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "device_testing.h"
#include "ir/interpreter.h"
#include "ir/json.h"
#include "ir/literal.h"
#include "runtime/profile.h"
#include "runtime/runtime.h"
#include "test_graphs.h"

namespace nxv::runtime {
namespace {

namespace fs = std::filesystem;
using codegen::DeviceCaps;

// The message of the Error `f` throws; a test failure where it throws nothing or another type.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no nxv::runtime::Error thrown";
  return "";
}

// A one-profile document with `capabilities` as its only capability block.
nlohmann::json doc_with(const nlohmann::json& capabilities) {
  return {{"capabilities", {{"caps", capabilities}}},
          {"profiles", {{"TEST_profile", {{"api-version", "1.2.0"}, {"capabilities", {"caps"}}}}}}};
}

using devtest::ScopedEnv;

Profile parse(const nlohmann::json& capabilities) { return parse_profile(doc_with(capabilities), "", "test.json"); }

std::string parse_error(const nlohmann::json& capabilities) {
  return error_of([&] { parse(capabilities); });
}

TEST(Profile, EachShippedProfileLoadsWithItsSources) {
  const std::vector<std::string> want = {"amd-rdna2",         "apple-m1-moltenvk", "intel-arc-a770",
                                         "mali-g78",          "nvidia-kepler-470", "vulkan-minimum"};
  EXPECT_EQ(shipped_profiles(), want);
  for (const auto& name : want) {
    SCOPED_TRACE(name);
    const Profile p = load_profile(name);
    EXPECT_NE(p.description.find("Source"), std::string::npos) << "the file names the sources of its numbers";
    EXPECT_TRUE(p.has_api_version);
    EXPECT_GE(p.caps.max_shared_memory_bytes, 16384u);
    EXPECT_GE(p.caps.max_workgroup_invocations, 128u);
    EXPECT_GE(p.caps.max_storage_buffers, 4u);
    EXPECT_GE(p.caps.max_storage_buffer_range, 1ull << 27);
    EXPECT_GE(p.caps.max_push_constant_bytes, 128u);
    EXPECT_TRUE(p.ignored.empty()) << p.ignored.front();
  }
}

TEST(Profile, ShippedProfilesHoldTheirDevicesKnownGaps) {
  const Profile min = load_profile("vulkan-minimum"), apple = load_profile("apple-m1-moltenvk"),
                arc = load_profile("intel-arc-a770"), kepler = load_profile("nvidia-kepler-470"),
                mali = load_profile("mali-g78"), amd = load_profile("amd-rdna2");
  EXPECT_FALSE(min.caps.float64 || min.caps.int64 || min.caps.int16 || min.caps.int8 || min.caps.float16 ||
               min.caps.storage_buffer_8bit || min.caps.storage_buffer_16bit || min.caps.subgroup_arithmetic ||
               min.caps.subgroup_shuffle || min.caps.subgroup_ballot || min.cooperative_matrix);
  EXPECT_EQ(min.caps.max_shared_memory_bytes, 16384u);
  EXPECT_EQ(min.caps.max_workgroup_invocations, 128u);
  EXPECT_EQ(min.caps.max_workgroup_count_x, 65535u);
  EXPECT_EQ(min.caps.max_storage_buffer_range, 1ull << 27);
  EXPECT_EQ(min.caps.max_storage_buffers, 4u);
  EXPECT_EQ(min.caps.max_push_constant_bytes, 128u);
  EXPECT_EQ(min.subgroup_size, 0u) << "the spec fixes no subgroup size";
  EXPECT_FALSE(apple.caps.float64);
  EXPECT_EQ(apple.caps.max_shared_memory_bytes, 32768u);
  EXPECT_FALSE(arc.caps.float64);
  EXPECT_TRUE(arc.caps.int64);
  EXPECT_FALSE(kepler.caps.float16);
  EXPECT_FALSE(kepler.cooperative_matrix);
  EXPECT_EQ(kepler.caps.max_shared_memory_bytes, 49152u);
  EXPECT_EQ(kepler.caps.api_version, (1u << 22) | (2u << 12));
  EXPECT_FALSE(mali.caps.float64 || mali.caps.int64);
  EXPECT_EQ(mali.subgroup_size, 16u);
  EXPECT_EQ(amd.subgroup_size, 64u);
  EXPECT_TRUE(amd.caps.float64);
}

TEST(Profile, WhatAProfileDoesNotListIsTheSpecMinimum) {
  const Profile p = parse({{"features", {{"VkPhysicalDeviceFeatures", {{"shaderFloat64", true}}}}},
                           {"properties",
                            {{"VkPhysicalDeviceProperties", {{"limits", {{"maxComputeSharedMemorySize", 32768}}}}}}}});
  EXPECT_TRUE(p.caps.float64);
  EXPECT_FALSE(p.caps.int64);
  EXPECT_FALSE(p.caps.storage_buffer_16bit);
  EXPECT_EQ(p.caps.max_shared_memory_bytes, 32768u);
  EXPECT_EQ(p.caps.max_workgroup_invocations, 128u);
  EXPECT_EQ(p.caps.max_storage_buffers, 4u);
  EXPECT_EQ(p.caps.max_memory_allocation_bytes, 1ull << 30);
}

TEST(Profile, WorkgroupSizeAndSetLimitsBoundWhatKernelsMayUse) {
  const Profile p = parse({{"properties",
                            {{"VkPhysicalDeviceProperties",
                              {{"limits",
                                {{"maxComputeWorkGroupInvocations", 1024},
                                 {"maxComputeWorkGroupSize", {256, 256, 64}},
                                 {"maxPerStageDescriptorStorageBuffers", 64},
                                 {"maxDescriptorSetStorageBuffers", 48}}}}}}}});
  EXPECT_EQ(p.caps.max_workgroup_invocations, 256u) << "workgroups are one-dimensional";
  EXPECT_EQ(p.caps.max_storage_buffers, 48u);
}

TEST(Profile, RestrictingKeepsTheSmallerOfDeviceAndProfile) {
  // An RX 6800 as its profile describes it, restricted to an M1.
  DeviceCaps device = model_profile(load_profile("amd-rdna2"), codegen::target_caps("amd"));
  const auto unmet = restrict_to_profile(device, load_profile("apple-m1-moltenvk"));
  EXPECT_FALSE(device.float64);
  EXPECT_TRUE(device.int64);
  EXPECT_TRUE(device.subgroup_arithmetic);
  EXPECT_FALSE(device.preserve_denorms_f32);
  EXPECT_EQ(device.max_shared_memory_bytes, 32768u);
  EXPECT_EQ(device.max_workgroup_invocations, 1024u);
  EXPECT_EQ(device.max_storage_buffers, 31u);
  EXPECT_EQ(device.max_storage_buffer_range, 1ull << 30);
  EXPECT_EQ(device.max_push_constant_bytes, 256u);
  EXPECT_EQ(device.subgroup_size, 64u);
  EXPECT_EQ(unmet, (std::vector<std::string>{"maxPushConstantsSize 4096 (the device: 256)",
                                             "subgroupSize 32 (the device: 64; kernels are generated for the device's)"}));
}

TEST(Profile, RestrictingNamesWhatTheDeviceCannotMeet) {
  DeviceCaps device = codegen::generic_caps();  // 16 KiB shared memory, 256 invocations
  device.float64 = false;
  device.subgroup_size = 8;
  const auto unmet = restrict_to_profile(device, load_profile("amd-rdna2"));
  auto has = [&](const std::string& s) {
    return std::any_of(unmet.begin(), unmet.end(), [&](const std::string& u) { return u == s; });
  };
  EXPECT_TRUE(has("shaderFloat64 (the device lacks it)"));
  EXPECT_TRUE(has("maxComputeSharedMemorySize 65536 (the device: 16384)"));
  EXPECT_TRUE(has("maxComputeWorkGroupInvocations 1024 (the device: 256)"));
  EXPECT_TRUE(has("subgroupSize 64 (the device: 8; kernels are generated for the device's)"));
  EXPECT_EQ(device.max_shared_memory_bytes, 16384u) << "only restricts";
  EXPECT_FALSE(device.float64);
  EXPECT_EQ(device.subgroup_size, 8u);
}

TEST(Profile, ModelledDeviceKeepsTheTargetsVendorTuning) {
  const DeviceCaps m = model_profile(load_profile("nvidia-kepler-470"), codegen::target_caps("nvidia"));
  EXPECT_EQ(m.vendor_id, 0x10DEu);
  EXPECT_TRUE(m.cooperative_matrix_shapes.empty()) << "Kepler has no cooperative matrices";
  EXPECT_EQ(m.max_shared_memory_bytes, 49152u);
  EXPECT_EQ(m.api_version, (1u << 22) | (2u << 12));
}

// Compute units as each vendor's structure counts them; the device's own stay under a
// restriction (the hardware fixes them), and a modelled device without them has the target's.
TEST(Profile, ComputeUnitsFromEachVendorsStructure) {
  auto units = [](const char* structure, const nlohmann::json& members) {
    return parse({{"properties", {{structure, members}}}}).caps.compute_units;
  };
  EXPECT_EQ(units("VkPhysicalDeviceShaderSMBuiltinsPropertiesNV", {{"shaderSMCount", 132}, {"shaderWarpsPerSM", 64}}), 132u);
  EXPECT_EQ(units("VkPhysicalDeviceShaderCorePropertiesAMD",
                  {{"shaderEngineCount", 4}, {"shaderArraysPerEngineCount", 2}, {"computeUnitsPerShaderArray", 9}}),
            72u);
  EXPECT_EQ(units("VkPhysicalDeviceShaderCoreBuiltinsPropertiesARM", {{"shaderCoreCount", 20}}), 20u);
  EXPECT_EQ(parse({{"properties", nlohmann::json::object()}}).caps.compute_units, 0u) << "none listed: unknown";
  EXPECT_EQ(model_profile(load_profile("nvidia-kepler-470"), codegen::target_caps("nvidia")).compute_units, 132u);
  DeviceCaps device = codegen::target_caps("nvidia");
  restrict_to_profile(device, parse({{"properties", {{"VkPhysicalDeviceShaderSMBuiltinsPropertiesNV", {{"shaderSMCount", 8}}}}}}));
  EXPECT_EQ(device.compute_units, 132u);
}

TEST(Profile, BadInputNamesTheFieldAndTheFile) {
  using nlohmann::json;
  auto limits = [](json l) { return json{{"properties", {{"VkPhysicalDeviceProperties", {{"limits", l}}}}}}; };
  auto features = [](const char* s, json f) { return json{{"features", {{s, f}}}}; };
  EXPECT_EQ(parse_error(limits({{"maxComputeSharedMemorySize", "lots"}})),
            "test.json: profile TEST_profile: capabilities.caps.properties.VkPhysicalDeviceProperties.limits."
            "maxComputeSharedMemorySize: expected a non-negative integer, got \"lots\"");
  EXPECT_NE(parse_error(limits({{"maxComputeSharedMemorySize", -1}})).find("non-negative integer"), std::string::npos);
  EXPECT_NE(parse_error(limits({{"maxComputeWorkGroupSize", 128}})).find("maxComputeWorkGroupSize: expected [x, y, z]"),
            std::string::npos);
  EXPECT_NE(parse_error(limits({{"maxComputeSharedMemory", 1}})).find(
                "limits.maxComputeSharedMemory: no such member of VkPhysicalDeviceLimits"),
            std::string::npos);
  EXPECT_NE(parse_error(features("VkPhysicalDeviceFeatures", {{"shaderFloat65", true}}))
                .find("VkPhysicalDeviceFeatures.shaderFloat65: no such member of VkPhysicalDeviceFeatures"),
            std::string::npos);
  EXPECT_NE(parse_error(features("VkPhysicalDeviceVulkan12Features", {{"shaderFloat61", true}}))
                .find("shaderFloat61: no such member of VkPhysicalDeviceVulkan12Features (did you mean shaderFloat16?)"),
            std::string::npos);
  EXPECT_NE(parse_error(features("VkPhysicalDeviceFeatures", {{"shaderFloat64", 1}}))
                .find("shaderFloat64: expected true or false, got 1"),
            std::string::npos);
  EXPECT_NE(parse_error(features("VkNotAStructure", json::object())).find("not a Vulkan physical-device structure"),
            std::string::npos);
  EXPECT_NE(parse_error({{"propertys", json::object()}}).find("capabilities.caps.propertys: unknown block"),
            std::string::npos);
  EXPECT_NE(parse_error({{"properties",
                          {{"VkPhysicalDeviceVulkan11Properties", {{"subgroupSupportedOperations", {"VK_SUBGROUP_ARITH"}}}}}}})
                .find("subgroupSupportedOperations: unknown subgroup operation VK_SUBGROUP_ARITH"),
            std::string::npos);
  // Valid Vulkan that nx_vulkan does not read is kept as ignored, not an error.
  EXPECT_EQ(parse(features("VkPhysicalDeviceVulkan12Features", {{"bufferDeviceAddress", true}})).ignored,
            std::vector<std::string>{"VkPhysicalDeviceVulkan12Features.bufferDeviceAddress"});
}

TEST(Profile, BadDocumentsAndNamesAreOneLineErrors) {
  const fs::path dir = fs::temp_directory_path() / ("nxv_profile_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string bad = (dir / "bad.json").string(), two = (dir / "two.json").string();
  std::ofstream(bad) << "{\"profiles\": {";
  nlohmann::json d = doc_with(nlohmann::json::object());
  d["profiles"]["OTHER"] = d["profiles"]["TEST_profile"];
  std::ofstream(two) << d.dump();
  EXPECT_NE(error_of([&] { load_profile(bad); }).find(bad + ": malformed JSON"), std::string::npos);
  EXPECT_NE(error_of([&] { load_profile("no-such-gpu"); }).find("unknown profile 'no-such-gpu' (shipped: amd-rdna2"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load_profile((dir / "missing.json").string()); }).find("cannot read profile file"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load_profile(two); }).find("holds 2 profiles; name one (FILE.json#PROFILE)"), std::string::npos);
  EXPECT_EQ(load_profile(two + "#OTHER").name, "OTHER");
  EXPECT_NE(error_of([&] { load_profile(two + "#THIRD"); }).find("no profile THIRD (the file has OTHER, TEST_profile)"),
            std::string::npos);
  nlohmann::json dangling = doc_with(nlohmann::json::object());
  dangling["profiles"]["TEST_profile"]["capabilities"] = {"absent"};
  EXPECT_NE(error_of([&] { parse_profile(dangling, "", "x.json"); }).find("capabilities: no capability block absent"),
            std::string::npos);
  EXPECT_NE(error_of([&] { parse_profile(nlohmann::json::array(), "", "x.json"); }).find("x.json: profiles: expected"),
            std::string::npos);
  // Found by name in $NXV_PROFILE_PATH.
  std::ofstream(dir / "mine.json") << doc_with(nlohmann::json::object()).dump();
  {
    ScopedEnv path("NXV_PROFILE_PATH", dir.c_str());
    EXPECT_EQ(load_profile("mine").name, "TEST_profile");
  }
  fs::remove_all(dir);
}

// f64[n] + f64[n]
ir::Graph f64_add(int n) {
  const std::string s = std::to_string(n);
  return ir::parse_graph(R"({"version": 1, "name": "f64add", "nodes": [
    {"id": 0, "op": "parameter", "type": "f64", "shape": [)" + s + R"(], "attrs": {"index": 0}},
    {"id": 1, "op": "add", "args": [0, 0], "type": "f64", "shape": [)" + s + R"(]}], "outputs": [1]})");
}

std::shared_ptr<Device> open_with(const std::string& profile, const std::string& emulate = "") {
  RuntimeOptions o;
  o.profile = profile;
  o.emulate = emulate;
  return Device::open(o);
}

// Without emulation (runtime_emulation_test.cpp has it on by default).
TEST(Profile, DeviceWithoutF64FromItsProfileRejectsAnF64GraphNamingTheFeature) {
  auto dev = open_with("vulkan-minimum", "none");
  EXPECT_EQ(dev->info().profile, "vulkan_minimum");
  EXPECT_FALSE(dev->info().caps.float64 || dev->info().caps.emulate_f64);
  std::string msg;
  try {
    Executable::compile(dev, f64_add(1000));
  } catch (const std::exception& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("f64 needs the device's shaderFloat64 feature"), std::string::npos) << msg;
  // The same graph on the device as it is, where it has f64, runs and matches the reference.
  if (list_devices().at(dev->info().index).caps.float64) {
    RuntimeOptions o;
    o.device = std::to_string(dev->info().index);
    o.profile = "none";
    auto exe = Executable::compile(Device::open(o), f64_add(1000));
    ir::Literal x{{ir::DType::F64, {1000}}, std::vector<uint8_t>(8000)};
    for (int i = 0; i < 1000; ++i) ir::set_element(x, i, ir::Scalar{.f = i * 0.5});
    const auto out = exe->run_host({x});
    const auto want = ir::interpret(f64_add(1000), {x});
    EXPECT_EQ(out[0].data, want[0].data);
  }
}

TEST(Profile, CodegenSeesTheRestrictedLimits) {
  auto dev = open_with("vulkan-minimum");
  const auto& c = dev->info().caps;
  const auto full = list_devices().at(dev->info().index).caps;
  EXPECT_EQ(c.max_shared_memory_bytes, std::min(16384u, full.max_shared_memory_bytes));
  EXPECT_EQ(c.max_workgroup_invocations, std::min(128u, full.max_workgroup_invocations));
  EXPECT_EQ(c.max_storage_buffers, std::min(4u, full.max_storage_buffers));
  EXPECT_FALSE(c.subgroup_arithmetic || c.subgroup_shuffle || c.subgroup_ballot);
  EXPECT_EQ(c.subgroup_size, full.subgroup_size);
  // A row sum at 1x, 10x and 100x: every kernel's workgroup within the profile's 128
  // invocations, results those of the reference interpreter.
  for (int n : {64, 640, 6400}) {
    SCOPED_TRACE(n);
    const std::string s = std::to_string(n);
    const ir::Graph g = ir::parse_graph(R"({"version": 1, "name": "rows", "nodes": [
      {"id": 0, "op": "parameter", "type": "f32", "shape": [8, )" + s + R"(], "attrs": {"index": 0}},
      {"id": 1, "op": "sum", "args": [0], "type": "f32", "shape": [8], "attrs": {"axes": [1]}}], "outputs": [1]})");
    auto exe = Executable::compile(dev, g);
    for (const auto& k : exe->kernels())
      EXPECT_LE(k.workgroup_size[0] * k.workgroup_size[1] * k.workgroup_size[2], 128u) << k.name;
    ir::Literal x{{ir::DType::F32, {8, n}}, std::vector<uint8_t>(size_t(8) * n * 4)};
    for (int i = 0; i < 8 * n; ++i) ir::set_element(x, i, ir::Scalar{.f = double(i % 7) - 3});
    const auto out = exe->run_host({x});
    const auto want = ir::interpret(g, {x});
    for (int r = 0; r < 8; ++r) EXPECT_NEAR(ir::get_f64(out[0], r), ir::get_f64(want[0], r), 1e-5 * n) << r;
  }
}

TEST(Profile, NxvProfileEnvironmentSelectsTheProfile) {
  std::shared_ptr<Device> unrestricted, dev;
  {
    ScopedEnv none("NXV_PROFILE", nullptr);
    unrestricted = Device::open();
  }
  {
    ScopedEnv env("NXV_PROFILE", "apple-m1-moltenvk");
    dev = Device::open();
  }
  EXPECT_EQ(dev->info().profile, "apple_m1_moltenvk");
  EXPECT_FALSE(dev->info().caps.float64);
  EXPECT_NE(dev, unrestricted) << "a device restricted by a profile is a VkDevice of its own";
  ScopedEnv env("NXV_PROFILE", "no-such-gpu");
  EXPECT_NE(error_of([] { Device::open(); }).find("unknown profile 'no-such-gpu'"), std::string::npos);
}

}  // namespace
}  // namespace nxv::runtime
