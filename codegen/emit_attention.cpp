// Fused attention (attention.h): the tiles a device's shared memory holds, and the kernel.
#include <algorithm>
#include <cmath>

#include "codegen/attention.h"
#include "codegen/attention_rows.h"

namespace nxv::codegen {

namespace {
// Rows, keys per step, invocations across the keys and query rows per invocation, largest
// tiles first: the first that fits the device's shared memory is the fastest of those
// measured for its head dim (docs/tuning.md, "Fused attention tiles").
struct TileShape {
  uint32_t rows, keys, lanes, row_step;
};
constexpr TileShape kTileShapes[] = {{64, 32, 8, 4}, {32, 32, 8, 2}, {32, 32, 16, 4}, {16, 32, 16, 4}, {16, 16, 16, 4}};
}  // namespace

uint64_t attention_shared_bytes(const AttentionTiles& t, int64_t d, int64_t dv, int bytes) {
  // q's rows [rows][d + vector]; k's slice transposed ([d][keys + vector]) and v's
  // ([keys][dv]), in one array or two; the probabilities [rows][keys + vector]; without
  // shuffles, the rows' partial maxima and sums [rows][lanes]. Rows padded by a vector keep
  // the invocations that read different rows at once off the same banks.
  const uint64_t pitch = t.keys + t.vector, k_slice = d * pitch, v_slice = uint64_t(t.keys) * dv;
  const uint64_t elements = uint64_t(t.rows) * (d + t.vector) + (t.own_v ? k_slice + v_slice : std::max(k_slice, v_slice)) +
                            t.rows * pitch + (t.shuffles ? 0 : uint64_t(t.rows) * t.lanes);
  return elements * bytes;
}

AttentionTiles choose_attention_tiles(const DeviceCaps& caps, int64_t d, int64_t dv, int bytes) {
  const uint32_t vector = d % 4 == 0 && dv % 4 == 0 ? 4 : d % 2 == 0 && dv % 2 == 0 ? 2 : 1;
  for (auto [rows, keys, lanes, row_step] : kTileShapes) {
    AttentionTiles t{rows, keys, lanes, row_step, vector};
    // A row's invocations are consecutive in a subgroup (the kernel numbers them by
    // SubgroupId and SubgroupLocalInvocationId) where subgroups hold whole rows and the
    // workgroup whole subgroups, each full (the runtime requires that of the pipeline where
    // the device offers it: runtime/pipeline_cache.h, full_subgroups); shuffles of 4-byte
    // values, or wider where the device has them.
    const uint32_t sg = caps.subgroup_size;
    t.shuffles = caps.subgroup_shuffle && sg >= lanes && sg % lanes == 0 && t.invocations() % sg == 0 &&
                 (bytes == 4 || caps.subgroup_extended_types);
    for (bool own_v : {true, false}) {
      t.own_v = own_v;
      if (t.invocations() <= caps.max_workgroup_invocations &&
          attention_shared_bytes(t, d, dv, bytes) <= caps.max_shared_memory_bytes)
        return t;
    }
  }
  return {};
}

void set_attention_bounds(const DeviceCaps& caps, passes::KernelBounds& bounds) {
  // The widest head dim whose smallest tiles fit in f64, as row bytes: f32 rows of twice
  // that dim fit too (the tiles' fixed part is the same number of elements).
  const TileShape& last = std::end(kTileShapes)[-1];
  const AttentionTiles smallest{last.rows, last.keys, last.lanes, last.row_step, 4};
  int64_t d = 0;
  while (attention_shared_bytes(smallest, d + 1, d + 1, 8) <= caps.max_shared_memory_bytes) ++d;
  bounds.attention_kernel_row_bytes = d * 8;
  // Lavapipe builds a shader with workgroup barriers as a coroutine (targets/launch.h,
  // scans_in_workgroups), and the kernel takes four per tile of keys: it runs attention as
  // separate products and softmax.
  if (caps.vendor() == Vendor::Lavapipe) return;
  bounds.attention_row_bytes = d * 8;
}

namespace {

using Values = spirv::Builder::Values;

// One workgroup's rows of one batch element at a time. The k slice is staged transposed,
// [d][key], and v's as [key][dv], in an array of its own or in k's once the scores are
// taken; invocation (ty, tx) holds rows ty + i * (rows / row_step), a run of keys from tx
// times their count, and v's columns a vector at a time, lanes vectors apart (col()):
// neighbours read neighbouring vectors of shared memory.
class AttentionKernel : public AttentionRows {
 public:
  AttentionKernel(const ir::Graph& body, const ir::Node& attn, Emitter& em, const AttentionTiles& tiles,
                  uint64_t* shared_bytes)
      : AttentionRows(body, attn, em), t(tiles) {
    V = t.vector;
    vec = V > 1 ? b.type_vector(vt, V) : vt;
    TY = t.rows / t.row_step;
    SJ = t.keys / t.lanes;
    OJ = uint32_t((Dv + t.lanes - 1) / t.lanes);
    pitch = t.keys + V;
    local = b.builtin_x(spv::BuiltInLocalInvocationId);
    Id place = local;
    if (t.shuffles) {
      b.capability(spv::CapabilityGroupNonUniformShuffle);
      place = b.subgroup_numbering();
    }
    tx = u(spv::OpUMod, place, c(t.lanes)), ty = u(spv::OpUDiv, place, c(t.lanes));
    qp = uint32_t(D) + V;
    interleave = V > 1 && OJ % V == 0 && int64_t(OJ) * t.lanes == Dv;
    qs_ = b.workgroup_array(vec, uint32_t(std::max<int64_t>(t.rows * qp / V, 1)));
    if (t.own_v) {
      kv_ = b.workgroup_array(vec, uint32_t(std::max<int64_t>(D * pitch / V, 1)));
      vs_ = b.workgroup_array(vec, uint32_t(std::max<int64_t>(t.keys * Dv / V, 1)));
    } else {
      kv_ = vs_ = b.workgroup_array(vec, uint32_t(std::max<int64_t>({D * pitch / V, t.keys * Dv / V, 1})));
    }
    ps_ = b.workgroup_array(vec, t.rows * pitch / V);
    if (!t.shuffles) red_ = b.workgroup_array(vt, t.rows * t.lanes);
    *shared_bytes += attention_shared_bytes(t, D, Dv, b.type_bytes(vt));
  }

