// run_spirv: modules from elsewhere get the checks our own codegen makes unnecessary.
#include <spirv/unified1/spirv.hpp>

#include <chrono>
#include <map>
#include <set>
#include <string>

#include "runtime/device_impl.h"
#include "runtime/vk_util.h"

namespace nxv::runtime {

namespace {
[[noreturn]] void reject(const std::string& why) { throw Error(Error::Kind::InvalidArgument, "run_spirv: " + why); }

// Capabilities a module may declare: the shader core, and those whose device features
// DeviceImpl enabled because DeviceCaps reports them. `needs` names the feature each optional
// one (the last of each group below) comes with, for the error that refuses it.
struct Capabilities {
  std::set<uint32_t> allowed{spv::CapabilityShader, spv::CapabilityMatrix};
  std::map<uint32_t, std::string> needs;
};

Capabilities capabilities(const codegen::DeviceCaps& c) {
  Capabilities out;
  auto allow_if = [&](bool have, const char* feature, std::initializer_list<spv::Capability> caps) {
    out.needs.emplace(*(caps.end() - 1), feature);
    if (have) out.allowed.insert(caps.begin(), caps.end());
  };
  allow_if(c.float64, "shaderFloat64", {spv::CapabilityFloat64});
  allow_if(c.int64, "shaderInt64", {spv::CapabilityInt64});
  allow_if(c.int16, "shaderInt16", {spv::CapabilityInt16});
  allow_if(c.int8, "shaderInt8", {spv::CapabilityInt8});
  allow_if(c.float16, "shaderFloat16", {spv::CapabilityFloat16});
  allow_if(c.storage_buffer_16bit, "storageBuffer16BitAccess", {spv::CapabilityStorageBuffer16BitAccess});
  allow_if(c.storage_buffer_8bit, "storageBuffer8BitAccess", {spv::CapabilityStorageBuffer8BitAccess});
  allow_if(c.subgroup_arithmetic, "subgroup arithmetic",
           {spv::CapabilityGroupNonUniform, spv::CapabilityGroupNonUniformArithmetic});
  allow_if(c.subgroup_shuffle, "subgroup shuffles", {spv::CapabilityGroupNonUniform, spv::CapabilityGroupNonUniformShuffle});
  allow_if(c.subgroup_ballot, "subgroup ballots", {spv::CapabilityGroupNonUniform, spv::CapabilityGroupNonUniformBallot});
  // The float controls this compiler's own modules declare (codegen: declare_float_controls).
  allow_if(c.preserve_signed_zero_inf_nan_f32 || c.preserve_signed_zero_inf_nan_f64,
           "shaderSignedZeroInfNanPreserveFloat32/64", {spv::CapabilitySignedZeroInfNanPreserve});
  allow_if(c.preserve_denorms_f32 || c.preserve_denorms_f64, "shaderDenormPreserveFloat32/64",
           {spv::CapabilityDenormPreserve});
  return out;
}

void check_interface(const codegen::ModuleInterface& m, const codegen::DeviceCaps& caps, size_t buffers,
                     const SpirvLaunch& launch) {
  if (!m.compute_main) reject("the module has no GLCompute entry point named \"main\"");
  std::set<uint32_t> bindings;
  for (const auto& s : m.storage_buffers) {
    if (s.set != 0) reject("a storage buffer is in descriptor set " + std::to_string(s.set) + "; only set 0 is bound");
    bindings.insert(s.binding);
  }
  for (uint32_t b : bindings)
    if (b >= buffers)
      reject("the module reads storage buffer binding " + std::to_string(b) + " but is given " + std::to_string(buffers) +
             " buffers (inputs, then outputs)");
  if (m.other_resources) reject("the module declares uniform buffers, images or samplers; only storage buffers are bound");
  if (m.push_constant_bytes > launch.push_constants.size())
    reject("the module's push-constant block is " + std::to_string(m.push_constant_bytes) + " bytes, " +
           std::to_string(launch.push_constants.size()) + " given");
  if (launch.push_constants.size() > kMaxPushConstantBytes)
    reject(std::to_string(launch.push_constants.size()) + " bytes of push constants; at most " +
           std::to_string(kMaxPushConstantBytes));
  const auto offered = capabilities(caps);
  for (uint32_t c : m.capabilities) {
    if (offered.allowed.count(c)) continue;
    auto need = offered.needs.find(c);
    reject("the module declares SPIR-V capability " + std::to_string(c) +
           (need == offered.needs.end() ? "" : " (the device's " + need->second + ")") + ", which " + caps.name +
           " does not offer or nx_vulkan does not enable");
  }
  const uint64_t invocations = uint64_t(m.workgroup_size[0]) * m.workgroup_size[1] * m.workgroup_size[2];
  if (invocations > caps.max_workgroup_invocations)
    reject("workgroups of " + std::to_string(invocations) + " invocations; " + caps.name + " allows " +
           std::to_string(caps.max_workgroup_invocations));
  for (int d = 0; d < 3; ++d) {
    const uint32_t limit = d == 0 ? caps.max_workgroup_count_x : 65535;  // y, z: the Vulkan minimum
    if (launch.group_count[d] == 0 || launch.group_count[d] > limit)
      reject("group count " + std::to_string(launch.group_count[d]) + " in dimension " + std::to_string(d) +
             " is outside 1.." + std::to_string(limit));
  }
}
}  // namespace

std::vector<BufferPtr> run_spirv(const std::shared_ptr<Device>& device, const std::vector<uint32_t>& spirv,
                                 const std::vector<BufferPtr>& inputs, const std::vector<ir::TensorType>& outputs,
                                 const SpirvLaunch& launch, RunStats* stats) {
  auto t0 = std::chrono::steady_clock::now();
  auto dev = std::dynamic_pointer_cast<DeviceImpl>(device);
  if (!dev) reject("needs a device from Device::open");
  const auto& caps = dev->info().caps;
  if (std::string err = codegen::validate(spirv, caps.api_version); !err.empty())
    reject("the module does not pass SPIR-V validation: " + err);
  codegen::ModuleInterface m;
  try {
    m = codegen::reflect(spirv);
  } catch (const std::exception& e) {
    reject(e.what());
  }
  check_interface(m, caps, inputs.size() + outputs.size(), launch);

  codegen::KernelBinary k;
  k.name = "spirv_" + content_hash(spirv.data(), spirv.size() * 4).substr(0, 12);
  k.spirv = spirv;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) reject("input " + std::to_string(i) + " is no buffer");
    k.bindings.push_back({codegen::Binding::Kind::Input, int(i), inputs[i]->type().dtype});
  }
  for (size_t i = 0; i < outputs.size(); ++i) k.bindings.push_back({codegen::Binding::Kind::Output, int(i), outputs[i].dtype});
  std::copy(m.workgroup_size, m.workgroup_size + 3, k.workgroup_size);
  std::copy(launch.group_count, launch.group_count + 3, k.group_count);
  // vkCmdPushConstants takes whole words.
  std::vector<uint8_t> push = launch.push_constants;
  push.resize((push.size() + 3) / 4 * 4);
  const PipelinePtr p = dev->pipeline(k, {uint32_t(push.size()), true});

  std::vector<BufferPtr> outs;
  for (const auto& t : outputs) outs.push_back(dev->allocate(t));
  std::vector<const Buffer*> buffers;
  for (const auto& b : inputs) buffers.push_back(b.get());
  for (const auto& b : outs) buffers.push_back(b.get());
  const double device_ms =
      dev->submit([&](VkCommandBuffer cb, SubmitContext& ctx) { dev->record_dispatch(cb, ctx, *p, buffers, k.group_count, push); });
  if (stats) {
    stats->device_ms = device_ms;
    stats->dispatches = 1;
    stats->submits = 1;
    stats->recorded = 1;
    stats->wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  return outs;
}

}  // namespace nxv::runtime
