// The dot as the tiled kernels see it (matmul_product.h), and what their launch is chosen by
// (matmul.h): the product's shape and the operands read as vectors or texels.
#include "codegen/matmul_product.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <optional>
#include <set>
#include <string>

namespace nxv::codegen {

using ir::DType;

namespace matmul {
namespace {

std::vector<int64_t> extents_of(const ir::Shape& s, const std::vector<int64_t>& axes) {
  std::vector<int64_t> x;
  for (int64_t a : axes) x.push_back(s.at(a));
  return x;
}

// The axis of `n` along which neighbouring elements lie next to each other in memory: the
// innermost axis of the buffer it is read from, followed through the index maps in
// between (a convolution's patches are contiguous along the output's columns, not along
// the taps the innermost axis holds); the last axis where a reshape regroups it.
int64_t innermost_axis(const ir::Graph& body, const ir::Node& n) {
  const ir::Shape& out = n.type().shape;
  const int64_t last = int64_t(out.size()) - 1;
  static const std::set<std::string> keep = {"slice", "pad", "reverse", "as_type", "concatenate", "metadata"};
  const std::string& op = n.op;
  if (n.args.empty() || !(keep.count(op) || op == "transpose" || op == "reshape" || op == "stack" || op == "broadcast"))
    return last;
  const ir::Node& x = body.node(n.args[0]);
  const int64_t a = innermost_axis(body, x);
  if (a < 0) return last;  // a scalar's broadcast
  if (keep.count(op)) return a;
  if (op == "stack") return a >= n.attrs.at("axis").get<int64_t>() ? a + 1 : a;
  if (op == "broadcast") return n.attrs.at("axes").at(a).get<int64_t>();
  if (op == "transpose") {
    auto axes = n.attrs.at("axes").get<std::vector<int64_t>>();
    return std::find(axes.begin(), axes.end(), a) - axes.begin();
  }
  // A reshape keeps the order of the axes it does not merge or split: the innermost is
  // the same among those of extent above 1.
  const ir::Shape& in = x.type().shape;
  std::vector<int64_t> in_big, out_big;
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] != 1) in_big.push_back(int64_t(i));
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i] != 1) out_big.push_back(int64_t(i));
  auto at = std::find(in_big.begin(), in_big.end(), a);
  const bool same = in_big.size() == out_big.size() &&
                    std::equal(in_big.begin(), in_big.end(), out_big.begin(), [&](int64_t i, int64_t o) { return in[i] == out[o]; });
  return same && at != in_big.end() ? out_big[at - in_big.begin()] : last;
}

// The axis of a reshape's operand (`in`) that each of its axes (`out`) is, -1 for an axis
// of 1 it inserts; nullopt where it merges or splits axes, or removes an axis of 1 (that
// axis's index would need a constant).
std::optional<std::vector<int64_t>> unit_axes_map(const ir::Shape& in, const ir::Shape& out) {
  std::vector<int64_t> m(out.size(), -1);
  size_t i = 0;
  for (size_t j = 0; j < out.size(); ++j) {
    if (out[j] == 1 && (i == in.size() || in[i] != 1)) continue;
    if (i == in.size() || in[i] != out[j]) return std::nullopt;
    m[j] = int64_t(i++);
  }
  if (i != in.size()) return std::nullopt;
  return m;
}