  void emit_tile(Id p, const BufferRef& output) {
    // Not a structured binding: clang 14 (the fuzzers' compiler) lets no lambda capture one.
    const RowTile tile = row_tile(p, t.rows);
    const Id bt = tile.bt, q0 = tile.q0;
    const std::vector<Id>& bd = tile.bd;
    const Values rows = fetch(t.rows * D, [&](Id i) {
      return read(q, bd, clamp(u(spv::OpIAdd, q0, u(spv::OpUDiv, i, c(D))), Sq), u(spv::OpUMod, i, c(D)));
    });
    stage(t.rows * D, rows, [&](Id i, Id x) { store(qs_, at(u(spv::OpUMod, i, c(D)), qp, u(spv::OpUDiv, i, c(D)), c(0)), x); });
    finish(bt, q0, key_loop(bd, q0), output);
  }

 private:
  Id row(uint32_t i) const { return u(spv::OpIAdd, ty, c(int64_t(i) * TY)); }
  // This invocation's first key of a slice.
  Id first_key() const { return u(spv::OpIMul, tx, c(SJ)); }
  // Column j of the invocation's OJ: vectors lanes apart where they tile dv exactly, else a
  // run from tx times OJ.
  Id col(uint32_t j) const {
    if (interleave) return u(spv::OpIAdd, u(spv::OpIMul, tx, c(V)), c(int64_t(j / V) * t.lanes * V + j % V));
    return u(spv::OpIAdd, u(spv::OpIMul, tx, c(OJ)), c(j));
  }
  Id at(Id base, uint32_t row_pitch, Id r, Id col) const { return u(spv::OpIAdd, u(spv::OpIAdd, base, u(spv::OpIMul, r, c(row_pitch))), col); }
  // Shared memory by element: vector arrays address an element as (entry, component).
  Id ptr(Id array, Id element) {
    if (array == red_ || V == 1) return b.op(spv::OpAccessChain, b.type_pointer(spv::StorageClassWorkgroup, vt), {array, element});
    return b.op(spv::OpAccessChain, b.type_pointer(spv::StorageClassWorkgroup, vt),
                {array, u(spv::OpUDiv, element, c(V)), u(spv::OpUMod, element, c(V))});
  }
  Id load(Id array, Id element) { return b.op_in_place(spv::OpLoad, vt, {ptr(array, element)}); }
  void store(Id array, Id element, Id x) { b.op_void(spv::OpStore, {ptr(array, element), x}); }
  // The vector r entries past the one holding element `first` (a multiple of V).
  Id vector_ptr(Id array, Id first, uint32_t r) {
    return b.op(spv::OpAccessChain, b.type_pointer(spv::StorageClassWorkgroup, vec),
                {array, u(spv::OpIAdd, u(spv::OpUDiv, first, c(V)), c(r))});
  }
  // n consecutive elements from `first`: a vector read per V of them where `first` is a
  // multiple of V and n too.
  std::vector<Id> load_run(Id array, Id first, uint32_t n) {
    std::vector<Id> x;
    if (V > 1 && n % V == 0) {
      for (uint32_t r = 0; r < n / V; ++r) {
        Id w = b.op_in_place(spv::OpLoad, vec, {vector_ptr(array, first, r)});
        for (uint32_t l = 0; l < V; ++l) x.push_back(b.op(spv::OpCompositeExtract, vt, {w}, {l}));
      }
      return x;
    }
    for (uint32_t l = 0; l < n; ++l) x.push_back(load(array, u(spv::OpIAdd, first, c(l))));
    return x;
  }

