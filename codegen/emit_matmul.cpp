#include <algorithm>

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

// Whether the operand's elements lie along a contracted axis in memory: then the threads
// loading a tile walk the contraction, else its free axis, so that neighbours read
// neighbouring addresses. A transposed parameter is read in place, in its own layout.
bool contiguous_along_k(const ir::Graph& body, const ir::Node& operand, const std::vector<int64_t>& contract) {
  int64_t innermost = int64_t(operand.type().shape.size()) - 1;
  if (operand.op == "transpose" && body.node(operand.args.at(0)).op == "parameter") {
    auto axes = operand.attrs.value("axes", std::vector<int64_t>{});
    auto at = std::find(axes.begin(), axes.end(), innermost);
    if (at != axes.end()) innermost = at - axes.begin();
  }
  return std::find(contract.begin(), contract.end(), innermost) != contract.end();
}

struct Operand {
  const ir::Node& node;
  std::vector<int64_t> batch_axes, free_axes, contract_axes;
  std::vector<int64_t> free_extents;
  uint32_t tile;  // its free extent per output tile (tiles' m or n)
};

}  // namespace

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
  const uint32_t wg = t.invocations(), cols = t.n / t.thread_n;
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

  // Element (free, k) of an operand in batch `batch`, at positions clamped into range; past
  // the contraction's end it is 0 (so is the other operand's: 0 * inf would be NaN), which
  // adds nothing to an accumulator that starts at +0.
  auto element = [&](const Operand& o, Id batch, Id free, Id k) {
    Index idx = Emitter::operand_index(o.node.type().shape, o.batch_axes, o.free_axes, o.contract_axes,
                                       e.split(batch, batch_extents), e.split(clamp(free, ir::num_elements(o.free_extents), o.tile), o.free_extents),
                                       e.split(clamp(k, K, t.k), k_extents));
    Id v = e.value(o.node, idx);
    if (K % t.k == 0) return v;
    const DType ot = o.node.type().dtype;
    return e.select(ot, less(k, K), v, ir::is_float(ot) ? e.float_literal(ot, 0.0) : e.constant(ot, 0));
  };

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
        // n0 + tx + j * cols: neighbouring invocations read and write neighbouring columns.
        auto row = [&](uint32_t i) { return u(spv::OpIAdd, u(spv::OpIAdd, m0, ty), c(int64_t(i) * (t.m / t.thread_m))); };
        auto col = [&](uint32_t j) { return u(spv::OpIAdd, u(spv::OpIAdd, n0, tx), c(int64_t(j) * cols)); };
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
              for (uint32_t kk = 0; kk < t.k; ++kk) {
                std::vector<Id> x(t.thread_m), y(t.thread_n);
                for (uint32_t i = 0; i < t.thread_m; ++i)
                  x[i] = t.staged ? b.op_in_place(spv::OpLoad, sa.elem, {slot(sa, c(kk), u(spv::OpIAdd, ty, c(int64_t(i) * (t.m / t.thread_m))))})
                                  : element(A, batch, row(i), u(spv::OpIAdd, k0, c(kk)));
                for (uint32_t j = 0; j < t.thread_n; ++j)
                  y[j] = t.staged ? b.op_in_place(spv::OpLoad, sb.elem, {slot(sb, c(kk), u(spv::OpIAdd, tx, c(int64_t(j) * cols)))})
                                  : element(B, batch, col(j), u(spv::OpIAdd, k0, c(kk)));
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