// A dot's operand (`node`, its axes as the dot pairs them) with tiles `tile` along its free
// axes. A graph input behind reshapes that only insert axes of 1 (a convolution's kernel
// given a batch axis) is read in place, its axes named as the input's (-1 for those it
// lacks), and for texel kernels (`in_place`) behind transposes too (index maps that move no
// data: Nx.transpose(w) fused into the dot's kernel).
Operand operand_of(const ir::Graph& body, const ir::Node& node, const std::vector<int64_t>& batch,
                   const std::vector<int64_t>& free, const std::vector<int64_t>& contract, uint32_t tile, bool in_place) {
  const std::vector<int64_t> extents = extents_of(node.type().shape, free);
  const ir::Node* n = &node;
  std::array<std::vector<int64_t>, 3> axes{batch, free, contract};
  auto relabel = [&](const std::vector<int64_t>& to) {
    for (auto& list : axes)
      for (int64_t& a : list) a = a < 0 ? a : to.at(size_t(a));
  };
  for (;;) {
    if (in_place && n->op == "transpose") {
      relabel(n->attrs.at("axes").get<std::vector<int64_t>>());
    } else if (n->op == "reshape" && !n->args.empty()) {
      const auto m = unit_axes_map(body.node(n->args[0]).type().shape, n->type().shape);
      if (!m) break;
      relabel(*m);
    } else {
      break;
    }
    n = &body.node(n->args.at(0));
  }
  if (n->op != "parameter") return {node, batch, free, contract, extents, tile};
  return {*n, axes[0], axes[1], axes[2], extents, tile};
}

}  // namespace

bool contiguous_along_k(const ir::Graph& body, const ir::Node& operand, const std::vector<int64_t>& contract) {
  return std::find(contract.begin(), contract.end(), innermost_axis(body, operand)) != contract.end();
}

uint32_t texel_run(const ir::Node& node) { return kTexelBytes / uint32_t(ir::dtype_bytes(node.type().dtype)); }

bool reads_as_vectors(const ir::Node& node, const std::vector<int64_t>& axes, uint32_t lanes) {
  const ir::Shape& s = node.type().shape;
  const DType t = node.type().dtype;
  if (lanes <= 1 || node.op != "parameter" || !(t == DType::F32 || (t == DType::F64 && lanes <= 2)) || s.empty()) return false;
  // The last of `axes` that are the input's innermost axes, in order: a run along `axes`
  // steps through them as through memory (an axis of 1 the operand lacks, -1, adds nothing).
  std::vector<int64_t> a;
  std::copy_if(axes.begin(), axes.end(), std::back_inserter(a), [](int64_t x) { return x >= 0; });
  int64_t innermost = 1;
  size_t n = 0;
  for (int64_t last = int64_t(s.size()) - 1; n < a.size() && a[a.size() - 1 - n] == last - int64_t(n); ++n)
    innermost *= s[size_t(last) - n];
  return n > 0 && innermost % lanes == 0;
}

TexelLayout texel_layout(const Operand& A, const Operand& B) {
  TexelLayout l;
  l.a_rows = reads_as_vectors(A.node, A.free_axes, texel_run(A.node));
  l.a = l.a_rows || reads_as_vectors(A.node, A.contract_axes, texel_run(A.node));
  l.b_k = reads_as_vectors(B.node, B.contract_axes, texel_run(B.node));
  l.b = l.b_k || reads_as_vectors(B.node, B.free_axes, texel_run(B.node));
  return l;
}

Id operand_element(Emitter& e, const Operand& o, const std::vector<int64_t>& batch_extents,
                   const std::vector<int64_t>& k_extents, uint32_t k_step, Id batch, Id free, Id k) {
  spirv::Builder& b = e.b;
  const int64_t K = ir::num_elements(k_extents);
  auto clamp = [&](Id x, int64_t hi, uint32_t tile) {
    return hi % tile == 0 ? x : b.ext(GLSLstd450UMin, e.u32(), {x, e.u32c(uint64_t(hi - 1))});
  };
  Index idx = Emitter::operand_index(o.node.type().shape, o.batch_axes, o.free_axes, o.contract_axes,
                                     e.split(batch, batch_extents),
                                     e.split(clamp(free, ir::num_elements(o.free_extents), o.tile), o.free_extents),
                                     e.split(clamp(k, K, k_step), k_extents));
  Id v = e.value(o.node, idx);
  if (K % k_step == 0) return v;
  const DType ot = o.node.type().dtype;
  Id in_range = b.op(spv::OpULessThan, e.boolean(), {k, e.u32c(uint64_t(K))});
  return e.select(ot, in_range, v, ir::is_float(ot) ? e.float_literal(ot, 0.0) : e.constant(ot, 0));
}