  // The values at consecutive elements from `first`: a vector write per V of them where
  // `first` is a multiple of V and their count too.
  void store_run(Id array, Id first, const std::vector<Id>& x) {
    if (V > 1 && x.size() % V == 0) {
      for (uint32_t r = 0; r < x.size() / V; ++r)
        b.op_void(spv::OpStore, {vector_ptr(array, first, r),
                                 b.op(spv::OpCompositeConstruct, vec, std::vector<Id>(x.begin() + r * V, x.begin() + (r + 1) * V))});
      return;
    }
    for (uint32_t l = 0; l < x.size(); ++l) store(array, u(spv::OpIAdd, first, c(l)), x[l]);
  }

  // Element i of [0, count) per trip over the workgroup, straight-line, i clamped into range:
  // read(i) for each, all loads in flight together; then write(i, value) where i < count.
  // Reading well before writing hides the loads' latency behind the work between (v's slice
  // is read while the scores are taken).
  Values fetch(int64_t count, const std::function<Id(Id)>& read) {
    Values x;
    for (int64_t s = 0; s < count; s += t.invocations()) {
      Id i = u(spv::OpIAdd, local, c(s));
      x.push_back(read(s + t.invocations() <= count ? i : clamp(i, count)));
    }
    return x;
  }
  void stage(int64_t count, const Values& x, const std::function<void(Id, Id)>& write) {
    for (size_t r = 0; r < x.size(); ++r) {
      const int64_t s = int64_t(r) * t.invocations();
      Id i = u(spv::OpIAdd, local, c(s));
      if (s + t.invocations() <= count) write(i, x[r]);
      else b.if_then(less(i, count), [&] { write(i, x[r]); });
    }
  }
  Values fetch_k(const std::vector<Id>& bd, Id k0) {
    return fetch(int64_t(t.keys) * D, [&](Id i) {
      return read(k, bd, clamp(u(spv::OpIAdd, k0, u(spv::OpUDiv, i, c(D))), Sk), u(spv::OpUMod, i, c(D)));
    });
  }
  void stage_k(const Values& x) {
    stage(int64_t(t.keys) * D, x, [&](Id i, Id value) { store(kv_, at(u(spv::OpUDiv, i, c(D)), pitch, u(spv::OpUMod, i, c(D)), c(0)), value); });
  }
  // Past the last key v's slice is zero, so that those keys' zero probabilities add nothing
  // (0 * inf would be NaN).
  Values fetch_v(const std::vector<Id>& bd, Id k0) {
    return fetch(int64_t(t.keys) * Dv, [&](Id i) {
      Id key = u(spv::OpIAdd, k0, u(spv::OpUDiv, i, c(Dv)));
      return e.b_select(vt, less(key, Sk), read(v, bd, clamp(key, Sk), u(spv::OpUMod, i, c(Dv))), e.constant(ct, 0));
    });
  }
  void stage_v(const Values& x) {
    stage(int64_t(t.keys) * Dv, x, [&](Id i, Id value) { store(vs_, i, value); });
  }

