// What both fused attention kernels (emit_attention.cpp on SIMT, emit_attention_cooperative.cpp
// on cooperative matrices) share: q, k and v as rows of [batch..., S, D], Nx's rules for one
// score, and the steps of the online softmax over a row's keys.
#pragma once

#include <functional>
#include <vector>

#include "codegen/matmul_product.h"
#include "codegen/targets/launch.h"
#include "ir/attention.h"

namespace nxv::codegen {

class AttentionRows : public matmul::U32Ops {
 public:
  AttentionRows(const ir::Graph& body, const ir::Node& attn, Emitter& em);

  // Tiles of `rows` query rows over all batch elements; tile p's batch element (flat and as
  // dims) and first row: row tiles in order, or under a causal mask the last ones first.
  int64_t tiles(uint32_t rows) const { return ir::num_elements(batch) * row_tiles(rows); }
  struct RowTile {
    Id bt, q0;
    std::vector<Id> bd;
  };
  RowTile row_tile(Id p, uint32_t rows);
  // The kernel's loop over its tiles of `launch.attention.rows` rows: workgroup g takes
  // tiles g, g + groups, ...; `tile` emits one.
  void each_tile(const LaunchConfig& launch, const std::function<void(Id p)>& tile);

 protected:
  using Values = spirv::Builder::Values;

  const ir::Node& arg(size_t i) const { return g.node(node.args.at(i)); }
  int64_t row_tiles(uint32_t rows) const { return (Sq + rows - 1) / rows; }
  Id clamp(Id x, int64_t extent) { return b.ext(GLSLstd450UMin, e.u32(), {x, c(std::max<int64_t>(extent - 1, 0))}); }
  Id flt(spv::Op op, Id x, Id y) { return b.op(op, vt, {x, y}); }
  Id fma(Id x, Id y, Id acc) { return b.ext(GLSLstd450Fma, vt, {x, y, acc}); }
  Id is(spv::Op op, Id x, Id y) { return b.op(op, e.boolean(), {x, y}); }
  Id max(Id m, Id x) { return e.reduce_step("reduce_max", ct, ct, m, x); }
  Id minus_inf() { return e.float_literal(ct, -INFINITY); }

  // Element (r, col) of a [B..., rows, cols] operand, in the compute type.
  Id read(const ir::Node& n, const std::vector<Id>& bd, Id r, Id col);
  // q·k of query row r and `key` as Nx computes the score from it: scaled, biased, masked
  // (the causal mask too); -inf past the last key, which no row's softmax includes.
  Id score(Id qk, const std::vector<Id>& bd, Id r, Id key);
  // s, or ±inf where it lies past f16's largest in an f16 attention. Nx computes f16 scores
  // in f16: the product, the scaled and the biased score each round to it, and one that
  // overflows there makes its key's weight 0 or its row NaN, where f32 scores stay finite.
  // bf16's rounding (Nx truncates) reaches inf only where f32 does.
  Id overflowed(Id s);
  // The end of the keys any row of the tile of `rows` rows at q0 keeps: all of them, or for
  // a causal offset, q0 + rows + offset clamped into [0, Sk].
  Id key_end(Id q0, uint32_t rows);
  // The online softmax of a row whose running maximum m_old grows to m: the factor its sum
  // and outputs so far take (0 where nothing was kept before), and a score's term (0 while
  // nothing is kept: all -inf), scaled by `weight` where the values' type is the compute
  // type.
  Id rescale(Id m_old, Id m);
  Id probability(Id s, Id m);
  // What a row's outputs are divided by, from its sum l of probabilities: l, or for f16 and
  // bf16 results 1 / l, taken once a row, by which they are multiplied instead. The
  // reciprocal's f32 rounding lies far below their own, and a division costs several
  // instructions an output.
  Id row_divisor(Id l);
  // A row's output from its sum o of probability-weighted values, its row_divisor d and its
  // maximum m: o / l; NaN where nothing was kept (all its scores -inf: Nx's softmax is 0/0
  // there); 0 where there are no keys at all (an empty contraction).
  Id row_output(Id o, Id d, Id m);
  // Stores an output, computed in the compute type, as the result's type.
  void store_output(const BufferRef& output, Id index, Id value);

  const ir::Graph& g;
  const ir::Node& node;
  const ir::AttentionAttrs a;
  const ir::Node &q, &k, &v;
  const ir::Node *mask = nullptr, *bias = nullptr;
  ir::DType T = ir::DType::F32, ct = ir::DType::F32;  // the result's type, the compute type
  Id vt = 0;                                          // the compute type's register
  std::vector<int64_t> batch;
  int64_t Sq = 0, D = 0, Sk = 0, Dv = 0;

 private:
  bool multiplies_outputs() const;  // row_divisor's reciprocal
  // Element (r, key) of a mask or bias broadcast, by Nx's rules, to [B..., Sq, Sk].
  Id read_broadcast(const ir::Node& n, const std::vector<Id>& bd, Id r, Id key);

  Id scale = 0, masked = 0, weight = 0;
  bool scale_overflows = false;  // an f16 score can overflow in the scaling
};

}  // namespace nxv::codegen
