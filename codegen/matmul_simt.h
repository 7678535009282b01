// The SIMT tiles (emit_matmul in matmul.h) as one object: its k-slices staged through shared
// memory in emit_matmul_simt.cpp, its reads of operands from memory in emit_matmul_texels.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "codegen/matmul_product.h"

namespace nxv::codegen::matmul {

// Staged: one k-slice of each operand's tile in shared memory, [k][free] as vectors of V
// elements (16 bytes for f32 and f64; an invocation's run of rows or columns is one read),
// rows padded by one vector against bank conflicts. The workgroup fills them in runs of V
// elements along the operand's axis that runs along memory, neighbouring invocations at
// neighbouring runs: one vector load each where the operand is a graph input laid out that
// way, else V element loads; a run along the free axes is stored as one vector, a run along
// k element by element. (Slices laid out [free][k] for operands that run along k, stored a
// vector at a time, were slower on an H100, 2026-11-26: 4096^2 f32 38.0 against 45.6
// TFLOP/s, the attention scores 0.042 against 0.028 ms.)
// Two sets of slices where they fit: the next k-step's runs are read from memory before
// the current step multiplies and stored after it, one barrier per step instead of two.
struct StagedSlice {
  const Operand* o = nullptr;
  uint32_t free = 0;
  bool along_k = false;               // the operand runs along k in memory
  Id array = 0, elem = 0, entry = 0;  // entry: elem, or a vector of V of them
  uint32_t pitch = 0;                 // entries per k row
  uint32_t size = 0;                  // entries per set of slices
  const BufferRef* vectors = nullptr;  // the operand's binding, where a run is one load
  uint32_t runs = 0;                   // runs each invocation loads
};

struct SimtKernel : U32Ops {
  using Tile = Product::Tile;

  const MatmulTiles& t;
  const Product pr;
  const Operand &A, &B;
  const int64_t M, K;
  const uint32_t wg, cols, V;
  // Elements per run: V, 2V where each component of a vector read holds two (pairs), or a
  // texel's.
  const uint32_t R;
  // Rows of invocations, and the runs an invocation's rows come in (SimtKernel::row).
  uint32_t rows = 0, RV = 0;
  // local: the invocation's place within its k-slice (MatmulTiles::k_slices), `slice` which
  // one (0 without slices), slice_sets its first set of staged slices.
  Id acc_type = 0, local = 0, tx = 0, ty = 0, lane = 0, slice = 0, slice_sets = 0;
  // Sliced kernels: the array through which slices 1.. hand their accumulators to slice 0,
  // reduce_rows of an invocation's rows at a time.
  Id reduce = 0;
  uint32_t reduce_rows = 0;
  // Pairs: runs are read through a view of the operand's binding (bindings are numbered by
  // argument, as the parameter's index) as vectors of V 64-bit integers.
  std::vector<BufferRef> pair_views;
  TexelLayout tl;
  const BufferRef *vector_a = nullptr, *vector_b = nullptr;
  StagedSlice sa, sb;
  bool two_stages = false;

  // Declares what every tile shares: the invocation's place, the bindings runs are read
  // through, the staged slices (adding their bytes to *shared_bytes).
  SimtKernel(const ir::Graph& body, const ir::Node& dot, Emitter& e, const MatmulTiles& tiles, uint64_t* shared_bytes);

  // Output tile `p`: its accumulators over the contraction, then the body's outputs.
  void emit_tile(Id p, const BufferRef& output);
  void store_tile(const Tile& at, const Values& acc, const BufferRef& output);

  // emit_matmul_simt.cpp: the rows and columns an invocation holds, the k-loop, the staged slices.
  Id row(const Tile& at, uint32_t i);
  Id col(const Tile& at, uint32_t j);
  Values k_loop(const Tile& at);
  Values multiply(const Tile& at, Values acc, Id k0, Id set);
  std::vector<std::vector<Id>> broadcast_rows(const Tile& at, Id k0);
  StagedSlice slice_of(const Operand& o, uint32_t free);
  void declare_slices(uint64_t* shared_bytes);
  Id entry_at(const StagedSlice& s, Id set, Id kk, Id fv);
  Id entry_ptr(const StagedSlice& s, Id set, Id kk, Id fv);
  Id element_ptr(const StagedSlice& s, Id set, Id kk, Id f);
  std::pair<Id, Id> run_at(const StagedSlice& s, uint32_t r);
  Values fetch_runs(const StagedSlice& s, Id batch, Id free0, Id k0);
  void store_runs(const StagedSlice& s, const Values& v, Id set);
  Values fetch(const Tile& at, Id k0);
  void stage(const Values& v, Id set);
  Values combine_slices(Values acc);
  std::vector<Id> staged(const StagedSlice& s, Id set, Id first, uint32_t stride, uint32_t count, uint32_t kk);

  // emit_matmul_texels.cpp: reads of the operands from memory.
  Id clamp(Id x, int64_t hi, uint32_t tile);
  Id element(const Operand& o, Id batch, Id free, Id k);
  Id zero_of(const ir::Node& o);
  Id run(const Operand& o, const BufferRef& buf, Id batch, Id free, Id k, bool along_k);
  std::vector<Id> run_elements(const Operand& o, const BufferRef& buf, Id batch, Id free, Id k, bool along_k);
  const BufferRef* vector_buffer(const Operand& o, const std::vector<int64_t>& axes);
  std::vector<Id> direct(const Operand& o, const BufferRef* buf, bool along_k, bool ahead, uint32_t count,
                         const std::function<Id(uint32_t)>& at, std::vector<std::vector<Id>>& held, Id batch, Id k0, uint32_t kk);
};

}  // namespace nxv::codegen::matmul
