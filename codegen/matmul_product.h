// The dot as the tiled kernels (matmul.h) see it: its operands' axes and extents, how each
// can be read, and the k-loop that the SIMT and the cooperative kernels share.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "codegen/matmul.h"
#include "ir/dot_epilogue.h"

namespace nxv::codegen::matmul {

using Values = spirv::Builder::Values;

// u32 arithmetic as the kernels write it.
struct U32Ops {
  Emitter& e;
  spirv::Builder& b;
  Id u(spv::Op op, Id x, Id y) const { return b.op(op, e.u32(), {x, y}); }
  Id c(int64_t v) const { return e.u32c(uint64_t(v)); }
  Id less(Id x, int64_t v) const { return b.op(spv::OpULessThan, e.boolean(), {x, c(v)}); }
};

struct Operand {
  const ir::Node& node;
  std::vector<int64_t> batch_axes, free_axes, contract_axes;
  std::vector<int64_t> free_extents;
  uint32_t tile;  // its free extent per output tile (tiles' m or n)
};

// Elements of `node` per texel.
uint32_t texel_run(const ir::Node& node);

// Whether the operand's elements lie along a contracted axis in memory: then the threads
// loading a tile walk the contraction, else its free axis, so that neighbours read
// neighbouring addresses.
bool contiguous_along_k(const ir::Graph& body, const ir::Node& operand, const std::vector<int64_t>& contract);

// Whether `node` can be read `lanes` elements at a time along `axes`: a graph input whose
// innermost axes the last of them are, in order, together a multiple of `lanes` long (so that
// a run of consecutive positions along `axes` is one of consecutive elements in memory, and
// every vector's first element is a multiple of `lanes` into the buffer).
bool reads_as_vectors(const ir::Node& node, const std::vector<int64_t>& axes, uint32_t lanes);

// How a dot's operands can be read as texels (both what MatmulShape::texel_run asks and what
// a texel kernel binds), each as the product reads it in place: a, b: the first and the
// second can; a_rows: the first's runs lie along its rows (A = [K][M]), else along the
// contraction; b_k: the second's lie along the contraction (B = [N][K]), else along its
// columns.
struct TexelLayout {
  bool a = false, a_rows = false, b = false, b_k = false;
};
TexelLayout texel_layout(const Operand& A, const Operand& B);

// Element (free, k) of an operand in batch `batch`, at positions clamped into [0, extent)
// where tiles of o.tile x k_step overrun it; past the contraction's end it is 0 (so is the other
// operand's: 0 * inf would be NaN), which adds nothing to an accumulator that starts at +0.
Id operand_element(Emitter& e, const Operand& o, const std::vector<int64_t>& batch_extents,
                   const std::vector<int64_t>& k_extents, uint32_t k_step, Id batch, Id free, Id k);

// 16-bit operands as the cooperative kernels stage them: 16-byte chunks of 8 elements,
// a pair per u32, the first in its low half.
//
// The bf16 bits of f32 `x` in the high half of a u32: rounded to nearest even, a NaN kept a
// NaN.
Id bf16_high(Emitter& e, Id x);
// Two f16 or bf16 values (`c`) that f32 registers hold exactly, as one u32 of their bits.
Id pack_exact_pair(Emitter& e, MatrixComponent c, Id x0, Id x1);
// The binding of `node`, a parameter of the kernel (one of its `inputs` bindings), as an
// array of 16-byte chunks; else 0.
Id chunk_view(Emitter& e, const ir::Node& node, size_t inputs);
// Chunk `at` of a chunk view.
Id load_chunk(Emitter& e, Id view, Id at);

// The element type of f16 or bf16 fragment operands, its capability or extension declared.
Id operand_component(spirv::Builder& b, MatrixComponent operands);

// Cooperative matrices of shape f as both cooperative kernels use them: the fragment types
// (declared with the capabilities they need), an accumulator of zeros, and the loads, stores
// and products in SPV_NV_cooperative_matrix's opcodes where `nv`, else SPV_KHR's (pointers
// to 16-byte chunks, strides in chunks).
struct Fragments {
  Fragments(Emitter& e, const CooperativeMatrixShape& f, bool nv);
  Id load(Id type, Id ptr, uint32_t stride, bool row_major) const;
  void store(Id ptr, Id matrix, uint32_t stride) const;  // row-major
  Id mul_add(Id x, Id y, Id acc) const;

  Emitter& e;
  const bool nv;
  Id component = 0;  // the operands' element type
  Id a = 0, b = 0, c = 0, zero_c = 0;
};

// k0 of the k-step `stride` after k0's, for reading its slices ahead: the last of all
// `steps` steps of k where that passes it (whose slices are read again for a step that does
// not come, within the operands, rather than past their ends).
Id next_step(Emitter& e, Id k0, uint32_t stride, uint32_t k, uint64_t steps);

// The k-steps of a loop over a contraction of K elements: k0 = first, first + stride, ...
// while below K, each step k elements (first 0 where the Id is 0; stride 0: k).
struct KSteps {
  int64_t K = 0;
  uint32_t k = 0;
  Id first = 0;
  uint32_t stride = 0;
  uint32_t step() const { return stride ? stride : k; }
  uint64_t count() const { return uint64_t((K + step() - 1) / step()); }
};

// A loop over the k-steps: carried, the values of `types` from `init`, then k0; `step`
// gives the next values of the former from all carried. Returns all carried after the last
// step.
Values k_steps(Emitter& e, std::vector<Id> types, Values init, const KSteps& ks,
               const std::function<Values(const Values& carried, Id k0)>& step);

// The k-loop of a kernel with two sets of slices in shared memory: the first k-step's slices
// are staged into set 0 before the loop (where there is a step); each step reads the next
// step's from memory before multiplying the current set and stores them into the other set
// after, one barrier per step. The sets are numbered 0 and `sets_sum` (an index, or an offset
// into shared memory), the other set of `set` being sets_sum - set. Carried: the
// accumulators (`types`, from `init`), the current set and k0; returns all three.
Values double_buffered_k_loop(Emitter& e, std::vector<Id> types, Values init, const KSteps& ks, uint32_t sets_sum,
                              const std::function<Values(Id k0)>& fetch, const std::function<void(const Values&, Id set)>& stage,
                              const std::function<Values(Values acc, Id k0, Id set)>& multiply);

// The dot as both kernels tile it: its operands, extents and tiles.
struct Product {
  const ir::Graph& body;
  const ir::Node& dot;
  const MatmulTiles& t;
  DotAxes d;
  Operand A, B;
  std::vector<int64_t> batch_extents, k_extents;
  int64_t M, N, K, tiles_m, tiles_n;
  ir::DotEpilogue epilogue;  // from the dot to the body's output (matmul_dot has checked it)

  Product(const ir::Graph& g, const ir::Node& dot_node, const MatmulTiles& tiles);

  // Output tile `p`'s batch and first row and column.
  struct Tile {
    Id batch, m0, n0;
  };
  Tile tile(Emitter& e, Id p) const;

  // Computes the body's output at (batch, row, col) from the dot's accumulator there and
  // stores it where the epilogue's moves put that element: where the position lies inside
  // the product (store) or where the caller has tested that it does (store_inside).
  void store(Emitter& e, const BufferRef& output, Id batch, Id row, Id col, Id acc) const;
  void store_inside(Emitter& e, const BufferRef& output, Id batch, Id row, Id col, Id acc) const;
};

}  // namespace nxv::codegen::matmul
