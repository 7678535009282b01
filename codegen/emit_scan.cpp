// Scans: the scan kernels of codegen/scan.h, and a scan read as a value inside another
// kernel (a serial loop's stage), where each element folds its line's prefix itself.
//
// Every step rounds to the result type (f16 and bf16 registers renormalised), so a line
// folded serially gives the reference interpreter's bits; a workgroup's line associates the
// runs' totals differently (docs/numerics.md). The fold starts from the identity, -0.0 for
// a float sum (so that a line of -0.0 stays -0.0, as in Nx, where nothing is added).
#include <algorithm>
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

// Where line l starts, and where its k-th element in scan order lies.
struct LineAt {
  Emitter& e;
  const ScanLines& l;
  Id base;
  LineAt(Emitter& em, const ScanLines& lines, Id line) : e(em), l(lines) {
    auto& b = e.b;
    Id outer = b.op(spv::OpUDiv, e.u32(), {line, e.u32c(l.inner)}), within = b.op(spv::OpUMod, e.u32(), {line, e.u32c(l.inner)});
    base = b.op(spv::OpIAdd, e.u32(), {b.op(spv::OpIMul, e.u32(), {outer, e.u32c(l.length * l.inner)}), within});
  }
  Id element(Id k) {
    auto& b = e.b;
    Id along = l.reverse ? b.op(spv::OpISub, e.u32(), {e.u32c(l.length - 1), k}) : k;
    return b.op(spv::OpIAdd, e.u32(), {base, b.op(spv::OpIMul, e.u32(), {along, e.u32c(l.inner)})});
  }
};

