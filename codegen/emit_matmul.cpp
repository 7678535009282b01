#include <algorithm>
#include <array>
#include <functional>
#include <set>
#include <string>
#include <utility>

#include "codegen/matmul.h"

namespace nxv::codegen {

using ir::DType;
using Values = spirv::Builder::Values;

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

// Whether the operand's elements lie along a contracted axis in memory: then the threads
// loading a tile walk the contraction, else its free axis, so that neighbours read
// neighbouring addresses.
bool contiguous_along_k(const ir::Graph& body, const ir::Node& operand, const std::vector<int64_t>& contract) {
  return std::find(contract.begin(), contract.end(), innermost_axis(body, operand)) != contract.end();
}

// Elements of `node` per texel.
uint32_t texel_run(const ir::Node& node) { return kTexelBytes / uint32_t(ir::dtype_bytes(node.type().dtype)); }

struct Operand {
  const ir::Node& node;
  std::vector<int64_t> batch_axes, free_axes, contract_axes;
  std::vector<int64_t> free_extents;
  uint32_t tile;  // its free extent per output tile (tiles' m or n)
};

// Whether `node` can be read `lanes` elements at a time along the last of `axes`: a graph
// input whose innermost axis that is, a multiple of `lanes` long (so that no vector straddles
// two rows and every vector's first element is a multiple of `lanes` into the buffer).
bool reads_as_vectors(const ir::Node& node, const std::vector<int64_t>& axes, uint32_t lanes) {
  const ir::Shape& s = node.type().shape;
  const DType t = node.type().dtype;
  return lanes > 1 && node.op == "parameter" && (t == DType::F32 || (t == DType::F64 && lanes <= 2)) && !s.empty() && !axes.empty() &&
         axes.back() == int64_t(s.size()) - 1 && s.back() % lanes == 0;
}

// A dot's operand (`node`, its axes as the dot pairs them) with tiles `tile` along its free
// axes; for texel kernels (`in_place`), a graph input behind transposes (index maps that move
// no data: Nx.transpose(w) fused into the dot's kernel) is read in place, its axes named as
// the input's.
Operand operand_of(const ir::Graph& body, const ir::Node& node, const std::vector<int64_t>& batch,
                   const std::vector<int64_t>& free, const std::vector<int64_t>& contract, uint32_t tile, bool in_place) {
  const std::vector<int64_t> extents = extents_of(node.type().shape, free);
  const ir::Node* n = &node;
  std::array<std::vector<int64_t>, 3> axes{batch, free, contract};
  while (in_place && n->op == "transpose") {
    const auto perm = n->attrs.at("axes").get<std::vector<int64_t>>();
    for (auto& list : axes)
      for (int64_t& a : list) a = perm.at(size_t(a));
    n = &body.node(n->args.at(0));
  }
  if (n->op != "parameter") return {node, batch, free, contract, extents, tile};
  return {*n, axes[0], axes[1], axes[2], extents, tile};
}

// How a dot's operands can be read as texels (both what MatmulShape::texel_run asks and what
// a texel kernel binds), each as operand_of reads it in place: a, b: the first and the
// second can; a_rows: the first's runs lie along its rows (A = [K][M]), else along the
// contraction; b_k: the second's lie along the contraction (B = [N][K]), else along its
// columns.
struct TexelLayout {
  bool a = false, a_rows = false, b = false, b_k = false;
};
TexelLayout texel_layout(const Operand& A, const Operand& B) {
  TexelLayout l;
  l.a_rows = reads_as_vectors(A.node, A.free_axes, texel_run(A.node));
  l.a = l.a_rows || reads_as_vectors(A.node, A.contract_axes, texel_run(A.node));
  l.b_k = reads_as_vectors(B.node, B.contract_axes, texel_run(B.node));
  l.b = l.b_k || reads_as_vectors(B.node, B.free_axes, texel_run(B.node));
  return l;
}

// Element (free, k) of an operand in batch `batch`, at positions clamped into [0, extent)
// where tiles of o.tile x k_step overrun it; past the contraction's end it is 0 (so is the other
// operand's: 0 * inf would be NaN), which adds nothing to an accumulator that starts at +0.
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

// k0 of the k-step after k0's, for reading its slices ahead: the last step's own k0 after the
// last of `steps` steps (whose slices are read again for a step that does not come, within
// the operands, rather than past their ends).
Id next_step(Emitter& e, Id k0, uint32_t k, uint64_t steps) {
  const uint64_t last = (std::max<uint64_t>(steps, 1) - 1) * k;
  return e.b.ext(GLSLstd450UMin, e.u32(), {e.b.op(spv::OpIAdd, e.u32(), {k0, e.u32c(k)}), e.u32c(last)});
}

// The k-loop of a kernel with two sets of slices in shared memory: the first k-step's slices
// are staged into set 0 before the loop (where there is a step); each step reads the next
// step's from memory before multiplying the current set and stores them into the other set
// after, one barrier per step. The sets are numbered 0 and `sets_sum` (an index, or an offset
// into shared memory), the other set of `set` being sets_sum - set. Carried: the
// accumulators (`types`, from `init`), the current set and k0; returns all three.
Values double_buffered_k_loop(Emitter& e, std::vector<Id> types, Values init, int64_t K, uint32_t k, uint32_t sets_sum,
                              const std::function<Values(Id k0)>& fetch, const std::function<void(const Values&, Id set)>& stage,
                              const std::function<Values(Values acc, Id k0, Id set)>& multiply) {
  spirv::Builder& b = e.b;
  const uint64_t steps = uint64_t((K + k - 1) / k);
  const size_t regs = types.size();
  if (steps) {
    stage(fetch(e.u32c(0)), e.u32c(0));
    b.workgroup_barrier();
  }
  types.insert(types.end(), {e.u32(), e.u32()});
  init.insert(init.end(), {e.u32c(0), e.u32c(0)});
  return b.loop(
      types, init, [&](const Values& s) { return b.op(spv::OpULessThan, e.boolean(), {s.back(), e.u32c(uint64_t(K))}); },
      [&](const Values& s) {
        const Id k0 = s.back(), set = s[regs];
        Values ahead = fetch(next_step(e, k0, k, steps));
        Values next = multiply(Values(s.begin(), s.begin() + regs), k0, set);
        Id other = b.op(spv::OpISub, e.u32(), {e.u32c(sets_sum), set});
        stage(ahead, other);
        b.workgroup_barrier();
        next.insert(next.end(), {other, b.op(spv::OpIAdd, e.u32(), {k0, e.u32c(k)})});
        return next;
      },
      steps);
}

// The dot as both kernels tile it: its operands, extents and tiles.
struct Product {
  const ir::Graph& body;
  const ir::Node& dot;
  const MatmulTiles& t;
  DotAxes d;
  Operand A, B;
  std::vector<int64_t> batch_extents, k_extents;
  int64_t M, N, K, tiles_m, tiles_n;

