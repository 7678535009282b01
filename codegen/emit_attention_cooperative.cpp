// Fused attention on cooperative matrices (attention.h) for f16 and bf16: each subgroup
// takes fragment.m query rows; q·kᵀ and p·v are fragment products with f32 accumulators,
// and the online softmax between them runs on the subgroup's invocations through shared
// memory.
#include <algorithm>
#include <cmath>

#include "codegen/attention_cooperative.h"

namespace nxv::codegen {

using Values = spirv::Builder::Values;

CooperativeAttention::CooperativeAttention(const ir::Graph& body, const ir::Node& attn, Emitter& em,
                                           const std::vector<BufferRef>& inputs, const AttentionTiles& tiles,
                                           uint64_t* shared_bytes)
    : AttentionRows(body, attn, em), t(tiles), f(t.fragment), lay(t, D, Dv), wg(t.invocations()), lanes(t.lanes),
      per_lane(t.keys / t.lanes), frags_o(lay.dv / t.fragment.n),
      fr(em, t.fragment, !t.fragment.khr) {
  vec = b.type_vector(e.u32(), 4);
  bvec = b.type_vector(e.boolean(), 4);
  zero_vec = b.op(spv::OpCompositeConstruct, vec, {c(0), c(0), c(0), c(0)});
  const uint32_t chunks = lay.chunks(t);
  smem = b.workgroup_array(vec, chunks);
  *shared_bytes += uint64_t(chunks) * 16;
  b.capability(spv::CapabilityGroupNonUniform);
  b.capability(spv::CapabilityGroupNonUniformShuffle);
  local = b.builtin_x(spv::BuiltInLocalInvocationId);
  subgroup = b.builtin_u32(spv::BuiltInSubgroupId), lane = b.builtin_u32(spv::BuiltInSubgroupLocalInvocationId);
  r = u(spv::OpUDiv, lane, c(lanes)), x = u(spv::OpUMod, lane, c(lanes));
  s_base = u(spv::OpIAdd, c(lay.qkv), u(spv::OpIMul, subgroup, c(lay.per_subgroup)));
  p_base = u(spv::OpIAdd, s_base, c(f.m * lay.s_pitch));
  a_base = u(spv::OpIAdd, p_base, c(f.m * lay.p_pitch));
  auto view = [&](const ir::Node& n, int64_t width) { return width % 8 ? 0 : matmul::chunk_view(e, n, inputs.size()); };
  view_q = view(q, D), view_k = view(k, D), view_v = view(v, Dv);
}

// A row's value combined over its invocations, consecutive lanes of one subgroup.
Id CooperativeAttention::across_row(Id v, bool sum) {
  for (uint32_t off = lanes / 2; off > 0; off /= 2) {
    Id other = b.op_in_place(spv::OpGroupNonUniformShuffleXor, vt, {c(spv::ScopeSubgroup), v, c(off)});
    v = sum ? flt(spv::OpFAdd, v, other) : max(v, other);
  }
  return v;
}

// Two probabilities in [0, 1] (or NaN) as the operands' type, rounded: f16 by the
// device's packing (nearest even or toward zero, either within the probabilities' error
// bound: docs/numerics.md), bf16 to nearest even.
Id CooperativeAttention::pack_rounded_pair(Id x0, Id x1) {
  if (f.operands == MatrixComponent::F16)
    return b.ext(GLSLstd450PackHalf2x16, e.u32(), {b.op(spv::OpCompositeConstruct, b.type_vector(b.type_float(32), 2), {x0, x1})});
  return u(spv::OpBitwiseOr, u(spv::OpShiftRightLogical, matmul::bf16_high(e, x0), c(16)), matmul::bf16_high(e, x1));
}

// The 8 elements of row `row` of operand n ([B..., extent, width]) from d0 as one chunk, 0
// past its ends: through its chunk view, else element by element.
Id CooperativeAttention::fetch_chunk(const ir::Node& n, Id view, const RowTile& at, Id row, int64_t extent, Id d0,
                                     int64_t width, uint32_t padded) {
  Id in = less(row, extent);
  const Id rc = clamp(row, extent);
  Id value;
  if (view) {
    if (padded > width) in = b.op(spv::OpLogicalAnd, e.boolean(), {in, less(d0, width)});
    const Id dc = padded > width ? b.ext(GLSLstd450UMin, e.u32(), {d0, c(width - 8)}) : d0;
    const Id row_chunk = u(spv::OpIMul, u(spv::OpIAdd, u(spv::OpIMul, at.bt, c(extent)), rc), c(width / 8));
    value = matmul::load_chunk(e, view, u(spv::OpIAdd, row_chunk, u(spv::OpUDiv, dc, c(8))));
  } else {
    std::vector<Id> words;
    for (uint32_t j = 0; j < 8; j += 2) {
      Id pair[2];
      for (uint32_t h = 0; h < 2; ++h) {
        const Id d = u(spv::OpIAdd, d0, c(j + h));
        pair[h] = read(n, at.bd, rc, clamp(d, width));
        if (padded > width) pair[h] = e.b_select(vt, less(d, width), pair[h], e.constant(ct, 0));
      }
      words.push_back(matmul::pack_exact_pair(e, f.operands, pair[0], pair[1]));
    }
    value = b.op(spv::OpCompositeConstruct, vec, words);
  }
  return b.op(spv::OpSelect, vec, {b.op(spv::OpCompositeConstruct, bvec, {in, in, in, in}), value, zero_vec});
}

// The chunks of `rows` rows of n from r0, each invocation's every wg-th; straight-line, so
// that all their loads are in flight together.
Values CooperativeAttention::fetch_rows(const ir::Node& n, Id view, const RowTile& at, Id r0, uint32_t rows, int64_t extent,
                                        int64_t width, uint32_t padded) {
  const uint32_t per_row = padded / 8, total = rows * per_row;
  Values xs;
  for (uint32_t s = 0; s < total; s += wg) {
    Id ch = u(spv::OpIAdd, local, c(s));
    if (s + wg > total) ch = b.ext(GLSLstd450UMin, e.u32(), {ch, c(total - 1)});
    const Id d0 = u(spv::OpIMul, u(spv::OpUMod, ch, c(per_row)), c(8));
    xs.push_back(fetch_chunk(n, view, at, u(spv::OpIAdd, r0, u(spv::OpUDiv, ch, c(per_row))), extent, d0, width, padded));
  }
  return xs;
}

void CooperativeAttention::stage_rows(const Values& xs, uint32_t rows, uint32_t padded, uint32_t base, uint32_t pitch) {
  const uint32_t per_row = padded / 8, total = rows * per_row;
  for (size_t i = 0; i < xs.size(); ++i) {
    const uint32_t s = uint32_t(i) * wg;
    const Id ch = u(spv::OpIAdd, local, c(s));
    const Id at = u(spv::OpIAdd, c(base), u(spv::OpIAdd, u(spv::OpIMul, u(spv::OpUDiv, ch, c(per_row)), c(pitch)), u(spv::OpUMod, ch, c(per_row))));
    auto put = [&] { b.op_void(spv::OpStore, {chunk_ptr(at), xs[i]}); };
    if (s + wg <= total) put();
    else b.if_then(less(ch, total), put);
  }
}

// The subgroup's rows of q as A fragments along d, staged through the shared memory k and v
// take next.
Values CooperativeAttention::q_fragments(const RowTile& at) {
  stage_rows(fetch_rows(q, view_q, at, at.q0, t.rows, Sq, D, lay.d), t.rows, lay.d, 0, lay.qk_pitch);
  b.workgroup_barrier();
  Values qf;
  const Id first = u(spv::OpIMul, u(spv::OpIMul, subgroup, c(f.m)), c(lay.qk_pitch));
  for (uint32_t kk = 0; kk < lay.d; kk += f.k) qf.push_back(load(fr.a, u(spv::OpIAdd, first, c(kk / 8)), lay.qk_pitch, true));
  b.workgroup_barrier();  // k's slice takes q's place
  return qf;
}

// The subgroup's scores of the staged slice of k, q·kᵀ in f32, into its scores' rows: k's
// slice, [key][d], is kᵀ column-major.
void CooperativeAttention::scores(const Values& qf) {
  for (uint32_t j = 0; j < t.keys; j += f.n) {
    Id acc = fr.zero_c;
    for (uint32_t kk = 0; kk < lay.d; kk += f.k)
      acc = fr.mul_add(qf[kk / f.k], load(fr.b, c(int64_t(j) * lay.qk_pitch + kk / 8), lay.qk_pitch, false), acc);
    store(acc, u(spv::OpIAdd, s_base, c(j / 4)), lay.s_pitch);
  }
  b.storage_barrier(spv::ScopeSubgroup);
}

// The invocation's run of its row's scores of the slice at k0, as Nx computes them; the
// row's running maximum m and this invocation's partial sum l updated, its probabilities
// stored and the factor of the row's outputs so far; returns m and l.
Values CooperativeAttention::softmax(const RowTile& at, Id k0, Id m, Id l) {
  const Id row = u(spv::OpIAdd, at.q0, u(spv::OpIAdd, u(spv::OpIMul, subgroup, c(f.m)), r));
  const Id first = u(spv::OpIMul, x, c(per_lane));  // the run's first key in the slice
  const Id s_row = u(spv::OpIAdd, s_base, u(spv::OpIMul, r, c(lay.s_pitch)));
  Values sc;
  for (uint32_t i = 0; i < per_lane; i += 4) {
    const Id w = b.op_in_place(spv::OpLoad, vec, {chunk_ptr(u(spv::OpIAdd, s_row, u(spv::OpUDiv, u(spv::OpIAdd, first, c(i)), c(4))))});
    for (uint32_t j = 0; j < 4; ++j) {
      const Id key = u(spv::OpIAdd, k0, u(spv::OpIAdd, first, c(i + j)));
      sc.push_back(score(b.op(spv::OpBitcast, vt, {b.op(spv::OpCompositeExtract, e.u32(), {w}, {j})}), at.bd, row, key));
    }
  }
  Id tile_max = sc[0];
  for (size_t i = 1; i < sc.size(); ++i) tile_max = max(tile_max, sc[i]);
  const Id m_new = max(m, across_row(tile_max, false));
  const Id alpha = rescale(m, m_new);
  Id sum = e.constant(ct, 0);
  const Id p_row = u(spv::OpIAdd, p_base, u(spv::OpIMul, r, c(lay.p_pitch)));
  for (uint32_t i = 0; i < per_lane; i += 8) {
    std::vector<Id> words;
    for (uint32_t j = 0; j < 8; j += 2) {
      const Id p0 = probability(sc[i + j], m_new), p1 = probability(sc[i + j + 1], m_new);
      sum = flt(spv::OpFAdd, flt(spv::OpFAdd, sum, p0), p1);
      words.push_back(pack_rounded_pair(p0, p1));
    }
    const Id ch = u(spv::OpIAdd, p_row, u(spv::OpUDiv, u(spv::OpIAdd, first, c(i)), c(8)));
    b.op_void(spv::OpStore, {chunk_ptr(ch), b.op(spv::OpCompositeConstruct, vec, words)});
  }
  // Accumulators multiply element by element (SPV_KHR_cooperative_matrix's OpFMul); the NV
  // extension divides only, by the factor's reciprocal (+inf for 0: 0 / inf is 0).
  const Id factor = fr.nv ? flt(spv::OpFDiv, e.constant(ct, 1), alpha) : alpha;
  const Id bits = b.op(spv::OpBitcast, e.u32(), {factor});
  for (uint32_t i = 0; i < f.n; i += lanes) {
    const Id word = u(spv::OpIAdd, u(spv::OpIMul, r, c(f.n)), u(spv::OpIAdd, x, c(i)));
    b.op_void(spv::OpStore, {word_ptr(u(spv::OpIAdd, a_base, u(spv::OpUDiv, word, c(4))), u(spv::OpUMod, word, c(4))), bits});
  }
  return {m_new, fma(l, alpha, sum)};
}

// The outputs so far rescaled by the staged factors, plus the staged probabilities times v's
// staged slice.
Values CooperativeAttention::add_products(Values o) {
  const Id factors = load(fr.c, a_base, f.n / 4, true);
  for (Id& acc : o) acc = b.op(fr.nv ? spv::OpFDiv : spv::OpFMul, fr.c, {acc, factors});
  const uint32_t v_base = t.keys * lay.qk_pitch;
  for (uint32_t kk = 0; kk < t.keys; kk += f.k) {
    const Id pf = load(fr.a, u(spv::OpIAdd, p_base, c(kk / 8)), lay.p_pitch, true);
    for (uint32_t j = 0; j < frags_o; ++j)
      o[j] = fr.mul_add(pf, load(fr.b, c(v_base + int64_t(kk) * lay.v_pitch + j * f.n / 8), lay.v_pitch, true), o[j]);
  }
  return o;
}

Values CooperativeAttention::walk_keys(const RowTile& at, std::vector<Id> types, Values init, bool unrolled,
                                       const std::function<Values(const Values& state, Id k0, const Slices& next)>& step) {
  if (Sk == 0) return init;
  types.push_back(e.u32());
  init.push_back(c(0));
  const Id end = key_end(at.q0, t.rows);
  stage_rows(fetch_rows(k, view_k, at, c(0), t.keys, Sk, D, lay.d), t.keys, lay.d, 0, lay.qk_pitch);
  b.workgroup_barrier();
  if (!unrolled) b.dont_unroll_next_loop();
  Values out = b.loop(
      types, init, [&](const Values& s) { return b.op(spv::OpULessThan, e.boolean(), {s.back(), end}); },
      [&](const Values& s) {
        const Id k0 = s.back(), k1 = u(spv::OpIAdd, k0, c(t.keys));
        // Both in flight while the scores are taken; past the last slice, k's rows are
        // clamped reads that no step uses.
        const Slices next{fetch_rows(v, view_v, at, k0, t.keys, Sk, Dv, lay.dv), fetch_rows(k, view_k, at, k1, t.keys, Sk, D, lay.d)};
        Values state = step(Values(s.begin(), s.end() - 1), k0, next);
        b.workgroup_barrier();  // k's slice staged, v's free for the next
        state.push_back(k1);
        return state;
      },
      uint64_t((Sk + t.keys - 1) / t.keys));
  out.pop_back();
  return out;
}

void CooperativeAttention::stage(const Slices& next) {
  stage_rows(next.v, t.keys, lay.dv, t.keys * lay.qk_pitch, lay.v_pitch);
  b.workgroup_barrier();
  stage_rows(next.k, t.keys, lay.d, 0, lay.qk_pitch);
}

// Carried over the slices of keys: the row's running maximum, this invocation's partial sum
// of probabilities, the subgroup's output fragments.
Values CooperativeAttention::key_loop(const RowTile& at, const Values& qf) {
  std::vector<Id> types{vt, vt};
  Values init{minus_inf(), e.constant(ct, 0)};
  types.insert(types.end(), frags_o, fr.c);
  init.insert(init.end(), frags_o, fr.zero_c);
  return walk_keys(at, types, init, true, [&](const Values& s, Id k0, const Slices& next) {
    scores(qf);
    Values state = softmax(at, k0, s[0], s[1]);
    stage(next);
    const Values o = add_products(Values(s.begin() + 2, s.end()));
    state.insert(state.end(), o.begin(), o.end());
    return state;
  });
}

// Each output fragment through the subgroup's scores' memory, its elements then written by
// consecutive invocations at consecutive columns; each row's maximum and divisor come from its
// first invocation, fetched once for all the fragments.
void CooperativeAttention::finish(const RowTile& at, const Values& state, const BufferRef& output) {
  const Id d = row_divisor(across_row(state[1], true));
  struct Place {
    Id rr, cc, m, d, row, in_rows;
  };
  std::vector<Place> places;
  for (uint32_t i = 0; i < f.m * f.n; i += f.m * lanes) {  // a subgroup's invocations
    Place p;
    const Id pos = u(spv::OpIAdd, lane, c(i));
    p.rr = u(spv::OpUDiv, pos, c(f.n)), p.cc = u(spv::OpUMod, pos, c(f.n));
    const Id from = u(spv::OpIMul, p.rr, c(lanes));
    p.m = b.op_in_place(spv::OpGroupNonUniformShuffle, vt, {c(spv::ScopeSubgroup), state[0], from});
    p.d = b.op_in_place(spv::OpGroupNonUniformShuffle, vt, {c(spv::ScopeSubgroup), d, from});
    p.row = u(spv::OpIAdd, at.q0, u(spv::OpIAdd, u(spv::OpIMul, subgroup, c(f.m)), p.rr));
    p.in_rows = less(p.row, Sq);
    places.push_back(p);
  }
  for (uint32_t j = 0; j < frags_o; ++j) {
    store(state[2 + j], s_base, lay.s_pitch);
    b.storage_barrier(spv::ScopeSubgroup);
    for (const Place& p : places) {
      const Id word = u(spv::OpIAdd, u(spv::OpIMul, p.rr, c(lay.s_pitch * 4)), p.cc);
      const Id o = b.op(spv::OpBitcast, vt, {b.op_in_place(spv::OpLoad, e.u32(), {word_ptr(u(spv::OpIAdd, s_base, u(spv::OpUDiv, word, c(4))), u(spv::OpUMod, word, c(4)))})});
      const Id out = row_output(o, p.d, p.m);
      const Id col = u(spv::OpIAdd, c(int64_t(j) * f.n), p.cc);
      Id in = p.in_rows;
      if (lay.dv != Dv) in = b.op(spv::OpLogicalAnd, e.boolean(), {in, less(col, Dv)});
      b.if_then(in, [&] { store_output(output, u(spv::OpIAdd, u(spv::OpIMul, u(spv::OpIAdd, u(spv::OpIMul, at.bt, c(Sq)), p.row), c(Dv)), col), out); });
    }
    b.storage_barrier(spv::ScopeSubgroup);  // the next fragment takes the same memory
  }
}

void CooperativeAttention::emit_tile(Id p, const BufferRef& output) {
  const RowTile at = row_tile(p, t.rows);
  finish(at, key_loop(at, q_fragments(at)), output);
}

AttentionTiles choose_cooperative_attention_tiles(const DeviceCaps& caps, ir::DType type, int64_t d, int64_t dv) {
  const MatrixComponent component = type == ir::DType::F16 ? MatrixComponent::F16 : type == ir::DType::BF16 ? MatrixComponent::BF16
                                                                                                            : MatrixComponent::None;
  if (component == MatrixComponent::None || !caps.subgroup_shuffle) return {};
  std::vector<CooperativeMatrixShape> shapes;
  for (const auto& f : caps.cooperative_matrix_shapes)
    if (f.operands == component && f.accumulator == MatrixComponent::F32 && f.k % 8 == 0 && f.n % 8 == 0) shapes.push_back(f);
  // The KHR opcodes where listed (emit_matmul_cooperative.cpp says why), then the largest
  // fragments.
  std::stable_sort(shapes.begin(), shapes.end(), [](const auto& x, const auto& y) {
    return std::make_pair(x.khr, x.m * x.n * x.k) > std::make_pair(y.khr, y.m * y.n * y.k);
  });
  const uint32_t sg = caps.subgroup_size;
  for (const auto& f : shapes) {
    const uint32_t lanes = f.m ? sg / f.m : 0;
    // A row's invocations, consecutive in a subgroup, combine by shuffles of lanes apart; each
    // takes whole chunks of its row's probabilities and an equal share of a fragment's columns.
    if (!lanes || sg % f.m || (lanes & (lanes - 1)) || f.n % lanes) continue;
    // In registers a slice's scores and probabilities take keys x m / subgroup size registers
    // each an invocation: 32 keys leave room for the loads of the next slices, where 64 spilled
    // on an H100 (docs/tuning.md).
    const bool registers = attention_register_layout(f, sg).has_value();
    using Tiles = std::vector<std::pair<uint32_t, uint32_t>>;  // subgroups, keys
    Tiles candidates = registers ? Tiles{{4, 32}, {2, 32}, {1, 32}, {1, 16}} : Tiles{{4, 64}, {4, 32}, {2, 64}, {2, 32}, {1, 32}, {1, 16}};
    for (auto [subgroups, keys] : candidates) {
      AttentionTiles t;
      t.rows = subgroups * f.m, t.keys = keys, t.lanes = lanes, t.row_step = 1;
      t.shuffles = t.own_v = true;
      t.fragment = f;
      t.registers = registers;
      if (keys % f.n || keys % f.k || keys % (8 * lanes) || t.invocations() > caps.max_workgroup_invocations ||
          uint64_t(CooperativeLayout(t, d, dv).chunks(t)) * 16 > caps.max_shared_memory_bytes)
        continue;
      return t;
    }
  }
  return {};
}

void emit_cooperative_attention(const ir::Graph& body, const ir::Node& attn, Emitter& e, const std::vector<BufferRef>& inputs,
                                const BufferRef& output, const LaunchConfig& launch, uint64_t* shared_bytes) {
  if (launch.attention.registers) return emit_register_attention(body, attn, e, inputs, output, launch, shared_bytes);
  CooperativeAttention k(body, attn, e, inputs, launch.attention, shared_bytes);
  k.each_tile(launch, [&](Id p) { k.emit_tile(p, output); });
}

}  // namespace nxv::codegen
