// Sorts: the sort kernels of codegen/sort.h. A comparator orders two (key, position) pairs
// by Nx's order of the keys, ties by position, so every stage is deterministic and the
// network's result is the stable order whatever the device's scheduling.
#include <algorithm>
#include <bit>
#include <functional>

#include "codegen/sort.h"
#include "ir/ops.h"

namespace nxv::codegen {

using ir::DType;
using Values = spirv::Builder::Values;

namespace {

uint32_t widest_workgroup(const DeviceCaps& caps) { return std::bit_floor(std::max(caps.max_workgroup_invocations, 1u)); }

// Where line l's element k lies: lines are the positions of the other axes, in order.
struct SortLine {
  Emitter& e;
  const SortStage& s;
  Id base;
  SortLine(Emitter& em, const SortStage& stage, Id line) : e(em), s(stage) {
    auto& b = e.b;
    Id outer = b.op(spv::OpUDiv, e.u32(), {line, e.u32c(s.inner)}), within = b.op(spv::OpUMod, e.u32(), {line, e.u32c(s.inner)});
    base = b.op(spv::OpIAdd, e.u32(), {b.op(spv::OpIMul, e.u32(), {outer, e.u32c(s.length * s.inner)}), within});
  }
  // k clamped to the line, so that loads the guards skip stay in bounds wherever they land.
  Id at(Id k) {
    auto& b = e.b;
    Id in_line = b.ext(GLSLstd450UMin, e.u32(), {k, e.u32c(s.length - 1)});
    return b.op(spv::OpIAdd, e.u32(), {base, b.op(spv::OpIMul, e.u32(), {in_line, e.u32c(s.inner)})});
  }
};

// The type the keys of elements of type t compare in: integers as they are; floats as
// unsigned integers of their register's bits (sort_key), so that comparisons stay exact on
// devices that flush subnormals; f64 as floats where the device has no 64-bit integers.
DType key_type(const Emitter& e, DType t) {
  if (!ir::is_float(t)) return t;
  if (Emitter::register_bits(t) == 32) return DType::U32;
  return e.caps.int64 ? DType::U64 : t;
}

// Element value v of type t as a key of key_type(t): a float's bits with the sign bit
// flipped (positive) or all bits flipped (negative) order as the floats do; both zeros take
// +0.0's key and every NaN the greatest, which puts NaN last ascending and first descending.
Id sort_key(Emitter& e, Id v, DType t) {
  const DType k = key_type(e, t);
  if (k == t) return v;
  auto& b = e.b;
  const int bits = Emitter::register_bits(k);
  Id kt = e.reg_type(k);
  auto c = [&](uint64_t x) { return b.const_int(bits, x); };
  const uint64_t sign = uint64_t(1) << (bits - 1), magnitude_mask = sign - 1;
  const uint64_t inf = bits == 32 ? 0x7f800000u : 0x7ff0000000000000ull, all = bits == 32 ? 0xffffffffu : ~uint64_t(0);
  Id raw = e.to_bits(v, bits == 32 ? DType::F32 : DType::F64);
  Id magnitude = b.op(spv::OpBitwiseAnd, kt, {raw, c(magnitude_mask)});
  Id flip = b.op(spv::OpBitwiseOr, kt, {b.op(spv::OpShiftRightArithmetic, kt, {raw, c(uint64_t(bits - 1))}), c(sign)});
  Id key = b.op(spv::OpBitwiseXor, kt, {raw, flip});
  key = e.b_select(kt, b.op(spv::OpIEqual, e.boolean(), {magnitude, c(0)}), c(sign), key);
  return e.b_select(kt, b.op(spv::OpUGreaterThan, e.boolean(), {magnitude, c(inf)}), c(all), key);
}

// The comparator over keys of type t (key_type's): whether pair (ka, ia) goes strictly
// before (kb, ib).
struct Order {
  Emitter& e;
  DType t;
  bool desc;
  Id key_before(Id a, Id b) {
    auto& bb = e.b;
    if (ir::is_float(t)) {
      // f64 compared as floats: ascending, NaN after everything; descending, before; NaNs
      // tie, as do -0.0 and 0.0.
      Id ordered = bb.op(desc ? spv::OpFOrdGreaterThan : spv::OpFOrdLessThan, e.boolean(), {a, b});
      Id nan_a = bb.op(spv::OpIsNan, e.boolean(), {a}), nan_b = bb.op(spv::OpIsNan, e.boolean(), {b});
      Id by_nan = desc ? bb.op(spv::OpLogicalAnd, e.boolean(), {nan_a, bb.op(spv::OpLogicalNot, e.boolean(), {nan_b})})
                       : bb.op(spv::OpLogicalAnd, e.boolean(), {nan_b, bb.op(spv::OpLogicalNot, e.boolean(), {nan_a})});
      return bb.op(spv::OpLogicalOr, e.boolean(), {ordered, by_nan});
    }
    const spv::Op less = ir::is_signed_int(t) ? spv::OpSLessThan : spv::OpULessThan;
    return desc ? bb.op(less, e.boolean(), {b, a}) : bb.op(less, e.boolean(), {a, b});
  }
  Id before(Id ka, Id ia, Id kb, Id ib) {
    auto& bb = e.b;
    Id tie = bb.op(spv::OpLogicalAnd, e.boolean(),
                   {bb.op(spv::OpLogicalNot, e.boolean(), {key_before(kb, ka)}), bb.op(spv::OpULessThan, e.boolean(), {ia, ib})});
    return bb.op(spv::OpLogicalOr, e.boolean(), {key_before(ka, kb), tie});
  }
};

// Comparator c of a step with stride s in a merge of size k: its lower position i, and its
// partner (i ^ (k - 1) on the merge's first step, which folds the merge's two halves onto
// each other; i + s after it).
std::pair<Id, Id> comparator(Emitter& e, Id c, Id s, Id k) {
  auto& b = e.b;
  Id low = b.op(spv::OpISub, e.u32(), {s, e.u32c(1)});
  Id i = b.op(spv::OpBitwiseOr, e.u32(),
              {b.op(spv::OpShiftLeftLogical, e.u32(), {b.op(spv::OpBitwiseAnd, e.u32(), {c, b.op(spv::OpNot, e.u32(), {low})}), e.u32c(1)}),
               b.op(spv::OpBitwiseAnd, e.u32(), {c, low})});
  Id first_step = b.op(spv::OpIEqual, e.boolean(), {b.op(spv::OpShiftLeftLogical, e.u32(), {s, e.u32c(1)}), k});
  Id partner = e.b_select(e.u32(), first_step, b.op(spv::OpBitwiseXor, e.u32(), {i, b.op(spv::OpISub, e.u32(), {k, e.u32c(1)})}),
                          b.op(spv::OpBitwiseOr, e.u32(), {i, s}));
  return {i, partner};
}

// The key of the element at position `position` of the line (a u32).
Id key_at(Emitter& e, const ir::Node& x, SortLine& line, Id position) {
  Index idx;
  idx.shape = x.type().shape;
  idx.linear = line.at(position);
  return sort_key(e, e.value(x, idx), x.type().dtype);
}

// The position the order so far holds at k (argsort_merge's second operand), as a u32.
Id order_at(Emitter& e, const ir::Node& order, SortLine& line, Id k) {
  Index idx;
  idx.shape = order.type().shape;
  idx.linear = line.at(k);
  return e.convert(e.value(order, idx), order.type().dtype, DType::U32);
}

int log2_of(int64_t power_of_two) { return std::bit_width(uint64_t(power_of_two) - 1); }

// A group's keys and positions in shared memory, `per` slots of each invocation:
// lid, lid + size, ...
struct SharedGroup {
  Emitter& e;
  Id kt, keys, positions, lid;
  uint32_t size, per;
  SharedGroup(Emitter& em, DType t, int64_t group, uint32_t workgroup) : e(em), kt(em.reg_type(t)), size(workgroup) {
    keys = e.b.workgroup_array(kt, uint32_t(group));
    positions = e.b.workgroup_array(e.u32(), uint32_t(group));
    lid = e.b.builtin_x(spv::BuiltInLocalInvocationId);
    per = uint32_t(group / workgroup);
  }
  uint64_t bytes(int64_t group) const { return uint64_t(e.b.type_bytes(kt) + 4) * uint64_t(group); }
  Id slot(uint32_t j) { return e.b.op(spv::OpIAdd, e.u32(), {lid, e.u32c(uint64_t(j) * size)}); }
  Id at(Id array, Id type, Id i) { return e.b.op(spv::OpAccessChain, e.b.type_pointer(spv::StorageClassWorkgroup, type), {array, i}); }
  Id key(Id i) { return e.b.op_in_place(spv::OpLoad, kt, {at(keys, kt, i)}); }
  Id position(Id i) { return e.b.op_in_place(spv::OpLoad, e.u32(), {at(positions, e.u32(), i)}); }
  void put(Id i, Id key, Id position) {
    e.b.op_void(spv::OpStore, {at(keys, kt, i), key});
    e.b.op_void(spv::OpStore, {at(positions, e.u32(), i), position});
  }
};

// Group `index` of the tile at position w: its number among all lines' groups, the line
// it lies on, its first slot in the tile, where it starts on its line, and its elements on
// the line (none past the last group; the rest is padding, which no comparator moves).
struct TileGroup {
  Id number;
  SortLine line;
  Id offset, start, valid;
  TileGroup(Emitter& e, const SortStage& s, Id w, Id index)
      : number(e.b.op(spv::OpIAdd, e.u32(), {e.b.op(spv::OpIMul, e.u32(), {w, e.u32c(s.tile / s.group)}), index})),
        line(e, s, e.b.op(spv::OpUDiv, e.u32(), {number, e.u32c(s.groups_per_line())})) {
    auto& b = e.b;
    offset = b.op(spv::OpIMul, e.u32(), {index, e.u32c(s.group)});
    start = b.op(spv::OpIMul, e.u32(), {b.op(spv::OpUMod, e.u32(), {number, e.u32c(s.groups_per_line())}), e.u32c(s.group)});
    Id on_line = b.ext(GLSLstd450UMin, e.u32(), {b.op(spv::OpISub, e.u32(), {e.u32c(s.length), start}), e.u32c(s.group)});
    valid = e.b_select(e.u32(), b.op(spv::OpULessThan, e.boolean(), {number, e.u32c(s.groups())}), on_line, e.u32c(0));
  }
};

// Comparator step (stride s of merge k, both u32 values) over each group of the tile at
// position w: each invocation takes comparators lid, lid + size, ...; a barrier after.
void shared_step(SharedGroup& g, Order& order, const SortStage& st, Id w, Id s, Id k) {
  Emitter& e = g.e;
  auto& b = e.b;
  const int64_t half = st.group / 2;
  for (uint32_t j = 0; j < g.per / 2; ++j) {
    Id c = g.slot(j);
    TileGroup group(e, st, w, b.op(spv::OpUDiv, e.u32(), {c, e.u32c(half)}));
    auto [i, p] = comparator(e, b.op(spv::OpUMod, e.u32(), {c, e.u32c(half)}), s, k);
    b.if_then(b.op(spv::OpULessThan, e.boolean(), {p, group.valid}), [&, i = i, p = p] {
      Id ti = b.op(spv::OpIAdd, e.u32(), {group.offset, i}), tp = b.op(spv::OpIAdd, e.u32(), {group.offset, p});
      Id ki = g.key(ti), kp = g.key(tp), ii = g.position(ti), ip = g.position(tp);
      Id swap = order.before(kp, ip, ki, ii);
      g.put(ti, e.b_select(g.kt, swap, kp, ki), e.b_select(e.u32(), swap, ip, ii));
      g.put(tp, e.b_select(g.kt, swap, ki, kp), e.b_select(e.u32(), swap, ii, ip));
    });
  }
  b.workgroup_barrier();
}

// The stage's merges over the tile's groups in shared memory: merge sizes merge_from to merge_to,
// each from its first stride (first_stride for merge_from, half the merge after it) down to
// last_stride.
void shared_merges(SharedGroup& g, Order& order, const SortStage& s, Id w) {
  auto& b = g.e.b;
  Emitter& e = g.e;
  b.loop(
      {e.u32(), e.u32()}, {e.u32c(s.merge_from), e.u32c(s.first_stride)},
      [&](const Values& m) { return b.op(spv::OpULessThanEqual, e.boolean(), {m[0], e.u32c(s.merge_to)}); },
      [&](const Values& m) {
        b.loop(
            {e.u32()}, {m[1]},
            [&](const Values& st) { return b.op(spv::OpUGreaterThanEqual, e.boolean(), {st[0], e.u32c(s.last_stride)}); },
            [&](const Values& st) {
              shared_step(g, order, s, w, st[0], m[0]);
              return Values{b.op(spv::OpShiftRightLogical, e.u32(), {st[0], e.u32c(1)})};
            },
            uint64_t(log2_of(s.merge_to)));
        // The next merge starts at half its size: this one's.
        return Values{b.op(spv::OpShiftLeftLogical, e.u32(), {m[0], e.u32c(1)}), m[0]};
      },
      uint64_t(log2_of(s.merge_to) - log2_of(s.merge_from) + 1));
}

// Workgroup w takes tiles w, w + groups, ... of all lines' groups: loads a tile's keys and
// positions into shared memory, runs the stage's merges there and stores the positions.
void emit_shared(const ir::Graph& body, const ir::Node& sort, const SortStage& s, Emitter& e, const BufferRef& output,
                 const LaunchConfig& launch, uint64_t* shared_bytes) {
  auto& b = e.b;
  const ir::Node& x = body.node(sort.args.at(0));
  SharedGroup g(e, key_type(e, x.type().dtype), s.tile, launch.workgroup_size);
  *shared_bytes += g.bytes(s.tile);
  Order order{e, key_type(e, x.type().dtype), s.desc};
  // Slot i of the tile: element i % group of its group i / group.
  auto each_slot = [&](Id w, const std::function<void(Id, TileGroup&, Id)>& fn) {
    for (uint32_t j = 0; j < g.per; ++j) {
      Id i = g.slot(j);
      TileGroup group(e, s, w, b.op(spv::OpUDiv, e.u32(), {i, e.u32c(s.group)}));
      Id within = b.op(spv::OpUMod, e.u32(), {i, e.u32c(s.group)});
      fn(i, group, within);
    }
  };
  b.position_loop(
      {e.u32()}, {b.builtin_x(spv::BuiltInWorkgroupId)},
      [&](const Values& w) { return b.op(spv::OpULessThan, e.boolean(), {w[0], e.u32c(sort_positions(s))}); },
      [&](const Values& w) {
        each_slot(w[0], [&](Id i, TileGroup& group, Id within) {
          Id k = b.op(spv::OpIAdd, e.u32(), {group.start, within});
          Id position = s.from_order ? order_at(e, body.node(sort.args.at(1)), group.line, k) : k;
          Id key = key_at(e, x, group.line, position);
          b.if_then(b.op(spv::OpULessThan, e.boolean(), {within, group.valid}), [&] { g.put(i, key, position); });
        });
        b.workgroup_barrier();
        shared_merges(g, order, s, w[0]);
        each_slot(w[0], [&](Id i, TileGroup& group, Id within) {
          Id k = b.op(spv::OpIAdd, e.u32(), {group.start, within});
          b.if_then(b.op(spv::OpULessThan, e.boolean(), {within, group.valid}),
                    [&] { e.store(output, group.line.at(k), e.convert(g.position(i), DType::U32, sort.type().dtype)); });
        });
        b.workgroup_barrier();  // the arrays are refilled by the next tile
        return Values{b.op(spv::OpIAdd, e.u32(), {w[0], e.u32c(launch.group_count)})};
      });
}

// Invocation q takes comparators q, q + invocations, ... of all lines: one step of stride
// `first_stride` of a merge of `merge_from`, across the line in global memory.
void emit_global(const ir::Graph& body, const ir::Node& sort, const SortStage& s, Emitter& e, const BufferRef& output,
                 const LaunchConfig& launch) {
  auto& b = e.b;
  const ir::Node& x = body.node(sort.args.at(0));
  const ir::Node& prior = body.node(sort.args.at(1));
  const DType out_t = sort.type().dtype;
  Order order{e, key_type(e, x.type().dtype), s.desc};
  const int64_t per_line = s.padded / 2;
  const uint64_t stride = uint64_t(launch.workgroup_size) * launch.group_count;
  b.position_loop(
      {e.u32()}, {b.builtin_x(spv::BuiltInGlobalInvocationId)},
      [&](const Values& q) { return b.op(spv::OpULessThan, e.boolean(), {q[0], e.u32c(sort_positions(s))}); },
      [&](const Values& q) {
        SortLine line(e, s, b.op(spv::OpUDiv, e.u32(), {q[0], e.u32c(per_line)}));
        auto [i, p] = comparator(e, b.op(spv::OpUMod, e.u32(), {q[0], e.u32c(per_line)}), e.u32c(s.first_stride), e.u32c(s.merge_from));
        Id ii = order_at(e, prior, line, i), ip = order_at(e, prior, line, p);
        Id ki = key_at(e, x, line, ii), kp = key_at(e, x, line, ip);
        // A partner past the line is padding: the element stays.
        Id pair = b.op(spv::OpULessThan, e.boolean(), {p, e.u32c(s.length)});
        Id swap = b.op(spv::OpLogicalAnd, e.boolean(), {pair, order.before(kp, ip, ki, ii)});
        b.if_then(b.op(spv::OpULessThan, e.boolean(), {i, e.u32c(s.length)}), [&, i = i, p = p] {
          e.store(output, line.at(i), e.convert(e.b_select(e.u32(), swap, ip, ii), DType::U32, out_t));
          b.if_then(pair, [&] { e.store(output, line.at(p), e.convert(e.b_select(e.u32(), swap, ii, ip), DType::U32, out_t)); });
        });
        return Values{b.op(spv::OpIAdd, e.u32(), {q[0], e.u32c(stride)})};
      });
}

// Groups shorter than a workgroup of kTileInvocations (the spec's minimum of
// maxComputeWorkGroupInvocations) share one, so that short lines still fill it.
constexpr int64_t kTileInvocations = 128;

int64_t tile_of(const DeviceCaps& caps, int64_t group, int64_t most) {
  return std::max(group, std::min<int64_t>(2 * std::min<int64_t>(kTileInvocations, widest_workgroup(caps)), most));
}

}  // namespace

int64_t sort_block(const DeviceCaps& caps, int bytes) {
  // A 4-byte key and its u32 position; 8-byte keys take half as many.
  int64_t block = 2;
  while (block * 2 * 8 <= int64_t(caps.max_shared_memory_bytes) && block * 2 <= 16 * int64_t(widest_workgroup(caps))) block *= 2;
  return std::max<int64_t>(bytes > 4 ? block / 2 : block, 2);
}

void set_sort_bounds(const DeviceCaps& caps, passes::KernelBounds& bounds) { bounds.sort_block = sort_block(caps, 4); }

SortStage SortStage::of(const ir::Graph& body, const ir::Node& sort, const DeviceCaps& caps) {
  if (sort.args.empty()) throw ir::IrError(sort, "a sort without an operand");
  const ir::Shape& shape = sort.type().shape;
  const int64_t axis = sort.attrs.value("axis", int64_t(-1));
  if (axis < 0 || axis >= int64_t(shape.size())) throw ir::IrError(sort, "attrs.axis out of range for " + ir::to_string(sort.type()));
  SortStage s;
  s.length = shape[axis];
  for (size_t k = size_t(axis) + 1; k < shape.size(); ++k) s.inner *= shape[k];
  s.lines = s.length == 0 ? 0 : ir::num_elements(shape) / s.length;
  s.padded = std::max<int64_t>(std::bit_ceil(uint64_t(std::max<int64_t>(s.length, 1))), 2);
  s.desc = sort.attrs.value("direction", std::string("asc")) == "desc";
  s.from_order = sort.op == "argsort_merge";
  s.key_bytes = Emitter::register_bits(body.node(sort.args[0]).type().dtype) / 8;
  const int64_t most = sort_block(caps, s.key_bytes);
  if (!s.from_order) {
    s.group = std::min(s.padded, std::max<int64_t>(sort.attrs.value("block", s.padded), 2));
    s.merge_to = s.group;
    s.tile = tile_of(caps, s.group, most);
    if (s.group > most)
      throw ir::IrError(sort, "sorts lines of " + std::to_string(s.group) + " elements in one workgroup; " + caps.name +
                                  " holds " + std::to_string(most) + " of " + ir::dtype_name(body.node(sort.args[0]).type().dtype) +
                                  " in shared memory (passes/split-sort splits longer lines)");
    return s;
  }
  s.merge_from = s.merge_to = sort.attrs.value("merge", int64_t(2));
  s.first_stride = sort.attrs.value("stride", int64_t(1));
  s.last_stride = sort.attrs.value("last_stride", int64_t(1));
  // Every comparator's partner lies in the same aligned group of twice the first stride (of
  // the whole merge on its first step).
  const int64_t group = s.first_stride * 2 == s.merge_from ? s.merge_from : s.first_stride * 2;
  if (group <= most) s.group = group, s.tile = tile_of(caps, group, most);
  else if (s.first_stride != s.last_stride)
    throw ir::IrError(sort, "runs strides " + std::to_string(s.first_stride) + " to " + std::to_string(s.last_stride) +
                                " in one workgroup, but " + caps.name + " holds " + std::to_string(most) +
                                " elements in shared memory");
  return s;
}

const ir::Node* sort_root(const ir::Node& kernel, const ir::Graph& body) {
  if (kernel.results.size() != 1 || body.outputs.size() != 1) return nullptr;
  const ir::Node& out = body.node(body.outputs[0]);
  return ir::op_family(out.op) == ir::OpFamily::Sort ? &out : nullptr;
}

int64_t sort_positions(const SortStage& s) {
  if (!s.group) return s.lines * (s.padded / 2);
  const int64_t per_tile = s.tile / s.group;
  return (s.groups() + per_tile - 1) / per_tile;
}

LaunchConfig launch_sort(const DeviceCaps& caps, const SortStage& s) {
  if (s.group) {
    const uint32_t size = uint32_t(std::min<int64_t>(widest_workgroup(caps), s.tile / 2));
    const int64_t groups = std::min<int64_t>({std::max<int64_t>(sort_positions(s), 1), 65535, caps.max_workgroup_count_x});
    return {size, uint32_t(groups), true};
  }
  LaunchConfig c = choose_launch(caps, {sort_positions(s), 0});
  c.cooperative = false;
  c.unroll = 1;
  c.vector_width = 1;
  return c;
}

void emit_sort_kernel(const ir::Graph& body, const ir::Node& sort, Emitter& e, const BufferRef& output,
                      const LaunchConfig& launch, uint64_t* shared_bytes) {
  const SortStage s = SortStage::of(body, sort, e.caps);
  if (s.lines == 0) return;
  if (s.group) emit_shared(body, sort, s, e, output, launch, shared_bytes);
  else emit_global(body, sort, s, e, output, launch);
}

std::string describe_sort(const SortStage& s, const LaunchConfig& launch) {
  std::string d = "sort " + std::to_string(s.lines) + (s.lines == 1 ? " line of " : " lines of ") + std::to_string(s.length);
  d += s.group ? ", groups of " + std::to_string(s.group) + (s.tile > s.group ? " (" + std::to_string(s.tile / s.group) + " a workgroup)" : "") + " in shared memory"
               : ", one step of stride " + std::to_string(s.first_stride) + " in global memory";
  return d + "; " + std::to_string(launch.workgroup_size) + " invocations x " + std::to_string(launch.group_count) + " groups";
}

}  // namespace nxv::codegen
