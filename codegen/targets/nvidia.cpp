// NVIDIA: warps of 32; 256-invocation groups keep occupancy high, and a
// bounded grid with a stride loop avoids tail groups on very large tensors. Large
// elementwise kernels compute 4 elements per iteration: one load in flight per
// invocation does not cover HBM latency (x + y reached 54% of a copy's bandwidth).
// Where the kernel allows, those are 16-byte vector accesses (4 f32, 2 f64, as XLA
// vectorises): with 4-byte ones f32 x + y reached 59% of copy, index math and one load
// instruction per element the suspects (vectors not yet measured on an H100).
#include "codegen/targets/launch.h"

#include <algorithm>

namespace nxv::codegen {

LaunchConfig launch_nvidia(const DeviceCaps& caps, const KernelShape& k) {
  // Rows of 4096 or more take 512-wide groups: an 8192-wide f64 softmax row then holds 16
  // positions per invocation, few enough registers for two groups per SM, which overlap one
  // group's barriers with the other's loads (H100, 8192x8192 softmax, ms: f64 0.605 at 256
  // wide, 0.478 at 1024, 0.377 at 512 (the copy's bandwidth); f32 0.186, 0.198, 0.186).
  if (k.items < 16384 && k.reduction >= 256) return cooperate(caps, k.items, k.reduction >= 4096 ? 512 : 256, 65535);
  // Pairs of 64-bit integers stay scalar: driver 580 miscompiles u64 `6 * (x rem 10) + (y rem
  // 10)` in 2-vectors, giving each pair its first lane's value (Nx.Random.randint drew
  // [8, 8, 1, 1, 5, 5]); one element per invocation computes it right (docs/numerics.md).
  const uint32_t lanes = k.int64_arithmetic ? 1 : vector_lanes(k, 16);
  const uint32_t unroll = k.items >= (1 << 20) && k.reduction == 0 ? std::max<uint32_t>(1, 4 / lanes) : 1;
  return cover(caps, k.items, 256, 65535, unroll, lanes);
}

// Code size stands in for register pressure (past 255 registers per thread values spill to
// local memory); the bound is not yet measured against the registers the driver reports
// (nxv_bench --pipeline-stats).
passes::KernelBounds kernel_bounds_nvidia(const DeviceCaps& caps) {
  passes::KernelBounds b = kernel_bounds_generic(caps);
  b.max_code = 100000;
  return b;
}

// Operand slices staged through shared memory, rows of 16-byte vectors, two sets of them
// (codegen/emit_matmul.cpp). Measured on an H100 (2026-11-26, TFLOP/s at 4096^2 f32 / f64):
// 128x128 tiles of 8x8 per invocation in k-steps of 8 45.6 / 22.2 (k-steps of 16 41.7 /
// 18.8, of 4 - / 21.1), 64x128 42.5 / 16.5, 128x64 41.7 / 15.5, 64x64 of 8x8 40.4 / 15.0,
// 64x64 of 4x4 in k-steps of 16 32.4 / 15.9 (JAX 47.9 / 50.7 in the same lease, f64 on
// tensor cores, which Vulkan lacks). f64 at 4096^2 runs at the card's 700 W power cap, the
// clock lowered to stay under it (bench/results/2026-11-26_h100_c5f43b0_ceilings.md).
// Smaller products have too few 128x128 tiles for 132 SMs: 1024^2 takes 64x64 tiles of 4x4
// (f32 28.4, f64 14.6). f32 products with fewer than 256 such tiles (an MLP's 256x1024
// layers: 64 tiles) take 32x32 tiles of 2x2 in k-steps of 32 to fill the SMs: MLP step
// 784-1024-1024-10, batch 256, device ms: train 0.343 -> 0.294, inference 0.146 -> 0.108
// (32x32 of 4x4 0.339 / 0.162, 64x32 0.326 / 0.134, 32x64 0.321 / 0.130; single-set kernels
// with scalar shared memory). f64 products keep 64x64 tiles of 4x4 in k-steps of 16 there,
// which the f64 MLP step's wall time does not tell from smaller tiles (two runs, ms: 0.400 /
// 0.422; 32x32 of 2x2 in k-steps of 16 0.409 / 0.399, of 32 0.429 / 0.425; 64x64 in
// k-steps of 32 0.527 / 0.454; 64x32 and 32x64 of 2x2 1.66).
//
// f16 and bf16 operands take the cooperative-matrix kernel (tensor cores) where the device
// lists 16x16x16 fragments with f32 accumulators. Each subgroup of a 128x256 tile owns 64x64
// (16 accumulators): per multiply-add it reads half the fragments from shared memory that
// 64x32 does, and the workgroup a quarter less from memory than a 128x128 tile. The kernels
// take 216-255 registers per invocation (the driver's pipeline statistics), so one 256-wide
// workgroup runs per SM whatever the tile. H100, 2026-11-26, 4096^2 bf16, TFLOP/s (device
// time), tiles m x n x k by subgroups, sets of slices in shared memory:
//   128x256x32 by 2x4, one set (two would need 53 KiB of the 48 Vulkan allows): 270
//   256x128x32 by 4x2, one set 261;  128x192x32 by 2x4, two sets 229
//   128x128x64 by 2x4, one set 224;  128x128x32 by 2x4, two sets 202
//   128x256x16 by 2x4, two sets 221;  128x128x32 by 2x2 (64x64 each) 176
//   64x256x32 by 1x4 195;  256x64x32 by 4x1 153
//   rows unpadded, so that 128x256x32 fits two sets in 48 KiB: 125 (bank conflicts; 128x128x64
//   one set unpadded 69); 128x256x32 with tiles in groups of 8 rows, or fragments of A
//   loaded one at a time: within 1%.
// f16 tracks bf16 within 3% (the sweep converted its results with the device's
// PackHalf2x16) where the epilogue converts each result once (Emitter::normalize); with three
// software conversions per result it ran at 200 at 128x128x64 and 170 at 128x256x32. With
// one: f16 263, bf16 269 (bench/results/2026-11-26_h100_a668c32_coop3.md). Warp-level
// fragments in CUDA (wmma; a subgroup's cooperative matrix is one warp's) reached 178-307
// over ten tile shapes, cp.async with up to 204 KiB of shared memory included
// (bench/results/2026-11-26_h100_c5f43b0_ceilings.md). The epilogue costs about a tenth
// of a 4096^2 f16 product (0.524 ms; 0.476 with 31 of 32 of its stores left out, as a probe)
// and half of one whose contraction is 128 long, but writing 16 bytes per lane instead of
// one element did not change either (0.524, 0.059 ms).
// 1024^2 takes 64x64x32 by 2x2 (f16 111, bf16 115): 256 tiles for 132 SMs. f32 operands
// rounded to bf16 keep 128x128 tiles: split, their slices are twice as large.
//
// f32 operands split into bf16 hi + lo (precision :high) cost three products on the tensor
// cores: on 64x64 tiles that is slower than the exact SIMT tiles (H100, 1024^2, device ms:
// 0.093 against 0.076), so smaller products keep exact f32; 4096^2 gains 1.3x (59 against
// 45.6 TFLOP/s).
//
// A product with few rows or columns (a convolution's output channels, 32 or 64, by its
// windows) takes tiles that narrow, 128 long, else most of each tile would compute nothing.
MatmulTiles matmul_tiles_nvidia(const DeviceCaps& caps, const MatmulShape& s) {
  if (!matmul_worth_tiling(s)) return {};
  const bool many_tiles = s.batch * s.m * s.n >= 2048 * 2048;
  if (s.operands != MatrixComponent::None && (many_tiles || !s.split)) {
    const uint32_t k = s.split ? 32 : 64;  // split slices are twice as large: 64 would exceed 48 KiB
    MatmulTiles t = !many_tiles         ? cooperative_tiles(caps, s, 64, 64, 32, 2, 2)
                    : s.rounded_f32 ? cooperative_tiles(caps, s, 128, 128, k, 2, 4)
                                    : cooperative_tiles(caps, s, 128, 256, 32, 2, 4);
    if (t.m) return t;
  }
  if (s.bytes == 4 && s.batch * ((s.m + 63) / 64) * ((s.n + 63) / 64) < 256) return staged_tiles(caps, s, 32, 32, 2, 32);
  if (s.bytes == 8) return many_tiles ? staged_tiles(caps, s, 128, 128, 8, 8) : staged_tiles(caps, s, 64, 64, 4);
  auto narrow = [](int64_t x) { return x <= 32 ? 32u : 64u; };
  if (s.m <= 64 && s.batch * s.n >= 4096) return staged_tiles(caps, s, narrow(s.m), 128, 8, 8);
  if (s.n <= 64 && s.batch * s.m >= 4096) return staged_tiles(caps, s, 128, narrow(s.n), 8, 8);
  return many_tiles ? staged_tiles(caps, s, 128, 128, 8, 8) : staged_tiles(caps, s, 64, 64, 4);
}

}  // namespace nxv::codegen
