// Workgroup size and group count for a kernel's grid-stride loop, chosen per
// vendor from DeviceCaps only (one file per vendor in this folder).
#pragma once

#include <cstdint>

#include "codegen/target.h"

namespace nxv::codegen {

// Bytes of an R32G32B32A32 texel: 4 f32 elements, or 2 f64.
constexpr uint32_t kTexelBytes = 16;

// A tiled matrix multiplication (codegen/matmul.h): each workgroup computes tile m x n of
// the output, each invocation thread_m x thread_n of it in registers, stepping the
// contraction k at a time; staged: the operands' k-slices of the tile go through shared
// memory (loaded once per workgroup), else each invocation reads its own.
//
// Cooperative (fragment.m > 0): the tile's k-slices always go through shared memory, and
// subgroups_m x subgroups_n subgroups of subgroup_size invocations each accumulate an
// (m / subgroups_m) x (n / subgroups_n) part of it in fragment-shaped cooperative matrices.
struct MatmulTiles {
  uint32_t m = 0, n = 0, k = 0, thread_m = 0, thread_n = 0;
  bool staged = false;
  // Not staged, with a row of invocations one subgroup and k its size: each lane reads one
  // element of a k-slice of the first operand's rows, which subgroup broadcasts hand to the
  // others. Where a load costs a loop over the lanes (lavapipe), that cuts the first
  // operand's loads by the subgroup's size.
  bool broadcast = false;
  // Broadcast kernels: an invocation's columns come in runs of `vector`, and a lane reads
  // k / subgroup consecutive elements of each row; each run is one vector load where the
  // operand is a graph input laid out that way (matmul_vector_operands). Staged kernels: an
  // invocation's rows and columns come in runs of `vector`, one shared-memory read each, and
  // the workgroup fills the slices in runs of `vector` along each operand's axis that runs
  // along memory, one load each where the operand is laid out that way.
  uint32_t vector = 1;
  // Broadcast kernels with f32 operands: a run is 2 * vector elements, read as `vector`
  // 64-bit components (each two elements) through a view of the operand's binding. Where a
  // vector load costs a loop over the lanes per component (lavapipe), that halves the loads.
  bool pairs = false;
  // Direct kernels whose operands are read as texels (MatmulShape::texel_run): a run is one
  // texel's elements, fetched through a uniform texel buffer view of the operand's buffer
  // (Binding::texels); each lane reads the runs of its own rows and columns.
  bool texels = false;
  int64_t tiles = 0;  // output tiles in all (set by launch_matmul)
  CooperativeMatrixShape fragment{};
  uint32_t subgroups_m = 0, subgroups_n = 0, subgroup_size = 0;
  // Cooperative with f32 operands rounded to bf16 as they are staged (MatmulShape's flags);
  // split: each k-slice staged twice, as the bf16 parts hi and lo of its elements, and each
  // fragment product three.
  bool rounded_f32 = false, split = false;
  // Staged SIMT tiles: the workgroup's invocations form k_slices groups of
  // slice_invocations(), each with slices of its own and every k_slices-th k-step, whose
  // accumulators are added through shared memory before the stores: more warps on an SM for
  // a product of fewer tiles than SMs, with no second kernel (sliced-K).
  uint32_t k_slices = 1;
  uint32_t slice_invocations() const { return (m / thread_m) * (n / thread_n); }
  uint32_t invocations() const { return fragment.m ? subgroups_m * subgroups_n * subgroup_size : slice_invocations() * k_slices; }
};

// What a kernel that is one dot (with elementwise work before and after it) multiplies:
// `batch` products of m x k by k x n, elements of `bytes` in the accumulator's type.
struct MatmulShape {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  int bytes = 4;
  bool integer = false;
  bool f32_operands = false;  // both operands f32 (which a kernel may read as vectors)
  bool scalar_reads = false;  // an operand or the accumulator emulated (DeviceCaps::emulated): no vectors
  // An operand computed or gathered per element (the dot's prologue: a convolution's windows
  // from its padded input, a cast) rather than a graph input read in place through
  // transposes: each reload of its slices costs that work again, not only a load.
  bool computed_operands = false;
  // Where both operands are f32 or both f64 graph inputs (read in place, through transposes)
  // laid out for runs of a texel's elements, as texels may read them: the elements per
  // texel; else 0. The first operand's runs may lie along the contraction (A = [M][K]) or
  // its rows (A = [K][M]), the second's along its columns (B = [K][N]) or the contraction
  // (B = [N][K]).
  uint32_t texel_run = 0;
  // The operands' element type where a cooperative matrix can hold it (both f16, or both
  // bf16, with a float result; f32 operands of an f32 result rounded to bf16 where the
  // compile option's precision allows and the device lists bf16 fragments), else None.
  MatrixComponent operands = MatrixComponent::None;
  // f32 operands rounded to bf16 (operands BF16): split into hi = bf16(x) and
  // lo = bf16(x - hi) under Precision::High, rounded once under Precision::Default.
  bool rounded_f32 = false, split = false;
};

// A fused attention kernel (codegen/attention.h): each workgroup takes `rows` query rows of
// one batch element and walks the keys `keys` at a time; its invocations form
// rows / row_step rows of `lanes`, each holding row_step query rows of the scores and of the
// output. Shared memory holds vectors of `vector` elements (dividing both head dims), so
// that a run of them is one read. shuffles: a row's invocations, within one subgroup,
// combine their maxima and sums by subgroup shuffles, else through shared memory; own_v:
// v's slice has an array of its own, else it takes k's once the scores are taken.
//
// On cooperative matrices (fragment.m > 0: f16 and bf16, emit_attention_cooperative.cpp)
// each of rows / fragment.m subgroups takes fragment.m rows, `lanes` invocations to a row
// (row_step 1) in its softmax; `keys` is a multiple of the fragments' n and k.
struct AttentionTiles {
  uint32_t rows = 0, keys = 0, lanes = 0, row_step = 0, vector = 1;
  bool shuffles = false, own_v = false;
  CooperativeMatrixShape fragment{};
  // The cooperative kernel's softmax on the accumulators' elements in registers
  // (codegen/fragment_layout.h: RegisterLayout), else through shared memory.
  bool registers = false;
  uint32_t invocations() const { return rows / row_step * lanes; }
};

struct LaunchConfig {
  uint32_t workgroup_size;  // local_size_x
  uint32_t group_count;     // dispatch x; the kernel loops when items exceed what one pass covers
  // One output element per workgroup at a time, its reductions split over the
  // invocations (for few outputs with long reductions). workgroup_size is then a power of two.
  bool cooperative = false;
  // Cooperative launches: consecutive output elements a workgroup takes together, each
  // reduced by workgroup_size / outputs_per_group of its invocations (a power of two).
  uint32_t outputs_per_group = 1;
  // ...each by consecutive invocations (Cooperation::segments: reductions along contiguous
  // rows), else outputs interleaved across the invocations (reductions across rows).
  bool segments = false;
  // Plain launches: positions each invocation computes per loop iteration (see kernel.cpp).
  uint32_t unroll = 1;
  // Plain launches: consecutive elements per position, read and written as one vector
  // (kernel.cpp); 1, or a power of two that divides the items.
  uint32_t vector_width = 1;
  // Each workgroup computes kTransposeTile x kTransposeTile output tiles, staging transposed
  // arguments through shared memory (kernel.cpp). workgroup_size divides the tile.
  bool tiles = false;
  // Cooperative scans (codegen/scan.h): consecutive elements each invocation takes per tile.
  uint32_t scan_run = 0;
  // m > 0: a tiled matrix multiplication; group g computes output tiles g, g + groups, ...
  MatmulTiles matmul = {};
  // rows > 0: fused attention.
  AttentionTiles attention = {};
};

constexpr int64_t kTransposeTile = 32;

struct KernelShape {
  int64_t items;      // output elements the kernel's outer loop covers
  int64_t reduction;  // the longest reduction (or dot contraction) in the body; 0 if none
  // The widest element of the buffers the kernel would access as vectors; 0 where it
  // cannot compute consecutive elements together (kernel.cpp decides).
  int64_t vector_element_bytes = 0;
  // The body computes with 64-bit integers (not only moves them): a vendor whose driver
  // miscompiles such vectors keeps these kernels scalar (targets/nvidia.cpp).
  bool int64_arithmetic = false;
  // Where every reduction and contraction in the body runs along axes other than its
  // operands' innermost (a bias gradient's column sums, a weight gradient's product over the
  // batch), so that consecutive outputs read consecutive elements: their widest element's
  // bytes; else 0.
  int64_t strided_reduction_bytes = 0;
  // A reduction kernel (not a row kernel, whose elements' values stay live between its
  // passes) computing in emulated f64 (DeviceCaps::emulate_f64): its invocations' partial
  // results are dear to combine, and few of its values live.
  bool emulated_f64_reduction = false;
  // The body has a dot or a scatter: their folds run over operands that neighbouring
  // outputs share (a row of x for a product's outputs, the updates for a scatter's).
  bool contracts_or_scatters = false;
  // Where the body's folds are products keeping their second operand's innermost axis (x . w,
  // w [K, N]): consecutive outputs read consecutive elements of w's rows and share x's, as
  // across rows; the most outputs a run holds within one of w's rows (a power of two, 32
  // bytes at most); else 0.
  int64_t weight_row_run = 0;
};

LaunchConfig choose_launch(const DeviceCaps& caps, const KernelShape& k);

// For `tiles` transposed tiles: one workgroup per tile up to the device's group limit.
LaunchConfig launch_tiles(const DeviceCaps& caps, int64_t tiles);

// Whether kernels that transpose the innermost axis should visit the output in tiles
// (codegen/kernel.cpp): a GPU's caches then coalesce the reads; a CPU's do not need it.
bool tile_transposes(const DeviceCaps& caps);

// Whether a scan along the innermost axis takes a workgroup per line (codegen/scan.h), its
// runs' totals scanned through shared memory: not on lavapipe, where a workgroup barrier
// makes LLVM build the shader as a coroutine; an invocation per line is as parallel there.
bool scans_in_workgroups(const DeviceCaps& caps);

// Whether f32 sums, products and dot products accumulate in f64, and f32 transcendental
// functions (exp, log, sin, pow, ...) are computed in f64, each rounded once, as
// Nx.BinaryBackend computes them (so results match the evaluator's to the last digit):
// where f64 arithmetic costs about what f32 does, a CPU (lavapipe). A GPU's f64 is a
// fraction of its f32 rate, which a dot product would pay in full.
bool computes_f32_in_f64(const DeviceCaps& caps);

// Whether a float division in hardware (f32, native f64) takes one correction by its exact
// residual (a fused multiply-add) to be correctly rounded: Vulkan allows f32 OpFDiv 2.5 ulp
// and f64 no better, and GPUs use it (NVIDIA's f32 x / x gave 0.99999994; its f64 x / 3.0,
// the literal's division folded into a product by its reciprocal, was an ulp off). Not on
// lavapipe, whose division is the CPU's, already correctly rounded, and whose Fma need not
// be fused.
bool corrects_division(const DeviceCaps& caps);

// Whether emulated f64 multiplies branch to their common case (spirv::Builder::
// set_common_case_branches): on GPUs, whose branches skip the side no invocation of a
// subgroup takes; not on lavapipe, which runs both sides of a branch with lanes masked.
bool branches_to_common_cases(const DeviceCaps& caps);

// Whether f16 converts with the hardware's conversions (OpFConvert) rather than integer code:
// where the device rounds f16 results to nearest even and keeps Inf and NaN, except on
// lavapipe, where integer code is faster (docs/tuning.md, "f16 conversions").
bool converts_f16_in_hardware(const DeviceCaps& caps);
// Whether those conversions also take f16's subnormal range (the module keeps f16
// denormals): where the device promises that for f16 alone; else f32 arithmetic does.
bool converts_f16_subnormals_in_hardware(const DeviceCaps& caps);

// The size of a serial loop's one workgroup (codegen/serial_loop.h): one subgroup (a warp,
// a wave, a SIMD row of lavapipe's lanes).
uint32_t serial_workgroup_size(const DeviceCaps& caps);
// Whether the barrier after each stage of a serial loop is a subgroup's, not the
// workgroup's (the same invocations): on lavapipe a workgroup barrier makes LLVM compile the
// shader as a coroutine (minutes over a large serial loop, building the coroutine frame)
// and switch coroutines at each barrier. Elsewhere the workgroup's: a driver may run a
// compute shader in subgroups smaller than the size it reports.
bool serial_subgroup_barriers(const DeviceCaps& caps);
// The largest serial loop (in SPIR-V words) worth compiling for the device; 0: any. The
// driver's compile time grows faster than the module (see launch.cpp).
uint64_t serial_loop_max_words(const DeviceCaps& caps);

// The tiles of a matrix multiplication on the device; m == 0 where the per-element dot is
// as good (small products). Per vendor, as choose_launch.
MatmulTiles choose_matmul_tiles(const DeviceCaps& caps, const MatmulShape& s);
// One group per output tile up to the device's group limit.
LaunchConfig launch_matmul(const DeviceCaps& caps, const MatmulShape& s, const MatmulTiles& tiles);
int64_t matmul_tile_count(const MatmulShape& s, const MatmulTiles& tiles);
// Whether a product is big enough in every direction for tiles to pay: a matrix-vector
// product (m or n small) or a short contraction stays per element.
bool matmul_worth_tiling(const MatmulShape& s);
// Shared-memory tiles of `m` x `n` per workgroup and `thread` x `thread` per invocation, with
// the largest k-step of `k` or less whose staged slices fit the device's shared memory; the
// wider side halved while the tile needs more invocations than a workgroup may have.
MatmulTiles staged_tiles(const DeviceCaps& caps, const MatmulShape& s, uint32_t m, uint32_t n, uint32_t thread,
                         uint32_t k = 16);

// Tiles of `m` x `n` stepping k at a time, computed by subgroups_m x subgroups_n subgroups
// in the device's cooperative matrices of fragment_m x fragment_n x fragment_k for s's
// operands (f32 accumulators); an empty MatmulTiles where the device lists no such shape or
// the tiles do not fit its limits.
MatmulTiles cooperative_tiles(const DeviceCaps& caps, const MatmulShape& s, uint32_t m, uint32_t n, uint32_t k,
                              uint32_t subgroups_m, uint32_t subgroups_n, uint32_t fragment_m = 16,
                              uint32_t fragment_n = 16, uint32_t fragment_k = 16);
// t with its k-steps shared among `slices` groups of invocations (MatmulTiles::k_slices),
// where the contraction is whole rounds of them and the workgroup and its shared memory
// (each slice's k-slices, a row of accumulators per invocation of slices 1..) fit; else t.
MatmulTiles sliced(const DeviceCaps& caps, const MatmulShape& s, MatmulTiles t, uint32_t slices);
// Shared memory of cooperative tiles (codegen/emit_matmul_cooperative.cpp): both k-slices
// (twice where split), rows padded by 16 bytes (in the larger of their two layouts), or the
// subgroups' f32 rows of accumulators after the contraction, whichever is larger.
uint64_t cooperative_shared_bytes(const MatmulTiles& t);

// Per-vendor choices, dispatched on caps.vendor() by choose_launch.
LaunchConfig launch_generic(const DeviceCaps& caps, const KernelShape& k);
LaunchConfig launch_lavapipe(const DeviceCaps& caps, const KernelShape& k);
LaunchConfig launch_nvidia(const DeviceCaps& caps, const KernelShape& k);
LaunchConfig launch_amd(const DeviceCaps& caps, const KernelShape& k);
passes::KernelBounds kernel_bounds_generic(const DeviceCaps& caps);
passes::KernelBounds kernel_bounds_lavapipe(const DeviceCaps& caps);
passes::KernelBounds kernel_bounds_nvidia(const DeviceCaps& caps);
MatmulTiles matmul_tiles_generic(const DeviceCaps& caps, const MatmulShape& s);
MatmulTiles matmul_tiles_lavapipe(const DeviceCaps& caps, const MatmulShape& s);
MatmulTiles matmul_tiles_nvidia(const DeviceCaps& caps, const MatmulShape& s);
MatmulTiles matmul_tiles_amd(const DeviceCaps& caps, const MatmulShape& s);

// One invocation per `unroll` * `lanes` items: enough groups to cover them, capped at max_groups.
LaunchConfig cover(const DeviceCaps& caps, int64_t items, uint32_t workgroup_size, uint32_t max_groups,
                   uint32_t unroll = 1, uint32_t lanes = 1);
// Elements per vector access of at most `bytes`: the largest power of two up to 4 (SPIR-V's
// widest vector) that divides the items; 1 where the kernel cannot be vectorised.
uint32_t vector_lanes(const KernelShape& k, uint32_t bytes);
// One workgroup per item: the largest power of two <= workgroup_size the device allows.
LaunchConfig cooperate(const DeviceCaps& caps, int64_t items, uint32_t workgroup_size, uint32_t max_groups);
// The cooperative launch of a kernel with few outputs and long reductions (KernelShape), a
// workgroup of up to workgroup_size per output; where its reductions run across rows, per
// 32 bytes of consecutive outputs instead.
LaunchConfig cooperate_reductions(const DeviceCaps& caps, const KernelShape& k, uint32_t workgroup_size);
// Whether a GPU's kernel has more outputs than cooperate_reductions was asked to take, each
// a reduction of 256 or more along a row (its innermost axis), so that an invocation per
// output would walk a row of its own, one memory sector per element. Not for a product in
// emulated f64 whose outputs alone give each compute unit 1024 invocations: each level of a
// workgroup's combination then costs an emulated add and its shuffles, more than the reads
// it coalesces save, and neighbouring outputs share their operands' rows in cache
// (docs/tuning.md, "Emulated reductions").
bool reduces_many_rows(const DeviceCaps& caps, const KernelShape& k);
// Their launch: a workgroup per output, whose neighbouring invocations read neighbouring
// elements; 64 invocations for rows below 1024 elements, 128 below 2048, 256 from there
// (docs/tuning.md, "Reductions over many rows").
LaunchConfig cooperate_rows(const DeviceCaps& caps, const KernelShape& k);
// A GPU's kernel whose reductions run along rows of 32 to 255 elements (softmax over a
// short sequence, a layer norm of a narrow layer), with no dot or scatter (whose outputs'
// invocations already share what they read, and would multiply by a segment's width for a
// few multiply-adds each; not measured): runs of rows to a workgroup, each taken
// by a segment of up to a subgroup of neighbouring invocations (LaunchConfig::segments), a
// power of two giving each at least 4 of the row's elements; 0 invocations where the
// device's subgroups are narrower than 8 (docs/tuning.md, "Short rows").
LaunchConfig segment_rows(const DeviceCaps& caps, const KernelShape& k);

}  // namespace nxv::codegen