// Rounded to nearest even (where Nx's bf16 truncates: in a product each rounding is an
// error, which nearest halves). In integer arithmetic: the device's conversion (OpFConvert to
// SPV_KHR_bfloat16's type) ran faster on an H100 (4096^2: default 175 TFLOP/s against 127,
// high 86 against 59) but truncated, under the RoundingModeRTE execution mode too, its
// errors 2.5 times these (2026-11-26).
Id bf16_high(Emitter& e, Id x) {
  U32Ops o{e, e.b};
  Id bits = e.b.op(spv::OpBitcast, e.u32(), {x});
  Id odd = o.u(spv::OpBitwiseAnd, o.u(spv::OpShiftRightLogical, bits, o.c(16)), o.c(1));
  Id r = o.u(spv::OpBitwiseAnd, o.u(spv::OpIAdd, bits, o.u(spv::OpIAdd, odd, o.c(0x7FFF))), o.c(0xFFFF0000));
  return e.b_select(e.u32(), e.b.op(spv::OpIsNan, e.boolean(), {x}), o.c(0x7FC00000), r);
}

Id pack_exact_pair(Emitter& e, MatrixComponent c, Id x0, Id x1) {
  U32Ops o{e, e.b};
  if (c == MatrixComponent::F16) {
    // The bits as loaded where known (no conversion back and forth), else a conversion:
    // exact, the values are f16 already.
    if (Id b0 = e.known_f16_bits(x0), b1 = e.known_f16_bits(x1); b0 && b1) return o.u(spv::OpBitwiseOr, b0, o.u(spv::OpShiftLeftLogical, b1, o.c(16)));
    return e.b.ext(GLSLstd450PackHalf2x16, e.u32(), {e.b.op(spv::OpCompositeConstruct, e.b.type_vector(e.b.type_float(32), 2), {x0, x1})});
  }
  Id lo = o.u(spv::OpShiftRightLogical, e.b.op(spv::OpBitcast, e.u32(), {x0}), o.c(16));
  Id hi = o.u(spv::OpBitwiseAnd, e.b.op(spv::OpBitcast, e.u32(), {x1}), o.c(0xFFFF0000));
  return o.u(spv::OpBitwiseOr, lo, hi);
}

Id operand_component(spirv::Builder& b, MatrixComponent operands) {
  if (operands != MatrixComponent::F16) return b.type_bfloat16();
  b.capability(spv::CapabilityFloat16);
  return b.type_float(16);
}

Fragments::Fragments(Emitter& em, const CooperativeMatrixShape& f, bool nv_opcodes) : e(em), nv(nv_opcodes) {
  spirv::Builder& bld = e.b;
  component = operand_component(bld, f.operands);
  a = bld.type_cooperative_matrix(nv, component, f.m, f.k, spirv::kMatrixA);
  b = bld.type_cooperative_matrix(nv, component, f.k, f.n, spirv::kMatrixB);
  c = bld.type_cooperative_matrix(nv, bld.type_float(32), f.m, f.n, spirv::kMatrixAccumulator);
  zero_c = bld.op(spv::OpCompositeConstruct, c, {bld.const_f32(0.0f)});
}

Id Fragments::load(Id type, Id ptr, uint32_t stride, bool row_major) const {
  if (nv) return e.b.op_in_place(spv::OpCooperativeMatrixLoadNV, type, {ptr, e.u32c(stride), e.b.const_bool(!row_major)});
  return e.b.op_in_place(spirv::OpCooperativeMatrixLoadKHR, type,
                         {ptr, e.u32c(row_major ? spirv::kRowMajor : spirv::kColumnMajor), e.u32c(stride)});
}

void Fragments::store(Id ptr, Id matrix, uint32_t stride) const {
  if (nv)
    e.b.op_void(spv::OpCooperativeMatrixStoreNV, {ptr, matrix, e.u32c(stride), e.b.const_bool(false)});
  else
    e.b.op_void(spirv::OpCooperativeMatrixStoreKHR, {ptr, matrix, e.u32c(spirv::kRowMajor), e.u32c(stride)});
}

