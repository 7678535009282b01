#include "codegen/targets/launch.h"

#include <algorithm>

#include "codegen/attention.h"
#include "codegen/scan.h"
#include "codegen/sort.h"

namespace nxv::codegen {

LaunchConfig cover(const DeviceCaps& caps, int64_t items, uint32_t workgroup_size, uint32_t max_groups,
                   uint32_t unroll, uint32_t lanes) {
  uint32_t wg = std::max<uint32_t>(1, std::min(workgroup_size, caps.max_workgroup_invocations));
  const int64_t per_group = int64_t(wg) * unroll * lanes;
  int64_t groups = (std::max<int64_t>(items, 1) + per_group - 1) / per_group;
  groups = std::min<int64_t>({groups, max_groups, caps.max_workgroup_count_x});
  LaunchConfig c{wg, uint32_t(std::max<int64_t>(groups, 1)), false, unroll};
  c.vector_width = lanes;
  return c;
}

uint32_t vector_lanes(const KernelShape& k, uint32_t bytes) {
  uint32_t lanes = 1;
  if (k.vector_element_bytes == 0 || k.items == 0) return lanes;
  while (lanes < 4 && int64_t(lanes) * 2 * k.vector_element_bytes <= bytes && k.items % (lanes * 2) == 0) lanes *= 2;
  return lanes;
}

LaunchConfig cooperate(const DeviceCaps& caps, int64_t items, uint32_t workgroup_size, uint32_t max_groups) {
  uint32_t wg = 1;
  while (wg * 2 <= std::min(workgroup_size, caps.max_workgroup_invocations)) wg *= 2;
  int64_t groups = std::min<int64_t>({std::max<int64_t>(items, 1), max_groups, caps.max_workgroup_count_x});
  return {wg, uint32_t(groups), true};
}

// Reductions across rows, a workgroup per output: each lane of a warp reads a different
// row, a 32-byte sector per element. Outputs in runs of 32 bytes make each reduced row's
// read one whole sector, shared by the run's invocations (docs/tuning.md, "Reductions across
// rows"); a product reading w's rows takes runs that stay within one of them ("Products read
// along their weights' rows").
LaunchConfig cooperate_reductions(const DeviceCaps& caps, const KernelShape& k, uint32_t workgroup_size) {
  LaunchConfig c = cooperate(caps, k.items, workgroup_size, 65535);
  const int64_t limit = k.strided_reduction_bytes > 0 && k.strided_reduction_bytes < 32 ? 32 / k.strided_reduction_bytes
                                                                                          : k.weight_row_run;
  if (limit < 2 || c.workgroup_size < 4) return c;
  uint32_t run = 1;
  while (run * 2 <= limit && run * 2 <= c.workgroup_size / 2) run *= 2;
  c.outputs_per_group = run;
  c.group_count = uint32_t(std::min<int64_t>({(std::max<int64_t>(k.items, 1) + run - 1) / run, 65535, caps.max_workgroup_count_x}));
  return c;
}

bool reduces_many_rows(const DeviceCaps& caps, const KernelShape& k) {
  if (k.emulated_f64_reduction && k.contracts_or_scatters && caps.compute_units &&
      k.items >= int64_t(caps.compute_units) * 1024)
    return false;
  return k.reduction >= 256 && k.strided_reduction_bytes == 0;
}

LaunchConfig cooperate_rows(const DeviceCaps& caps, const KernelShape& k) {
  return cooperate(caps, k.items, k.reduction >= 2048 ? 256 : k.reduction >= 1024 ? 128 : 64, 65535);
}

LaunchConfig segment_rows(const DeviceCaps& caps, const KernelShape& k) {
  if (k.reduction < 32 || k.reduction >= 256 || k.strided_reduction_bytes || k.emulated_f64_reduction || k.contracts_or_scatters)
    return {0, 0};
  uint32_t reducers = 1;
  while (reducers * 2 <= caps.subgroup_size && reducers * 2 * 4 <= k.reduction) reducers *= 2;
  LaunchConfig c = cooperate(caps, k.items, 256, 65535);
  // 8 or more: a row of up to 255 then stays straight-line (Emitter::kMaxUnrolledPositions).
  if (reducers < 8 || c.workgroup_size < reducers) return {0, 0};
  c.outputs_per_group = c.workgroup_size / reducers;
  c.segments = true;
  c.group_count = uint32_t(std::min<int64_t>({(std::max<int64_t>(k.items, 1) + c.outputs_per_group - 1) / c.outputs_per_group,
                                              65535, caps.max_workgroup_count_x}));
  return c;
}

LaunchConfig launch_tiles(const DeviceCaps& caps, int64_t tiles) {
  uint32_t wg = 256;  // 4 elements of a 32x32 tile per invocation
  while (wg > caps.max_workgroup_invocations) wg /= 2;
  const int64_t groups = std::min<int64_t>({std::max<int64_t>(tiles, 1), 65535, caps.max_workgroup_count_x});
  LaunchConfig c{wg, uint32_t(groups), false, 1};
  c.tiles = true;
  return c;
}

// Tiles staged through shared memory, except on lavapipe, whose barriers cost more than
// they save (docs/tuning.md, "Transposes in tiles").
bool tile_transposes(const DeviceCaps& caps) { return caps.vendor() != Vendor::Lavapipe; }

bool scans_in_workgroups(const DeviceCaps& caps) { return caps.vendor() != Vendor::Lavapipe; }

bool computes_f32_in_f64(const DeviceCaps& caps) { return caps.vendor() == Vendor::Lavapipe && caps.float64; }

bool corrects_division(const DeviceCaps& caps) { return caps.vendor() != Vendor::Lavapipe; }

bool branches_to_common_cases(const DeviceCaps& caps) { return caps.vendor() != Vendor::Lavapipe; }

bool converts_f16_in_hardware(const DeviceCaps& caps) {
  return caps.vendor() != Vendor::Lavapipe && caps.float16 && caps.round_to_even_f16 &&
         caps.preserve_signed_zero_inf_nan_f16;
}

bool converts_f16_subnormals_in_hardware(const DeviceCaps& caps) {
  return converts_f16_in_hardware(caps) && caps.preserve_denorms_f16 && caps.denorms_independent;
}

LaunchConfig choose_launch(const DeviceCaps& caps, const KernelShape& k) {
  switch (caps.vendor()) {
    case Vendor::Lavapipe: return launch_lavapipe(caps, k);
    case Vendor::Nvidia: return launch_nvidia(caps, k);
    case Vendor::Amd: return launch_amd(caps, k);
    default: return launch_generic(caps, k);
  }
}

passes::KernelBounds kernel_bounds(const DeviceCaps& caps) {
  passes::KernelBounds b = caps.vendor() == Vendor::Lavapipe ? kernel_bounds_lavapipe(caps)
                           : caps.vendor() == Vendor::Nvidia ? kernel_bounds_nvidia(caps)
                                                      : kernel_bounds_generic(caps);
  set_scan_bounds(caps, b);
  set_sort_bounds(caps, b);
  set_attention_bounds(caps, b);
  // Fusion forms no kernel the device cannot bind (4 storage buffers per stage is the
  // spec's minimum: Mali's drivers report it).
  b.max_bindings = std::min<size_t>(b.max_bindings, caps.max_storage_buffers);
  // Measured: an emulated f64 add is 135 SPIR-V instructions, multiply 179, divide 306, fma
  // 372 (codegen/soft_f64.cpp, Soft64.RoutineSizesStayWithinBudget); an s64 add 7, multiply
  // 13, shift 16.
  if (caps.emulate_f64) b.emulated_f64_code = 60;
  if (caps.emulate_i64) b.emulated_i64_code = 4;
  // Emulated dots run one element per invocation, untiled (choose_matmul_tiles): split-dot leaves them.
  if (caps.emulate_f64) b.dot_split_types.erase(ir::DType::F64);
  if (caps.emulate_i64) b.dot_split_types.erase(ir::DType::S64), b.dot_split_types.erase(ir::DType::U64);
  return b;
}

MatmulTiles choose_matmul_tiles(const DeviceCaps& caps, const MatmulShape& s) {
  // An emulated multiply-add is hundreds of instructions: a product is bound by them, not by
  // the loads tiles share, and a tile's unrolled register block would be a module of tens of
  // thousands (lavapipe took 10 s to compile a 1024^2 f64 dot's). One element per loop.
  if (s.scalar_reads) return {};
  switch (caps.vendor()) {
    case Vendor::Lavapipe: return matmul_tiles_lavapipe(caps, s);
    case Vendor::Nvidia: return matmul_tiles_nvidia(caps, s);
    case Vendor::Amd: return matmul_tiles_amd(caps, s);
    default: return matmul_tiles_generic(caps, s);
  }
}

namespace {
// One set of staged tiles' k-slices of both operands, each row padded by one run against
// bank conflicts (codegen/matmul_simt.h).
uint64_t staged_set_bytes(const MatmulTiles& t, int bytes) { return uint64_t(t.k) * (t.m + t.n + 2 * t.vector) * uint64_t(bytes); }
}  // namespace

bool matmul_worth_tiling(const MatmulShape& s) { return s.m >= 16 && s.n >= 16 && s.k >= 8 && s.m * s.n * s.k >= (1 << 18); }

MatmulTiles staged_tiles(const DeviceCaps& caps, const MatmulShape& s, uint32_t m, uint32_t n, uint32_t thread,
                         uint32_t k) {
  // Fewer invocations than the tiles ask for (128 is the spec's minimum): the wider side halved.
  while (uint64_t(m / thread) * (n / thread) > caps.max_workgroup_invocations && std::max(m, n) > 2 * thread)
    (m >= n ? m : n) /= 2;
  MatmulTiles t;
  t.m = m, t.n = n, t.k = k, t.thread_m = t.thread_n = thread, t.staged = true;
  // Runs of up to 16 bytes (a vector in shared memory) that divide the register tile.
  t.vector = 1;
  while (!s.scalar_reads && t.vector * 2 * uint32_t(s.bytes) <= 16 && thread % (t.vector * 2) == 0) t.vector *= 2;
  while (t.k > t.vector && staged_set_bytes(t, s.bytes) > caps.max_shared_memory_bytes) t.k /= 2;
  // Every invocation loads the same number of runs of each slice.
  const uint32_t runs = t.invocations() * t.vector;
  if (t.invocations() > caps.max_workgroup_invocations || t.k % t.vector || (m * t.k) % runs || (n * t.k) % runs) return {};
  return t;
}

MatmulTiles sliced(const DeviceCaps& caps, const MatmulShape& s, MatmulTiles t, uint32_t slices) {
  const uint64_t row_bytes = uint64_t(s.bytes) * t.slice_invocations() * t.thread_n * (slices - 1);
  if (!t.staged || slices < 2 || s.k % (int64_t(slices) * t.k) != 0 ||
      uint64_t(t.slice_invocations()) * slices > caps.max_workgroup_invocations ||
      slices * staged_set_bytes(t, s.bytes) + row_bytes > caps.max_shared_memory_bytes)
    return t;
  t.k_slices = slices;
  return t;
}

uint64_t cooperative_shared_bytes(const MatmulTiles& t) {
  auto slice = [&](uint64_t free) { return std::max(free * (t.k + 8), uint64_t(t.k) * (free + 8)) * 2; };
  const uint64_t rows = uint64_t(t.subgroups_m) * t.subgroups_n * t.fragment.m * (t.n / t.subgroups_n) * 4;
  return std::max((slice(t.m) + slice(t.n)) * (t.split ? 2 : 1), rows);
}

MatmulTiles cooperative_tiles(const DeviceCaps& caps, const MatmulShape& s, uint32_t m, uint32_t n, uint32_t k,
                              uint32_t subgroups_m, uint32_t subgroups_n, uint32_t fragment_m, uint32_t fragment_n,
                              uint32_t fragment_k) {
  if (s.operands == MatrixComponent::None) return {};
  MatmulTiles t;
  t.m = m, t.n = n, t.k = k, t.staged = true, t.rounded_f32 = s.rounded_f32, t.split = s.split;
  for (const auto& f : caps.cooperative_matrix_shapes)
    if (f.operands == s.operands && f.accumulator == MatrixComponent::F32 && f.m == fragment_m && f.n == fragment_n &&
        f.k == fragment_k)
      t.fragment = f;
  t.subgroups_m = subgroups_m;
  t.subgroups_n = subgroups_n;
  t.subgroup_size = caps.subgroup_size;
  const uint32_t wm = m / subgroups_m, wn = n / subgroups_n;
  // Each subgroup owns whole fragments; every invocation stages whole 16-byte chunks of both
  // slices; the epilogue's rows are whole subgroups of elements.
  if (!t.fragment.m || wm * subgroups_m != m || wn * subgroups_n != n || wm % t.fragment.m || wn % t.fragment.n ||
      k % t.fragment.k || t.invocations() > caps.max_workgroup_invocations || (m * k / 8) % t.invocations() ||
      (n * k / 8) % t.invocations() || (t.fragment.m * wn) % t.subgroup_size ||
      cooperative_shared_bytes(t) > caps.max_shared_memory_bytes)
    return {};
  return t;
}

int64_t matmul_tile_count(const MatmulShape& s, const MatmulTiles& t) {
  return s.batch * ((s.m + t.m - 1) / t.m) * ((s.n + t.n - 1) / t.n);
}

LaunchConfig launch_matmul(const DeviceCaps& caps, const MatmulShape& s, const MatmulTiles& tiles) {
  const int64_t groups = std::min<int64_t>({std::max<int64_t>(matmul_tile_count(s, tiles), 1), 65535, caps.max_workgroup_count_x});
  LaunchConfig c{tiles.invocations(), uint32_t(groups), false, 1};
  c.matmul = tiles;
  c.matmul.tiles = matmul_tile_count(s, tiles);
  return c;
}

// lavapipe compiles a shader with LLVM the first time it runs it, in time that grows faster
// than the module (38,000 words: 10 s cold): serial loops stay within 12,000 words there
// (docs/tuning.md, "Serial loops' size"); GPUs compile such modules in milliseconds.
uint64_t serial_loop_max_words(const DeviceCaps& caps) { return caps.vendor() == Vendor::Lavapipe ? 12000 : 0; }

bool serial_subgroup_barriers(const DeviceCaps& caps) { return caps.vendor() == Vendor::Lavapipe; }

uint32_t serial_workgroup_size(const DeviceCaps& caps) {
  return std::max<uint32_t>(1, std::min(caps.subgroup_size, caps.max_workgroup_invocations));
}

}  // namespace nxv::codegen
