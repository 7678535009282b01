// What the code generator may assume about the device it emits for.
// Filled in by the runtime from Vulkan queries; per-vendor tuning lives in
// codegen/targets/<vendor>.cpp and reads only this struct.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "passes/fusion_cost.h"

namespace nxv::codegen {

// Element types of cooperative-matrix operands and accumulators.
enum class MatrixComponent : uint8_t { None, F16, BF16, F32 };

// Which element of a fragment each invocation of a subgroup holds, as the device reports it
// (the spec leaves it to the implementation; runtime/fragment_probe.cpp measures it): for
// invocation l and its element i, entry l * elements + i is the element's row and column.
// Empty where unmeasured.
struct FragmentLayout {
  std::vector<uint16_t> row, col;
  bool operator==(const FragmentLayout&) const = default;
};

// A product a subgroup computes together (VK_KHR_cooperative_matrix, subgroup scope): an
// m x k matrix of `operands` times a k x n one, added to an m x n one of `accumulator`.
struct CooperativeMatrixShape {
  uint32_t m = 0, n = 0, k = 0;
  MatrixComponent operands = MatrixComponent::None, accumulator = MatrixComponent::None;
  // Listed by VK_KHR_cooperative_matrix, by VK_NV_cooperative_matrix. Kernels use
  // SPV_KHR_cooperative_matrix's opcodes where the KHR extension lists the shape, else
  // SPV_NV_cooperative_matrix's (codegen/emit_matmul_cooperative.cpp says why).
  bool khr = false, nv = false;
  // The layouts of the accumulator (m x n) and of the A operand (m x k), where measured.
  FragmentLayout accumulator_layout, a_layout;
};

// How f32 dot products (and convolutions, which are dots) may compute on cooperative
// matrices: the compile option `precision`, named after JAX's Precision levels. Highest:
// exact f32 arithmetic (Nx's semantics). High: each operand split into bf16 parts hi and lo,
// hi·hi + hi·lo + lo·hi accumulated in f32 (about 16 of f32's 24 significant bits). Default:
// each operand rounded once to bf16 (8 bits), f32 accumulators.
enum class Precision : uint8_t { Highest, High, Default };

// "highest", "high", "default"; parse_precision throws std::invalid_argument naming the
// accepted values for another string.
std::string to_string(Precision p);
Precision parse_precision(const std::string& name);

// The vendors codegen/targets/ tunes for, named from the PCI vendor ID a device reports
// (Mesa's software rasteriser, lavapipe, reports Mesa's own ID; Mesa's hardware drivers
// report the hardware's).
enum class Vendor : uint8_t { Other, Nvidia, Amd, Intel, Lavapipe };
constexpr uint32_t pci_vendor_id(Vendor v) {
  switch (v) {
    case Vendor::Nvidia: return 0x10DE;
    case Vendor::Amd: return 0x1002;
    case Vendor::Intel: return 0x8086;
    case Vendor::Lavapipe: return 0x10005;
    case Vendor::Other: break;
  }
  return 0;
}
constexpr Vendor vendor_of(uint32_t pci_id) {
  for (Vendor v : {Vendor::Nvidia, Vendor::Amd, Vendor::Intel, Vendor::Lavapipe})
    if (pci_vendor_id(v) == pci_id) return v;
  return Vendor::Other;
}

struct DeviceCaps {
  std::string name = "generic";
  uint32_t vendor_id = 0;            // the PCI vendor ID the device reports (vendor() names it)
  Vendor vendor() const { return vendor_of(vendor_id); }
  uint32_t api_version = 0;          // VK_MAKE_API_VERSION
  bool float64 = false;
  bool int64 = false;
  // f64 and s64/u64 computed in software on 32-bit words (codegen/soft64.h): where the device
  // lacks them, or where forced (runtime::RuntimeOptions::emulate). The runtime then clears
  // float64 / int64, so codegen never also uses the native type.
  bool emulate_f64 = false;
  bool emulate_i64 = false;
  bool emulated(ir::DType t) const {
    return (t == ir::DType::F64 && emulate_f64) || ((t == ir::DType::S64 || t == ir::DType::U64) && emulate_i64);
  }
  bool int16 = false;
  bool int8 = false;
  bool float16 = false;
  bool storage_buffer_8bit = false;
  bool storage_buffer_16bit = false;
  // VkPhysicalDeviceFloatControlsProperties: honour -0.0, Inf and NaN (no fast-math
  // folding) and keep denormals rather than flushing them, per float width.
  bool preserve_signed_zero_inf_nan_f32 = false;
  bool preserve_signed_zero_inf_nan_f64 = false;
  bool preserve_denorms_f32 = false;
  bool preserve_denorms_f64 = false;
  // f16 results of conversions rounded to nearest even (shaderRoundingModeRTEFloat16) and its
  // Inf and NaN kept (shaderSignedZeroInfNanPreserveFloat16): f16 then converts in hardware.
  bool round_to_even_f16 = false;
  bool preserve_signed_zero_inf_nan_f16 = false;
  // f16 subnormals kept, not flushed (shaderDenormPreserveFloat16), where each width's
  // denormal mode may be set on its own (denormBehaviorIndependence ALL): a module may then
  // ask it for f16 alone.
  bool preserve_denorms_f16 = false;
  bool denorms_independent = false;
  bool subgroup_arithmetic = false;
  bool subgroup_shuffle = false;  // OpGroupNonUniformShuffleXor in compute shaders
  bool subgroup_ballot = false;   // OpGroupNonUniformBroadcast in compute shaders
  // shaderSubgroupExtendedTypes: subgroup operations on 8-, 16- and 64-bit values (without
  // it only on 32-bit ones).
  bool subgroup_extended_types = false;
  // Empty where the device has no cooperative matrices (or its driver lists no subgroup-scope shape).
  std::vector<CooperativeMatrixShape> cooperative_matrix_shapes;
  uint32_t subgroup_size = 32;
  // The device's compute units, each running workgroups of its own (NVIDIA's SMs, AMD's CUs,
  // Arm's shader cores), where its driver lists the extension that counts them
  // (VK_NV_shader_sm_builtins, VK_AMD_shader_core_properties, VK_ARM_shader_core_builtins);
  // 0: unknown. Whether a product's tiles fill the device (passes/split-dot) rests on it.
  uint32_t compute_units = 0;
  // The spec's required minimums ("Required Limits") where the generic default is one.
  uint32_t max_workgroup_invocations = 256;  // and maxComputeWorkGroupSize[0]: workgroups are one-dimensional
  uint32_t max_workgroup_count_x = 65535;
  uint32_t max_shared_memory_bytes = 16384;
  uint32_t max_storage_buffers = 31;  // per kernel: maxPerStageDescriptorStorageBuffers
  uint64_t max_storage_buffer_range = 1ull << 27;
  uint64_t max_heap_bytes = ~0ull;              // the largest device-local memory heap
  uint32_t max_texel_buffer_elements = 65536;  // maxTexelBufferElements
  uint64_t max_memory_allocation_bytes = 1ull << 30;  // maxMemoryAllocationSize
  uint32_t max_push_constant_bytes = 128;             // maxPushConstantsSize
  // Loop steps of one invocation (spirv::Builder::LoopSteps) after which the driver ends all
  // its loops, computing wrong results; 0: no such limit. lavapipe: its loop limiter's 65535.
  uint64_t max_loop_steps = 0;
  // Not a device property: the compile option (runtime::CompileOptions::precision), which
  // codegen applies only where the device lists bf16 fragments with f32 accumulators.
  Precision f32_products = Precision::Highest;
};

// "16x16x16 f16>f32" (" nv" where only the NV extension lists it).
std::string to_string(const CooperativeMatrixShape& s);
// Whether the device lists fragments of `operands` with f32 accumulators.
bool has_f32_fragments(const DeviceCaps& caps, MatrixComponent operands);

// How big one fused kernel may grow on the device (the fuse pass splits larger ones):
// per vendor in codegen/targets/<vendor>.cpp.
passes::KernelBounds kernel_bounds(const DeviceCaps& caps);

// A device-independent default (used by lit tests so their output is stable).
DeviceCaps generic_caps();
// The generic caps as a vendor's device reports them where its kernels differ ("nvidia",
// "amd", "lavapipe"; "generic"): the explorer's --target, for lit tests of kernel choice.
// Throws std::invalid_argument for another name.
DeviceCaps target_caps(const std::string& name);

}  // namespace nxv::codegen
