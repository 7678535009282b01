// Unknown vendors, and the device-independent caps used for stable lit output.
#include "codegen/targets/launch.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace nxv::codegen {

DeviceCaps generic_caps() {
  DeviceCaps c;
  c.name = "generic";
  c.api_version = (1u << 22) | (1u << 12);  // Vulkan 1.1
  c.float64 = c.int64 = c.int16 = c.int8 = c.float16 = true;
  c.storage_buffer_8bit = c.storage_buffer_16bit = c.subgroup_extended_types = true;
  c.preserve_signed_zero_inf_nan_f32 = c.preserve_signed_zero_inf_nan_f64 = true;
  c.preserve_denorms_f32 = c.preserve_denorms_f64 = true;
  c.subgroup_size = 32;
  return c;
}

namespace {

// The layout an H100's driver (580) reports for its 16 x n accumulators and their A operands
// alike (runtime/fragment_probe.cpp): invocation l holds rows l / 4 and l / 4 + 8, columns
// 2 (l % 4) and the next, and for n = 16 the same 8 columns further on, element by element
// first along the columns.
FragmentLayout nvidia_fragment_layout(uint32_t n) {
  FragmentLayout f;
  const uint32_t elements = 16 * n / 32;
  for (uint32_t l = 0; l < 32; ++l)
    for (uint32_t i = 0; i < elements; ++i) {
      const uint32_t row_half = n == 16 ? i / 4 : i / 2, col_half = n == 16 ? (i / 2) % 2 : 0;
      f.row.push_back(uint16_t(l / 4 + 8 * row_half));
      f.col.push_back(uint16_t(2 * (l % 4) + i % 2 + 8 * col_half));
    }
  return f;
}

}  // namespace

DeviceCaps target_caps(const std::string& name) {
  DeviceCaps c = generic_caps();
  c.api_version = (1u << 22) | (3u << 12);  // Vulkan 1.3
  c.name = name;
  if (name == "nvidia") {  // an H100's limits (and SMs: an H200's too)
    c.vendor_id = pci_vendor_id(Vendor::Nvidia);
    c.compute_units = 132;
    c.max_workgroup_invocations = 1024;
    c.max_shared_memory_bytes = 49152;
    c.max_workgroup_count_x = 2147483647u;
    using enum MatrixComponent;
    c.subgroup_shuffle = true;
    auto shape = [](uint32_t m, uint32_t n, uint32_t k, MatrixComponent operands, MatrixComponent accumulator, bool nv) {
      CooperativeMatrixShape s;
      s.m = m, s.n = n, s.k = k, s.operands = operands, s.accumulator = accumulator, s.khr = true, s.nv = nv;
      return s;
    };
    c.cooperative_matrix_shapes = {shape(16, 16, 16, F16, F16, true), shape(16, 8, 16, F16, F16, true), shape(16, 8, 8, F16, F16, true),
                                   shape(16, 16, 16, F16, F32, true), shape(16, 8, 16, F16, F32, true), shape(16, 8, 8, F16, F32, true),
                                   shape(16, 16, 16, BF16, F32, false)};
    for (auto& s : c.cooperative_matrix_shapes)
      if (s.accumulator == F32 && s.n == s.k) s.accumulator_layout = s.a_layout = nvidia_fragment_layout(s.n);
  } else if (name == "amd") {
    c.vendor_id = pci_vendor_id(Vendor::Amd);
    c.max_workgroup_invocations = 1024;
    c.max_shared_memory_bytes = 65536;
  } else if (name == "lavapipe") {
    c.vendor_id = pci_vendor_id(Vendor::Lavapipe);
    c.max_workgroup_invocations = 1024;
    c.max_shared_memory_bytes = 32768;
    c.max_loop_steps = 65535;
    c.subgroup_size = 8;
    c.subgroup_ballot = true;
    c.max_texel_buffer_elements = 1u << 27;
  } else if (name == "generic") {
    c = generic_caps();
  } else {
    throw std::invalid_argument("unknown target '" + name + "' (generic, nvidia, amd, lavapipe)");
  }
  return c;
}

std::string to_string(const CooperativeMatrixShape& s) {
  auto name = [](MatrixComponent c) {
    switch (c) {
      case MatrixComponent::F16: return "f16";
      case MatrixComponent::BF16: return "bf16";
      case MatrixComponent::F32: return "f32";
      default: return "none";
    }
  };
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + " " + name(s.operands) + ">" +
         name(s.accumulator) + (s.khr ? "" : " nv");
}

bool has_f32_fragments(const DeviceCaps& caps, MatrixComponent operands) {
  return std::any_of(caps.cooperative_matrix_shapes.begin(), caps.cooperative_matrix_shapes.end(),
                     [&](const CooperativeMatrixShape& f) { return f.operands == operands && f.accumulator == MatrixComponent::F32; });
}

std::string to_string(Precision p) {
  switch (p) {
    case Precision::High: return "high";
    case Precision::Default: return "default";
    default: return "highest";
  }
}

Precision parse_precision(const std::string& name) {
  for (Precision p : {Precision::Highest, Precision::High, Precision::Default})
    if (to_string(p) == name) return p;
  throw std::invalid_argument("unknown precision '" + name + "' (highest, high, default)");
}

LaunchConfig launch_generic(const DeviceCaps& caps, const KernelShape& k) {
  // Fewer outputs than a GPU has lanes, each with a long reduction: let a workgroup share each one.
  if (k.items < 8192 && k.reduction >= 256) return cooperate_reductions(caps, k, 128);
  // Many such outputs: a workgroup each too, so that a row is read by neighbouring lanes.
  if (reduces_many_rows(caps, k)) return cooperate_rows(caps, k);
  // Shorter rows: a segment of a workgroup each.
  if (LaunchConfig c = segment_rows(caps, k); c.workgroup_size) return c;
  return cover(caps, k.items, 64, 65535);
}

// Half the device's loop steps per element: the position loop, a kernel's reductions and
// several positions per invocation share the rest. Split-K (passes/split-dot) stays off
// (dot_tile 0): its rule is NVIDIA's (nvidia.cpp), not yet measured elsewhere, AMD's counted
// compute units included.
passes::KernelBounds kernel_bounds_generic(const DeviceCaps& caps) {
  passes::KernelBounds b;
  b.max_loop_steps = double(caps.max_loop_steps) / 2;
  b.max_code = 200000;
  b.f32_accumulates_in_f64 = computes_f32_in_f64(caps);
  return b;
}

MatmulTiles matmul_tiles_generic(const DeviceCaps& caps, const MatmulShape& s) {
  return matmul_worth_tiling(s) ? staged_tiles(caps, s, 64, 64, 4) : MatmulTiles{};
}

}  // namespace nxv::codegen
