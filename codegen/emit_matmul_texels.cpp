// The SIMT tiles' reads of their operands from memory (matmul_simt.h): one element at a time,
// or a run of elements as one load: lavapipe's texel views, vectors of the operand's binding,
// and 64-bit integer pairs of f32 elements.
#include <algorithm>
#include <string>

#include "codegen/matmul_simt.h"

namespace nxv::codegen::matmul {

using ir::DType;

// Into [0, hi): only where the tiles overrun it (hi not a multiple of the tile's extent).
Id SimtKernel::clamp(Id x, int64_t hi, uint32_t tile) {
  return hi % tile == 0 ? x : b.ext(GLSLstd450UMin, e.u32(), {x, c(hi - 1)});
}

Id SimtKernel::element(const Operand& o, Id batch, Id free, Id k) {
  return operand_element(e, o, pr.batch_extents, pr.k_extents, t.k, batch, free, k);
}

Id SimtKernel::zero_of(const ir::Node& o) {
  const DType ot = o.type().dtype;
  return ir::is_float(ot) ? e.float_literal(ot, 0.0) : e.constant(ot, 0);
}

// The run of elements (free, k), ... of a vector-read operand (matmul_vector_operands, or a
// view for pairs) as one vector: `along_k`, k to k + R - 1 (k a multiple of R, as is K),
// else free to free + R - 1. Past the contraction's end an operand is 0 (so is the other's:
// 0 * inf would be NaN), which adds nothing to an accumulator that starts at +0.
Id SimtKernel::run(const Operand& o, const BufferRef& buf, Id batch, Id free, Id k, bool along_k) {
  const int64_t F = ir::num_elements(o.free_extents);
  if (!along_k && F % o.tile) free = b.ext(GLSLstd450UMin, e.u32(), {free, c(F - R)});
  Id kc = K % t.k == 0 ? k : b.ext(GLSLstd450UMin, e.u32(), {k, c(along_k ? K - R : K - 1)});
  Index idx = Emitter::operand_index(o.node.type().shape, o.batch_axes, o.free_axes, o.contract_axes,
                                     e.split(batch, pr.batch_extents), e.split(free, o.free_extents), e.split(kc, pr.k_extents));
  Id v = e.load_vector(buf, u(spv::OpUDiv, e.linear(idx), c(R)));
  if (K % t.k == 0) return v;
  const Id type = e.buffer_entry_type(buf);
  const Id zero = buf.dtype == o.node.type().dtype ? zero_of(o.node) : e.constant(buf.dtype, 0);
  const Id zeros = b.op(spv::OpCompositeConstruct, type, std::vector<Id>(buf.lanes, zero));
  Id in = less(k, K);
  if (buf.lanes > 1) in = b.op(spv::OpCompositeConstruct, b.type_vector(e.boolean(), buf.lanes), std::vector<Id>(buf.lanes, in));
  return e.b_select(type, in, v, zeros);
}

// A run's R elements: the vector's components, each 64-bit component's two halves, or a
// texel's bits as R elements.
std::vector<Id> SimtKernel::run_elements(const Operand& o, const BufferRef& buf, Id batch, Id free, Id k, bool along_k) {
  const Id v = run(o, buf, batch, free, k, along_k), et = e.reg_type(o.node.type().dtype);
  std::vector<Id> x;
  if (buf.texels) {
    const Id all = b.op(spv::OpBitcast, b.type_vector(et, R), {v});
    for (uint32_t q = 0; q < R; ++q) x.push_back(b.op(spv::OpCompositeExtract, et, {all}, {q}));
    return x;
  }
  for (uint32_t q = 0; q < V; ++q) {
    Id part = b.op(spv::OpCompositeExtract, e.storage_type(buf.dtype), {v}, {q});
    if (!t.pairs) {
      x.push_back(part);
      continue;
    }
    Id two = b.op(spv::OpBitcast, b.type_vector(et, 2), {part});
    for (uint32_t h = 0; h < 2; ++h) x.push_back(b.op(spv::OpCompositeExtract, et, {two}, {h}));
  }
  return x;
}

// The binding through which runs of `o` along the last of `axes` are read, where they can be.
const BufferRef* SimtKernel::vector_buffer(const Operand& o, const std::vector<int64_t>& axes) {
  if (!reads_as_vectors(o.node, axes, R)) return nullptr;
  if (t.texels) return e.texel_input(o.node);
  if (t.pairs) {
    const int64_t index = o.node.attrs.value("index", int64_t(0));
    BufferRef view{0, DType::U64, V};
    view.variable = b.storage_buffer(e.buffer_entry_type(view), 8 * V, uint32_t(index), true);
    b.name(view.variable, "arg" + std::to_string(index) + "_pairs");
    pair_views.push_back(view);
    return &pair_views.back();
  }
  const BufferRef* buf = e.input_buffer(o.node);
  return buf && buf->lanes == V ? buf : nullptr;
}

// Direct: the `count` rows (or columns) of an operand at step kk, `at` their indices. Read
// as texels (the same rows for the whole subgroup) along k: one texel per row every R steps,
// `held` for the next R - 1; along the rows: one per run of R rows every step, or, `ahead`,
// those of R steps every R steps, held likewise.
std::vector<Id> SimtKernel::direct(const Operand& o, const BufferRef* buf, bool along_k, bool ahead, uint32_t count,
                                   const std::function<Id(uint32_t)>& at, std::vector<std::vector<Id>>& held, Id batch, Id k0,
                                   uint32_t kk) {
  const Id k = u(spv::OpIAdd, k0, c(kk));
  std::vector<Id> x(count);
  for (uint32_t i = 0; i < count; ++i) {
    if (!buf) {
      x[i] = element(o, batch, at(i), k);
    } else if (along_k || ahead) {
      if (kk % R == 0 && along_k) held[i] = run_elements(o, *buf, batch, clamp(at(i), ir::num_elements(o.free_extents), o.tile), k, true);
      if (kk % R == 0 && ahead && i % R == 0)
        for (uint32_t q = 0; q < R; ++q) {
          const std::vector<Id> v = run_elements(o, *buf, batch, at(i), u(spv::OpIAdd, k, c(q)), false);
          for (uint32_t r = 0; r < R; ++r) {
            held[i + r].resize(R);
            held[i + r][q] = v[r];
          }
        }
      x[i] = held[i][kk % R];
    } else if (i % R == 0) {
      const std::vector<Id> v = run_elements(o, *buf, batch, at(i), k, false);
      std::copy(v.begin(), v.end(), x.begin() + i);
    }
  }
  return x;
}

}  // namespace nxv::codegen::matmul