  Product(const ir::Graph& g, const ir::Node& dot_node, const MatmulTiles& tiles)
      : body(g), dot(dot_node), t(tiles),
        d(DotAxes::of(dot, g.node(dot.args.at(0)).type().shape, g.node(dot.args.at(1)).type().shape)),
        A(operand_of(g, g.node(dot.args.at(0)), d.b1, d.free1, d.c1, t.m, t.texels)),
        B(operand_of(g, g.node(dot.args.at(1)), d.b2, d.free2, d.c2, t.n, t.texels)),
        batch_extents(extents_of(g.node(dot.args.at(0)).type().shape, d.b1)),
        k_extents(extents_of(g.node(dot.args.at(0)).type().shape, d.c1)),
        M(ir::num_elements(A.free_extents)), N(ir::num_elements(B.free_extents)), K(ir::num_elements(k_extents)),
        tiles_m((M + t.m - 1) / t.m), tiles_n((N + t.n - 1) / t.n) {}

  // Output tile `p`'s batch and first row and column.
  struct Tile {
    Id batch, m0, n0;
  };
  Tile tile(Emitter& e, Id p) const {
    auto u = [&](spv::Op op, Id x, int64_t y) { return e.b.op(op, e.u32(), {x, e.u32c(uint64_t(y))}); };
    Id tn = u(spv::OpUMod, p, tiles_n), tm = u(spv::OpUMod, u(spv::OpUDiv, p, tiles_n), tiles_m);
    return {u(spv::OpUDiv, p, tiles_m * tiles_n), u(spv::OpIMul, tm, t.m), u(spv::OpIMul, tn, t.n)};
  }

  // Computes the body's output at (batch, row, col) from the dot's accumulator there and
  // stores it, where the position lies inside the output.
  void store(Emitter& e, const BufferRef& output, Id batch, Id row, Id col, Id acc) const {
    spirv::Builder& b = e.b;
    auto u = [&](spv::Op op, Id x, Id y) { return b.op(op, e.u32(), {x, y}); };
    auto c = [&](int64_t v) { return e.u32c(uint64_t(v)); };
    auto at = [&] {
      Index idx;
      idx.shape = dot.type().shape;
      idx.dims = e.split(batch, batch_extents);
      for (Id x : e.split(row, A.free_extents)) idx.dims.push_back(x);
      for (Id x : e.split(col, B.free_extents)) idx.dims.push_back(x);
      idx.linear = u(spv::OpIAdd, u(spv::OpIMul, u(spv::OpIAdd, u(spv::OpIMul, batch, c(M)), row), c(N)), col);
      e.provide(dot, idx, e.dot_result(dot, acc));
      e.store(output, idx.linear, e.value(body.node(body.outputs.at(0)), idx));
    };
    std::vector<Id> guards;
    if (M % t.m) guards.push_back(b.op(spv::OpULessThan, e.boolean(), {row, c(M)}));
    if (N % t.n) guards.push_back(b.op(spv::OpULessThan, e.boolean(), {col, c(N)}));
    if (guards.empty()) at();
    else b.if_then(e.all_true(guards), at);
  }
};

}  // namespace

