// The cooperative-matrix tiles (emit_cooperative_matmul, matmul.h): 16-bit k-slices staged
// through shared memory, multiplied by subgroups in fragments with f32 accumulators.
#include <algorithm>
#include <string>
#include <utility>

#include "codegen/matmul_product.h"

namespace nxv::codegen {

using ir::DType;
using namespace matmul;

namespace {

// Shared memory is one array of 16-byte chunks (8 operand elements, or 4 f32
// accumulators). A k-slice of an operand's tile is `outer` rows of `inner` elements along
// the operand's innermost axis in memory, so that the loads that fill it and the stores
// into it both run along memory; rows are padded by one chunk against bank conflicts.
struct ChunkSlice {
  bool k_inner;                  // rows along the contraction (else along the free axes)
  uint32_t outer, inner, pitch;  // pitch in chunks
  uint32_t base;                 // its first chunk
};

ChunkSlice chunk_slice(const ir::Graph& body, const MatmulTiles& t, const Operand& o, uint32_t free, uint32_t base) {
  const bool k_inner = contiguous_along_k(body, o.node, o.contract_axes);
  ChunkSlice sl{k_inner, k_inner ? free : t.k, k_inner ? t.k : free, 0, base};
  sl.pitch = sl.inner / 8 + 1;
  return sl;
}

struct CooperativeKernel : U32Ops {
  using Tile = Product::Tile;

  const MatmulTiles& t;
  const CooperativeMatrixShape& f;
  const Product pr;
  const Operand &A, &B;
  const int64_t K;
  const uint32_t wg, wm, wn, frags_m, frags_n;
  const ChunkSlice sa, sb;
  // f32 operands (MatmulShape::rounded_f32) are rounded to bf16 as they are staged; split,
  // their lo parts follow the hi parts' two slices, `lo_base` chunks on.
  const bool rounded;
  const uint32_t lo_base;
  // After the contraction the same memory holds, per subgroup, one row of its accumulator
  // fragments (f.m x wn f32) at a time, from which the epilogue computes the outputs.
  const uint32_t row_floats;
  // Two sets of slices where they fit: the next k-step's are stored while the current ones
  // multiply, one barrier per step instead of two.
  const uint32_t slice_chunks;
  const bool two_stages;
  const uint32_t per_a, per_b;  // chunks each invocation stages of each slice
  // Fragment types and operations: SPV_KHR_cooperative_matrix's where the device's KHR
  // extension lists the shape, else SPV_NV_cooperative_matrix's. One kernel, two opcode
  // sets: on an H100, which lists f16 under both, the KHR form ran 1.3x faster (4096^2 f16,
  // 187 against 145 TFLOP/s); the NV form is what Debian 12's spirv-val (2023.1) can
  // validate, so the unit tests validate the same kernels emitted for NV-only caps.
  const Fragments fr;
  Id vec = 0, zero_vec = 0, bvec = 0, local = 0, subgroup = 0, lane = 0, sub_m = 0, sub_n = 0, smem = 0;
  Id view_a = 0, view_b = 0;