  // A loop over x0 = 0, step, 2 step, ... below n; body(carried, x0) gives the next carried.
  Values steps(std::vector<Id> types, Values init, int64_t n, uint32_t step, const std::function<Values(Values, Id)>& body) {
    types.push_back(e.u32());
    init.push_back(c(0));
    Values out = b.loop(
        types, init, [&](const Values& s) { return less(s.back(), n); },
        [&](const Values& s) {
          Values next = body(Values(s.begin(), s.end() - 1), s.back());
          next.push_back(u(spv::OpIAdd, s.back(), c(step)));
          return next;
        },
        uint64_t((n + step - 1) / step));
    out.pop_back();
    return out;
  }

  // Row i's value combined (by `op`) over its invocations' parts: by shuffles within the
  // subgroup, or through shared memory after a barrier (the kernel's next barrier comes
  // before the array is written again).
  Values across_lanes(const Values& parts, const std::function<Id(Id, Id)>& op) {
    Values r = parts;
    if (t.shuffles) {
      for (uint32_t off = t.lanes / 2; off > 0; off /= 2)
        for (auto& x : r) x = op(x, b.op_in_place(spv::OpGroupNonUniformShuffleXor, vt, {c(spv::ScopeSubgroup), x, c(off)}));
      return r;
    }
    for (uint32_t i = 0; i < parts.size(); ++i) store(red_, at(tx, t.lanes, row(i), c(0)), parts[i]);
    b.workgroup_barrier();
    for (uint32_t i = 0; i < parts.size(); ++i) {
      r[i] = load(red_, at(c(0), t.lanes, row(i), c(0)));
      for (uint32_t l = 1; l < t.lanes; ++l) r[i] = op(r[i], load(red_, at(c(l), t.lanes, row(i), c(0))));
    }
    return r;
  }

  Values scores(const std::vector<Id>& bd, Id q0, Id k0);
  Values key_loop(const std::vector<Id>& bd, Id q0);
  Values step(const std::vector<Id>& bd, Id q0, const Values& s);
  Values fold_slice(const Values& s, const Values& sc, const Values& tile_max);
  Values add_products(Values o);
  void finish(Id bt, Id q0, const Values& state, const BufferRef& output);

