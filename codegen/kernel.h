// Codegen entry point: one `kernel` node of a lowered graph → one SPIR-V compute module.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/target.h"
#include "ir/ir.h"

namespace nxv::codegen {

// Descriptor set 0 binding i of the module is bindings[i].
struct Binding {
  // Scratch, Constant and Control: only a serial loop's (codegen/serial_loop.h).
  enum class Kind { Input, Output, Scratch, Constant, Control };
  Kind kind;
  int index;           // Input: position in the kernel node's args; Output: position in its results
  ir::DType dtype;     // element type of the storage buffer as declared in the module
  // An Input read through a uniform texel buffer view of its buffer, 16-byte R32G32B32A32_UINT
  // texels (DeviceCaps::max_texel_buffer_elements of them at most), beside the storage
  // buffer binding of the same input; `dtype` is the input's.
  bool texels = false;
};

struct KernelBinary {
  std::string name;                  // "k3_add" etc., for the explorer and profiling
  std::vector<uint32_t> spirv;       // a complete, validated module with entry point "main"
  std::vector<Binding> bindings;
  uint32_t workgroup_size[3] = {1, 1, 1};
  uint32_t group_count[3] = {1, 1, 1};
  std::vector<ir::NodeId> fused_nodes;  // ids (in the pre-lowering graph) this kernel computes
  // Bytes of the module's push-constant block: a zero word (spirv::Builder::push_constant_zero)
  // that the runtime pushes as zeros.
  uint32_t push_constant_bytes = 0;
  // How it runs, for the explorer and the lit tests that pin kernel selection: "elements",
  // "rows", "cooperative", "transpose tiles", or "matmul MxNxK tiles, TMxTN per invocation,
  // staged|direct|subgroup broadcast[, vectors of V]", then "; emulated f64[, i64]" where the
  // kernel computes 64-bit types in software.
  std::string launch;
};

// Throws ir::IrError naming the node when the kernel cannot be generated
// (unsupported op/type, or a capability the device lacks such as Float64).
KernelBinary compile_kernel(const ir::Node& kernel, const ir::Graph& parent, const DeviceCaps& caps);

// SPIRV-Tools wrappers. validate() returns "" when valid, else the validator's message; a
// module that declares capabilities this spirv-val predates (SPV_KHR_cooperative_matrix,
// SPV_KHR_bfloat16) is left to the driver, which validates it when creating its pipeline.
std::string validate(const std::vector<uint32_t>& spirv, uint32_t vulkan_api_version);
std::string disassemble(const std::vector<uint32_t>& spirv);
// GLSL view through SPIRV-Cross (for the explorer only).
std::string to_glsl(const std::vector<uint32_t>& spirv);

// What a module built elsewhere declares (SPIRV-Cross reflection): the runtime checks it
// against the buffers, push constants and device features it has before a driver sees it.
struct ModuleInterface {
  bool compute_main = false;  // an entry point "main" of the GLCompute model
  uint32_t workgroup_size[3] = {1, 1, 1};
  struct Slot {
    uint32_t set, binding;
  };
  std::vector<Slot> storage_buffers;
  size_t other_resources = 0;  // uniform buffers, images, samplers: nothing the runtime binds
  uint32_t push_constant_bytes = 0;
  std::vector<uint32_t> capabilities;  // spv::Capability values
};
ModuleInterface reflect(const std::vector<uint32_t>& spirv);

}  // namespace nxv::codegen