  CooperativeKernel(const ir::Graph& body, const ir::Node& dot, Emitter& e, const std::vector<BufferRef>& inputs,
                    const MatmulTiles& tiles, uint64_t* shared_bytes);
  Id chunk_ptr(Id at) { return b.op(spv::OpAccessChain, b.type_pointer(spv::StorageClassWorkgroup, vec), {smem, at}); }
  Id chunk_view(const Operand& o, const ChunkSlice& sl, const std::vector<BufferRef>& inputs);
  Id chunk(const std::vector<Id>& halves);
  Values pack_bf16(const std::vector<Id>& xs);
  Id load_chunk(Id view, Id at) { return matmul::load_chunk(e, view, at); }
  Values fetch(const Operand& o, const ChunkSlice& sl, Id view, Id batch, Id free0, Id k0, Id ch);
  Values fetch_view(const Operand& o, const ChunkSlice& sl, Id view, Id batch, Id free, Id k);
  Values fetch_elements(const Operand& o, const ChunkSlice& sl, Id batch, Id free, Id k);
  Id chunk_of(uint32_t r) { return u(spv::OpIAdd, local, c(int64_t(r) * wg)); }
  Values fetch_all(const Tile& at, Id k0);
  void stage(const Values& v, Id offset);
  Id load_fragment(Id type, const ChunkSlice& sl, Id offset, bool row_major, Id free, uint32_t kk);
  Values multiply(Values acc, Id offset);
  Values k_loop(const Tile& at);
  void store_outputs(const Tile& at, const Values& acc, const BufferRef& output);
};

CooperativeKernel::CooperativeKernel(const ir::Graph& body, const ir::Node& dot, Emitter& em, const std::vector<BufferRef>& inputs,
                                     const MatmulTiles& tiles, uint64_t* shared_bytes)
    : U32Ops{em, em.b}, t(tiles), f(t.fragment), pr(body, dot, tiles), A(pr.A), B(pr.B), K(pr.K), wg(t.invocations()),
      wm(t.m / t.subgroups_m), wn(t.n / t.subgroups_n), frags_m(wm / f.m), frags_n(wn / f.n),
      sa(chunk_slice(body, t, A, t.m, 0)), sb(chunk_slice(body, t, B, t.n, sa.outer * sa.pitch)), rounded(t.rounded_f32),
      lo_base(sb.base + sb.outer * sb.pitch), row_floats(f.m * wn), slice_chunks(lo_base * (t.split ? 2 : 1)),
      two_stages(uint64_t(slice_chunks) * 32 <= e.caps.max_shared_memory_bytes),
      per_a(sa.outer * sa.inner / 8 / wg), per_b(sb.outer * sb.inner / 8 / wg), fr(em, f, !f.khr) {
  vec = b.type_vector(e.u32(), 4);
  zero_vec = b.op(spv::OpCompositeConstruct, vec, {c(0), c(0), c(0), c(0)});
  local = b.builtin_x(spv::BuiltInLocalInvocationId);
  b.capability(spv::CapabilityGroupNonUniform);
  subgroup = b.builtin_u32(spv::BuiltInSubgroupId), lane = b.builtin_u32(spv::BuiltInSubgroupLocalInvocationId);
  sub_m = u(spv::OpUDiv, subgroup, c(t.subgroups_n)), sub_n = u(spv::OpUMod, subgroup, c(t.subgroups_n));
  const uint32_t chunks = std::max(slice_chunks * (two_stages ? 2 : 1), t.subgroups_m * t.subgroups_n * row_floats / 4);
  smem = b.workgroup_array(vec, chunks);
  *shared_bytes += uint64_t(chunks) * 16;
  view_a = chunk_view(A, sa, inputs), view_b = chunk_view(B, sb, inputs);
  bvec = b.type_vector(e.boolean(), 4);
}

// A parameter whose innermost axis is the slice's one inner axis, of a multiple of 8
// elements, is read a chunk at a time (two 16-byte vectors where it is f32) through a view
// of its binding as 16-byte vectors; else element by element.
Id CooperativeKernel::chunk_view(const Operand& o, const ChunkSlice& sl, const std::vector<BufferRef>& inputs) {
  const ir::Shape& shape = o.node.type().shape;
  const auto& inner_axes = sl.k_inner ? o.contract_axes : o.free_axes;
  if (inner_axes.size() != 1 || inner_axes[0] != int64_t(shape.size()) - 1 || shape.back() % 8) return 0;
  return matmul::chunk_view(e, o.node, inputs.size());
}

// 8 bf16 values, each in the high half of a u32, as one chunk.
Id CooperativeKernel::chunk(const std::vector<Id>& halves) {
  std::vector<Id> words;
  for (size_t j = 0; j < halves.size(); j += 2)
    words.push_back(u(spv::OpBitwiseOr, u(spv::OpShiftRightLogical, halves[j], c(16)), halves[j + 1]));
  return b.op(spv::OpCompositeConstruct, vec, words);
}

// 8 f32 values as one chunk of their bf16 values, or, split, two: the hi parts and the lo
// parts, x - hi rounded (exact in f32 before that). lo is 0 where hi is infinite or NaN (x
// is, or rounds past bf16's largest value), so that no inf · 0 term turns a product NaN.
Values CooperativeKernel::pack_bf16(const std::vector<Id>& xs) {
  std::vector<Id> his, los;
  for (Id x : xs) {
    Id hi = bf16_high(e, x);
    his.push_back(hi);
    if (!t.split) continue;
    Id rest = bf16_high(e, b.op(spv::OpFSub, b.type_float(32), {x, b.op(spv::OpBitcast, b.type_float(32), {hi})}));
    Id finite = b.op(spv::OpINotEqual, e.boolean(), {u(spv::OpBitwiseAnd, hi, c(0x7F800000)), c(0x7F800000)});
    los.push_back(e.b_select(e.u32(), finite, rest, c(0)));
  }
  Values v{chunk(his)};
  if (t.split) v.push_back(chunk(los));
  return v;
}

// Chunk `ch` of an operand's slice at (free0, k0): the 8 elements along its row, packed in
// pairs of 16-bit values into 4 u32s, 0 past the operand's ends; where the operand is f32,
// its bf16 parts (one chunk, or two where split).
Values CooperativeKernel::fetch(const Operand& o, const ChunkSlice& sl, Id view, Id batch, Id free0, Id k0, Id ch) {
  const uint32_t per_row = sl.inner / 8;
  Id outer = u(spv::OpUDiv, ch, c(per_row)), inner = u(spv::OpIMul, u(spv::OpUMod, ch, c(per_row)), c(8));
  Id free = u(spv::OpIAdd, free0, sl.k_inner ? outer : inner), k = u(spv::OpIAdd, k0, sl.k_inner ? inner : outer);
  return view ? fetch_view(o, sl, view, batch, free, k) : fetch_elements(o, sl, batch, free, k);
}

// Whole chunks lie inside or outside: the inner extent is a multiple of 8.
Values CooperativeKernel::fetch_view(const Operand& o, const ChunkSlice& sl, Id view, Id batch, Id free, Id k) {
  const int64_t F = ir::num_elements(o.free_extents);
  std::vector<Id> in_range;
  Id fc = free, kc = k;
  if (F % o.tile) {
    in_range.push_back(less(free, F));
    fc = b.ext(GLSLstd450UMin, e.u32(), {free, c(sl.k_inner ? F - 1 : F - 8)});
  }
  if (K % t.k) {
    in_range.push_back(less(k, K));
    kc = b.ext(GLSLstd450UMin, e.u32(), {k, c(sl.k_inner ? K - 8 : K - 1)});
  }
  Index idx = Emitter::operand_index(o.node.type().shape, o.batch_axes, o.free_axes, o.contract_axes,
                                     e.split(batch, pr.batch_extents), e.split(fc, o.free_extents), e.split(kc, pr.k_extents));
  Values v;
  if (rounded) {
    Id at = u(spv::OpShiftRightLogical, e.linear(idx), c(2));
    std::vector<Id> xs;
    for (Id half : {load_chunk(view, at), load_chunk(view, u(spv::OpIAdd, at, c(1)))})
      for (uint32_t l = 0; l < 4; ++l)
        xs.push_back(b.op(spv::OpBitcast, b.type_float(32), {b.op(spv::OpCompositeExtract, e.u32(), {half}, {l})}));
    v = pack_bf16(xs);
  } else {
    v = {load_chunk(view, u(spv::OpShiftRightLogical, e.linear(idx), c(3)))};
  }
  if (in_range.empty()) return v;
  Id ok = e.all_true(in_range);
  for (Id& x : v) x = b.op(spv::OpSelect, vec, {b.op(spv::OpCompositeConstruct, bvec, {ok, ok, ok, ok}), x, zero_vec});
  return v;
}

Values CooperativeKernel::fetch_elements(const Operand& o, const ChunkSlice& sl, Id batch, Id free, Id k) {
  if (rounded) {
    std::vector<Id> xs;
    for (uint32_t j = 0; j < 8; ++j)
      xs.push_back(operand_element(e, o, pr.batch_extents, pr.k_extents, t.k, batch, sl.k_inner ? free : u(spv::OpIAdd, free, c(j)),
                                   sl.k_inner ? u(spv::OpIAdd, k, c(j)) : k));
    return pack_bf16(xs);
  }
  std::vector<Id> words;
  for (uint32_t j = 0; j < 8; j += 2) {
    Id x[2];
    for (uint32_t h = 0; h < 2; ++h) {
      Id step = c(j + h);
      x[h] = operand_element(e, o, pr.batch_extents, pr.k_extents, t.k, batch, sl.k_inner ? free : u(spv::OpIAdd, free, step),
                             sl.k_inner ? u(spv::OpIAdd, k, step) : k);
    }
    words.push_back(pack_exact_pair(e, f.operands, x[0], x[1]));
  }
  return Values{b.op(spv::OpCompositeConstruct, vec, words)};
}

// The chunks of both slices, and, split, the lo parts' after them.
Values CooperativeKernel::fetch_all(const Tile& at, Id k0) {
  Values hi, lo_parts;
  auto add = [&](const Values& v) {
    hi.push_back(v[0]);
    if (t.split) lo_parts.push_back(v[1]);
  };
  for (uint32_t r = 0; r < per_a; ++r) add(fetch(A, sa, view_a, at.batch, at.m0, k0, chunk_of(r)));
  for (uint32_t r = 0; r < per_b; ++r) add(fetch(B, sb, view_b, at.batch, at.n0, k0, chunk_of(r)));
  hi.insert(hi.end(), lo_parts.begin(), lo_parts.end());
  return hi;
}

void CooperativeKernel::stage(const Values& v, Id offset) {
  auto put = [&](const ChunkSlice& sl, uint32_t r, Id x, uint32_t part) {
    Id ch = chunk_of(r);
    const uint32_t per_row = sl.inner / 8;
    Id at = u(spv::OpIAdd, u(spv::OpIMul, u(spv::OpUDiv, ch, c(per_row)), c(sl.pitch)), u(spv::OpUMod, ch, c(per_row)));
    b.op_void(spv::OpStore, {chunk_ptr(u(spv::OpIAdd, u(spv::OpIAdd, at, c(sl.base + part)), offset)), x});
  };
  for (uint32_t p = 0, part = 0; p < (t.split ? 2u : 1u); ++p, part += lo_base) {
    const size_t first = p * (per_a + per_b);
    for (uint32_t r = 0; r < per_a; ++r) put(sa, r, v[first + r], part);
    for (uint32_t r = 0; r < per_b; ++r) put(sb, r, v[first + per_a + r], part);
  }
}

Id CooperativeKernel::load_fragment(Id type, const ChunkSlice& sl, Id offset, bool row_major, Id free, uint32_t kk) {
  Id at = sl.k_inner ? u(spv::OpIAdd, u(spv::OpIMul, free, c(sl.pitch)), c(kk / 8))
                     : u(spv::OpIAdd, c(int64_t(kk) * sl.pitch), u(spv::OpUDiv, free, c(8)));
  return fr.load(type, chunk_ptr(u(spv::OpIAdd, u(spv::OpIAdd, at, c(sl.base)), offset)), sl.pitch, row_major);
}

// One k-step's products from the slices at `offset`, added to the accumulators.
Values CooperativeKernel::multiply(Values acc, Id offset) {
  for (uint32_t kk = 0; kk < t.k; kk += f.k) {
    // [part][fragment]: the hi parts' fragments, and split, the lo parts'.
    std::vector<std::vector<Id>> fa(t.split ? 2 : 1, std::vector<Id>(frags_m)), fb(fa.size(), std::vector<Id>(frags_n));
    for (size_t p = 0; p < fa.size(); ++p) {
      Id at = p ? u(spv::OpIAdd, offset, c(lo_base)) : offset;
      for (uint32_t i = 0; i < frags_m; ++i)
        fa[p][i] = load_fragment(fr.a, sa, at, sa.k_inner, u(spv::OpIAdd, u(spv::OpIMul, sub_m, c(wm)), c(int64_t(i) * f.m)), kk);
      for (uint32_t j = 0; j < frags_n; ++j)
        fb[p][j] = load_fragment(fr.b, sb, at, !sb.k_inner, u(spv::OpIAdd, u(spv::OpIMul, sub_n, c(wn)), c(int64_t(j) * f.n)), kk);
    }
    for (uint32_t i = 0; i < frags_m; ++i)
      for (uint32_t j = 0; j < frags_n; ++j) {
        Id& a = acc[i * frags_n + j];
        if (t.split) {  // the small terms first
          a = fr.mul_add(fa[1][i], fb[0][j], a);
          a = fr.mul_add(fa[0][i], fb[1][j], a);
        }
        a = fr.mul_add(fa[0][i], fb[0][j], a);
      }
  }
  return acc;
}

// The accumulator fragments of tile `at` over the contraction.
Values CooperativeKernel::k_loop(const Tile& at) {
  const size_t frags = size_t(frags_m) * frags_n;
  std::vector<Id> types(frags, fr.c), init(frags, fr.zero_c);
  const uint64_t steps = uint64_t((K + t.k - 1) / t.k);
  if (two_stages)  // the sets are offsets in chunks: 0 and slice_chunks
    return double_buffered_k_loop(
        e, types, init, KSteps{K, t.k}, slice_chunks, [&](Id k0) { return fetch_all(at, k0); },
        [&](const Values& v, Id offset) { stage(v, offset); }, [&](Values acc, Id, Id set) { return multiply(std::move(acc), set); });
  // Carried: the accumulators, the next k-slices' chunks (fetched from memory one step
  // ahead, while the current step multiplies), and k0.
  for (Id v : fetch_all(at, c(0))) {
    types.push_back(vec);
    init.push_back(v);
  }
  return k_steps(e, types, init, KSteps{K, t.k}, [&](const Values& s, Id k0) {
    stage(Values(s.begin() + frags, s.end() - 1), c(0));
    b.workgroup_barrier();
    Values next_chunks = fetch_all(at, next_step(e, k0, t.k, t.k, steps));
    Values next = multiply(Values(s.begin(), s.begin() + frags), c(0));
    b.workgroup_barrier();  // the slices are restaged next
    next.insert(next.end(), next_chunks.begin(), next_chunks.end());
    return next;
  });
}

// Each subgroup writes one row of its fragments to its part of shared memory, then
// computes the body's output from it, consecutive lanes at consecutive columns.
void CooperativeKernel::store_outputs(const Tile& at, const Values& acc, const BufferRef& output) {
  const DType acc_t = e.dot_accumulator_type(pr.dot);
  const Id row_base = u(spv::OpIMul, subgroup, c(row_floats / 4));
  for (uint32_t i = 0; i < frags_m; ++i) {
    for (uint32_t j = 0; j < frags_n; ++j) {
      fr.store(chunk_ptr(u(spv::OpIAdd, row_base, c(j * f.n / 4))), acc[i * frags_n + j], wn / 4);
    }
    b.storage_barrier(spv::ScopeSubgroup);
    for (uint32_t r = 0; r < row_floats / t.subgroup_size; ++r) {
      Id pos = u(spv::OpIAdd, lane, c(int64_t(r) * t.subgroup_size));
      Id word = b.op(spv::OpAccessChain, b.type_pointer(spv::StorageClassWorkgroup, e.u32()),
                     {smem, u(spv::OpIAdd, row_base, u(spv::OpUDiv, pos, c(4))), u(spv::OpUMod, pos, c(4))});
      Id v = b.op(spv::OpBitcast, b.type_float(32), {b.op_in_place(spv::OpLoad, e.u32(), {word})});
      Id row = u(spv::OpIAdd, u(spv::OpIAdd, at.m0, u(spv::OpIMul, sub_m, c(wm))),
                 u(spv::OpIAdd, c(int64_t(i) * f.m), u(spv::OpUDiv, pos, c(wn))));
      Id col = u(spv::OpIAdd, u(spv::OpIAdd, at.n0, u(spv::OpIMul, sub_n, c(wn))), u(spv::OpUMod, pos, c(wn)));
      pr.store(e, output, at.batch, row, col, e.convert(v, DType::F32, acc_t));
    }
    b.storage_barrier(spv::ScopeSubgroup);  // the row's memory takes the next row
  }
  b.workgroup_barrier();  // the next tile's slices reuse the rows' memory
}

}  // namespace

void emit_cooperative_matmul(const ir::Graph& body, const ir::Node& dot, Emitter& e, const std::vector<BufferRef>& inputs,
                             const BufferRef& output, const LaunchConfig& launch, uint64_t* shared_bytes) {
  CooperativeKernel k(body, dot, e, inputs, launch.matmul, shared_bytes);
  e.b.position_loop(
      {e.u32()}, {e.b.builtin_x(spv::BuiltInWorkgroupId)}, [&](const Values& p) { return k.less(p[0], launch.matmul.tiles); },
      [&](const Values& p) {
        const Product::Tile at = k.pr.tile(e, p[0]);
        k.store_outputs(at, k.k_loop(at), output);
        return Values{k.u(spv::OpIAdd, p[0], k.c(launch.group_count))};
      });
}

}  // namespace nxv::codegen