Id Fragments::mul_add(Id x, Id y, Id acc) const {
  return e.b.op(nv ? spv::OpCooperativeMatrixMulAddNV : spirv::OpCooperativeMatrixMulAddKHR, c, {x, y, acc});
}

// Bindings are numbered by argument, as the parameter's index.
Id chunk_view(Emitter& e, const ir::Node& node, size_t inputs) {
  const int64_t index = node.attrs.value("index", int64_t(-1));
  if (node.op != "parameter" || index < 0 || size_t(index) >= inputs) return 0;
  Id view = e.b.storage_buffer(e.b.type_vector(e.u32(), 4), 16, uint32_t(index), true);
  e.b.name(view, "arg" + std::to_string(index) + "_chunks");
  return view;
}

Id load_chunk(Emitter& e, Id view, Id at) {
  Id vec = e.b.type_vector(e.u32(), 4);
  return e.b.op(spv::OpLoad, vec, {e.b.op(spv::OpAccessChain, e.b.type_pointer(spv::StorageClassStorageBuffer, vec), {view, e.u32c(0), at})});
}

Id next_step(Emitter& e, Id k0, uint32_t stride, uint32_t k, uint64_t steps) {
  const uint64_t last = (std::max<uint64_t>(steps, 1) - 1) * k;
  return e.b.ext(GLSLstd450UMin, e.u32(), {e.b.op(spv::OpIAdd, e.u32(), {k0, e.u32c(stride)}), e.u32c(last)});
}

// accumulators (`types`, from `init`), the current set and k0; returns all three.
Values k_steps(Emitter& e, std::vector<Id> types, Values init, const KSteps& ks,
               const std::function<Values(const Values& carried, Id k0)>& step) {
  spirv::Builder& b = e.b;
  types.push_back(e.u32());
  init.push_back(ks.first ? ks.first : e.u32c(0));
  return b.loop(
      types, init, [&](const Values& s) { return b.op(spv::OpULessThan, e.boolean(), {s.back(), e.u32c(uint64_t(ks.K))}); },
      [&](const Values& s) {
        const Id k0 = s.back();
        Values next = step(s, k0);
        next.push_back(b.op(spv::OpIAdd, e.u32(), {k0, e.u32c(ks.step())}));
        return next;
      },
      ks.count());
}

Values double_buffered_k_loop(Emitter& e, std::vector<Id> types, Values init, const KSteps& ks, uint32_t sets_sum,
                              const std::function<Values(Id k0)>& fetch, const std::function<void(const Values&, Id set)>& stage,
                              const std::function<Values(Values acc, Id k0, Id set)>& multiply) {
  spirv::Builder& b = e.b;
  const uint64_t steps = uint64_t((ks.K + ks.k - 1) / ks.k);
  const size_t regs = types.size();
  if (steps) {
    stage(fetch(ks.first ? ks.first : e.u32c(0)), e.u32c(0));
    b.workgroup_barrier();
  }
  types.push_back(e.u32());
  init.push_back(e.u32c(0));
  return k_steps(e, types, init, ks, [&](const Values& s, Id k0) {
    const Id set = s[regs];
    Values ahead = fetch(next_step(e, k0, ks.step(), ks.k, steps));
    Values next = multiply(Values(s.begin(), s.begin() + regs), k0, set);
    Id other = b.op(spv::OpISub, e.u32(), {e.u32c(sets_sum), set});
    stage(ahead, other);
    b.workgroup_barrier();
    next.push_back(other);
    return next;
  });
}

