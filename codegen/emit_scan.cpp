// Scans: the scan kernels of codegen/scan.h, and a scan read as a value inside another
// kernel (a serial loop's stage), where each element folds its line's prefix itself.
//
// Every step rounds to the result type (f16 and bf16 registers renormalised), so a line
// folded serially gives the reference interpreter's bits; a workgroup's line associates the
// runs' totals differently (docs/numerics.md). The fold starts from the identity, -0.0 for
// a float sum (so that a line of -0.0 stays -0.0, as in Nx, where nothing is added).
#include <algorithm>
#include <bit>
#include <functional>

#include "codegen/scan.h"
#include "ir/ops.h"

namespace nxv::codegen {

using ir::DType;
using Values = spirv::Builder::Values;

namespace {

// The fold of a scan of type t, in t's registers.
struct ScanFold {
  Emitter& e;
  std::string op;  // the reduction's name: sum product reduce_max reduce_min
  DType t;
  Id identity() { return op == "sum" && ir::is_float(t) ? e.float_literal(t, -0.0) : e.reduce_identity(op, t, t); }
  Id step(Id a, Id v) { return e.normalize(e.reduce_step(op, t, t, a, v), t); }
  static ScanFold of(Emitter& e, const ir::Node& scan) {
    const std::string& s = scan.op;
    const char* op = s == "cumulative_sum"       ? "sum"
                     : s == "cumulative_product" ? "product"
                     : s == "cumulative_max"     ? "reduce_max"
                     : s == "cumulative_min"     ? "reduce_min"
                                                 : nullptr;
    if (!op) throw ir::IrError(scan, "not a scan");
    return {e, op, scan.type().dtype};
  }
};

// Where line l starts, how long it is, and where its k-th element in scan order lies.
struct LineAt {
  Emitter& e;
  const ScanLines& l;
  Id line, base, length;
  LineAt(Emitter& em, const ScanLines& lines, Id id) : e(em), l(lines), line(id) {
    auto& b = e.b;
    Id outer = b.op(spv::OpUDiv, e.u32(), {line, e.u32c(l.inner)}), within = b.op(spv::OpUMod, e.u32(), {line, e.u32c(l.inner)});
    base = b.op(spv::OpIAdd, e.u32(), {b.op(spv::OpIMul, e.u32(), {outer, e.u32c(l.length * l.inner)}), within});
    length = e.u32c(l.length);
    if (l.segments * l.length != l.axis) {
      // The axis's last segment is shorter: outer counts segments, and one of them lies
      // `short_by` elements nearer the next line's start than the segments before it.
      const int64_t short_by = l.segments * l.length - l.axis;
      Id segment = b.op(spv::OpUMod, e.u32(), {outer, e.u32c(l.segments)});
      Id lines_before = b.op(spv::OpUDiv, e.u32(), {outer, e.u32c(l.segments)});
      base = b.op(spv::OpISub, e.u32(), {base, b.op(spv::OpIMul, e.u32(), {lines_before, e.u32c(short_by * l.inner)})});
      Id last = b.op(spv::OpIEqual, e.boolean(), {segment, e.u32c(l.segments - 1)});
      length = e.b_select(e.u32(), last, e.u32c(l.length - short_by), length);
    }
  }
  Id element(Id k) {
    auto& b = e.b;
    Id along = l.reverse ? b.op(spv::OpISub, e.u32(), {b.op(spv::OpISub, e.u32(), {length, e.u32c(1)}), k}) : k;
    return b.op(spv::OpIAdd, e.u32(), {base, b.op(spv::OpIMul, e.u32(), {along, e.u32c(l.inner)})});
  }
};

Id read(Emitter& e, const ir::Node& x, Id linear) {
  Index idx;
  idx.shape = x.type().shape;
  idx.linear = linear;
  return e.value(x, idx);
}

// The fold of the totals of the segments before line's own, in scan order: the k-th of them
// for k = first, first + stride, ... (an invocation's share where a workgroup folds them).
Id fold_totals(const ir::Node& totals, ScanFold& f, LineAt& line, Id first, uint32_t stride) {
  Emitter& e = f.e;
  auto& b = e.b;
  const ScanLines& l = line.l;
  Id seg = b.op(spv::OpUMod, e.u32(), {b.op(spv::OpUDiv, e.u32(), {line.line, e.u32c(l.inner)}), e.u32c(l.segments)});
  Id count = l.reverse ? b.op(spv::OpISub, e.u32(), {e.u32c(l.segments - 1), seg}) : seg;
  Id row = b.op(spv::OpISub, e.u32(), {line.line, b.op(spv::OpIMul, e.u32(), {seg, e.u32c(l.inner)})});
  auto done = b.loop(
      {e.reg_type(f.t), e.u32()}, {f.identity(), first},
      [&](const Values& c) { return b.op(spv::OpULessThan, e.boolean(), {c[1], count}); },
      [&](const Values& c) {
        Id p = l.reverse ? b.op(spv::OpISub, e.u32(), {e.u32c(l.segments - 1), c[1]}) : c[1];
        Id at = b.op(spv::OpIAdd, e.u32(), {row, b.op(spv::OpIMul, e.u32(), {p, e.u32c(l.inner)})});
        return Values{f.step(c[0], read(e, totals, at)), b.op(spv::OpIAdd, e.u32(), {c[1], e.u32c(stride)})};
      },
      uint64_t(l.segments / stride + 1));
  return done[0];
}

// Where line `line` starts its fold when an invocation walks it: its element of the scan's
// carry, or the fold of the totals before it, else the identity.
Id line_start(const ir::Graph& body, const ir::Node& scan, ScanFold& f, LineAt& line) {
  if (!line.l.carries) return f.identity();
  if (line.l.carry_totals) return fold_totals(body.node(scan.args[1]), f, line, f.e.u32c(0), 1);
  return read(f.e, body.node(scan.args[1]), line.line);
}

// Lines start, start + stride, ...: the position loop, each line handed to `body`.
void for_each_line(Emitter& e, const ScanLines& l, Id start, uint64_t stride, const std::function<void(LineAt&)>& body) {
  auto& b = e.b;
  b.position_loop(
      {e.u32()}, {start}, [&](const Values& s) { return b.op(spv::OpULessThan, e.boolean(), {s[0], e.u32c(l.lines)}); },
      [&](const Values& s) {
        LineAt line(e, l, s[0]);
        body(line);
        return Values{b.op(spv::OpIAdd, e.u32(), {s[0], e.u32c(stride)})};
      });
}

// Invocation i takes lines i, i + invocations, ...: a loop along each, storing every prefix.
void emit_serial_lines(const ir::Graph& body, const ir::Node& scan, ScanFold& f, Emitter& e, const BufferRef& output,
                       const LaunchConfig& launch, const ScanLines& l) {
  auto& b = e.b;
  const ir::Node& x = body.node(scan.args.at(0));
  const uint64_t stride = uint64_t(launch.workgroup_size) * launch.group_count;
  for_each_line(e, l, b.builtin_x(spv::BuiltInGlobalInvocationId), stride, [&](LineAt& line) {
    b.loop(
        {e.reg_type(f.t), e.u32()}, {line_start(body, scan, f, line), e.u32c(0)},
        [&](const Values& c) { return b.op(spv::OpULessThan, e.boolean(), {c[1], line.length}); },
        [&](const Values& c) {
          Id at = line.element(c[1]);
          Id acc = f.step(c[0], read(e, x, at));
          e.store(output, at, acc);
          return Values{acc, b.op(spv::OpIAdd, e.u32(), {c[1], e.u32c(1)})};
        },
        uint64_t(l.length));
  });
}

// The fold of the values `v` of the invocations before this one (by LocalInvocationId), and
// of all, through the shared array `slots` (Hillis-Steele: log2(size) rounds).
std::pair<Id, Id> workgroup_scan(ScanFold& f, Id v, Id lid, Id slots, uint32_t size) {
  Emitter& e = f.e;
  auto& b = e.b;
  Id rt = e.reg_type(f.t);
  auto slot = [&](Id i) { return b.op(spv::OpAccessChain, b.type_pointer(spv::StorageClassWorkgroup, rt), {slots, i}); };
  auto load = [&](Id i) { return b.op_in_place(spv::OpLoad, rt, {slot(i)}); };
  b.op_void(spv::OpStore, {slot(lid), v});
  b.workgroup_barrier();
  for (uint32_t d = 1; d < size; d *= 2) {
    Id has = b.op(spv::OpUGreaterThanEqual, e.boolean(), {lid, e.u32c(d)});
    Id from = e.b_select(e.u32(), has, b.op(spv::OpISub, e.u32(), {lid, e.u32c(d)}), lid);
    Id earlier = e.select(f.t, has, load(from), f.identity());
    v = f.step(earlier, v);
    b.workgroup_barrier();  // every read of this round before any write
    b.op_void(spv::OpStore, {slot(lid), v});
    b.workgroup_barrier();
  }
  Id before = load(b.op(spv::OpISub, e.u32(), {b.ext(GLSLstd450UMax, e.u32(), {lid, e.u32c(1)}), e.u32c(1)}));
  Id exclusive = e.select(f.t, b.op(spv::OpUGreaterThan, e.boolean(), {lid, e.u32c(0)}), before, f.identity());
  Id total = load(e.u32c(size - 1));
  b.workgroup_barrier();  // the slots are refilled by the next tile
  return {exclusive, total};
}

// How a subgroup scans its invocations' values: with the device's scan op of the fold where
// it is exact in any order (integer sums, products, min and max, wrapping in registers,
// renormalised); for floats through shuffles in our own order (Hillis-Steele over the lanes,
// each step the fold's own, so -0.0 and NaN come out as a serial fold's do), since a
// subgroup's FAdd scan associates as it likes, may start from +0.0 and may drop a NaN in
// FMin/FMax. None (OpNop) where the device has neither: shared memory then. Registers wider
// or narrower than 32 bits need shaderSubgroupExtendedTypes; emulated 64-bit ones (uvec2s)
// only shuffle, with the fold's emulated arithmetic.
spv::Op subgroup_op(const ScanFold& f) {
  const Id rt = f.e.reg_type(f.t);
  const bool emulated = f.e.b.emulated(rt);
  if (f.e.b.type_bytes(rt) != 4 && !emulated && !f.e.caps.subgroup_extended_types) return spv::OpNop;
  if (!ir::is_integer(f.t) || emulated) return f.e.caps.subgroup_shuffle ? spv::OpGroupNonUniformShuffle : spv::OpNop;
  if (!f.e.caps.subgroup_arithmetic) return spv::OpNop;
  const bool s = ir::is_signed_int(f.t);
  if (f.op == "sum") return spv::OpGroupNonUniformIAdd;
  if (f.op == "product") return spv::OpGroupNonUniformIMul;
  if (f.op == "reduce_max") return s ? spv::OpGroupNonUniformSMax : spv::OpGroupNonUniformUMax;
  return s ? spv::OpGroupNonUniformSMin : spv::OpGroupNonUniformUMin;
}

// The value of lane - d (lane d or above; a lower lane reads lane 0, for the caller to discard).
Id shuffle_from(Emitter& e, Id rt, Id v, Id lane, uint32_t d) {
  auto& b = e.b;
  Id from = b.op(spv::OpISub, e.u32(), {b.ext(GLSLstd450UMax, e.u32(), {lane, e.u32c(d)}), e.u32c(d)});
  return b.op_in_place(spv::OpGroupNonUniformShuffle, rt, {e.u32c(spv::ScopeSubgroup), v, from});
}

// The inclusive scan of v over the subgroup's lanes: log2(SubgroupSize) rounds, in each lane
// i >= d folding lane i - d's value before its own (earlier elements stay on the left).
Id shuffle_scan(ScanFold& f, Id v, Id lane) {
  Emitter& e = f.e;
  auto& b = e.b;
  Id rt = e.reg_type(f.t);
  auto done = b.loop(
      {rt, e.u32()}, {v, e.u32c(1)},
      [&](const Values& c) { return b.op(spv::OpULessThan, e.boolean(), {c[1], b.builtin_u32(spv::BuiltInSubgroupSize)}); },
      [&](const Values& c) {
        Id from = b.op(spv::OpISub, e.u32(), {b.ext(GLSLstd450UMax, e.u32(), {lane, c[1]}), c[1]});
        Id earlier = b.op_in_place(spv::OpGroupNonUniformShuffle, rt, {e.u32c(spv::ScopeSubgroup), c[0], from});
        Id has = b.op(spv::OpUGreaterThanEqual, e.boolean(), {lane, c[1]});
        return Values{e.select(f.t, has, f.step(earlier, c[0]), c[0]), b.op(spv::OpShiftLeftLogical, e.u32(), {c[1], e.u32c(1)})};
      },
      8);
  return done[0];
}

// As workgroup_scan, for full subgroups numbered subgroup by subgroup: each subgroup scans
// its invocations' values, its last invocation publishes the subgroup's total, and every
// invocation folds the totals of the subgroups before its own (one barrier instead of two
// per halving).
std::pair<Id, Id> subgroup_scan(ScanFold& f, spv::Op op, Id v, Id slots, uint32_t size) {
  Emitter& e = f.e;
  auto& b = e.b;
  Id rt = e.reg_type(f.t);
  auto slot = [&](Id i) { return b.op(spv::OpAccessChain, b.type_pointer(spv::StorageClassWorkgroup, rt), {slots, i}); };
  Id sg = b.builtin_u32(spv::BuiltInSubgroupId), lane = b.builtin_u32(spv::BuiltInSubgroupLocalInvocationId);
  // The first lane's exclusive scan is the op's identity at register width (INT32_MAX for a
  // minimum), which renormalising to a narrow type would turn into -1: it takes the fold's.
  Id first = b.op(spv::OpIEqual, e.boolean(), {lane, e.u32c(0)});
  Id inclusive, exclusive;
  if (op == spv::OpGroupNonUniformShuffle) {
    inclusive = shuffle_scan(f, v, lane);
    exclusive = e.select(f.t, first, f.identity(), shuffle_from(e, rt, inclusive, lane, 1));
  } else {
    auto scan = [&](spv::GroupOperation g) { return e.normalize(b.op_in_place(op, rt, {e.u32c(spv::ScopeSubgroup), uint32_t(g), v}), f.t); };
    inclusive = scan(spv::GroupOperationInclusiveScan);
    exclusive = e.select(f.t, first, f.identity(), scan(spv::GroupOperationExclusiveScan));
  }
  Id last = b.op(spv::OpIEqual, e.boolean(), {lane, b.op(spv::OpISub, e.u32(), {b.builtin_u32(spv::BuiltInSubgroupSize), e.u32c(1)})});
  b.if_then(last, [&] { b.op_void(spv::OpStore, {slot(sg), inclusive}); });
  b.workgroup_barrier();
  auto folded = b.loop(
      {rt, rt, e.u32()}, {f.identity(), f.identity(), e.u32c(0)},
      [&](const Values& c) { return b.op(spv::OpULessThan, e.boolean(), {c[2], b.builtin_u32(spv::BuiltInNumSubgroups)}); },
      [&](const Values& c) {
        Id t = b.op_in_place(spv::OpLoad, rt, {slot(c[2])});
        Id earlier = b.op(spv::OpULessThan, e.boolean(), {c[2], sg});
        return Values{e.select(f.t, earlier, f.step(c[0], t), c[0]), f.step(c[1], t), b.op(spv::OpIAdd, e.u32(), {c[2], e.u32c(1)})};
      },
      size);
  b.workgroup_barrier();  // the slots are refilled by the next tile
  return {f.step(folded[0], exclusive), folded[1]};
}

// A tile's elements pass through shared memory on their way in and out: loaded and stored
// by consecutive invocations at consecutive positions (each instruction a contiguous span,
// as the memory system wants), read and written there by runs (each invocation its own
// scan_run consecutive elements, the order the fold needs). Loading runs straight from
// memory (each invocation 32 bytes apart) took 3.5 times a copy's time on an H200.
struct Stage {
  Emitter& e;
  Id rt, array;
  uint32_t size, run;
  // One slot in 32 is skipped, so that the run-wise accesses (a stride of `run` slots across
  // invocations) spread over the banks instead of falling on a few.
  static uint64_t slots(uint32_t size, uint32_t run) {
    const uint64_t n = uint64_t(size) * run;
    return n + n / 32;
  }
  Id slot(Id i) {
    auto& b = e.b;
    Id padded = b.op(spv::OpIAdd, e.u32(), {i, b.op(spv::OpShiftRightLogical, e.u32(), {i, e.u32c(5)})});
    return b.op(spv::OpAccessChain, b.type_pointer(spv::StorageClassWorkgroup, rt), {array, padded});
  }
  // Slot of the j-th element an invocation moves coalesced, and of the j-th of run `place`.
  Id spread(Id lid, uint32_t j) { return e.b.op(spv::OpIAdd, e.u32(), {lid, e.u32c(j * size)}); }
  Id in_run(Id place, uint32_t j) {
    return e.b.op(spv::OpIAdd, e.u32(), {e.b.op(spv::OpIMul, e.u32(), {place, e.u32c(run)}), e.u32c(j)});
  }
};

// Where the line's k-th element lies, clamped to its last (loads stay in bounds), and whether k is on the line.
std::pair<Id, Id> position(Emitter& e, LineAt& line, Id k) {
  auto& b = e.b;
  Id end = b.op(spv::OpISub, e.u32(), {line.length, e.u32c(1)});
  return {line.element(b.ext(GLSLstd450UMin, e.u32(), {k, end})), b.op(spv::OpULessThan, e.boolean(), {k, line.length})};
}

// The tile from `first` into the stage, and each of run `place`'s elements back out: their
// values, whether each lies on the line, and their fold.
struct Run {
  std::vector<Id> valid, v;
  Id total;
};

Run load_run(const ir::Node& x, ScanFold& f, LineAt& line, Stage& st, Id first, Id lid, Id place) {
  Emitter& e = f.e;
  auto& b = e.b;
  for (uint32_t j = 0; j < st.run; ++j) {
    Id at = position(e, line, b.op(spv::OpIAdd, e.u32(), {first, st.spread(lid, j)})).first;
    b.op_void(spv::OpStore, {st.slot(st.spread(lid, j)), read(e, x, at)});
  }
  b.workgroup_barrier();
  Run r;
  r.total = f.identity();
  for (uint32_t j = 0; j < st.run; ++j) {
    Id k = b.op(spv::OpIAdd, e.u32(), {first, st.in_run(place, j)});
    r.valid.push_back(b.op(spv::OpULessThan, e.boolean(), {k, line.length}));
    r.v.push_back(b.op_in_place(spv::OpLoad, st.rt, {st.slot(st.in_run(place, j))}));
    r.total = e.select(f.t, r.valid.back(), f.step(r.total, r.v.back()), r.total);
  }
  return r;
}

// Each of run `place`'s prefixes into the stage, then the tile out to memory.
void store_run(Emitter& e, const BufferRef& output, LineAt& line, Stage& st, Id first, Id lid, Id place,
               const std::vector<Id>& prefixes) {
  auto& b = e.b;
  for (uint32_t j = 0; j < st.run; ++j) b.op_void(spv::OpStore, {st.slot(st.in_run(place, j)), prefixes[j]});
  b.workgroup_barrier();
  for (uint32_t j = 0; j < st.run; ++j) {
    auto [at, valid] = position(e, line, b.op(spv::OpIAdd, e.u32(), {first, st.spread(lid, j)}));
    Id value = b.op_in_place(spv::OpLoad, st.rt, {st.slot(st.spread(lid, j))});
    b.if_then(valid, [&, at = at] { e.store(output, at, value); });
  }
  b.workgroup_barrier();  // the stage is refilled by the next tile
}

// Workgroup g takes lines g, g + groups, ...; a line in tiles of size * scan_run elements:
// each invocation folds its run, the workgroup scans the runs' totals, and each invocation
// folds its run again from the prefix before it (the line's carry and earlier tiles, then
// earlier runs).
void emit_workgroup_lines(const ir::Graph& body, const ir::Node& scan, ScanFold& f, Emitter& e, const BufferRef& output,
                          const LaunchConfig& launch, const ScanLines& l, uint64_t* shared_bytes) {
  auto& b = e.b;
  const ir::Node& x = body.node(scan.args.at(0));
  const uint32_t size = launch.workgroup_size, run_length = launch.scan_run;
  const uint64_t tile = uint64_t(size) * run_length, tiles = (uint64_t(l.length) + tile - 1) / tile;
  Id rt = e.reg_type(f.t);
  Id slots = b.workgroup_array(rt, size);
  Stage stage{e, rt, b.workgroup_array(rt, uint32_t(Stage::slots(size, run_length))), size, run_length};
  *shared_bytes += uint64_t(b.type_bytes(rt)) * (size + Stage::slots(size, run_length));
  Id lid = b.builtin_x(spv::BuiltInLocalInvocationId);
  // With subgroup scans the runs follow the subgroups' numbering, where every subgroup is
  // full (checked here, uniformly: Vulkan promises full subgroups only on request); else
  // LocalInvocationId's order and shared memory.
  const spv::Op op = subgroup_op(f);
  Id full = 0, place = lid;
  if (op != spv::OpNop) {
    b.capability(op == spv::OpGroupNonUniformShuffle ? spv::CapabilityGroupNonUniformShuffle : spv::CapabilityGroupNonUniformArithmetic);
    full = b.full_subgroups(size);
    place = e.b_select(e.u32(), full, b.subgroup_numbering(), lid);
  }
  // The workgroup's exclusive scan of each invocation's value, and their total.
  auto scan_values = [&](Id v) {
    auto shared = [&] {
      auto [before, total] = workgroup_scan(f, v, lid, slots, size);
      return Values{before, total};
    };
    return op == spv::OpNop ? shared() : b.if_else(full, {rt, rt}, [&] {
      auto [before, total] = subgroup_scan(f, op, v, slots, size);
      return Values{before, total};
    }, shared);
  };
  for_each_line(e, l, b.builtin_x(spv::BuiltInWorkgroupId), launch.group_count, [&](LineAt& line) {
    // With totals, the invocations share the fold of those before the line.
    Id start = l.carry_totals ? scan_values(fold_totals(body.node(scan.args[1]), f, line, lid, size))[1]
                              : line_start(body, scan, f, line);
    b.loop(
        {rt, e.u32()}, {start, e.u32c(0)},
        [&](const Values& c) { return b.op(spv::OpULessThan, e.boolean(), {c[1], e.u32c(tiles)}); },
        [&](const Values& c) {
          Id first = b.op(spv::OpIMul, e.u32(), {c[1], e.u32c(tile)});
          Run run = load_run(x, f, line, stage, first, lid, place);
          const Values scanned = scan_values(run.total);
          const Id before = scanned[0], total = scanned[1];
          std::vector<Id> prefixes;
          Id acc = f.step(c[0], before);
          for (uint32_t j = 0; j < run_length; ++j) prefixes.push_back(acc = f.step(acc, run.v[j]));
          store_run(e, output, line, stage, first, lid, place, prefixes);
          return Values{f.step(c[0], total), b.op(spv::OpIAdd, e.u32(), {c[1], e.u32c(1)})};
        },
        tiles);
  });
}

}  // namespace

ScanLines ScanLines::of(const ir::Node& scan) {
  const ir::Shape& s = scan.type().shape;
  const int64_t axis = scan.attrs.value("axis", int64_t(-1));
  if (axis < 0 || axis >= int64_t(s.size())) throw ir::IrError(scan, "attrs.axis out of range for " + ir::to_string(scan.type()));
  ScanLines l;
  l.axis = l.length = s[axis];
  l.carries = scan.args.size() == 2;
  l.carry_totals = l.carries && scan.attrs.value("carry_totals", false);
  if (l.carries) {
    const int64_t segment = scan.attrs.value("segment", int64_t(0));
    if (segment < 1) throw ir::IrError(scan, "attrs.segment must be at least 1 with carries");
    l.length = std::min(segment, l.axis);
    l.segments = l.axis == 0 ? 0 : (l.axis + segment - 1) / segment;
  }
  for (size_t k = size_t(axis) + 1; k < s.size(); ++k) l.inner *= s[k];
  l.lines = l.axis * l.inner == 0 ? 0 : ir::num_elements(s) / (l.axis * l.inner) * l.segments * l.inner;
  l.reverse = scan.attrs.value("reverse", false);
  l.bytes = ir::dtype_bytes(scan.type().dtype);
  return l;
}

uint32_t scan_run(int bytes) { return uint32_t(std::clamp(32 / std::max(bytes, 1), 4, 8)); }

uint32_t scan_workgroup_size(const DeviceCaps& caps) {
  return std::bit_floor(std::clamp<uint32_t>(caps.max_workgroup_invocations, 1, 128));
}

// A block of 4 tiles (of 4-byte elements): each workgroup's line long enough that its carry
// and start are small beside its traffic, and the lines many, so that the last round of
// workgroups a GPU runs is a small part of the whole (10^7 elements: 2442 lines of 4096 at 128
// invocations) and the totals few (their scan is one workgroup's, up to a block of them).
// Small workgroups walking several tiles beat large ones walking few: their barriers hold
// fewer invocations, and more of them share a multiprocessor (bench/results, the scan rows).
// Where an invocation walks a line alone (serial lines), blocks of 1024 keep its loop far
// within a loop limiter's steps while the lines give the parallelism.
void set_scan_bounds(const DeviceCaps& caps, passes::KernelBounds& bounds) {
  if (scans_in_workgroups(caps)) {
    bounds.scan_block = 4 * int64_t(scan_workgroup_size(caps)) * scan_run(4);
    // A block's worth of totals: the folds read at most half as much as the input, from cache.
    bounds.scan_fold_totals = bounds.scan_block;
  } else {
    bounds.scan_block = caps.max_loop_steps ? std::min<int64_t>(1024, int64_t(caps.max_loop_steps) / 4) : 1024;
  }
}

const ir::Node* scan_root(const ir::Node& kernel, const ir::Graph& body) {
  if (kernel.results.size() != 1 || body.outputs.size() != 1) return nullptr;
  const ir::Node& out = body.node(body.outputs[0]);
  return ir::op_family(out.op) == ir::OpFamily::Scan ? &out : nullptr;
}

LaunchConfig launch_scan(const DeviceCaps& caps, const ScanLines& l) {
  const uint32_t run = scan_run(l.bytes);
  if (l.inner == 1 && l.length > int64_t(run) * 8 && scans_in_workgroups(caps)) {
    // The smallest power of two whose tile covers the line, up to scan_workgroup_size.
    uint32_t size = 1;
    while (size < scan_workgroup_size(caps) && int64_t(size) * run < l.length) size *= 2;
    // Registers are 32 bits wide at least (narrow types widen).
    const uint64_t reg_bytes = uint64_t(std::max(l.bytes, 4));
    while (size > 32 && reg_bytes * (size + Stage::slots(size, run)) > caps.max_shared_memory_bytes) size /= 2;
    if (reg_bytes * (size + Stage::slots(size, run)) <= caps.max_shared_memory_bytes) {
      const int64_t groups = std::min<int64_t>({std::max<int64_t>(l.lines, 1), 65535, caps.max_workgroup_count_x});
      LaunchConfig c{size, uint32_t(groups), true};
      c.scan_run = run;
      return c;
    }
  }
  // Lines are the items; none of them a reduction of its own (no cooperative launch).
  LaunchConfig c = choose_launch(caps, {l.lines, 0});
  c.unroll = 1;
  c.vector_width = 1;
  return c;
}

void emit_scan_kernel(const ir::Graph& body, const ir::Node& scan, Emitter& e, const BufferRef& output,
                      const LaunchConfig& launch, uint64_t* shared_bytes) {
  ScanFold f = ScanFold::of(e, scan);
  const ScanLines l = ScanLines::of(scan);
  if (l.lines == 0) return;
  if (launch.cooperative) emit_workgroup_lines(body, scan, f, e, output, launch, l, shared_bytes);
  else emit_serial_lines(body, scan, f, e, output, launch, l);
}

std::string describe_scan(const ir::Node& scan, const LaunchConfig& launch) {
  const ScanLines l = ScanLines::of(scan);
  std::string s = "scan " + std::to_string(l.lines) + (l.lines == 1 ? " line of " : " lines of ") + std::to_string(l.length);
  if (l.carries) s += l.carry_totals ? " from totals" : " from carries";
  s += launch.cooperative ? ", a workgroup per line in runs of " + std::to_string(launch.scan_run)
                          : std::string(", serial per invocation") + (l.inner > 1 ? " (coalesced across lines)" : "");
  return s + "; " + std::to_string(launch.workgroup_size) + " invocations x " + std::to_string(launch.group_count) + " groups";
}

// Element k of the line folds the line's elements up to k (from k with reverse): a loop over
// the whole line, the others masked; O(length) per element, for scans not computed by a
// scan kernel of their own.
Id Emitter::emit_scan_element(const ir::Node& node, Index& index) {
  ScanFold f = ScanFold::of(*this, node);
  const ir::Node& x = arg(node, 0);
  const ir::Shape& shape = x.type().shape;
  const int64_t axis = node.attrs.value("axis", int64_t(-1));
  if (axis < 0 || axis >= int64_t(shape.size())) throw ir::IrError(node, "attrs.axis out of range for " + ir::to_string(node.type()));
  const bool reverse = node.attrs.value("reverse", false);
  auto d = dims(index);
  Fold prefix;
  prefix.types = {reg_type(f.t)};
  prefix.init = {f.identity()};
  prefix.count = shape[axis];
  // With carries, the fold covers the element's segment only: positions segment_start on.
  const bool carries = node.args.size() == 2;
  const int64_t segment = carries ? node.attrs.value("segment", int64_t(0)) : shape[axis];
  if (segment < 1) throw ir::IrError(node, "attrs.segment must be at least 1 with carries");
  Id seg = b.op(spv::OpUDiv, u32(), {d[axis], u32c(segment)});
  Id seg_start = b.op(spv::OpIMul, u32(), {seg, u32c(segment)});
  Id seg_end = b.op(spv::OpIAdd, u32(), {seg_start, u32c(segment)});
  prefix.step = [&](const Values& acc, Id r) {
    std::vector<Id> at = d;
    at[axis] = r;
    Id in_prefix = b.op(reverse ? spv::OpUGreaterThanEqual : spv::OpULessThanEqual, boolean(), {r, d[axis]});
    if (carries)
      in_prefix = b.op(spv::OpLogicalAnd, boolean(), {in_prefix, b.op(reverse ? spv::OpULessThan : spv::OpUGreaterThanEqual, boolean(), {r, reverse ? seg_end : seg_start})});
    return Values{select(f.t, in_prefix, f.step(acc[0], value(x, index_from_dims(shape, at))), acc[0])};
  };
  prefix.combine = [&](const Values& a, const Values& c) { return Values{f.step(a[0], c[0])}; };
  Id folded = fold(d, prefix)[0];
  if (!carries) return folded;
  // The segment's carry, folded before the segment's prefix.
  ir::Shape carry_shape = shape;
  const int64_t segments = carry_shape[axis] = (shape[axis] + segment - 1) / segment;
  if (!node.attrs.value("carry_totals", false)) {
    std::vector<Id> at = d;
    at[axis] = seg;
    return f.step(value(arg(node, 1), index_from_dims(carry_shape, at)), folded);
  }
  // From totals: those of the segments before this one, in scan order.
  Fold carry = prefix;
  carry.count = segments;
  carry.step = [&](const Values& acc, Id r) {
    std::vector<Id> at = d;
    at[axis] = reverse ? b.op(spv::OpISub, u32(), {u32c(segments - 1), r}) : r;
    Id before = b.op(reverse ? spv::OpUGreaterThan : spv::OpULessThan, boolean(), {at[axis], seg});
    return Values{select(f.t, before, f.step(acc[0], value(arg(node, 1), index_from_dims(carry_shape, at))), acc[0])};
  };
  return f.step(fold(d, carry)[0], folded);
}

}  // namespace nxv::codegen
