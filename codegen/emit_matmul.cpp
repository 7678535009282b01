#include <algorithm>
#include <set>
#include <string>

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
  return lanes > 1 && node.op == "parameter" && node.type().dtype == DType::F32 && !s.empty() && !axes.empty() &&
         axes.back() == int64_t(s.size()) - 1 && s.back() % lanes == 0;
}

}  // namespace

std::vector<const ir::Node*> matmul_vector_operands(const ir::Graph& body, const ir::Node& dot, const MatmulTiles& t) {
  if (!t.broadcast) return {};
  const ir::Node& an = body.node(dot.args.at(0));
  const ir::Node& bn = body.node(dot.args.at(1));
  const DotAxes d = DotAxes::of(dot, an.type().shape, bn.type().shape);
  std::vector<const ir::Node*> r;
  if (reads_as_vectors(an, d.c1, t.vector)) r.push_back(&an);
  if (reads_as_vectors(bn, d.free2, t.vector)) r.push_back(&bn);
  return r;
}

MatmulShape matmul_shape(const ir::Graph& body, const ir::Node& dot, const DeviceCaps& caps) {
  const ir::Shape& as = body.node(dot.args.at(0)).type().shape;
  const ir::Shape& bs = body.node(dot.args.at(1)).type().shape;
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
  s.f32_operands = body.node(dot.args.at(0)).type().dtype == DType::F32 && body.node(dot.args.at(1)).type().dtype == DType::F32;
  return s;
}