Product::Product(const ir::Graph& g, const ir::Node& dot_node, const MatmulTiles& tiles)
    : body(g), dot(dot_node), t(tiles),
      d(DotAxes::of(dot, g.node(dot.args.at(0)).type().shape, g.node(dot.args.at(1)).type().shape)),
      A(operand_of(g, g.node(dot.args.at(0)), d.b1, d.free1, d.c1, t.m, t.texels)),
      B(operand_of(g, g.node(dot.args.at(1)), d.b2, d.free2, d.c2, t.n, t.texels)),
      batch_extents(extents_of(g.node(dot.args.at(0)).type().shape, d.b1)),
      k_extents(extents_of(g.node(dot.args.at(0)).type().shape, d.c1)),
      M(ir::num_elements(A.free_extents)), N(ir::num_elements(B.free_extents)), K(ir::num_elements(k_extents)),
      tiles_m((M + t.m - 1) / t.m), tiles_n((N + t.n - 1) / t.n),
      epilogue(ir::dot_epilogue(g, dot.id, g.outputs.at(0), [](ir::NodeId) { return true; }).value()) {}

Product::Tile Product::tile(Emitter& e, Id p) const {
  auto u = [&](spv::Op op, Id x, int64_t y) { return e.b.op(op, e.u32(), {x, e.u32c(uint64_t(y))}); };
  Id tn = u(spv::OpUMod, p, tiles_n), tm = u(spv::OpUMod, u(spv::OpUDiv, p, tiles_n), tiles_m);
  return {u(spv::OpUDiv, p, tiles_m * tiles_n), u(spv::OpIMul, tm, t.m), u(spv::OpIMul, tn, t.n)};
}

void Product::store_inside(Emitter& e, const BufferRef& output, Id batch, Id row, Id col, Id acc) const {
  auto u = [&](spv::Op op, Id x, Id y) { return e.b.op(op, e.u32(), {x, y}); };
  auto c = [&](int64_t v) { return e.u32c(uint64_t(v)); };
  Index idx;
  idx.shape = dot.type().shape;
  idx.dims = e.split(batch, batch_extents);
  for (Id x : e.split(row, A.free_extents)) idx.dims.push_back(x);
  for (Id x : e.split(col, B.free_extents)) idx.dims.push_back(x);
  idx.linear = u(spv::OpIAdd, u(spv::OpIMul, u(spv::OpIAdd, u(spv::OpIMul, batch, c(M)), row), c(N)), col);
  e.provide(dot, idx, e.dot_result(dot, acc));
  // Each move's element at its layout's index, computed from its operand's: what lies
  // between is elementwise, evaluated from there.
  std::vector<Index> at(epilogue.from.size());
  at[0] = idx;
  for (const auto& step : epilogue.steps) {
    const ir::Node& n = body.node(step.id);
    if (!ir::moves_elements(n)) continue;
    Index& from = at[epilogue.from[step.layout]];
    Index& to = at[step.layout];
    if (n.op == "transpose") {
      const auto axes = n.attrs.at("axes").get<std::vector<int64_t>>();
      const std::vector<Id> d = e.dims(from);
      std::vector<Id> moved;
      for (int64_t a : axes) moved.push_back(d.at(size_t(a)));
      to = e.index_from_dims(n.type().shape, moved);
      to.linear = e.linear(to);
    } else {
      to.shape = n.type().shape;
      to.linear = e.linear(from);
    }
    e.provide(n, to, e.value(body.node(n.args.at(0)), from));
  }
  Index& out = at[epilogue.layout_of_result];
  e.store(output, out.linear, e.value(body.node(body.outputs.at(0)), out));
}

void Product::store(Emitter& e, const BufferRef& output, Id batch, Id row, Id col, Id acc) const {
  auto at = [&] { store_inside(e, output, batch, row, col, acc); };
  std::vector<Id> guards;
  if (M % t.m) guards.push_back(e.b.op(spv::OpULessThan, e.boolean(), {row, e.u32c(uint64_t(M))}));
  if (N % t.n) guards.push_back(e.b.op(spv::OpULessThan, e.boolean(), {col, e.u32c(uint64_t(N))}));
  if (guards.empty()) at();
  else e.b.if_then(e.all_true(guards), at);
}

}  // namespace matmul

using namespace matmul;

