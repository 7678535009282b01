// NVIDIA: warps of 32, 256-invocation groups, bounded grids with stride loops, 16-byte
// accesses and 4 elements per iteration for large elementwise kernels (one load in flight
// per invocation does not cover HBM latency). Measurements: docs/tuning.md, "NVIDIA".
#include "codegen/targets/launch.h"

#include <algorithm>

namespace nxv::codegen {

namespace {
// Emulated f64 reductions: the narrowest group, down to 64, whose invocations still give every
// SM 2048 (all an H100's or H200's SM holds), so that each adds more elements before their
// partial sums, hundreds of instructions to combine each, meet (docs/tuning.md).
uint32_t emulated_reduction_width(const DeviceCaps& caps, int64_t items) {
  if (!caps.compute_units) return 256;  // SMs not counted: no way to tell they are full
  for (uint32_t wg = 64; wg < 256; wg *= 2)
    if (items * wg >= int64_t(caps.compute_units) * 2048) return wg;
  return 256;
}
}  // namespace

LaunchConfig launch_nvidia(const DeviceCaps& caps, const KernelShape& k) {
  // Rows of 4096 or more take 512-wide groups: two groups fit an SM and overlap one's
  // barriers with the other's loads (docs/tuning.md).
  if (k.items < 16384 && k.reduction >= 256)
    return cooperate_reductions(caps, k, k.emulated_f64_reduction ? emulated_reduction_width(caps, k.items)
                                         : k.reduction >= 4096     ? 512
                                                                   : 256);
  if (reduces_many_rows(caps, k)) return cooperate_rows(caps, k);
  // Shorter rows: 8-11x faster than an invocation per row (docs/tuning.md, "Short rows").
  if (LaunchConfig c = segment_rows(caps, k); c.workgroup_size) return c;
  // Pairs of 64-bit integers stay scalar: driver 580 miscompiles some u64 arithmetic in
  // 2-vectors (docs/tuning.md, docs/numerics.md).
  const uint32_t lanes = k.int64_arithmetic ? 1 : vector_lanes(k, 16);
  const uint32_t unroll = k.items >= (1 << 20) && k.reduction == 0 ? std::max<uint32_t>(1, 4 / lanes) : 1;
  return cover(caps, k.items, 256, 65535, unroll, lanes);
}

// Code size stands in for register pressure (past 255 registers per thread values spill to
// local memory); the bound is not yet measured against the registers the driver reports
// (nxv_bench --pipeline-stats).
//
// Split-K (passes/split-dot): a product with fewer 128x128 tiles than the SMs would take
// smaller tiles below (4 to 16 times as many, each doing less per load) and still leave
// part of the device idle. Where the parts that bring it to two such tiles per SM (a
// 256-invocation workgroup holds 127 registers, so two share an SM) would each contract 256
// or more terms, its contraction is split instead, the count chosen by waves of one tile per
// SM, each costing its terms per part plus 32 (what forced counts measured); not an f32
// product read in place whose 64x128 tiles give every SM one (they fill it whole). f32,
// f64 and integer results (the SIMT tiles); f16 and bf16 take cooperative matrices, whose
// parts would each round to 16 bits; f32 at a reduced precision takes them too where the
// operands are graph inputs, which a split would hide behind reshapes. Without the SM count
// (a driver without VK_NV_shader_sm_builtins) dots stay whole. docs/tuning.md, "Split-K".
//
// Unmasked f32 attention over 512 keys or more runs as two products and a row softmax,
// which outrun the fused SIMT kernel there (twice as fast at head dim 128), where its
// scores fit one buffer and a 32nd of the heap; so does shorter attention whose products
// take 2^30 multiply-adds or more (ViT-B/16 at batch 32, BERT at batch 64 and sequence 128:
// 1.2-1.6x faster). Masked and causal attention, and smaller, stay fused. docs/tuning.md,
// "Attention".
//
// f16 and bf16 products on cooperative matrices keep an epilogue of up to 16 instructions
// of work per element (a bias, an activation such as relu); a heavier one (gelu's erf, 40)
// runs as a kernel of its own, 1.2-1.7x faster on the sweep's feed-forward blocks.
// docs/tuning.md, "Cooperative products' epilogues".
passes::KernelBounds kernel_bounds_nvidia(const DeviceCaps& caps) {
  passes::KernelBounds b = kernel_bounds_generic(caps);
  b.max_code = 100000;
  b.max_cooperative_epilogue_work = 16;
  if (has_f32_fragments(caps, MatrixComponent::F16)) b.cooperative_epilogue_types.insert(ir::DType::F16);
  if (has_f32_fragments(caps, MatrixComponent::BF16)) b.cooperative_epilogue_types.insert(ir::DType::BF16);
  // The padding tests of a convolution's gathered windows: docs/tuning.md, "Convolutions' products".
  b.pad_product_types = {ir::DType::F32};
  b.pad_product_work = int64_t(1) << 30;
  b.separate_attention_keys = 512;
  b.separate_attention_work = int64_t(1) << 30;
  b.separate_attention_bytes = int64_t(std::min({caps.max_storage_buffer_range, caps.max_memory_allocation_bytes,
                                                 caps.max_heap_bytes / 32}));
  if (caps.compute_units) {
    b.dot_tile = 128;
    b.dot_min_tiles = caps.compute_units;
    b.dot_fill_tiles = 2 * int64_t(caps.compute_units);
    b.dot_wave_tiles = caps.compute_units;
    b.dot_part_overhead = 32;
    // f32 products read in place whose 64x128 tiles (matmul_tiles_nvidia) give every SM one
    // stay whole: docs/tuning.md, "Split-K".
    b.dot_whole_tile = 64 * 128;
    b.dot_whole_types = {ir::DType::F32};
    b.dot_min_part = 256;
    using enum ir::DType;
    b.dot_split_types = {S8, S16, S32, S64, U8, U16, U32, U64, F64};
    if (caps.f32_products == Precision::Highest) b.dot_split_types.insert(F32);
  }
  return b;
}

namespace {
// Whether `tiles` 128x128 tiles, two to an SM, leave SMs idle for much of the product: fewer
// tiles than SMs, or a second and last wave under a fifth full.
bool idles_128x128(const DeviceCaps& caps, int64_t tiles) {
  const int64_t sms = caps.compute_units;
  return sms && (tiles < sms || (tiles > 2 * sms && tiles * 5 < 12 * sms));
}
}  // namespace

// SIMT tiles stage operand slices through shared memory in rows of 16-byte vectors, two sets
// of them (codegen/matmul_simt.h): 128x128 of 8x8 in k-steps of 8 from 2048² outputs; below
// that, with at least as many 128x128 tiles as SMs, 128x128 where an operand is computed per
// element (half the reloads of its slices; 64x128 where those fit one round of three per SM,
// a convolution's folded windows) and 128x64 over 128 invocations otherwise; 64x64
// of 4x4 below that; 32x32 of 2x2 in k-steps of 32 for f32 products of fewer than 256 64x64
// tiles (an MLP's layers), unless those give half the SMs one over fewer than 1024 terms
// (GPT-2's projections of one sequence) or every SM one over 1024 or more (an MLP's first
// weight gradient at batch 1024). Ahead of those, f32 products of graph
// inputs whose 128x128 tiles would leave SMs idle (idles_128x128) take 64x128 over 128
// invocations where that gives half the SMs a tile or more; where it gives each SM one tile
// at most, over a contraction of 512 or more, two groups of 128 share its k-steps (sliced,
// 256 invocations: twice the warps on an SM). f64 keeps 64x64 where f32 takes
// 32x32 and 128x64, and takes 128x128 where f32 does for an operand computed per element. f16
// and bf16 take cooperative matrices, 128x256x32 by 2x4 subgroups in one set of slices (two
// would pass the 48 KiB Vulkan allows), as narrow where the product has 64 or 128 columns or
// 64 rows (256x64, 256x128 and 64x256: attention's gradients), 64x64x32 by 2x2 for products
// of few tiles; f32 split into bf16 hi + lo (precision :high) only where the product is
// large, since its three products lose to exact SIMT tiles on small ones. A product with
// few rows or columns (a convolution's output channels) takes tiles that narrow, 128 long.
// Each choice's measurements: docs/tuning.md, "NVIDIA".
MatmulTiles matmul_tiles_nvidia(const DeviceCaps& caps, const MatmulShape& s) {
  if (!matmul_worth_tiling(s)) return {};
  const bool many_tiles = s.batch * s.m * s.n >= 2048 * 2048;
  if (s.operands != MatrixComponent::None && (many_tiles || !s.split)) {
    const uint32_t k = s.split ? 32 : 64;  // split slices are twice as large: 64 would exceed 48 KiB
    MatmulTiles t = !many_tiles                 ? cooperative_tiles(caps, s, 64, 64, 32, 2, 2)
                    : s.rounded_f32             ? cooperative_tiles(caps, s, 128, 128, k, 2, 4)
                    : s.m <= 64 && s.n <= 64    ? cooperative_tiles(caps, s, 64, 64, 32, 2, 2)
                    : s.n <= 64                 ? cooperative_tiles(caps, s, 256, 64, 32, 4, 2)
                    : s.m <= 64                 ? cooperative_tiles(caps, s, 64, 256, 32, 2, 4)
                    : s.n <= 128 && s.m > 128   ? cooperative_tiles(caps, s, 256, 128, 32, 4, 2)
                                                : cooperative_tiles(caps, s, 128, 256, 32, 2, 4);
    if (t.m) return t;
  }
  auto tiles = [&](int64_t rows, int64_t cols) { return s.batch * ((s.m + rows - 1) / rows) * ((s.n + cols - 1) / cols); };
  const int64_t tiles64 = tiles(64, 64);
  const bool long_and_filling = s.k >= 1024 && caps.compute_units && tiles64 >= caps.compute_units;
  if (s.bytes == 4 && !s.integer && !s.computed_operands && s.m > 32 && s.n > 64 && !(long_and_filling && tiles64 < 256) &&
      idles_128x128(caps, tiles(128, 128)) && tiles(64, 128) >= caps.compute_units / 2) {
    const MatmulTiles t = staged_tiles(caps, s, 64, 128, 8, 8);
    return tiles(64, 128) <= caps.compute_units && s.k >= 512 ? sliced(caps, s, t, 2) : t;
  }
  // 64x64 where those tiles give half the SMs one each (short contractions) or every SM one
  // (1024 terms or more); 32x32, four times as many, below that (docs/tuning.md).
  const bool half_fills = caps.compute_units && 2 * tiles64 >= caps.compute_units;
  if (s.bytes == 4 && tiles64 < 256)
    return long_and_filling || (s.k < 1024 && half_fills) ? staged_tiles(caps, s, 64, 64, 4)
                                                         : staged_tiles(caps, s, 32, 32, 2, 32);
  const bool fills128 = caps.compute_units && tiles(128, 128) >= caps.compute_units;
  if (s.bytes == 8)
    return many_tiles || (fills128 && s.computed_operands) ? staged_tiles(caps, s, 128, 128, 8, 8)
                                                           : staged_tiles(caps, s, 64, 64, 4);
  auto narrow = [](int64_t x) { return x <= 32 ? 32u : 64u; };
  if (s.m <= 64 && s.batch * s.n >= 4096) return staged_tiles(caps, s, narrow(s.m), 128, 8, 8);
  if (s.n <= 64 && s.batch * s.m >= 4096) return staged_tiles(caps, s, 128, narrow(s.n), 8, 8);
  if (!many_tiles && fills128) {
    // 64x128 over 128 invocations where those tiles fit one round of three groups per SM
    // (139-167 registers each), which 128x128 tiles, two per SM, would leave a quarter empty.
    if (s.computed_operands)
      return tiles(64, 128) <= 3 * int64_t(caps.compute_units) ? staged_tiles(caps, s, 64, 128, 8, 8)
                                                                : staged_tiles(caps, s, 128, 128, 8, 8);
    return s.m >= s.n ? staged_tiles(caps, s, 128, 64, 8, 8) : staged_tiles(caps, s, 64, 128, 8, 8);
  }
  return many_tiles ? staged_tiles(caps, s, 128, 128, 8, 8) : staged_tiles(caps, s, 64, 64, 4);
}

}  // namespace nxv::codegen
