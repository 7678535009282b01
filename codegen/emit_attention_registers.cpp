// Fused attention on cooperative matrices with the online softmax in registers: where the
// device's measured fragment layout has a register plan (fragment_layout.h), each
// invocation works on the scores its accumulators hold, combines a row's maxima and sums by
// shuffles, and builds the probabilities' A operand from the same registers; only q, k and v
// pass through shared memory (attention_cooperative.h).
#include "codegen/attention_cooperative.h"

namespace nxv::codegen {

namespace {

using Values = spirv::Builder::Values;

class RegisterAttention : public CooperativeAttention {
 public:
  RegisterAttention(const ir::Graph& body, const ir::Node& attn, Emitter& em, const std::vector<BufferRef>& inputs,
                    const AttentionTiles& tiles, const RegisterLayout& plan, uint64_t* shared_bytes)
      : CooperativeAttention(body, attn, em, inputs, tiles, shared_bytes), p(plan), C(plan.classes) {
    lane_row = u(spv::OpIAdd, u(spv::OpIMul, subgroup, c(f.m)), b.table_word(b.constant_words(p.lane_row), lane));
    lane_col = b.table_word(b.constant_words(p.lane_col), lane);
  }

  void emit_tile(Id tile, const BufferRef& output) {
    const RowTile at = row_tile(tile, t.rows);
    finish(at, key_loop(at, q_fragments(at)), output);
  }

 private:
  Id element(Id matrix, uint32_t i) { return b.op(spv::OpCompositeExtract, vt, {matrix}, {i}); }
  // Row of element i within the tile, and its column within its fragment.
  Id row(uint32_t i) { return u(spv::OpIAdd, lane_row, c(p.row[i])); }
  Id col(uint32_t i) { return u(spv::OpIAdd, lane_col, c(p.col[i])); }
  // A row's value combined over the invocations that hold it.
  Id across(Id x, bool sum) {
    for (uint32_t s : p.xor_basis) {
      const Id other = b.op_in_place(spv::OpGroupNonUniformShuffleXor, vt, {c(spv::ScopeSubgroup), x, c(s)});
      x = sum ? flt(spv::OpFAdd, x, other) : max(x, other);
    }
    return x;
  }
  // The accumulator whose every element is its row's value of `per_class`.
  Id by_row(const Values& per_class) {
    Id m = fr.zero_c;
    for (uint32_t i = 0; i < p.elements; ++i) m = b.op(spv::OpCompositeInsert, fr.c, {per_class[p.class_of[i]], m}, {i});
    return m;
  }
  // The A operand of one fragment's probabilities, rounded to the operands' type in pairs.
  Id a_operand(const Values& probs);

  Values scores(const RowTile& at, const Values& qf, Id k0);
  Values step(const RowTile& at, const Values& qf, const Values& state, Id k0, const Slices& next);
  Values key_loop(const RowTile& at, const Values& qf);
  void finish(const RowTile& at, const Values& state, const BufferRef& output);