std::vector<const ir::Node*> matmul_vector_operands(const ir::Graph& body, const ir::Node& dot, const MatmulTiles& t) {
  if (t.vector == 1 || t.fragment.m || t.pairs) return {};
  const ir::Node& an = body.node(dot.args.at(0));
  const ir::Node& bn = body.node(dot.args.at(1));
  const DotAxes d = DotAxes::of(dot, an.type().shape, bn.type().shape);
  std::vector<const ir::Node*> r;
  // Staged kernels read each operand along whichever of its axes runs along memory.
  if (reads_as_vectors(an, d.c1, t.vector) || (t.staged && reads_as_vectors(an, d.free1, t.vector))) r.push_back(&an);
  if (reads_as_vectors(bn, d.free2, t.vector) || (t.staged && reads_as_vectors(bn, d.c2, t.vector))) r.push_back(&bn);
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
  const TexelLayout l = texel_layout(operand_of(body, an, d.b1, d.free1, d.c1, 0, true), operand_of(body, bn, d.b2, d.free2, d.c2, 0, true));
  // Emulated 64-bit values are uvec2s: read one at a time, never as texels or vectors.
  s.scalar_reads = caps.emulated(at) || caps.emulated(bt) || caps.emulated(acc);
  if (at == bt && l.a && l.b && !s.scalar_reads) s.texel_run = texel_run(an);
  if (at == bt && ir::is_float(t) && (at == DType::F16 || at == DType::BF16))
    s.operands = at == DType::F16 ? MatrixComponent::F16 : MatrixComponent::BF16;
  const bool bf16_fragments = std::any_of(caps.cooperative_matrix_shapes.begin(), caps.cooperative_matrix_shapes.end(),
                                          [](const CooperativeMatrixShape& f) {
                                            return f.operands == MatrixComponent::BF16 && f.accumulator == MatrixComponent::F32;
                                          });
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

void emit_matmul(const ir::Graph& body, const ir::Node& dot, Emitter& e, const BufferRef& output,
                 const LaunchConfig& launch, uint64_t* shared_bytes) {
  spirv::Builder& b = e.b;
  const MatmulTiles& t = launch.matmul;
  const Product pr(body, dot, t);
  const ir::Node& an = pr.A.node;
  const Operand &A = pr.A, &B = pr.B;
  const std::vector<int64_t>&batch_extents = pr.batch_extents, &k_extents = pr.k_extents;
  const int64_t M = pr.M, K = pr.K;
  const uint32_t wg = t.invocations(), cols = t.n / t.thread_n, V = t.vector;
  const DType acc_t = e.dot_accumulator_type(dot);
  const Id acc_type = e.reg_type(acc_t);
  const size_t regs = size_t(t.thread_m) * t.thread_n;

  auto u = [&](spv::Op op, Id x, Id y) { return b.op(op, e.u32(), {x, y}); };
  auto c = [&](int64_t v) { return e.u32c(uint64_t(v)); };
  auto less = [&](Id x, int64_t v) { return b.op(spv::OpULessThan, e.boolean(), {x, c(v)}); };
  // Into [0, hi): only where the tiles overrun it (hi not a multiple of the tile's extent).
  auto clamp = [&](Id x, int64_t hi, uint32_t tile) {
    return hi % tile == 0 ? x : b.ext(GLSLstd450UMin, e.u32(), {x, c(hi - 1)});
  };
  const Id local = b.builtin_x(spv::BuiltInLocalInvocationId);
  const Id tx = u(spv::OpUMod, local, c(cols)), ty = u(spv::OpUDiv, local, c(cols));
  Id lane = 0;
  if (t.broadcast) {
    b.capability(spv::CapabilityGroupNonUniform);
    b.capability(spv::CapabilityGroupNonUniformBallot);
    lane = b.builtin_u32(spv::BuiltInSubgroupLocalInvocationId);
  }

  auto index_of = [&](const Operand& o, Id batch, Id free, Id k) {
    return Emitter::operand_index(o.node.type().shape, o.batch_axes, o.free_axes, o.contract_axes,
                                  e.split(batch, batch_extents), e.split(free, o.free_extents), e.split(k, k_extents));
  };
  // Past the contraction's end an operand is 0 (so is the other's: 0 * inf would be NaN),
  // which adds nothing to an accumulator that starts at +0.
  auto zero_past_k = [&](Id type, Id k, Id v, Id zero, uint32_t lanes = 1) {
    if (K % t.k == 0) return v;
    Id in = less(k, K);
    if (lanes > 1) in = b.op(spv::OpCompositeConstruct, b.type_vector(e.boolean(), lanes), std::vector<Id>(lanes, in));
    return e.b_select(type, in, v, zero);
  };
  auto zero_of = [&](const ir::Node& o) {
    const DType ot = o.type().dtype;
    return ir::is_float(ot) ? e.float_literal(ot, 0.0) : e.constant(ot, 0);
  };
  auto element = [&](const Operand& o, Id batch, Id free, Id k) {
    return operand_element(e, o, batch_extents, k_extents, t.k, batch, free, k);
  };
  // Elements per run: V, 2V where each component of a vector read holds two (pairs), or a
  // texel's.
  const uint32_t R = t.texels ? texel_run(an) : t.pairs ? 2 * V : V;
  // The run of elements (free, k), ... of a vector-read operand (matmul_vector_operands, or a
  // view for pairs) as one vector: `along_k`, k to k + R - 1 (k a multiple of R, as is K),
  // else free to free + R - 1.
  auto run = [&](const Operand& o, const BufferRef& buf, Id batch, Id free, Id k, bool along_k) {
    const int64_t F = ir::num_elements(o.free_extents);
    if (!along_k && F % o.tile) free = b.ext(GLSLstd450UMin, e.u32(), {free, c(F - R)});
    Id kc = K % t.k == 0 ? k : b.ext(GLSLstd450UMin, e.u32(), {k, c(along_k ? K - R : K - 1)});
    Index idx = index_of(o, batch, free, kc);
    Id v = e.load_vector(buf, u(spv::OpUDiv, e.linear(idx), c(R)));
    if (K % t.k == 0) return v;
    const Id type = e.buffer_entry_type(buf);
    const Id zero = buf.dtype == o.node.type().dtype ? zero_of(o.node) : e.constant(buf.dtype, 0);
    return zero_past_k(type, k, v, b.op(spv::OpCompositeConstruct, type, std::vector<Id>(buf.lanes, zero)), buf.lanes);
  };
  // A run's R elements: the vector's components, each 64-bit component's two halves, or a
  // texel's bits as R elements.
  auto run_elements = [&](const Operand& o, const BufferRef& buf, Id batch, Id free, Id k, bool along_k) {
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
  };
  // Pairs: runs are read through a view of the operand's binding (bindings are numbered by
  // argument, as the parameter's index) as vectors of V 64-bit integers.
  std::vector<BufferRef> pair_views;
  pair_views.reserve(2);  // vector_a and vector_b point into it
  auto vector_buffer = [&](const Operand& o, const std::vector<int64_t>& axes) -> const BufferRef* {
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
  };
  const TexelLayout tl = t.texels ? texel_layout(A, B) : TexelLayout{};
  const BufferRef* vector_a = t.broadcast || t.texels ? vector_buffer(A, tl.a_rows ? A.free_axes : A.contract_axes) : nullptr;
  const BufferRef* vector_b = t.broadcast || t.texels ? vector_buffer(B, tl.b_k ? B.contract_axes : B.free_axes) : nullptr;

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
  struct Slice {
    const Operand* o = nullptr;
    uint32_t free = 0;
    bool along_k = false;               // the operand runs along k in memory
    Id array = 0, elem = 0, entry = 0;  // entry: elem, or a vector of V of them
    uint32_t pitch = 0;                 // entries per k row
    uint32_t size = 0;                  // entries per set of slices
    const BufferRef* vectors = nullptr;  // the operand's binding, where a run is one load
    uint32_t runs = 0;                   // runs each invocation loads
  };
  auto slice_of = [&](const Operand& o, uint32_t free) {
    Slice s;
    s.o = &o;
    s.free = free;
    s.along_k = contiguous_along_k(body, o.node, o.contract_axes);
    s.elem = e.reg_type(o.node.type().dtype);
    s.entry = V > 1 ? b.type_vector(s.elem, V) : s.elem;
    s.pitch = free / V + 1;
    s.size = t.k * s.pitch;
    s.vectors = vector_buffer(o, s.along_k ? o.contract_axes : o.free_axes);
    s.runs = free * t.k / V / wg;
    return s;
  };
  Slice sa, sb;
  bool two_stages = false;
  if (t.staged) {
    sa = slice_of(A, t.m);
    sb = slice_of(B, t.n);
    const uint64_t set_bytes = (uint64_t(b.type_bytes(sa.elem)) * sa.size + uint64_t(b.type_bytes(sb.elem)) * sb.size) * V;
    two_stages = 2 * set_bytes <= e.caps.max_shared_memory_bytes;
    const uint32_t sets = two_stages ? 2 : 1;
    sa.array = b.workgroup_array(sa.entry, sets * sa.size);
    sb.array = b.workgroup_array(sb.entry, sets * sb.size);
    *shared_bytes += sets * set_bytes;
  }
  // Entry fv of k row kk of set `set` (elements fv * V to fv * V + V - 1), and element f.
  auto entry_at = [&](const Slice& s, Id set, Id kk, Id fv) {
    return u(spv::OpIAdd, u(spv::OpIAdd, u(spv::OpIMul, set, c(s.size)), u(spv::OpIMul, kk, c(s.pitch))), fv);
  };
  auto entry_ptr = [&](const Slice& s, Id set, Id kk, Id fv) {
    return b.op(spv::OpAccessChain, b.type_pointer(spv::StorageClassWorkgroup, s.entry), {s.array, entry_at(s, set, kk, fv)});
  };
  auto element_ptr = [&](const Slice& s, Id set, Id kk, Id f) {
    if (V == 1) return entry_ptr(s, set, kk, f);
    return b.op(spv::OpAccessChain, b.type_pointer(spv::StorageClassWorkgroup, s.elem),
                {s.array, entry_at(s, set, kk, u(spv::OpUDiv, f, c(V))), u(spv::OpUMod, f, c(V))});
  };
  // Run r of this invocation: its k and free offsets in the slice.
  auto run_at = [&](const Slice& s, uint32_t r) -> std::pair<Id, Id> {
    Id l = u(spv::OpIAdd, local, c(int64_t(r) * wg));
    const uint32_t across = (s.along_k ? t.k : s.free) / V;
    Id inner = u(spv::OpUMod, l, c(across)), outer = u(spv::OpUDiv, l, c(across));
    if (V > 1) inner = u(spv::OpIMul, inner, c(V));
    return s.along_k ? std::pair{inner, outer} : std::pair{outer, inner};
  };
  auto fetch_runs = [&](const Slice& s, Id batch, Id free0, Id k0) {
    Values v;
    for (uint32_t r = 0; r < s.runs; ++r) {
      const auto [kk, ff] = run_at(s, r);
      Id free = u(spv::OpIAdd, free0, ff), k = u(spv::OpIAdd, k0, kk);
      if (s.vectors) {
        const Id f = s.along_k ? clamp(free, ir::num_elements(s.o->free_extents), s.o->tile) : free;
        v.push_back(run(*s.o, *s.vectors, batch, f, k, s.along_k));
        continue;
      }
      std::vector<Id> x;
      for (uint32_t q = 0; q < V; ++q)
        x.push_back(s.along_k ? element(*s.o, batch, free, u(spv::OpIAdd, k, c(q))) : element(*s.o, batch, u(spv::OpIAdd, free, c(q)), k));
      v.push_back(V == 1 ? x[0] : b.op(spv::OpCompositeConstruct, s.entry, x));
    }
    return v;
  };
  auto store_runs = [&](const Slice& s, const Values& v, Id set) {
    for (uint32_t r = 0; r < v.size(); ++r) {
      const auto [kk, ff] = run_at(s, r);
      if (!s.along_k || V == 1) {
        b.op_void(spv::OpStore, {entry_ptr(s, set, kk, V == 1 ? ff : u(spv::OpUDiv, ff, c(V))), v[r]});
        continue;
      }
      for (uint32_t q = 0; q < V; ++q)
        b.op_void(spv::OpStore, {element_ptr(s, set, u(spv::OpIAdd, kk, c(q)), ff), b.op(spv::OpCompositeExtract, s.elem, {v[r]}, {q})});
    }
  };

  b.position_loop(
      {e.u32()}, {b.builtin_x(spv::BuiltInWorkgroupId)}, [&](const Values& p) { return less(p[0], t.tiles); },
      [&](const Values& p) {
        // Plain names, not structured bindings: lambdas below capture them (clang before 16 cannot).
        const auto tile = pr.tile(e, p[0]);
        const Id batch = tile.batch, m0 = tile.m0, n0 = tile.n0;
        // Invocation (ty, tx) holds rows m0 + ty + i * rows-of-invocations and columns
        // n0 + tx + j * cols, in runs of V (staged rows, and columns where V > 1: row
        // m0 + (ty + (i / V) * rows-of-invocations) * V + i % V; texels: rows where they run
        // along them, columns always, in runs of R): neighbouring invocations read and write
        // neighbouring runs.
        const uint32_t rows = t.m / t.thread_m, RV = t.staged ? V : tl.a_rows ? R : 1;
        auto row = [&](uint32_t i) {
          Id run0 = RV == 1 ? u(spv::OpIAdd, m0, ty) : u(spv::OpIAdd, m0, u(spv::OpIMul, ty, c(RV)));
          return u(spv::OpIAdd, run0, c(int64_t(i / RV) * rows * RV + i % RV));
        };
        auto col = [&](uint32_t j) {
          Id run0 = R == 1 ? u(spv::OpIAdd, n0, tx) : u(spv::OpIAdd, n0, u(spv::OpIMul, tx, c(R)));
          return u(spv::OpIAdd, run0, c(int64_t(j / R) * cols * R + j % R));
        };
        auto fetch = [&](Id k0) {
          Values v = fetch_runs(sa, batch, m0, k0), w = fetch_runs(sb, batch, n0, k0);
          v.insert(v.end(), w.begin(), w.end());
          return v;
        };
        auto stage = [&](const Values& v, Id set) {
          store_runs(sa, Values(v.begin(), v.begin() + sa.runs), set);
          store_runs(sb, Values(v.begin() + sa.runs, v.end()), set);
        };
        // One k-step's terms from slice set `set` (staged) or memory, added to `acc`.
        auto multiply = [&](Values next, Id k0, Id set) {
          // Broadcast: lane l holds elements k0 + l * V, ..., of each of its rows (which
          // the whole subgroup shares); step kk takes lane kk / V's.
          std::vector<std::vector<Id>> lane_a(t.thread_m);
          if (t.broadcast)
            for (uint32_t i = 0; i < t.thread_m; ++i) {
              Id k = u(spv::OpIAdd, k0, R == 1 ? lane : u(spv::OpIMul, lane, c(R)));
              if (vector_a) lane_a[i] = run_elements(A, *vector_a, batch, clamp(row(i), M, t.m), k, true);
              else
                for (uint32_t l = 0; l < R; ++l) lane_a[i].push_back(element(A, batch, row(i), u(spv::OpIAdd, k, c(l))));
            }
          const Id a_type = e.reg_type(an.type().dtype);
          auto shared_a = [&](uint32_t i, uint32_t kk) {
            return b.op_in_place(spv::OpGroupNonUniformBroadcast, a_type, {c(spv::ScopeSubgroup), lane_a[i][kk % R], c(kk / R)});
          };
          // Staged: the invocation's `count` rows (or columns) at step kk, runs of V in entries
          // first + r * stride.
          auto staged = [&](const Slice& s, Id first, uint32_t stride, uint32_t count, uint32_t kk) {
            std::vector<Id> x;
            for (uint32_t r = 0; r < count / V; ++r) {
              Id v = b.op_in_place(spv::OpLoad, s.entry, {entry_ptr(s, set, c(kk), u(spv::OpIAdd, first, c(int64_t(r) * stride)))});
              for (uint32_t q = 0; q < V; ++q) x.push_back(V == 1 ? v : b.op(spv::OpCompositeExtract, s.elem, {v}, {q}));
            }
            return x;
          };
          // Direct: the `count` rows (or columns) of an operand at step kk, `at` their
          // indices. Read as texels (the same rows for the whole subgroup) along k: one texel
          // per row every R steps, `held` for the next R - 1; along the rows: one per run of
          // R rows every step, or, `ahead`, those of R steps every R steps, held likewise.
          auto direct = [&](const Operand& o, const BufferRef* buf, bool along_k, bool ahead, uint32_t count,
                            const auto& at, std::vector<std::vector<Id>>& held, uint32_t kk) {
            const Id k = u(spv::OpIAdd, k0, c(kk));
            std::vector<Id> x(count);
            for (uint32_t i = 0; i < count; ++i) {
              if (!buf) {
                x[i] = element(o, batch, at(i), k);
              } else if (along_k || ahead) {
                if (kk % R == 0 && along_k)
                  held[i] = run_elements(o, *buf, batch, clamp(at(i), ir::num_elements(o.free_extents), o.tile), k, true);
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
          };
          std::vector<std::vector<Id>> held_a(t.thread_m), held_b(t.thread_n);
          for (uint32_t kk = 0; kk < t.k; ++kk) {
            std::vector<Id> x(t.thread_m), y(t.thread_n);
            if (t.staged) {
              x = staged(sa, ty, rows, t.thread_m, kk);
              y = staged(sb, tx, cols, t.thread_n, kk);
            } else {
              if (t.broadcast)
                for (uint32_t i = 0; i < t.thread_m; ++i) x[i] = shared_a(i, kk);
              else
                x = direct(A, vector_a, !tl.a_rows, tl.a_rows, t.thread_m, row, held_a, kk);
              y = direct(B, vector_b, tl.b_k, false, t.thread_n, col, held_b, kk);
            }
            for (uint32_t i = 0; i < t.thread_m; ++i)
              for (uint32_t j = 0; j < t.thread_n; ++j) next[i * t.thread_n + j] = e.dot_term(dot, next[i * t.thread_n + j], x[i], y[j]);
          }
          return next;
        };

        const uint64_t steps = uint64_t((K + t.k - 1) / t.k);
        std::vector<Id> types(regs, acc_type), init(regs, e.dot_zero(dot));
        Values acc;
        if (two_stages) {
          acc = double_buffered_k_loop(e, types, init, K, t.k, 1, fetch, stage, multiply);
        } else {
          types.push_back(e.u32());
          init.push_back(c(0));
          acc = b.loop(
              types, init, [&](const Values& s) { return less(s.back(), K); },
              [&](const Values& s) {
                const Id k0 = s.back();
                if (t.staged) {
                  stage(fetch(k0), c(0));
                  b.workgroup_barrier();
                }
                Values next = multiply(Values(s.begin(), s.end() - 1), k0, c(0));
                if (t.staged) b.workgroup_barrier();  // the slices are reloaded next
                next.push_back(u(spv::OpIAdd, k0, c(t.k)));
                return next;
              },
              steps);
        }
        for (uint32_t i = 0; i < t.thread_m; ++i)
          for (uint32_t j = 0; j < t.thread_n; ++j) {
            Id r = row(i), q = col(j);
            pr.store(e, output, batch, r, q, acc[i * t.thread_n + j]);
          }
        return Values{u(spv::OpIAdd, p[0], c(launch.group_count))};
      });
}

void emit_cooperative_matmul(const ir::Graph& body, const ir::Node& dot, Emitter& e, const std::vector<BufferRef>& inputs,
                             const BufferRef& output, const LaunchConfig& launch, uint64_t* shared_bytes) {
  spirv::Builder& b = e.b;
  const MatmulTiles& t = launch.matmul;
  const CooperativeMatrixShape& f = t.fragment;
  const Product pr(body, dot, t);
  const Operand &A = pr.A, &B = pr.B;
  const std::vector<int64_t>&batch_extents = pr.batch_extents, &k_extents = pr.k_extents;
  const int64_t K = pr.K;
  const uint32_t wg = t.invocations(), wm = t.m / t.subgroups_m, wn = t.n / t.subgroups_n;
  const uint32_t frags_m = wm / f.m, frags_n = wn / f.n;

  auto u = [&](spv::Op op, Id x, Id y) { return b.op(op, e.u32(), {x, y}); };
  auto c = [&](int64_t v) { return e.u32c(uint64_t(v)); };
  auto less = [&](Id x, int64_t v) { return b.op(spv::OpULessThan, e.boolean(), {x, c(v)}); };
  const Id vec = b.type_vector(e.u32(), 4);
  const Id zero_vec = b.op(spv::OpCompositeConstruct, vec, {c(0), c(0), c(0), c(0)});
  const Id local = b.builtin_x(spv::BuiltInLocalInvocationId);
  b.capability(spv::CapabilityGroupNonUniform);
  const Id subgroup = b.builtin_u32(spv::BuiltInSubgroupId), lane = b.builtin_u32(spv::BuiltInSubgroupLocalInvocationId);
  const Id sub_m = u(spv::OpUDiv, subgroup, c(t.subgroups_n)), sub_n = u(spv::OpUMod, subgroup, c(t.subgroups_n));

  // Shared memory is one array of 16-byte chunks (8 operand elements, or 4 f32
  // accumulators). A k-slice of an operand's tile is `outer` rows of `inner` elements along
  // the operand's innermost axis in memory, so that the loads that fill it and the stores
  // into it both run along memory; rows are padded by one chunk against bank conflicts.
  struct Slice {
    bool k_inner;                  // rows along the contraction (else along the free axes)
    uint32_t outer, inner, pitch;  // pitch in chunks
    uint32_t base;                 // its first chunk
  };
  auto slice_of = [&](const Operand& o, uint32_t free, uint32_t base) {
    const bool k_inner = contiguous_along_k(body, o.node, o.contract_axes);
    Slice sl{k_inner, k_inner ? free : t.k, k_inner ? t.k : free, 0, base};
    sl.pitch = sl.inner / 8 + 1;
    return sl;
  };
  const Slice sa = slice_of(A, t.m, 0);
  const Slice sb = slice_of(B, t.n, sa.outer * sa.pitch);
  // f32 operands (MatmulShape::rounded_f32) are rounded to bf16 as they are staged; split,
  // their lo parts follow the hi parts' two slices, `lo_base` chunks on.
  const bool rounded = t.rounded_f32;
  const uint32_t lo_base = sb.base + sb.outer * sb.pitch;
  // After the contraction the same memory holds, per subgroup, one row of its accumulator
  // fragments (f.m x wn f32) at a time, from which the epilogue computes the outputs.
  const uint32_t row_floats = f.m * wn;
  // Two sets of slices where they fit: the next k-step's are stored while the current ones
  // multiply, one barrier per step instead of two.
  const uint32_t slice_chunks = lo_base * (t.split ? 2 : 1);
  const bool two_stages = uint64_t(slice_chunks) * 32 <= e.caps.max_shared_memory_bytes;
  const uint32_t chunks = std::max(slice_chunks * (two_stages ? 2 : 1), t.subgroups_m * t.subgroups_n * row_floats / 4);
  const Id smem = b.workgroup_array(vec, chunks);
  *shared_bytes += uint64_t(chunks) * 16;
  auto chunk_ptr = [&](Id at) {
    return b.op(spv::OpAccessChain, b.type_pointer(spv::StorageClassWorkgroup, vec), {smem, at});
  };

  // A parameter whose innermost axis is the slice's one inner axis, of a multiple of 8
  // elements, is read a chunk at a time (two 16-byte vectors where it is f32) through a view
  // of its binding as 16-byte vectors (bindings are numbered by argument, as the
  // parameter's index); else element by element.
  auto chunk_view = [&](const Operand& o, const Slice& sl) -> Id {
    const ir::Shape& shape = o.node.type().shape;
    const auto& inner_axes = sl.k_inner ? o.contract_axes : o.free_axes;
    if (o.node.op != "parameter" || inner_axes.size() != 1 || inner_axes[0] != int64_t(shape.size()) - 1 ||
        shape.back() % 8)
      return 0;
    const int64_t index = o.node.attrs.value("index", int64_t(-1));
    if (index < 0 || size_t(index) >= inputs.size()) return 0;
    Id view = b.storage_buffer(vec, 16, uint32_t(index), true);
    b.name(view, "arg" + std::to_string(index) + "_chunks");
    return view;
  };
  const Id view_a = chunk_view(A, sa), view_b = chunk_view(B, sb);

  // The bf16 bits of f32 `x` in the high half of a u32: rounded to nearest even (where Nx's
  // bf16 truncates: here each rounding is an error of the product, which nearest halves), a
  // NaN kept a NaN. In integer arithmetic: the device's conversion (OpFConvert to
  // SPV_KHR_bfloat16's type) ran faster on an H100 (4096^2: default 175 TFLOP/s against 127,
  // high 86 against 59) but truncated, under the RoundingModeRTE execution mode too, its
  // errors 2.5 times these (2026-11-26).
  auto bf16_high = [&](Id x) {
    Id bits = b.op(spv::OpBitcast, e.u32(), {x});
    Id odd = u(spv::OpBitwiseAnd, u(spv::OpShiftRightLogical, bits, c(16)), c(1));
    Id r = u(spv::OpBitwiseAnd, u(spv::OpIAdd, bits, u(spv::OpIAdd, odd, c(0x7FFF))), c(0xFFFF0000));
    return e.b_select(e.u32(), b.op(spv::OpIsNan, e.boolean(), {x}), c(0x7FC00000), r);
  };
  // 8 f32 values as one chunk of their bf16 values, or, split, two: the hi parts and the lo
  // parts, x - hi rounded (exact in f32 before that). lo is 0 where hi is infinite or NaN (x
  // is, or rounds past bf16's largest value), so that no inf · 0 term turns a product NaN.
  auto pack_bf16 = [&](const std::vector<Id>& xs) {
    std::vector<Id> his, los;
    for (Id x : xs) {
      Id hi = bf16_high(x);
      his.push_back(hi);
      if (!t.split) continue;
      Id rest = bf16_high(b.op(spv::OpFSub, b.type_float(32), {x, b.op(spv::OpBitcast, b.type_float(32), {hi})}));
      Id finite = b.op(spv::OpINotEqual, e.boolean(), {u(spv::OpBitwiseAnd, hi, c(0x7F800000)), c(0x7F800000)});
      los.push_back(e.b_select(e.u32(), finite, rest, c(0)));
    }
    auto chunk = [&](const std::vector<Id>& h) {
      std::vector<Id> words;
      for (size_t j = 0; j < h.size(); j += 2) words.push_back(u(spv::OpBitwiseOr, u(spv::OpShiftRightLogical, h[j], c(16)), h[j + 1]));
      return b.op(spv::OpCompositeConstruct, vec, words);
    };
    Values v{chunk(his)};
    if (t.split) v.push_back(chunk(los));
    return v;
  };

  // Chunk `ch` of an operand's slice at (free0, k0): the 8 elements along its row, packed in
  // pairs of 16-bit values into 4 u32s, 0 past the operand's ends; where the operand is f32,
  // its bf16 parts (one chunk, or two where split).
  const Id bvec = b.type_vector(e.boolean(), 4);
  auto fetch = [&](const Operand& o, const Slice& sl, Id view, Id batch, Id free0, Id k0, Id ch) -> Values {
    const uint32_t per_row = sl.inner / 8;
    Id outer = u(spv::OpUDiv, ch, c(per_row)), inner = u(spv::OpIMul, u(spv::OpUMod, ch, c(per_row)), c(8));
    Id free = u(spv::OpIAdd, free0, sl.k_inner ? outer : inner), k = u(spv::OpIAdd, k0, sl.k_inner ? inner : outer);
    const int64_t F = ir::num_elements(o.free_extents);
    if (view) {
      // Whole chunks lie inside or outside: the inner extent is a multiple of 8.
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
                                         e.split(batch, batch_extents), e.split(fc, o.free_extents), e.split(kc, k_extents));
      auto load = [&](Id at) {
        return b.op(spv::OpLoad, vec, {b.op(spv::OpAccessChain, b.type_pointer(spv::StorageClassStorageBuffer, vec), {view, c(0), at})});
      };
      Values v;
      if (rounded) {
        Id at = u(spv::OpShiftRightLogical, e.linear(idx), c(2));
        std::vector<Id> xs;
        for (Id half : {load(at), load(u(spv::OpIAdd, at, c(1)))})
          for (uint32_t l = 0; l < 4; ++l)
            xs.push_back(b.op(spv::OpBitcast, b.type_float(32), {b.op(spv::OpCompositeExtract, e.u32(), {half}, {l})}));
        v = pack_bf16(xs);
      } else {
        v = {load(u(spv::OpShiftRightLogical, e.linear(idx), c(3)))};
      }
      if (in_range.empty()) return v;
      Id ok = e.all_true(in_range);
      for (Id& x : v) x = b.op(spv::OpSelect, vec, {b.op(spv::OpCompositeConstruct, bvec, {ok, ok, ok, ok}), x, zero_vec});
      return v;
    }
    if (rounded) {
      std::vector<Id> xs;
      for (uint32_t j = 0; j < 8; ++j)
        xs.push_back(operand_element(e, o, batch_extents, k_extents, t.k, batch, sl.k_inner ? free : u(spv::OpIAdd, free, c(j)),
                                     sl.k_inner ? u(spv::OpIAdd, k, c(j)) : k));
      return pack_bf16(xs);
    }
    std::vector<Id> words;
    for (uint32_t j = 0; j < 8; j += 2) {
      Id x[2];
      for (uint32_t h = 0; h < 2; ++h) {
        Id step = c(j + h);
        x[h] = operand_element(e, o, batch_extents, k_extents, t.k, batch, sl.k_inner ? free : u(spv::OpIAdd, free, step),
                               sl.k_inner ? u(spv::OpIAdd, k, step) : k);
      }
      if (f.operands == MatrixComponent::F16) {
        // The values are f16 already: the conversion is exact.
        words.push_back(b.ext(GLSLstd450PackHalf2x16, e.u32(), {b.op(spv::OpCompositeConstruct, b.type_vector(b.type_float(32), 2), {x[0], x[1]})}));
      } else {  // bf16 values in f32 registers: their high halves
        Id lo = u(spv::OpShiftRightLogical, b.op(spv::OpBitcast, e.u32(), {x[0]}), c(16));
        Id hi = u(spv::OpBitwiseAnd, b.op(spv::OpBitcast, e.u32(), {x[1]}), c(0xFFFF0000));
        words.push_back(u(spv::OpBitwiseOr, lo, hi));
      }
    }
    return Values{b.op(spv::OpCompositeConstruct, vec, words)};
  };
  const uint32_t per_a = sa.outer * sa.inner / 8 / wg, per_b = sb.outer * sb.inner / 8 / wg;
  auto chunk_of = [&](uint32_t r) { return u(spv::OpIAdd, local, c(int64_t(r) * wg)); };
  // The chunks of both slices, and, split, the lo parts' after them.
  auto fetch_all = [&](Id batch, Id m0, Id n0, Id k0) {
    Values hi, lo_parts;
    auto add = [&](const Values& v) {
      hi.push_back(v[0]);
      if (t.split) lo_parts.push_back(v[1]);
    };
    for (uint32_t r = 0; r < per_a; ++r) add(fetch(A, sa, view_a, batch, m0, k0, chunk_of(r)));
    for (uint32_t r = 0; r < per_b; ++r) add(fetch(B, sb, view_b, batch, n0, k0, chunk_of(r)));
    hi.insert(hi.end(), lo_parts.begin(), lo_parts.end());
    return hi;
  };
  auto stage = [&](const Values& v, Id offset) {
    auto put = [&](const Slice& sl, uint32_t r, Id x, uint32_t part) {
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
  };

  // Fragment types and operations: SPV_KHR_cooperative_matrix's where the device's KHR
  // extension lists the shape, else SPV_NV_cooperative_matrix's. One kernel, two opcode
  // sets: on an H100, which lists f16 under both, the KHR form ran 1.3x faster (4096^2 f16,
  // 187 against 145 TFLOP/s); the NV form is what Debian 12's spirv-val (2023.1) can
  // validate, so the unit tests validate the same kernels emitted for NV-only caps.
  const bool nv = !f.khr;
  Id component;
  if (f.operands == MatrixComponent::F16) {
    b.capability(spv::CapabilityFloat16);
    component = b.type_float(16);
  } else {
    component = b.type_bfloat16();
  }
  const Id type_a = b.type_cooperative_matrix(nv, component, f.m, f.k, spirv::kMatrixA);
  const Id type_b = b.type_cooperative_matrix(nv, component, f.k, f.n, spirv::kMatrixB);
  const Id type_c = b.type_cooperative_matrix(nv, b.type_float(32), f.m, f.n, spirv::kMatrixAccumulator);
  const Id zero_c = b.op(spv::OpCompositeConstruct, type_c, {b.const_f32(0.0f)});
  auto load_fragment = [&](Id type, const Slice& sl, Id offset, bool row_major, Id free, uint32_t kk) {
    Id at = sl.k_inner ? u(spv::OpIAdd, u(spv::OpIMul, free, c(sl.pitch)), c(kk / 8))
                       : u(spv::OpIAdd, c(int64_t(kk) * sl.pitch), u(spv::OpUDiv, free, c(8)));
    Id ptr = chunk_ptr(u(spv::OpIAdd, u(spv::OpIAdd, at, c(sl.base)), offset));
    if (nv) return b.op_in_place(spv::OpCooperativeMatrixLoadNV, type, {ptr, c(sl.pitch), b.const_bool(!row_major)});
    return b.op_in_place(spirv::OpCooperativeMatrixLoadKHR, type,
                         {ptr, c(row_major ? spirv::kRowMajor : spirv::kColumnMajor), c(sl.pitch)});
  };

  b.position_loop(
      {e.u32()}, {b.builtin_x(spv::BuiltInWorkgroupId)}, [&](const Values& p) { return less(p[0], t.tiles); },
      [&](const Values& p) {
        // Plain names, not structured bindings: lambdas below capture them (clang before 16 cannot).
        const auto tile = pr.tile(e, p[0]);
        const Id batch = tile.batch, m0 = tile.m0, n0 = tile.n0;
        const size_t frags = size_t(frags_m) * frags_n;
        auto multiply = [&](Values acc, Id offset) {
          auto mul_add = [&](Id x, Id y, Id a) {
            return b.op(nv ? spv::OpCooperativeMatrixMulAddNV : spirv::OpCooperativeMatrixMulAddKHR, type_c, {x, y, a});
          };
          for (uint32_t kk = 0; kk < t.k; kk += f.k) {
            // [part][fragment]: the hi parts' fragments, and split, the lo parts'.
            std::vector<std::vector<Id>> fa(t.split ? 2 : 1, std::vector<Id>(frags_m)), fb(fa.size(), std::vector<Id>(frags_n));
            for (size_t p = 0; p < fa.size(); ++p) {
              Id at = p ? u(spv::OpIAdd, offset, c(lo_base)) : offset;
              for (uint32_t i = 0; i < frags_m; ++i)
                fa[p][i] = load_fragment(type_a, sa, at, sa.k_inner, u(spv::OpIAdd, u(spv::OpIMul, sub_m, c(wm)), c(int64_t(i) * f.m)), kk);
              for (uint32_t j = 0; j < frags_n; ++j)
                fb[p][j] = load_fragment(type_b, sb, at, !sb.k_inner, u(spv::OpIAdd, u(spv::OpIMul, sub_n, c(wn)), c(int64_t(j) * f.n)), kk);
            }
            for (uint32_t i = 0; i < frags_m; ++i)
              for (uint32_t j = 0; j < frags_n; ++j) {
                Id& a = acc[i * frags_n + j];
                if (t.split) {  // the small terms first
                  a = mul_add(fa[1][i], fb[0][j], a);
                  a = mul_add(fa[0][i], fb[1][j], a);
                }
                a = mul_add(fa[0][i], fb[0][j], a);
              }
          }
          return acc;
        };
        std::vector<Id> types(frags, type_c), init(frags, zero_c);
        const uint64_t steps = uint64_t((K + t.k - 1) / t.k);
        auto more = [&](const Values& s) { return less(s.back(), K); };
        Values carried;
        if (two_stages) {
          // The sets are offsets in chunks: 0 and slice_chunks.
          carried = double_buffered_k_loop(
              e, types, init, K, t.k, slice_chunks, [&](Id k0) { return fetch_all(batch, m0, n0, k0); }, stage,
              [&](Values acc, Id, Id set) { return multiply(std::move(acc), set); });
        } else {
          // Carried: the accumulators, the next k-slices' chunks (fetched from memory one
          // step ahead, while the current step multiplies), and k0.
          for (Id v : fetch_all(batch, m0, n0, c(0))) {
            types.push_back(vec);
            init.push_back(v);
          }
          types.push_back(e.u32());
          init.push_back(c(0));
          carried = b.loop(
              types, init, more,
              [&](const Values& s) {
                const Id k0 = s.back();
                stage(Values(s.begin() + frags, s.end() - 1), c(0));
                b.workgroup_barrier();
                Values next_chunks = fetch_all(batch, m0, n0, next_step(e, k0, t.k, steps));
                Values next = multiply(Values(s.begin(), s.begin() + frags), c(0));
                b.workgroup_barrier();  // the slices are restaged next
                next.insert(next.end(), next_chunks.begin(), next_chunks.end());
                next.push_back(u(spv::OpIAdd, k0, c(t.k)));
                return next;
              },
              steps);
        }

        // Each subgroup writes one row of its fragments to its part of shared memory, then
        // computes the body's output from it, consecutive lanes at consecutive columns.
        const DType acc_t = e.dot_accumulator_type(dot);
        const Id row_base = u(spv::OpIMul, subgroup, c(row_floats / 4));
        for (uint32_t i = 0; i < frags_m; ++i) {
          for (uint32_t j = 0; j < frags_n; ++j) {
            Id ptr = chunk_ptr(u(spv::OpIAdd, row_base, c(j * f.n / 4)));
            if (nv)
              b.op_void(spv::OpCooperativeMatrixStoreNV, {ptr, carried[i * frags_n + j], c(wn / 4), b.const_bool(false)});
            else
              b.op_void(spirv::OpCooperativeMatrixStoreKHR, {ptr, carried[i * frags_n + j], c(spirv::kRowMajor), c(wn / 4)});
          }
          b.storage_barrier(spv::ScopeSubgroup);
          for (uint32_t r = 0; r < row_floats / t.subgroup_size; ++r) {
            Id at = u(spv::OpIAdd, lane, c(int64_t(r) * t.subgroup_size));
            Id word = b.op(spv::OpAccessChain, b.type_pointer(spv::StorageClassWorkgroup, e.u32()),
                           {smem, u(spv::OpIAdd, row_base, u(spv::OpUDiv, at, c(4))), u(spv::OpUMod, at, c(4))});
            Id v = b.op(spv::OpBitcast, b.type_float(32), {b.op_in_place(spv::OpLoad, e.u32(), {word})});
            Id row = u(spv::OpIAdd, u(spv::OpIAdd, m0, u(spv::OpIMul, sub_m, c(wm))),
                       u(spv::OpIAdd, c(int64_t(i) * f.m), u(spv::OpUDiv, at, c(wn))));
            Id col = u(spv::OpIAdd, u(spv::OpIAdd, n0, u(spv::OpIMul, sub_n, c(wn))), u(spv::OpUMod, at, c(wn)));
            pr.store(e, output, batch, row, col, e.convert(v, DType::F32, acc_t));
          }
          b.storage_barrier(spv::ScopeSubgroup);  // the row's memory takes the next row
        }
        b.workgroup_barrier();  // the next tile's slices reuse the rows' memory
        return Values{u(spv::OpIAdd, p[0], c(launch.group_count))};
      });
}

}  // namespace nxv::codegen