Id read(Emitter& e, const ir::Node& x, Id linear) {
  Index idx;
  idx.shape = x.type().shape;
  idx.linear = linear;
  return e.value(x, idx);
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
void emit_serial_lines(const ir::Node& x, ScanFold& f, Emitter& e, const BufferRef& output, const LaunchConfig& launch,
                       const ScanLines& l) {
  auto& b = e.b;
  const uint64_t stride = uint64_t(launch.workgroup_size) * launch.group_count;
  for_each_line(e, l, b.builtin_x(spv::BuiltInGlobalInvocationId), stride, [&](LineAt& line) {
    b.loop(
        {e.reg_type(f.t), e.u32()}, {f.identity(), e.u32c(0)},
        [&](const Values& c) { return b.op(spv::OpULessThan, e.boolean(), {c[1], e.u32c(l.length)}); },
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

// The subgroup scan op of the fold, where it is exact in any order: integer sums, products,
// min and max (wrapping in registers, renormalised). None for floats: a subgroup associates a
// sum as it likes, may start it from +0.0 (a line of -0.0 would end +0.0) and may drop a NaN
// in FMin/FMax; their runs' totals go through shared memory in our order instead. Registers
// wider or narrower than 32 bits need shaderSubgroupExtendedTypes.
spv::Op subgroup_op(const ScanFold& f) {
  if (!ir::is_integer(f.t) || !f.e.caps.subgroup_arithmetic) return spv::OpNop;
  if (f.e.b.type_bytes(f.e.reg_type(f.t)) != 4 && !f.e.caps.subgroup_extended_types) return spv::OpNop;
  const bool s = ir::is_signed_int(f.t);
  if (f.op == "sum") return spv::OpGroupNonUniformIAdd;
  if (f.op == "product") return spv::OpGroupNonUniformIMul;
  if (f.op == "reduce_max") return s ? spv::OpGroupNonUniformSMax : spv::OpGroupNonUniformUMax;
  return s ? spv::OpGroupNonUniformSMin : spv::OpGroupNonUniformUMin;
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
  auto scan = [&](spv::GroupOperation g) { return e.normalize(b.op_in_place(op, rt, {e.u32c(spv::ScopeSubgroup), uint32_t(g), v}), f.t); };
  Id sg = b.builtin_u32(spv::BuiltInSubgroupId), lane = b.builtin_u32(spv::BuiltInSubgroupLocalInvocationId);
  // The first lane's exclusive scan is the op's identity at register width (INT32_MAX for a
  // minimum), which renormalising to a narrow type would turn into -1: it takes the fold's.
  Id first = b.op(spv::OpIEqual, e.boolean(), {lane, e.u32c(0)});
  Id inclusive = scan(spv::GroupOperationInclusiveScan);
  Id exclusive = e.select(f.t, first, f.identity(), scan(spv::GroupOperationExclusiveScan));
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

// An invocation's run of kScanRun elements from the line's position `first` (in scan order):
// their positions, values, whether each lies on the line, and their fold.
struct Run {
  std::vector<Id> valid, at, v;
  Id total;
};

Run read_run(const ir::Node& x, ScanFold& f, LineAt& line, Id first) {
  Emitter& e = f.e;
  auto& b = e.b;
  const int64_t length = line.l.length;
  Run r;
  r.total = f.identity();
  for (uint32_t j = 0; j < kScanRun; ++j) {
    // Positions past the line's end read its last element (loads stay in bounds) and fold nothing.
    Id k = b.op(spv::OpIAdd, e.u32(), {first, e.u32c(j)});
    r.valid.push_back(b.op(spv::OpULessThan, e.boolean(), {k, e.u32c(length)}));
    r.at.push_back(line.element(b.ext(GLSLstd450UMin, e.u32(), {k, e.u32c(length - 1)})));
    r.v.push_back(read(e, x, r.at.back()));
    r.total = e.select(f.t, r.valid.back(), f.step(r.total, r.v.back()), r.total);
  }
  return r;
}

// Workgroup g takes lines g, g + groups, ...; a line in tiles of size * kScanRun elements:
// each invocation folds its run, the workgroup scans the runs' totals, and each invocation
// folds its run again from the prefix before it (the line's earlier tiles, then earlier runs).
void emit_workgroup_lines(const ir::Node& x, ScanFold& f, Emitter& e, const BufferRef& output,
                          const LaunchConfig& launch, const ScanLines& l, uint64_t* shared_bytes) {
  auto& b = e.b;
  const uint32_t size = launch.workgroup_size;
  const uint64_t tile = uint64_t(size) * kScanRun, tiles = (uint64_t(l.length) + tile - 1) / tile;
  Id rt = e.reg_type(f.t);
  Id slots = b.workgroup_array(rt, size);
  *shared_bytes += uint64_t(b.type_bytes(rt)) * size;
  Id lid = b.builtin_x(spv::BuiltInLocalInvocationId);
  // With subgroup scans the runs follow the subgroups' numbering, where every subgroup is
  // full (checked here, uniformly: Vulkan promises full subgroups only on request); else
  // LocalInvocationId's order and shared memory.
  const spv::Op op = subgroup_op(f);
  Id full = 0, place = lid;
  if (op != spv::OpNop) {
    b.capability(spv::CapabilityGroupNonUniform);
    b.capability(spv::CapabilityGroupNonUniformArithmetic);
    Id sg_size = b.builtin_u32(spv::BuiltInSubgroupSize);
    full = b.op(spv::OpIEqual, e.boolean(), {b.op(spv::OpIMul, e.u32(), {sg_size, b.builtin_u32(spv::BuiltInNumSubgroups)}), e.u32c(size)});
    Id numbered = b.op(spv::OpIAdd, e.u32(), {b.op(spv::OpIMul, e.u32(), {b.builtin_u32(spv::BuiltInSubgroupId), sg_size}),
                                              b.builtin_u32(spv::BuiltInSubgroupLocalInvocationId)});
    place = e.b_select(e.u32(), full, numbered, lid);
  }
  for_each_line(e, l, b.builtin_x(spv::BuiltInWorkgroupId), launch.group_count, [&](LineAt& line) {
    b.loop(
        {rt, e.u32()}, {f.identity(), e.u32c(0)},
        [&](const Values& c) { return b.op(spv::OpULessThan, e.boolean(), {c[1], e.u32c(tiles)}); },
        [&](const Values& c) {
          Id first = b.op(spv::OpIAdd, e.u32(), {b.op(spv::OpIMul, e.u32(), {c[1], e.u32c(tile)}),
                                                 b.op(spv::OpIMul, e.u32(), {place, e.u32c(kScanRun)})});
          Run run = read_run(x, f, line, first);
          auto shared = [&] {
            auto [before, total] = workgroup_scan(f, run.total, lid, slots, size);
            return Values{before, total};
          };
          const Values scanned = op == spv::OpNop ? shared()
                                                  : b.if_else(full, {rt, rt}, [&] {
                                                      auto [before, total] = subgroup_scan(f, op, run.total, slots, size);
                                                      return Values{before, total};
                                                    }, shared);
          const Id before = scanned[0], total = scanned[1];
          Id acc = f.step(c[0], before);
          for (uint32_t j = 0; j < kScanRun; ++j) {
            acc = f.step(acc, run.v[j]);
            Id value = acc;
            b.if_then(run.valid[j], [&] { e.store(output, run.at[j], value); });
          }
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
  l.length = s[axis];
  for (size_t k = size_t(axis) + 1; k < s.size(); ++k) l.inner *= s[k];
  l.lines = l.length * l.inner == 0 ? 0 : ir::num_elements(s) / (l.length * l.inner) * l.inner;
  l.reverse = scan.attrs.value("reverse", false);
  return l;
}

const ir::Node* scan_root(const ir::Node& kernel, const ir::Graph& body) {
  if (kernel.results.size() != 1 || body.outputs.size() != 1) return nullptr;
  const ir::Node& out = body.node(body.outputs[0]);
  return ir::op_family(out.op) == ir::OpFamily::Scan ? &out : nullptr;
}

LaunchConfig launch_scan(const DeviceCaps& caps, const ScanLines& l) {
  if (l.inner == 1 && l.length > int64_t(kScanRun) * 8 && scans_in_workgroups(caps)) {
    // The smallest power of two whose tile covers the line, up to 256 invocations.
    uint32_t size = 1;
    while (size < std::min<uint32_t>(256, caps.max_workgroup_invocations) && int64_t(size) * kScanRun < l.length) size *= 2;
    if (size > caps.max_workgroup_invocations) size /= 2;
    if (uint64_t(size) * 8 <= caps.max_shared_memory_bytes) {
      const int64_t groups = std::min<int64_t>({std::max<int64_t>(l.lines, 1), 65535, caps.max_workgroup_count_x});
      return {size, uint32_t(groups), true};
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
  const ir::Node& x = body.node(scan.args.at(0));
  const ScanLines l = ScanLines::of(scan);
  if (l.lines == 0) return;
  if (launch.cooperative) emit_workgroup_lines(x, f, e, output, launch, l, shared_bytes);
  else emit_serial_lines(x, f, e, output, launch, l);
}

std::string describe_scan(const ir::Node& scan, const LaunchConfig& launch) {
  const ScanLines l = ScanLines::of(scan);
  std::string s = "scan " + std::to_string(l.lines) + (l.lines == 1 ? " line of " : " lines of ") + std::to_string(l.length);
  s += launch.cooperative ? ", a workgroup per line in runs of " + std::to_string(kScanRun)
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
  prefix.step = [&](const Values& acc, Id r) {
    std::vector<Id> at = d;
    at[axis] = r;
    Id in_prefix = b.op(reverse ? spv::OpUGreaterThanEqual : spv::OpULessThanEqual, boolean(), {r, d[axis]});
    return Values{select(f.t, in_prefix, f.step(acc[0], value(x, index_from_dims(shape, at))), acc[0])};
  };
  prefix.combine = [&](const Values& a, const Values& c) { return Values{f.step(a[0], c[0])}; };
  return fold(d, prefix)[0];
}

}  // namespace nxv::codegen