std::vector<const ir::Node*> matmul_vector_operands(const ir::Graph& body, const ir::Node& dot, const MatmulTiles& t) {
  if (t.vector == 1 || t.fragment.m || t.pairs) return {};
  const ir::Node &an = body.node(dot.args.at(0)), &bn = body.node(dot.args.at(1));
  const DotAxes d = DotAxes::of(dot, an.type().shape, bn.type().shape);
  // The operands as the product reads them (Product's, without its epilogue).
  const Operand A = operand_of(body, an, d.b1, d.free1, d.c1, t.m, t.texels);
  const Operand B = operand_of(body, bn, d.b2, d.free2, d.c2, t.n, t.texels);
  std::vector<const ir::Node*> r;
  // Staged kernels read each operand along whichever of its axes runs along memory.
  if (reads_as_vectors(A.node, A.contract_axes, t.vector) || (t.staged && reads_as_vectors(A.node, A.free_axes, t.vector))) r.push_back(&A.node);
  if (reads_as_vectors(B.node, B.free_axes, t.vector) || (t.staged && reads_as_vectors(B.node, B.contract_axes, t.vector))) r.push_back(&B.node);
  return r;
}

std::vector<const ir::Node*> matmul_texel_operands(const ir::Graph& body, const ir::Node& dot, const MatmulTiles& t) {
  if (!t.texels) return {};
  const Product pr(body, dot, t);
  const TexelLayout l = texel_layout(pr.A, pr.B);
  std::vector<const ir::Node*> r;
  if (l.a) r.push_back(&pr.A.node);
  if (l.b) r.push_back(&pr.B.node);
  return r;
}

MatmulShape matmul_shape(const ir::Graph& body, const ir::Node& dot, const DeviceCaps& caps) {
  const ir::Node &an = body.node(dot.args.at(0)), &bn = body.node(dot.args.at(1));
  const ir::Shape &as = an.type().shape, &bs = bn.type().shape;
  const DotAxes d = DotAxes::of(dot, as, bs);
  const DType t = dot.type().dtype;
  const DType acc = t == DType::F32 && computes_f32_in_f64(caps) ? DType::F64 : t;
  MatmulShape s;
  s.batch = ir::num_elements(extents_of(as, d.b1));
  s.m = ir::num_elements(extents_of(as, d.free1));
  s.n = ir::num_elements(extents_of(bs, d.free2));
  s.k = ir::num_elements(extents_of(as, d.c1));
  s.bytes = Emitter::register_bits(acc) / 8;
  s.integer = !ir::is_float(t);
  const DType at = an.type().dtype, bt = bn.type().dtype;
  s.f32_operands = at == DType::F32 && bt == DType::F32;
  const Operand A = operand_of(body, an, d.b1, d.free1, d.c1, 0, true), B = operand_of(body, bn, d.b2, d.free2, d.c2, 0, true);
  const TexelLayout l = texel_layout(A, B);
  s.computed_operands = A.node.op != "parameter" || B.node.op != "parameter";
  // Emulated 64-bit values are uvec2s: read one at a time, never as texels or vectors.
  s.scalar_reads = caps.emulated(at) || caps.emulated(bt) || caps.emulated(acc);
  if (at == bt && l.a && l.b && !s.scalar_reads) s.texel_run = texel_run(an);
  if (at == bt && ir::is_float(t) && (at == DType::F16 || at == DType::BF16))
    s.operands = at == DType::F16 ? MatrixComponent::F16 : MatrixComponent::BF16;
  const bool bf16_fragments = has_f32_fragments(caps, MatrixComponent::BF16);
  // f32 operands gathered through index maps (a convolution's patches) keep the exact SIMT
  // tiles: computing each element's index and rounding it cost more than the tensor cores
  // save (H100, issue 16's conv3x3, device ms: 0.37 exact, 0.54-0.65 high, 0.44-0.80 default).
  const bool parameters = an.op == "parameter" && bn.op == "parameter";
  if (s.f32_operands && t == DType::F32 && caps.f32_products != Precision::Highest && bf16_fragments && parameters) {
    s.operands = MatrixComponent::BF16;
    s.rounded_f32 = true;
    s.split = caps.f32_products == Precision::High;
  }
  return s;
}

}  // namespace nxv::codegen