  const AttentionTiles t;
  Id vec = 0;
  uint32_t V = 1;
  uint32_t TY = 0, SJ = 0, OJ = 0, pitch = 0, qp = 0;
  bool interleave = false;
  Id local = 0, tx = 0, ty = 0, qs_ = 0, kv_ = 0, vs_ = 0, ps_ = 0, red_ = 0;
};

// The invocation's scores of the key slice at k0: q·k scaled, biased and masked as Nx
// computes them, -inf past the last key (no part of any row's softmax).
Values AttentionKernel::scores(const std::vector<Id>& bd, Id q0, Id k0) {
  const uint32_t R = t.row_step, n = R * SJ;
  Values acc = steps(std::vector<Id>(n, vt), Values(n, e.constant(ct, 0)), D, V, [&](Values s, Id d0) {
    std::vector<std::vector<Id>> x;
    for (uint32_t i = 0; i < R; ++i) x.push_back(load_run(qs_, at(d0, qp, row(i), c(0)), V));
    for (uint32_t l = 0; l < V; ++l) {
      const std::vector<Id> y = load_run(kv_, at(first_key(), pitch, u(spv::OpIAdd, d0, c(l)), c(0)), SJ);
      for (uint32_t i = 0; i < R; ++i)
        for (uint32_t j = 0; j < SJ; ++j) s[i * SJ + j] = fma(x[i][l], y[j], s[i * SJ + j]);
    }
    return s;
  });
  for (uint32_t i = 0; i < R; ++i)
    for (uint32_t j = 0; j < SJ; ++j)
      acc[i * SJ + j] = score(acc[i * SJ + j], bd, u(spv::OpIAdd, q0, row(i)), u(spv::OpIAdd, k0, u(spv::OpIAdd, first_key(), c(j))));
  return acc;
}

// o + the probabilities staged in shared memory times v's staged slice.
Values AttentionKernel::add_products(Values o) {
  const uint32_t R = t.row_step;
  const bool whole = int64_t(OJ) * t.lanes == Dv;  // else the last columns overhang v's
  return steps(std::vector<Id>(o.size(), vt), o, t.keys, V, [&](Values s, Id key0) {
    std::vector<std::vector<Id>> p;
    for (uint32_t i = 0; i < R; ++i) p.push_back(load_run(ps_, at(key0, pitch, row(i), c(0)), V));
    for (uint32_t l = 0; l < V; ++l) {
      const Id key = u(spv::OpIAdd, key0, c(l));
      std::vector<Id> w;
      if (interleave) {
        for (uint32_t j = 0; j < OJ; j += V) {
          const std::vector<Id> x = load_run(vs_, at(col(j), uint32_t(Dv), key, c(0)), V);
          w.insert(w.end(), x.begin(), x.end());
        }
      } else if (whole) {
        w = load_run(vs_, at(col(0), uint32_t(Dv), key, c(0)), OJ);
      } else {
        for (uint32_t j = 0; j < OJ; ++j) w.push_back(load(vs_, at(clamp(col(j), Dv), uint32_t(Dv), key, c(0))));
      }
      for (uint32_t i = 0; i < R; ++i)
        for (uint32_t j = 0; j < OJ; ++j) s[i * OJ + j] = fma(p[i][l], w[j], s[i * OJ + j]);
    }
    return s;
  });
}

// The online softmax over the key slices: carried, each row's running maximum, its partial
// sum of exponentials over this invocation's keys, and its output columns, all scaled to
// the running maximum.
Values AttentionKernel::key_loop(const std::vector<Id>& bd, Id q0) {
  const uint32_t R = t.row_step, O = R * OJ;
  std::vector<Id> types(2 * R + O, vt);
  Values init(R, e.float_literal(ct, -INFINITY));
  init.resize(2 * R + O, e.constant(ct, 0));
  if (Sk == 0) return init;
  // Carried besides: k0. k's slice is read at the start of its step (reading it a step
  // ahead, as v's is where it takes k's place, held enough registers more to run slower:
  // docs/tuning.md).
  types.push_back(e.u32());
  init.push_back(c(0));
  const Id end = key_end(q0, t.rows);
  Values out = b.loop(
      types, init, [&](const Values& s) { return is(spv::OpULessThan, s.back(), end); },
      [&](const Values& s) { return step(bd, q0, s); }, uint64_t((Sk + t.keys - 1) / t.keys));
  out.resize(2 * R + O);
  return out;
}

// The slice of keys at k0 (the carried state's last): staged, scored, folded into the
// state, and its probabilities' products with v's slice added to the outputs.
Values AttentionKernel::step(const std::vector<Id>& bd, Id q0, const Values& s) {
  const uint32_t R = t.row_step;
  const Id k0 = s.back();
  // With v's slice in an array of its own and a row's invocations in one subgroup, k's
  // and v's slices are staged together behind one barrier, and the probabilities, which
  // only the row's own invocations read, need only the subgroup's.
  const bool together = t.own_v && t.shuffles;
  Values v_slice;
  if (together) {
    const Values k_slice = fetch_k(bd, k0);
    v_slice = fetch_v(bd, k0);
    stage_k(k_slice);
    stage_v(v_slice);
  } else {
    stage_k(fetch_k(bd, k0));
  }
  b.workgroup_barrier();
  if (!together) v_slice = fetch_v(bd, k0);
  const Values sc = scores(bd, q0, k0);
  Values tile_max(R);
  for (uint32_t i = 0; i < R; ++i) {
    tile_max[i] = sc[i * SJ];
    for (uint32_t j = 1; j < SJ; ++j) tile_max[i] = max(tile_max[i], sc[i * SJ + j]);
  }
  tile_max = across_lanes(tile_max, [&](Id x, Id y) { return max(x, y); });
  // v's slice in k's place once every invocation has read k's (the maxima's barrier
  // where they went through shared memory).
  if (!t.own_v && t.shuffles) b.workgroup_barrier();
  if (!together) stage_v(v_slice);
  Values next = fold_slice(s, sc, tile_max);
  if (together) b.storage_barrier(spv::ScopeSubgroup);
  else b.workgroup_barrier();
  const Id k_next = u(spv::OpIAdd, k0, c(t.keys));
  const Values o = add_products(Values(next.begin() + 2 * R, next.end()));
  std::copy(o.begin(), o.end(), next.begin() + 2 * R);
  b.workgroup_barrier();  // the slices are restaged next
  next.push_back(k_next);
  return next;
}

// The state s moved to each row's new maximum over the slice's scores sc (its maxima
// tile_max), the slice's exponentials added to the sums and stored as the probabilities
// that add_products reads.
Values AttentionKernel::fold_slice(const Values& s, const Values& sc, const Values& tile_max) {
  const uint32_t R = t.row_step, O = R * OJ;
  Values next(s.begin(), s.begin() + 2 * R + O);
  for (uint32_t i = 0; i < R; ++i) {
    const Id m = max(s[i], tile_max[i]);
    const Id alpha = rescale(s[i], m);
    Id sum = e.constant(ct, 0);
    std::vector<Id> p(SJ);
    for (uint32_t j = 0; j < SJ; ++j) {
      p[j] = probability(sc[i * SJ + j], m);
      sum = flt(spv::OpFAdd, sum, p[j]);
    }
    store_run(ps_, at(first_key(), pitch, row(i), c(0)), p);
    next[i] = m;
    next[R + i] = fma(s[R + i], alpha, sum);
    for (uint32_t j = 0; j < OJ; ++j) next[2 * R + i * OJ + j] = flt(spv::OpFMul, s[2 * R + i * OJ + j], alpha);
  }
  return next;
}

// Each row's sum from its invocations' partial sums, then its outputs (row_output).
void AttentionKernel::finish(Id bt, Id q0, const Values& state, const BufferRef& output) {
  const uint32_t R = t.row_step;
  const Values sums = across_lanes(Values(state.begin() + R, state.begin() + 2 * R), [&](Id x, Id y) { return flt(spv::OpFAdd, x, y); });
  for (uint32_t i = 0; i < R; ++i) {
    const Id r = u(spv::OpIAdd, q0, row(i)), d = row_divisor(sums[i]);
    for (uint32_t j = 0; j < OJ; ++j) {
      const Id col = this->col(j);
      const Id out = row_output(state[2 * R + i * OJ + j], d, state[i]);
      Id in = less(r, Sq);
      if (int64_t(OJ) * t.lanes != Dv) in = b.op(spv::OpLogicalAnd, e.boolean(), {in, less(col, Dv)});
      b.if_then(in, [&] { store_output(output, at(col, uint32_t(Dv), u(spv::OpIAdd, u(spv::OpIMul, bt, c(Sq)), r), c(0)), out); });
    }
  }
  b.workgroup_barrier();  // q's rows and the partial sums are rewritten for the next tile
}

}  // namespace

ir::DType attention_compute_type(ir::DType t) { return t == ir::DType::F64 ? ir::DType::F64 : ir::DType::F32; }

const ir::Node* attention_of(const ir::Graph& body) {
  for (const auto& n : body.nodes)
    if (n.op == "attention") return &n;
  return nullptr;
}

LaunchConfig launch_attention(const ir::Graph& body, const ir::Node& attn, const DeviceCaps& caps) {
  const ir::Shape& q = body.node(attn.args.at(0)).type().shape;
  const ir::Shape& v = body.node(attn.args.at(2)).type().shape;
  const ir::DType ct = attention_compute_type(attn.type().dtype);
  AttentionTiles t = choose_cooperative_attention_tiles(caps, attn.type().dtype, q.back(), v.back());
  if (!t.rows) t = choose_attention_tiles(caps, q.back(), v.back(), ir::dtype_bits(ct) / 8);
  if (!t.rows)
    throw ir::IrError(attn, "head dims " + std::to_string(q.back()) + " and " + std::to_string(v.back()) +
                                " leave no attention tiles within " + caps.name + "'s " +
                                std::to_string(caps.max_shared_memory_bytes) + " bytes of shared memory");
  const int64_t rows = q[q.size() - 2], batch = ir::num_elements(ir::Shape(q.begin(), q.end() - 2));
  const int64_t tiles = batch * ((rows + t.rows - 1) / t.rows);
  LaunchConfig c{t.invocations(), uint32_t(std::min<int64_t>({std::max<int64_t>(tiles, 1), 65535, caps.max_workgroup_count_x})), false, 1};
  c.attention = t;
  return c;
}

void emit_attention(const ir::Graph& body, const ir::Node& attn, Emitter& e, const BufferRef& output,
                    const LaunchConfig& launch, uint64_t* shared_bytes) {
  AttentionKernel k(body, attn, e, launch.attention, shared_bytes);
  k.each_tile(launch, [&](Id p) { k.emit_tile(p, output); });
}

}  // namespace nxv::codegen
