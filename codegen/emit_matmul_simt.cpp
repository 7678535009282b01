// The SIMT tiles (emit_matmul, matmul.h): register tiles per invocation, fed from slices
// staged through shared memory, from a subgroup's broadcast rows, or directly from memory.
#include <functional>
#include <string>
#include <utility>

#include "codegen/matmul_simt.h"

namespace nxv::codegen {

using ir::DType;
using namespace matmul;

namespace matmul {

SimtKernel::SimtKernel(const ir::Graph& body, const ir::Node& dot, Emitter& em, const MatmulTiles& tiles, uint64_t* shared_bytes)
    : U32Ops{em, em.b}, t(tiles), pr(body, dot, tiles), A(pr.A), B(pr.B), M(pr.M), K(pr.K), wg(t.slice_invocations()),
      cols(t.n / t.thread_n), V(t.vector), R(t.texels ? texel_run(A.node) : t.pairs ? 2 * V : V) {
  acc_type = e.reg_type(e.dot_accumulator_type(dot));
  local = b.builtin_x(spv::BuiltInLocalInvocationId);
  if (t.k_slices > 1) {
    slice = u(spv::OpUDiv, local, c(wg));
    local = u(spv::OpUMod, local, c(wg));
  }
  tx = u(spv::OpUMod, local, c(cols)), ty = u(spv::OpUDiv, local, c(cols));
  if (t.broadcast) {
    b.capability(spv::CapabilityGroupNonUniform);
    b.capability(spv::CapabilityGroupNonUniformBallot);
    lane = b.builtin_u32(spv::BuiltInSubgroupLocalInvocationId);
  }
  pair_views.reserve(2);  // vector_a and vector_b point into it
  tl = t.texels ? texel_layout(A, B) : TexelLayout{};
  vector_a = t.broadcast || t.texels ? vector_buffer(A, tl.a_rows ? A.free_axes : A.contract_axes) : nullptr;
  vector_b = t.broadcast || t.texels ? vector_buffer(B, tl.b_k ? B.contract_axes : B.free_axes) : nullptr;
  declare_slices(shared_bytes);
  rows = t.m / t.thread_m;
  RV = t.staged ? V : tl.a_rows ? R : 1;
}

StagedSlice SimtKernel::slice_of(const Operand& o, uint32_t free) {
  StagedSlice s;
  s.o = &o;
  s.free = free;
  s.along_k = contiguous_along_k(pr.body, o.node, o.contract_axes);
  s.elem = e.reg_type(o.node.type().dtype);
  s.entry = V > 1 ? b.type_vector(s.elem, V) : s.elem;
  s.pitch = free / V + 1;
  s.size = t.k * s.pitch;
  s.vectors = vector_buffer(o, s.along_k ? o.contract_axes : o.free_axes);
  s.runs = free * t.k / V / wg;
  return s;
}

void SimtKernel::declare_slices(uint64_t* shared_bytes) {
  if (!t.staged) return;
  sa = slice_of(A, t.m);
  sb = slice_of(B, t.n);
  const uint64_t set_bytes = (uint64_t(b.type_bytes(sa.elem)) * sa.size + uint64_t(b.type_bytes(sb.elem)) * sb.size) * V;
  // Sliced: each slice's sets, and at least one row of the accumulators of slices 1.. .
  const uint32_t S = t.k_slices;
  const uint64_t row_bytes = S > 1 ? uint64_t(b.type_bytes(acc_type)) * wg * t.thread_n * (S - 1) : 0;
  const uint64_t room = e.caps.max_shared_memory_bytes;
  two_stages = 2 * set_bytes * S + row_bytes <= room;
  const uint32_t sets = two_stages ? 2 : 1;
  sa.array = b.workgroup_array(sa.entry, sets * S * sa.size);
  sb.array = b.workgroup_array(sb.entry, sets * S * sb.size);
  *shared_bytes += sets * S * set_bytes;
  if (S == 1) return;
  slice_sets = u(spv::OpIMul, slice, c(sets));
  reduce_rows = 1;
  while (reduce_rows < t.thread_m && t.thread_m % (2 * reduce_rows) == 0 &&
         sets * S * set_bytes + 2 * reduce_rows * row_bytes <= room)
    reduce_rows *= 2;
  reduce = b.workgroup_array(acc_type, reduce_rows * wg * t.thread_n * (S - 1));
  *shared_bytes += reduce_rows * row_bytes;
}

// Entry fv of k row kk of set `set` (elements fv * V to fv * V + V - 1), and element f.
Id SimtKernel::entry_at(const StagedSlice& s, Id set, Id kk, Id fv) {
  if (slice_sets) set = u(spv::OpIAdd, set, slice_sets);
  return u(spv::OpIAdd, u(spv::OpIAdd, u(spv::OpIMul, set, c(s.size)), u(spv::OpIMul, kk, c(s.pitch))), fv);
}

Id SimtKernel::entry_ptr(const StagedSlice& s, Id set, Id kk, Id fv) {
  return b.op(spv::OpAccessChain, b.type_pointer(spv::StorageClassWorkgroup, s.entry), {s.array, entry_at(s, set, kk, fv)});
}

Id SimtKernel::element_ptr(const StagedSlice& s, Id set, Id kk, Id f) {
  if (V == 1) return entry_ptr(s, set, kk, f);
  return b.op(spv::OpAccessChain, b.type_pointer(spv::StorageClassWorkgroup, s.elem),
              {s.array, entry_at(s, set, kk, u(spv::OpUDiv, f, c(V))), u(spv::OpUMod, f, c(V))});
}

// Run r of this invocation: its k and free offsets in the slice.
std::pair<Id, Id> SimtKernel::run_at(const StagedSlice& s, uint32_t r) {
  Id l = u(spv::OpIAdd, local, c(int64_t(r) * wg));
  const uint32_t across = (s.along_k ? t.k : s.free) / V;
  Id inner = u(spv::OpUMod, l, c(across)), outer = u(spv::OpUDiv, l, c(across));
  if (V > 1) inner = u(spv::OpIMul, inner, c(V));
  return s.along_k ? std::pair{inner, outer} : std::pair{outer, inner};
}

Values SimtKernel::fetch_runs(const StagedSlice& s, Id batch, Id free0, Id k0) {
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
}

void SimtKernel::store_runs(const StagedSlice& s, const Values& v, Id set) {
  for (uint32_t r = 0; r < v.size(); ++r) {
    const auto [kk, ff] = run_at(s, r);
    if (!s.along_k || V == 1) {
      b.op_void(spv::OpStore, {entry_ptr(s, set, kk, V == 1 ? ff : u(spv::OpUDiv, ff, c(V))), v[r]});
      continue;
    }
    for (uint32_t q = 0; q < V; ++q)
      b.op_void(spv::OpStore, {element_ptr(s, set, u(spv::OpIAdd, kk, c(q)), ff), b.op(spv::OpCompositeExtract, s.elem, {v[r]}, {q})});
  }
}

Values SimtKernel::fetch(const Tile& at, Id k0) {
  Values v = fetch_runs(sa, at.batch, at.m0, k0), w = fetch_runs(sb, at.batch, at.n0, k0);
  v.insert(v.end(), w.begin(), w.end());
  return v;
}

void SimtKernel::stage(const Values& v, Id set) {
  store_runs(sa, Values(v.begin(), v.begin() + sa.runs), set);
  store_runs(sb, Values(v.begin() + sa.runs, v.end()), set);
}

// Staged: the invocation's `count` rows (or columns) at step kk, runs of V in entries
// first + r * stride.
std::vector<Id> SimtKernel::staged(const StagedSlice& s, Id set, Id first, uint32_t stride, uint32_t count, uint32_t kk) {
  std::vector<Id> x;
  for (uint32_t r = 0; r < count / V; ++r) {
    Id v = b.op_in_place(spv::OpLoad, s.entry, {entry_ptr(s, set, c(kk), u(spv::OpIAdd, first, c(int64_t(r) * stride)))});
    for (uint32_t q = 0; q < V; ++q) x.push_back(V == 1 ? v : b.op(spv::OpCompositeExtract, s.elem, {v}, {q}));
  }
  return x;
}

// Invocation (ty, tx) holds rows m0 + ty + i * rows-of-invocations and columns
// n0 + tx + j * cols, in runs of V (staged rows, and columns where V > 1: row
// m0 + (ty + (i / V) * rows-of-invocations) * V + i % V; texels: rows where they run
// along them, columns always, in runs of R): neighbouring invocations read and write
// neighbouring runs.
Id SimtKernel::row(const Tile& at, uint32_t i) {
  Id run0 = RV == 1 ? u(spv::OpIAdd, at.m0, ty) : u(spv::OpIAdd, at.m0, u(spv::OpIMul, ty, c(RV)));
  return u(spv::OpIAdd, run0, c(int64_t(i / RV) * rows * RV + i % RV));
}

Id SimtKernel::col(const Tile& at, uint32_t j) {
  Id run0 = R == 1 ? u(spv::OpIAdd, at.n0, tx) : u(spv::OpIAdd, at.n0, u(spv::OpIMul, tx, c(R)));
  return u(spv::OpIAdd, run0, c(int64_t(j / R) * cols * R + j % R));
}

// Broadcast: lane l holds elements k0 + l * V, ..., of each of its rows (which the whole
// subgroup shares); step kk takes lane kk / V's.
std::vector<std::vector<Id>> SimtKernel::broadcast_rows(const Tile& at, Id k0) {
  std::vector<std::vector<Id>> lane_a(t.thread_m);
  if (!t.broadcast) return lane_a;
  for (uint32_t i = 0; i < t.thread_m; ++i) {
    Id k = u(spv::OpIAdd, k0, R == 1 ? lane : u(spv::OpIMul, lane, c(R)));
    if (vector_a) lane_a[i] = run_elements(A, *vector_a, at.batch, clamp(row(at, i), M, t.m), k, true);
    else
      for (uint32_t l = 0; l < R; ++l) lane_a[i].push_back(element(A, at.batch, row(at, i), u(spv::OpIAdd, k, c(l))));
  }
  return lane_a;
}

// One k-step's terms from slice set `set` (staged) or memory, added to `next`.
Values SimtKernel::multiply(const Tile& at, Values next, Id k0, Id set) {
  const std::vector<std::vector<Id>> lane_a = broadcast_rows(at, k0);
  const Id a_type = e.reg_type(A.node.type().dtype);
  std::vector<std::vector<Id>> held_a(t.thread_m), held_b(t.thread_n);
  for (uint32_t kk = 0; kk < t.k; ++kk) {
    std::vector<Id> x(t.thread_m), y(t.thread_n);
    if (t.staged) {
      x = staged(sa, set, ty, rows, t.thread_m, kk);
      y = staged(sb, set, tx, cols, t.thread_n, kk);
    } else {
      if (t.broadcast)
        for (uint32_t i = 0; i < t.thread_m; ++i)
          x[i] = b.op_in_place(spv::OpGroupNonUniformBroadcast, a_type, {c(spv::ScopeSubgroup), lane_a[i][kk % R], c(kk / R)});
      else
        x = direct(A, vector_a, !tl.a_rows, tl.a_rows, t.thread_m, [&](uint32_t i) { return row(at, i); }, held_a, at.batch, k0, kk);
      y = direct(B, vector_b, tl.b_k, false, t.thread_n, [&](uint32_t j) { return col(at, j); }, held_b, at.batch, k0, kk);
    }
    for (uint32_t i = 0; i < t.thread_m; ++i)
      for (uint32_t j = 0; j < t.thread_n; ++j) next[i * t.thread_n + j] = e.dot_term(pr.dot, next[i * t.thread_n + j], x[i], y[j]);
  }
  return next;
}

// The accumulators of tile `at` over the contraction.
Values SimtKernel::k_loop(const Tile& at) {
  const size_t regs = size_t(t.thread_m) * t.thread_n;
  std::vector<Id> types(regs, acc_type), init(regs, e.dot_zero(pr.dot));
  // Slice s takes k-steps s, s + k_slices, ...: K is a multiple of k_slices steps.
  const KSteps steps{K, t.k, slice ? u(spv::OpIMul, slice, c(t.k)) : 0, t.k * t.k_slices};
  if (two_stages)
    return double_buffered_k_loop(
        e, types, init, steps, 1, [&](Id k0) { return fetch(at, k0); }, [&](const Values& v, Id set) { stage(v, set); },
        [&](Values acc, Id k0, Id set) { return multiply(at, std::move(acc), k0, set); });
  return k_steps(e, types, init, steps, [&](const Values& s, Id k0) {
    if (t.staged) {
      stage(fetch(at, k0), c(0));
      b.workgroup_barrier();
    }
    Values next = multiply(at, Values(s.begin(), s.end() - 1), k0, c(0));
    if (t.staged) b.workgroup_barrier();  // the slices are reloaded next
    return next;
  });
}

// Sliced: slice 0's accumulators plus the other slices', handed over through shared memory
// reduce_rows rows at a time, each element's copies wg apart (neighbouring invocations at
// neighbouring words). The other slices compute sums they do not store.
Values SimtKernel::combine_slices(Values acc) {
  const uint32_t n = t.thread_n;
  const Id ptr = b.type_pointer(spv::StorageClassWorkgroup, acc_type);
  auto at = [&](Id s, uint32_t i, uint32_t j) {
    Id word = u(spv::OpIAdd, u(spv::OpIMul, u(spv::OpIAdd, u(spv::OpIMul, s, c(reduce_rows * n)), c(int64_t(i) * n + j)), c(wg)), local);
    return b.op(spv::OpAccessChain, ptr, {reduce, word});
  };
  const spv::Op op = ir::is_float(e.dot_accumulator_type(pr.dot)) ? spv::OpFAdd : spv::OpIAdd;
  for (uint32_t i0 = 0; i0 < t.thread_m; i0 += reduce_rows) {
    if (i0) b.workgroup_barrier();  // the last rows are read
    b.if_then(b.op(spv::OpINotEqual, e.boolean(), {slice, c(0)}), [&] {
      for (uint32_t i = 0; i < reduce_rows; ++i)
        for (uint32_t j = 0; j < n; ++j) b.op_void(spv::OpStore, {at(u(spv::OpISub, slice, c(1)), i, j), acc[(i0 + i) * n + j]});
    });
    b.workgroup_barrier();
    for (uint32_t s = 1; s < t.k_slices; ++s)
      for (uint32_t i = 0; i < reduce_rows; ++i)
        for (uint32_t j = 0; j < n; ++j) {
          Id& a = acc[(i0 + i) * n + j];
          a = b.op(op, acc_type, {a, b.op_in_place(spv::OpLoad, acc_type, {at(c(s - 1), i, j)})});
        }
  }
  return acc;
}

void SimtKernel::emit_tile(Id p, const BufferRef& output) {
  const Tile at = pr.tile(e, p);
  Values acc = k_loop(at);
  if (t.k_slices == 1) return store_tile(at, acc, output);
  acc = combine_slices(std::move(acc));
  b.if_then(b.op(spv::OpIEqual, e.boolean(), {slice, c(0)}), [&] { store_tile(at, acc, output); });
}

void SimtKernel::store_tile(const Tile& at, const Values& acc, const BufferRef& output) {
  // Edge tiles test a row once and a run of columns once, not every element: a test per
  // element kept enough values live to push the 128x128 tiles past 128 registers, one
  // workgroup per SM instead of two (docs/tuning.md, "Edge tiles' stores").
  // A run lies wholly inside or outside where the columns are whole runs; else each column
  // is a run of its own.
  const uint32_t L = t.thread_n % R == 0 && pr.N % R == 0 ? R : 1;
  auto guarded = [&](bool guard, Id x, int64_t bound, const std::function<void()>& body) {
    if (guard) b.if_then(less(x, bound), body);
    else body();
  };
  for (uint32_t i = 0; i < t.thread_m; ++i)
    guarded(M % t.m != 0, row(at, i), M, [&] {
      for (uint32_t j0 = 0; j0 < t.thread_n; j0 += L)
        guarded(pr.N % t.n != 0, col(at, j0), pr.N, [&] {
          for (uint32_t j = j0; j < j0 + L; ++j)
            pr.store_inside(e, output, at.batch, row(at, i), col(at, j), acc[i * t.thread_n + j]);
        });
    });
}

}  // namespace matmul

void emit_matmul(const ir::Graph& body, const ir::Node& dot, Emitter& e, const BufferRef& output,
                 const LaunchConfig& launch, uint64_t* shared_bytes) {
  SimtKernel k(body, dot, e, launch.matmul, shared_bytes);
  e.b.position_loop(
      {e.u32()}, {e.b.builtin_x(spv::BuiltInWorkgroupId)}, [&](const Values& p) { return k.less(p[0], launch.matmul.tiles); },
      [&](const Values& p) {
        k.emit_tile(p[0], output);
        return Values{k.u(spv::OpIAdd, p[0], k.c(launch.group_count))};
      });
}

}  // namespace nxv::codegen