  const RegisterLayout& p;
  const uint32_t C;  // rows an invocation holds of a fragment
  Id lane_row = 0, lane_col = 0;
};

Id RegisterAttention::a_operand(const Values& probs) {
  const Id pair_type = b.type_vector(fr.component, 2);
  Values halves;
  for (uint32_t j = 0; j < p.elements; j += 2) {
    const Id word = pack_rounded_pair(probs[p.a_from_accumulator[j]], probs[p.a_from_accumulator[j + 1]]);
    const Id pair = b.op(spv::OpBitcast, pair_type, {word});
    for (uint32_t h = 0; h < 2; ++h) halves.push_back(b.op(spv::OpCompositeExtract, fr.component, {pair}, {h}));
  }
  Id m = b.op(spv::OpCompositeConstruct, fr.a, {halves[0]});
  for (uint32_t j = 1; j < p.elements; ++j) m = b.op(spv::OpCompositeInsert, fr.a, {halves[j], m}, {j});
  return m;
}

// The scores of the staged slice of k at k0 as Nx computes them, fragment by fragment of
// keys, each invocation's elements in order.
Values RegisterAttention::scores(const RowTile& at, const Values& qf, Id k0) {
  Values sc;
  for (uint32_t j = 0; j < t.keys; j += f.n) {
    Id acc = fr.zero_c;
    for (uint32_t kk = 0; kk < lay.d; kk += f.k)
      acc = fr.mul_add(qf[kk / f.k], load(fr.b, c(int64_t(j) * lay.qk_pitch + kk / 8), lay.qk_pitch, false), acc);
    const Id key0 = u(spv::OpIAdd, k0, c(j));
    for (uint32_t i = 0; i < p.elements; ++i)
      sc.push_back(score(element(acc, i), at.bd, u(spv::OpIAdd, at.q0, row(i)), u(spv::OpIAdd, key0, col(i))));
  }
  return sc;
}

// One slice of keys: carried and returned, each row's running maximum and this invocation's
// partial sum per class, and the output fragments.
Values RegisterAttention::step(const RowTile& at, const Values& qf, const Values& s, Id k0, const Slices& next_slices) {
  const Values sc = scores(at, qf, k0);
  Values m_new(C), alpha(C), sum(C, e.constant(ct, 0)), next;
  for (uint32_t cl = 0; cl < C; ++cl) {
    Id tile_max = 0;
    for (size_t i = 0; i < sc.size(); ++i)
      if (p.class_of[i % p.elements] == cl) tile_max = tile_max ? max(tile_max, sc[i]) : sc[i];
    m_new[cl] = max(s[cl], across(tile_max, false));
    alpha[cl] = rescale(s[cl], m_new[cl]);
  }
  std::vector<Values> probs(t.keys / f.n);
  for (size_t i = 0; i < sc.size(); ++i) {
    const uint32_t cl = p.class_of[i % p.elements];
    const Id pr = probability(sc[i], m_new[cl]);
    sum[cl] = flt(spv::OpFAdd, sum[cl], pr);
    probs[i / p.elements].push_back(pr);
  }
  next = m_new;
  for (uint32_t cl = 0; cl < C; ++cl) next.push_back(fma(s[C + cl], alpha[cl], sum[cl]));
  stage(next_slices);
  // SPV_NV_cooperative_matrix divides accumulators element by element but does not multiply
  // them: by the factors' reciprocals there (+inf for 0: 0 / inf is 0).
  if (fr.nv)
    for (Id& a : alpha) a = flt(spv::OpFDiv, e.constant(ct, 1), a);
  const Id factors = by_row(alpha);
  Values o(s.begin() + 2 * C, s.end());
  for (Id& acc : o) acc = b.op(fr.nv ? spv::OpFDiv : spv::OpFMul, fr.c, {acc, factors});
  const uint32_t v_base = t.keys * lay.qk_pitch;
  for (uint32_t kk = 0; kk < t.keys; kk += f.k) {
    const Id pa = a_operand(probs[kk / f.n]);
    for (uint32_t j = 0; j < frags_o; ++j)
      o[j] = fr.mul_add(pa, load(fr.b, c(v_base + int64_t(kk) * lay.v_pitch + j * f.n / 8), lay.v_pitch, true), o[j]);
  }
  next.insert(next.end(), o.begin(), o.end());
  return next;
}

Values RegisterAttention::key_loop(const RowTile& at, const Values& qf) {
  std::vector<Id> types(2 * C, vt);
  Values init(C, minus_inf());
  init.insert(init.end(), C, e.constant(ct, 0));
  types.insert(types.end(), frags_o, fr.c);
  init.insert(init.end(), frags_o, fr.zero_c);
  // Unrolled, the loop's steps overlap their loads and spill (docs/tuning.md).
  return walk_keys(at, types, init, false,
                   [&](const Values& s, Id k0, const Slices& next) { return step(at, qf, s, k0, next); });
}

// Each output element straight from its accumulator to memory.
void RegisterAttention::finish(const RowTile& at, const Values& state, const BufferRef& output) {
  Values l(C);
  for (uint32_t cl = 0; cl < C; ++cl) l[cl] = row_divisor(across(state[C + cl], true));
  for (uint32_t j = 0; j < frags_o; ++j)
    for (uint32_t i = 0; i < p.elements; ++i) {
      const uint32_t cl = p.class_of[i];
      const Id r_out = u(spv::OpIAdd, at.q0, row(i)), col_out = u(spv::OpIAdd, c(int64_t(j) * f.n), col(i));
      const Id out = row_output(element(state[2 * C + j], i), l[cl], state[cl]);
      Id in = less(r_out, Sq);
      if (lay.dv != Dv) in = b.op(spv::OpLogicalAnd, e.boolean(), {in, less(col_out, Dv)});
      b.if_then(in, [&] {
        store_output(output, u(spv::OpIAdd, u(spv::OpIMul, u(spv::OpIAdd, u(spv::OpIMul, at.bt, c(Sq)), r_out), c(Dv)), col_out), out);
      });
    }
}

}  // namespace

std::optional<RegisterLayout> attention_register_layout(const CooperativeMatrixShape& f, uint32_t subgroup_size) {
  auto plan = register_layout(f, subgroup_size);
  if (!plan || plan->elements % 2) return std::nullopt;  // A's elements are rounded in pairs
  return plan;
}

void emit_register_attention(const ir::Graph& body, const ir::Node& attn, Emitter& e, const std::vector<BufferRef>& inputs,
                             const BufferRef& output, const LaunchConfig& launch, uint64_t* shared_bytes) {
  const auto plan = attention_register_layout(launch.attention.fragment, e.caps.subgroup_size);
  if (!plan) throw std::logic_error("register attention without a register layout");
  RegisterAttention k(body, attn, e, inputs, launch.attention, *plan, shared_bytes);
  k.each_tile(launch, [&](Id p) { k.emit_tile(p, output); });
}

}  // namespace nxv::codegen
