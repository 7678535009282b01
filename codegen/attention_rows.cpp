// What both attention kernels share (attention_rows.h): operands, score rules, online softmax.
#include "codegen/attention_rows.h"

#include <algorithm>
#include <cmath>

#include "codegen/attention.h"
#include "ir/literal.h"

namespace nxv::codegen {

AttentionRows::AttentionRows(const ir::Graph& body, const ir::Node& attn, Emitter& em)
    : U32Ops{em, em.b}, g(body), node(attn), a(ir::attention_attrs(attn)), q(arg(0)), k(arg(1)), v(arg(2)) {
  if (a.mask) mask = &arg(a.mask_operand());
  if (a.bias) bias = &arg(a.bias_operand());
  T = attn.type().dtype;
  ct = attention_compute_type(T);
  vt = e.reg_type(ct);
  const ir::Shape& qs = q.type().shape;
  const size_t r = qs.size();
  batch.assign(qs.begin(), qs.end() - 2);
  Sq = qs[r - 2], D = qs[r - 1], Sk = k.type().shape[r - 2], Dv = v.type().shape[r - 1];
  if (a.scale) scale = e.convert(e.constant_attr(node, *a.scale, T), T, ct);
  masked = e.convert(e.constant_attr(node, a.masked, T), T, ct);
  if (a.scale && T == ir::DType::F16) {
    const double f = ir::f16_to_f32(ir::f32_to_f16(float(*a.scale)));
    scale_overflows = a.divide ? std::fabs(f) < 1 : std::fabs(f) > 1;
  }
  // A row's weighted sum of v adds up to Sk terms of weight up to 1 before the division, so
  // values near the type's largest would overflow where Nx's divided probabilities do not.
  // Weights of 2^-ceil(log2 Sk) bound it by max |v|; a power of two changes no rounding of
  // o / l, and the terms it pushes below the normal range weigh under 2^-100 of the row's
  // largest. f16 and bf16 values, summed in f32, cannot overflow and keep full weights.
  if (T == ct && Sk > 1) weight = e.constant(ct, std::ldexp(1.0, -int(std::ceil(std::log2(double(Sk))))));
}

AttentionRows::RowTile AttentionRows::row_tile(Id p, uint32_t rows) {
  RowTile t;
  if (a.causal) {
    // Later rows keep more keys: their tiles go first, every batch element's last row tile
    // before any one's second last, so that the last workgroups to start are the shortest.
    const int64_t elements = std::max<int64_t>(ir::num_elements(batch), 1);
    t.bt = u(spv::OpUMod, p, c(elements));
    t.q0 = u(spv::OpIMul, u(spv::OpISub, c(row_tiles(rows) - 1), u(spv::OpUDiv, p, c(elements))), c(rows));
  } else {
    t.bt = u(spv::OpUDiv, p, c(row_tiles(rows)));
    t.q0 = u(spv::OpIMul, u(spv::OpUMod, p, c(row_tiles(rows))), c(rows));
  }
  t.bd = e.split(t.bt, batch);
  return t;
}

void AttentionRows::each_tile(const LaunchConfig& launch, const std::function<void(Id p)>& tile) {
  const int64_t count = tiles(launch.attention.rows);
  b.position_loop(
      {e.u32()}, {b.builtin_x(spv::BuiltInWorkgroupId)}, [&](const Values& p) { return less(p[0], count); },
      [&](const Values& p) {
        tile(p[0]);
        return Values{u(spv::OpIAdd, p[0], c(launch.group_count))};
      });
}

Id AttentionRows::read(const ir::Node& n, const std::vector<Id>& bd, Id r, Id col) {
  std::vector<Id> d = bd;
  d.push_back(r);
  d.push_back(col);
  return e.convert(e.value(n, e.index_from_dims(n.type().shape, d)), n.type().dtype, ct);
}

Id AttentionRows::read_broadcast(const ir::Node& n, const std::vector<Id>& bd, Id r, Id key) {
  std::vector<Id> full = bd;
  full.push_back(r);
  full.push_back(key);
  const ir::Shape& s = n.type().shape;
  std::vector<Id> d;
  for (size_t x = 0; x < s.size(); ++x) d.push_back(s[x] == 1 ? c(0) : full[full.size() - s.size() + x]);
  return e.value(n, e.index_from_dims(s, d));
}

Id AttentionRows::score(Id s, const std::vector<Id>& bd, Id r, Id key) {
  s = overflowed(s);
  if (scale) s = flt(a.divide ? spv::OpFDiv : spv::OpFMul, s, scale);
  if (scale_overflows) s = overflowed(s);
  if (bias) s = overflowed(flt(spv::OpFAdd, s, e.convert(read_broadcast(*bias, bd, clamp(r, Sq), clamp(key, Sk)), bias->type().dtype, ct)));
  if (mask) s = e.b_select(vt, e.to_bool(read_broadcast(*mask, bd, clamp(r, Sq), clamp(key, Sk)), mask->type().dtype), s, masked);
  if (a.causal) {
    Id kept = is(spv::OpSLessThanEqual, key, b.op(spv::OpIAdd, e.u32(), {r, e.u32c(uint64_t(*a.causal))}));
    s = e.b_select(vt, kept, s, masked);
  }
  return e.b_select(vt, less(key, Sk), s, minus_inf());
}

Id AttentionRows::overflowed(Id s) {
  if (T != ir::DType::F16) return s;
  Id past = is(spv::OpFOrdGreaterThanEqual, b.ext(GLSLstd450FAbs, vt, {s}), e.constant(ct, 65520));  // rounds to f16's inf
  return e.b_select(vt, past, flt(spv::OpFMul, s, e.float_literal(ct, INFINITY)), s);
}

Id AttentionRows::key_end(Id q0, uint32_t rows) {
  if (!a.causal) return c(Sk);
  const int64_t last = rows + *a.causal;
  if (last >= Sk) return c(Sk);
  Id end = b.op(spv::OpIAdd, e.u32(), {q0, e.u32c(uint64_t(last))});  // wraps below 0 for last < 0
  end = b.op(spv::OpSelect, e.u32(), {is(spv::OpSLessThan, end, c(0)), c(0), end});
  return b.ext(GLSLstd450UMin, e.u32(), {end, c(Sk)});
}

Id AttentionRows::rescale(Id m_old, Id m) {
  return e.b_select(vt, is(spv::OpFOrdEqual, m_old, minus_inf()), e.constant(ct, 0), e.math(node, "exp", flt(spv::OpFSub, m_old, m), ct));
}

Id AttentionRows::probability(Id s, Id m) {
  Id p = e.math(node, "exp", flt(spv::OpFSub, s, m), ct);
  if (weight) p = flt(spv::OpFMul, p, weight);
  return e.b_select(vt, is(spv::OpFOrdEqual, m, minus_inf()), e.constant(ct, 0), p);
}

bool AttentionRows::multiplies_outputs() const { return T == ir::DType::F16 || T == ir::DType::BF16; }

Id AttentionRows::row_divisor(Id l) { return multiplies_outputs() ? flt(spv::OpFDiv, e.constant(ct, 1), l) : l; }

Id AttentionRows::row_output(Id o, Id d, Id m) {
  if (Sk == 0) return e.constant(ct, 0);
  return e.b_select(vt, is(spv::OpFOrdEqual, m, minus_inf()), e.float_literal(ct, NAN),
                    flt(multiplies_outputs() ? spv::OpFMul : spv::OpFDiv, o, d));
}

void AttentionRows::store_output(const BufferRef& output, Id index, Id value) {
  e.store(output, index, e.convert(value, ct, T));
}

}  // namespace nxv::codegen
