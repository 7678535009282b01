// The cooperative attention kernels' shared frame (emit_attention_cooperative.cpp): q's rows,
// k's and v's slices staged through shared memory and multiplied as fragments; the online
// softmax between the products runs through shared memory there, and in registers where
// the device's fragment layout allows it (emit_attention_registers.cpp).
#pragma once

#include <algorithm>
#include <functional>
#include <optional>

#include "codegen/attention.h"
#include "codegen/attention_rows.h"
#include "codegen/fragment_layout.h"

namespace nxv::codegen {

// Shared memory as 16-byte chunks (8 16-bit elements or 4 f32). First q's rows, which the
// subgroups load into fragments once per tile, then in their place k's slice [key][d] and
// v's [key][dv]; rows padded by a chunk against bank conflicts, head dims rounded up to the
// fragments' k (d) and n (dv) with zeros. Then per subgroup: its scores [row][key] in f32,
// its probabilities [row][key] in the operands' type, and the factor each row's outputs take
// [row][fragment.n] in f32 (a whole accumulator, since fragments multiply element by element),
// none of which the kernel that keeps them in registers takes.
struct CooperativeLayout {
  uint32_t d, dv;                    // the padded head dims
  uint32_t qk_pitch, v_pitch;        // chunks per row of q or k, of v
  uint32_t s_pitch, p_pitch;         // chunks per row of scores, of probabilities
  uint32_t qkv, per_subgroup;        // chunks

  CooperativeLayout(const AttentionTiles& t, int64_t D, int64_t Dv) {
    const auto& f = t.fragment;
    d = uint32_t((D + f.k - 1) / f.k * f.k), dv = uint32_t((Dv + f.n - 1) / f.n * f.n);
    qk_pitch = d / 8 + 1, v_pitch = dv / 8 + 1;
    s_pitch = t.keys / 4 + 1, p_pitch = t.keys / 8 + 1;
    qkv = std::max(t.rows * qk_pitch, t.keys * (qk_pitch + v_pitch));
    per_subgroup = t.registers ? 0 : f.m * (s_pitch + p_pitch + f.n / 4);
  }
  uint32_t chunks(const AttentionTiles& t) const { return qkv + t.rows / t.fragment.m * per_subgroup; }
};

class CooperativeAttention : public AttentionRows {
 public:
  CooperativeAttention(const ir::Graph& body, const ir::Node& attn, Emitter& em, const std::vector<BufferRef>& inputs,
                       const AttentionTiles& tiles, uint64_t* shared_bytes);
  void emit_tile(Id p, const BufferRef& output);

 protected:
  Id chunk_ptr(Id at) { return b.op(spv::OpAccessChain, b.type_pointer(spv::StorageClassWorkgroup, vec), {smem, at}); }
  Id word_ptr(Id chunk, Id word) {
    return b.op(spv::OpAccessChain, b.type_pointer(spv::StorageClassWorkgroup, e.u32()), {smem, chunk, word});
  }
  Id load(Id type, Id chunk, uint32_t stride, bool row_major) { return fr.load(type, chunk_ptr(chunk), stride, row_major); }
  void store(Id matrix, Id chunk, uint32_t stride) { fr.store(chunk_ptr(chunk), matrix, stride); }
  Id across_row(Id x, bool sum);  // else the maximum
  Id pack_rounded_pair(Id x0, Id x1);

  Id fetch_chunk(const ir::Node& n, Id view, const RowTile& at, Id row, int64_t extent, Id d0, int64_t width, uint32_t padded);
  Values fetch_rows(const ir::Node& n, Id view, const RowTile& at, Id r0, uint32_t rows, int64_t extent, int64_t width,
                    uint32_t padded);
  void stage_rows(const Values& xs, uint32_t rows, uint32_t padded, uint32_t base, uint32_t pitch);

  Values q_fragments(const RowTile& at);
  // The walk over the slices of keys, k's first staged before it: `step` takes the carried
  // `state` (of `types`, from `init`) and the slice at k0, and returns the next state; it
  // stages `next` (v's slice at k0 and k's next, read as the step began: their loads' latency
  // hidden behind the scores) with stage() once every subgroup's scores are taken. A barrier
  // ends each step: two per step. Returns the state after the last.
  struct Slices {
    Values v, k;
  };
  Values walk_keys(const RowTile& at, std::vector<Id> types, Values init, bool unrolled,
                   const std::function<Values(const Values& state, Id k0, const Slices& next)>& step);
  void stage(const Slices& next);
  Values key_loop(const RowTile& at, const Values& qf);
  void scores(const Values& qf);
  Values softmax(const RowTile& at, Id k0, Id m, Id l);
  Values add_products(Values o);
  void finish(const RowTile& at, const Values& state, const BufferRef& output);

  const AttentionTiles t;
  const CooperativeMatrixShape& f;
  const CooperativeLayout lay;
  const uint32_t wg, lanes, per_lane, frags_o;
  const matmul::Fragments fr;
  Id vec = 0, bvec = 0, zero_vec = 0, smem = 0, local = 0, subgroup = 0, lane = 0, r = 0, x = 0;
  Id s_base = 0, p_base = 0, a_base = 0;
  Id view_q = 0, view_k = 0, view_v = 0;
};

// The register plan for attention on fragments f (emit_attention_registers.cpp), where f's
// measured layout has one whose elements pair up.
std::optional<RegisterLayout> attention_register_layout(const CooperativeMatrixShape& f, uint32_t subgroup_size);
// emit_cooperative_attention for launch.attention.registers.
void emit_register_attention(const ir::Graph& body, const ir::Node& attn, Emitter& e, const std::vector<BufferRef>& inputs,
                             const BufferRef& output, const LaunchConfig& launch, uint64_t* shared_bytes);

}  // namespace nxv::codegen