void emit_matmul(const ir::Graph& body, const ir::Node& dot, Emitter& e, const BufferRef& output,
                 const LaunchConfig& launch, uint64_t* shared_bytes) {
  spirv::Builder& b = e.b;
  const ir::Node& an = body.node(dot.args.at(0));
  const ir::Node& bn = body.node(dot.args.at(1));
  const DotAxes d = DotAxes::of(dot, an.type().shape, bn.type().shape);
  const MatmulTiles& t = launch.matmul;
  const Operand A{an, d.b1, d.free1, d.c1, extents_of(an.type().shape, d.free1), t.m};
  const Operand B{bn, d.b2, d.free2, d.c2, extents_of(bn.type().shape, d.free2), t.n};
  const std::vector<int64_t> batch_extents = extents_of(an.type().shape, d.b1);
  const std::vector<int64_t> k_extents = extents_of(an.type().shape, d.c1);
  const int64_t M = ir::num_elements(A.free_extents), N = ir::num_elements(B.free_extents);
  const int64_t K = ir::num_elements(k_extents);
  const uint32_t wg = t.invocations(), cols = t.n / t.thread_n, V = t.vector;
  const int64_t tiles_m = (M + t.m - 1) / t.m, tiles_n = (N + t.n - 1) / t.n;
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
  // Element (free, k) of an operand in batch `batch`, at positions clamped into range.
  auto element = [&](const Operand& o, Id batch, Id free, Id k) {
    Id v = e.value(o.node, index_of(o, batch, clamp(free, ir::num_elements(o.free_extents), o.tile), clamp(k, K, t.k)));
    return zero_past_k(e.reg_type(o.node.type().dtype), k, v, zero_of(o.node));
  };
  // Elements (free, k), ... of a vector-read operand (matmul_vector_operands): `along_k`, k to
  // k + V - 1 (k a multiple of V, as is K), else free to free + V - 1.
  auto run = [&](const Operand& o, const BufferRef& buf, Id batch, Id free, Id k, bool along_k) {
    const int64_t F = ir::num_elements(o.free_extents);
    if (!along_k && F % o.tile) free = b.ext(GLSLstd450UMin, e.u32(), {free, c(F - V)});
    Id kc = K % t.k == 0 ? k : b.ext(GLSLstd450UMin, e.u32(), {k, c(along_k ? K - V : K - 1)});
    Index idx = index_of(o, batch, free, kc);
    Id v = e.load_vector(buf, u(spv::OpUDiv, e.linear(idx), c(V)));
    if (K % t.k == 0) return v;
    const Id type = e.buffer_entry_type(buf);
    return zero_past_k(type, k, v, b.op(spv::OpCompositeConstruct, type, std::vector<Id>(V, zero_of(o.node))), V);
  };
  auto vector_buffer = [&](const Operand& o, const std::vector<int64_t>& axes) -> const BufferRef* {
    const BufferRef* buf = reads_as_vectors(o.node, axes, V) ? e.input_buffer(o.node) : nullptr;
    return buf && buf->lanes == V ? buf : nullptr;
  };
  const BufferRef* vector_a = t.broadcast ? vector_buffer(A, A.contract_axes) : nullptr;
  const BufferRef* vector_b = t.broadcast ? vector_buffer(B, B.free_axes) : nullptr;

  // Staged: one k-slice of each operand's tile in shared memory, [k][free] with rows padded
  // by one element against bank conflicts; the workgroup loads it together.
  struct Slice {
    Id array = 0, elem = 0;
    uint32_t pitch = 0;
  };
  auto declare_slice = [&](const Operand& o, uint32_t free) {
    Slice s{0, e.reg_type(o.node.type().dtype), free + 1};
    s.array = b.workgroup_array(s.elem, t.k * s.pitch);
    *shared_bytes += uint64_t(b.type_bytes(s.elem)) * t.k * s.pitch;
    return s;
  };
  Slice sa, sb;
  if (t.staged) {
    sa = declare_slice(A, t.m);
    sb = declare_slice(B, t.n);
  }
  auto slot = [&](const Slice& s, Id kk, Id f) {
    Id at = u(spv::OpIAdd, u(spv::OpIMul, kk, c(s.pitch)), f);
    return b.op(spv::OpAccessChain, b.type_pointer(spv::StorageClassWorkgroup, s.elem), {s.array, at});
  };
  auto load_slice = [&](const Operand& o, const Slice& s, uint32_t free, Id batch, Id free0, Id k0) {
    const bool along_k = contiguous_along_k(body, o.node, o.contract_axes);
    for (uint32_t r = 0; r < free * t.k / wg; ++r) {
      Id l = u(spv::OpIAdd, local, c(int64_t(r) * wg));
      Id kk = along_k ? u(spv::OpUMod, l, c(t.k)) : u(spv::OpUDiv, l, c(free));
      Id ff = along_k ? u(spv::OpUDiv, l, c(t.k)) : u(spv::OpUMod, l, c(free));
      Id v = element(o, batch, u(spv::OpIAdd, free0, ff), u(spv::OpIAdd, k0, kk));
      b.op_void(spv::OpStore, {slot(s, kk, ff), v});
    }
  };

  b.position_loop(
      {e.u32()}, {b.builtin_x(spv::BuiltInWorkgroupId)}, [&](const Values& p) { return less(p[0], t.tiles); },
      [&](const Values& p) {
        Id tn = u(spv::OpUMod, p[0], c(tiles_n));
        Id tm = u(spv::OpUMod, u(spv::OpUDiv, p[0], c(tiles_n)), c(tiles_m));
        Id batch = u(spv::OpUDiv, p[0], c(tiles_m * tiles_n));
        Id m0 = u(spv::OpIMul, tm, c(t.m)), n0 = u(spv::OpIMul, tn, c(t.n));
        // Invocation (ty, tx) holds rows m0 + ty + i * rows-of-invocations and columns
        // n0 + tx + j * cols (in runs of V: n0 + (tx + (j / V) * cols) * V + j % V):
        // neighbouring invocations read and write neighbouring columns.
        auto row = [&](uint32_t i) { return u(spv::OpIAdd, u(spv::OpIAdd, m0, ty), c(int64_t(i) * (t.m / t.thread_m))); };
        auto col = [&](uint32_t j) {
          Id run0 = V == 1 ? u(spv::OpIAdd, n0, tx) : u(spv::OpIAdd, n0, u(spv::OpIMul, tx, c(V)));
          return u(spv::OpIAdd, run0, c(int64_t(j / V) * cols * V + j % V));
        };
        std::vector<Id> types(regs, acc_type), init(regs, e.dot_zero(dot));
        types.push_back(e.u32());
        init.push_back(c(0));
        Values acc = b.loop(
            types, init, [&](const Values& s) { return less(s.back(), K); },
            [&](const Values& s) {
              const Id k0 = s.back();
              if (t.staged) {
                load_slice(A, sa, t.m, batch, m0, k0);
                load_slice(B, sb, t.n, batch, n0, k0);
                b.workgroup_barrier();
              }
              Values next(s.begin(), s.end() - 1);
              // Broadcast: lane l holds elements k0 + l * V, ..., of each of its rows (which
              // the whole subgroup shares); step kk takes lane kk / V's.
              std::vector<std::vector<Id>> lane_a(t.thread_m);
              if (t.broadcast)
                for (uint32_t i = 0; i < t.thread_m; ++i) {
                  Id k = u(spv::OpIAdd, k0, V == 1 ? lane : u(spv::OpIMul, lane, c(V)));
                  if (vector_a) lane_a[i].push_back(run(A, *vector_a, batch, clamp(row(i), M, t.m), k, true));
                  else
                    for (uint32_t l = 0; l < V; ++l) lane_a[i].push_back(element(A, batch, row(i), u(spv::OpIAdd, k, c(l))));
                }
              const Id a_type = e.reg_type(an.type().dtype), a_vector = vector_a ? b.type_vector(a_type, V) : 0;
              std::vector<Id> lane_run(t.thread_m);  // row i's run from lane kk / V, when vector-read
              auto shared_a = [&](uint32_t i, uint32_t kk) {
                const Id from = c(kk / V), scope = c(spv::ScopeSubgroup);
                if (!vector_a) return b.op_in_place(spv::OpGroupNonUniformBroadcast, a_type, {scope, lane_a[i][kk % V], from});
                if (kk % V == 0) lane_run[i] = b.op_in_place(spv::OpGroupNonUniformBroadcast, a_vector, {scope, lane_a[i][0], from});
                return b.op(spv::OpCompositeExtract, a_type, {lane_run[i]}, {kk % V});
              };
              for (uint32_t kk = 0; kk < t.k; ++kk) {
                std::vector<Id> x(t.thread_m), y(t.thread_n);
                for (uint32_t i = 0; i < t.thread_m; ++i)
                  x[i] = t.staged      ? b.op_in_place(spv::OpLoad, sa.elem, {slot(sa, c(kk), u(spv::OpIAdd, ty, c(int64_t(i) * (t.m / t.thread_m))))})
                         : t.broadcast ? shared_a(i, kk)
                                       : element(A, batch, row(i), u(spv::OpIAdd, k0, c(kk)));
                const Id k = u(spv::OpIAdd, k0, c(kk));
                for (uint32_t j = 0; j < t.thread_n; ++j) {
                  if (t.staged) y[j] = b.op_in_place(spv::OpLoad, sb.elem, {slot(sb, c(kk), u(spv::OpIAdd, tx, c(int64_t(j) * cols)))});
                  else if (!vector_b) y[j] = element(B, batch, col(j), k);
                  else if (j % V == 0) {
                    Id v = run(B, *vector_b, batch, col(j), k, false);
                    for (uint32_t l = 0; l < V; ++l) y[j + l] = b.op(spv::OpCompositeExtract, e.reg_type(bn.type().dtype), {v}, {l});
                  }
                }
                for (uint32_t i = 0; i < t.thread_m; ++i)
                  for (uint32_t j = 0; j < t.thread_n; ++j) next[i * t.thread_n + j] = e.dot_term(dot, next[i * t.thread_n + j], x[i], y[j]);
              }
              if (t.staged) b.workgroup_barrier();  // the slices are reloaded next
              next.push_back(u(spv::OpIAdd, k0, c(t.k)));
              return next;
            },
            uint64_t((K + t.k - 1) / t.k));
        const ir::Node& out = body.node(body.outputs.at(0));
        for (uint32_t i = 0; i < t.thread_m; ++i)
          for (uint32_t j = 0; j < t.thread_n; ++j) {
            Id r = row(i), q = col(j);
            auto store = [&] {
              Index idx;
              idx.shape = dot.type().shape;
              idx.dims = e.split(batch, batch_extents);
              for (Id x : e.split(r, A.free_extents)) idx.dims.push_back(x);
              for (Id x : e.split(q, B.free_extents)) idx.dims.push_back(x);
              idx.linear = u(spv::OpIAdd, u(spv::OpIMul, u(spv::OpIAdd, u(spv::OpIMul, batch, c(M)), r), c(N)), q);
              e.provide(dot, idx, e.dot_result(dot, acc[i * t.thread_n + j]));
              e.store(output, idx.linear, e.value(out, idx));
            };
            std::vector<Id> guards;
            if (M % t.m) guards.push_back(less(r, M));
            if (N % t.n) guards.push_back(less(q, N));
            if (guards.empty()) store();
            else b.if_then(e.all_true(guards), store);
          }
        return Values{u(spv::OpIAdd, p[0], c(launch.group_count))};
      });
}

}  // namespace nxv::codegen
