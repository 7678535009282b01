// Sorts (codegen/sort.h, passes/split-sort): every kernel of the family validates for every
// type and target; the groups sorted in shared memory follow the device's limits; the
// interpreter's argsort is Nx's stable order (against an independent rank count) and
// split-sort's network stages give it too; on the device, every type, both directions, NaN,
// infinities, signed zeros, subnormals and ties, lines of 1 to 100003, against the
// interpreter, exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "codegen/sort.h"
#include "codegen_testing.h"
#include "device_testing.h"
#include "ir/interpreter.h"
#include "ir/literal.h"
#include "passes/pass.h"
#include "runtime/runtime.h"

namespace nxv::codegen {
namespace {

using cgtest::KernelBuilder;
using ir::DType;
using ir::Literal;

const std::vector<DType> kAll = {DType::S8,  DType::S16, DType::S32, DType::S64, DType::U8,   DType::U16,
                                 DType::U32, DType::U64, DType::F16, DType::BF16, DType::F32, DType::F64};

bool has(const DeviceCaps& c, DType t) {
  if (t == DType::F64) return c.float64 || c.emulate_f64;
  if (t == DType::S64 || t == DType::U64) return c.int64 || c.emulate_i64;
  return true;
}

nlohmann::json sort_attrs(int64_t axis, bool desc) { return {{"axis", axis}, {"direction", desc ? "desc" : "asc"}}; }

// A kernel of one sort op: argsort(x) with `extra` attrs, or argsort_merge(x, order).
ir::Graph sort_kernel(const std::string& op, DType t, const ir::Shape& s, int64_t axis, bool desc, nlohmann::json extra,
                      DType out = DType::S32) {
  KernelBuilder k;
  std::vector<ir::NodeId> args = {k.param(t, s)};
  if (op == "argsort_merge") args.push_back(k.param(DType::S32, s));
  nlohmann::json attrs = sort_attrs(axis, desc);
  if (extra.is_object()) attrs.update(extra);
  return k.finish({k.add(op, args, out, s, attrs)}, "sort");
}

TEST(CodegenSort, EveryTypeStageAndTargetValidates) {
  for (const char* target : {"generic", "nvidia", "amd", "lavapipe"}) {
    const DeviceCaps caps = target_caps(target);
    const int64_t block = sort_block(caps, 4);
    for (DType t : kAll) {
      if (!has(caps, t)) continue;
      const int64_t b = sort_block(caps, ir::dtype_bytes(t));
      struct Case {
        std::string op;
        ir::Shape shape;
        int64_t axis;
        nlohmann::json extra;
      };
      const std::vector<Case> cases = {
          {"argsort", {1}, 0, {}},
          {"argsort", {3, 31}, 1, {}},
          {"argsort", {1000, 3}, 0, {}},
          {"argsort", {100000}, 0, {{"block", b}}},
          {"argsort_merge", {2, 100000}, 1, {{"merge", 4 * b}, {"stride", b / 2}, {"last_stride", 1}}},
          {"argsort_merge", {100000, 2}, 0, {{"merge", 4 * b}, {"stride", 2 * b}, {"last_stride", 2 * b}}},
      };
      for (const auto& c : cases)
        for (bool desc : {false, true}) {
          SCOPED_TRACE(std::string(target) + " " + c.op + " " + ir::to_string({t, c.shape}) + " " + c.extra.dump() + (desc ? " desc" : ""));
          cgtest::expect_valid(sort_kernel(c.op, t, c.shape, c.axis, desc, c.extra, DType::S64), caps);
        }
    }
    EXPECT_GE(block, 2);
  }
}

TEST(CodegenSort, GroupsFollowTheDevicesLimits) {
  DeviceCaps caps = target_caps("nvidia");
  caps.max_shared_memory_bytes = 16384;
  caps.max_workgroup_invocations = 1024;
  // A 4-byte key and a u32 position per element; 8-byte keys take half as many.
  EXPECT_EQ(sort_block(caps, 4), 2048);
  EXPECT_EQ(sort_block(caps, 8), 1024);
  caps.max_shared_memory_bytes = 49152;
  EXPECT_EQ(sort_block(caps, 4), 4096);
  // At most 16 elements per invocation of the widest workgroup.
  caps.max_workgroup_invocations = 64;
  EXPECT_EQ(sort_block(caps, 4), 1024);
  passes::KernelBounds bounds;
  set_sort_bounds(caps, bounds);
  EXPECT_EQ(bounds.sort_block, 1024);

  auto line = cgtest::compile(sort_kernel("argsort", DType::F32, {4, 1000}, 1, false, {}), caps);
  EXPECT_EQ(line.launch, "sort 4 lines of 1000, groups of 1024 in shared memory; 64 invocations x 4 groups");
  EXPECT_NE(disassemble(line.spirv).find("OpControlBarrier"), std::string::npos);
  auto tiny = cgtest::compile(sort_kernel("argsort", DType::U8, {7, 3}, 1, true, {}), caps);
  // Short lines share a workgroup: 32 groups of 4 fill its 64 invocations.
  EXPECT_EQ(tiny.launch, "sort 7 lines of 3, groups of 4 (32 a workgroup) in shared memory; 64 invocations x 1 groups");
  auto rows = cgtest::compile(sort_kernel("argsort", DType::F32, {5000, 10}, 1, false, {}), caps);
  EXPECT_EQ(rows.launch, "sort 5000 lines of 10, groups of 16 (8 a workgroup) in shared memory; 64 invocations x 625 groups");
  auto step = cgtest::compile(sort_kernel("argsort_merge", DType::F32, {5000}, 0, false, {{"merge", 8192}, {"stride", 2048}, {"last_stride", 2048}}), caps);
  EXPECT_EQ(step.launch.rfind("sort 1 line of 5000, one step of stride 2048 in global memory;", 0), 0u) << step.launch;
  // A line longer than shared memory holds, not split: an error naming the node.
  try {
    cgtest::compile(sort_kernel("argsort", DType::F64, {3000}, 0, false, {}), caps);
    ADD_FAILURE() << "compiled";
  } catch (const ir::IrError& e) {
    EXPECT_NE(std::string(e.what()).find("(argsort): sorts lines of 4096 elements in one workgroup"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("split-sort"), std::string::npos) << e.what();
  }
}

// Values with ties, NaN, both infinities, both zeros and subnormals (floats), the extremes
// (integers).
Literal sort_input(const ir::TensorType& t, unsigned seed) {
  Literal lit{t, std::vector<uint8_t>(size_t(t.byte_size()))};
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> pick(0, 15);
  for (int64_t k = 0; k < t.num_elements(); ++k) {
    const int v = pick(rng);
    ir::Scalar s;
    if (ir::is_float(t.dtype)) {
      // Subnormals too (of f32 and bf16, and f64's), which devices that flush them in float
      // comparisons would tie.
      const double specials[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, -NAN, 1e-40, -3e-41, 5e-320};
      s.f = v < 9 ? specials[v] : (v - 12) * 0.75;
    } else {
      s.is_integer = true;
      const int bits = ir::dtype_bits(t.dtype);
      const int64_t top = bits == 64 ? INT64_MAX : (int64_t(1) << (bits - 1)) - 1;
      s.i = v == 0 ? top : v == 1 ? -top - 1 : v - 8;  // the signed extremes; wrapped for unsigned types
    }
    ir::set_element(lit, k, s);
  }
  return lit;
}

ir::Graph argsort_graph(DType t, const ir::Shape& s, int64_t axis, bool desc, DType out = DType::S64) {
  ir::Graph g;
  g.name = "sort";
  ir::Node x;
  x.id = 0, x.op = "parameter", x.results = {{t, s}}, x.attrs = {{"index", 0}};
  ir::Node a;
  a.id = 1, a.op = "argsort", a.args = {0}, a.results = {{out, s}}, a.attrs = sort_attrs(axis, desc);
  g.nodes = {x, a};
  g.outputs = {1};
  g.reindex();
  return g;
}

// Nx's order, counted independently: element i's place is the number of elements of its
// line that go before it (a smaller key, or an equal one earlier).
std::vector<int64_t> ranked_order(const Literal& x, int64_t lines, int64_t n, bool desc) {
  auto key = [&](int64_t i) { return ir::is_float(x.type.dtype) ? ir::get_f64(x, i) : double(0); };
  auto less = [&](int64_t a, int64_t b) {
    if (ir::is_float(x.type.dtype)) {
      const double u = key(a), v = key(b);
      const int cu = std::isnan(u) ? (desc ? -1 : 1) : 0, cv = std::isnan(v) ? (desc ? -1 : 1) : 0;
      if (cu != cv) return cu < cv;
      return !std::isnan(u) && (desc ? u > v : u < v);
    }
    const int64_t u = ir::get_i64(x, a), v = ir::get_i64(x, b);
    const bool lt = ir::is_unsigned_int(x.type.dtype) ? uint64_t(u) < uint64_t(v) : u < v;
    const bool gt = ir::is_unsigned_int(x.type.dtype) ? uint64_t(u) > uint64_t(v) : u > v;
    return desc ? gt : lt;
  };
  std::vector<int64_t> order(size_t(lines * n));
  for (int64_t l = 0; l < lines; ++l)
    for (int64_t i = 0; i < n; ++i) {
      int64_t place = 0;
      for (int64_t j = 0; j < n; ++j) place += less(l * n + j, l * n + i) || (j < i && !less(l * n + i, l * n + j));
      order[size_t(l * n + place)] = i;
    }
  return order;
}

std::vector<int64_t> ints(const Literal& lit) {
  std::vector<int64_t> v;
  for (int64_t k = 0; k < lit.type.num_elements(); ++k) v.push_back(ir::get_i64(lit, k));
  return v;
}

TEST(SortInterpreter, IsNxsStableOrder) {
  for (DType t : kAll)
    for (int64_t n : {1, 2, 3, 31, 200})
      for (bool desc : {false, true}) {
        SCOPED_TRACE(std::string(ir::dtype_name(t)) + " n " + std::to_string(n) + (desc ? " desc" : ""));
        const Literal x = sort_input({t, {3, n}}, unsigned(n) * 7 + unsigned(t));
        EXPECT_EQ(ints(ir::interpret(argsort_graph(t, {3, n}, 1, desc), {x})[0]), ranked_order(x, 3, n, desc));
      }
}

// split-sort with blocks of 4: the blocks' sorts and every merge stage, run literally by the
// interpreter, give the stable sort's order, lines of a power of two and not.
TEST(SortInterpreter, SplitSortsStagesGiveTheSameOrder) {
  passes::KernelBounds bounds;
  bounds.sort_block = 4;
  for (DType t : {DType::F32, DType::S8, DType::U64, DType::F64})
    for (int64_t n : {5, 31, 64, 1000})
      for (bool desc : {false, true}) {
        SCOPED_TRACE(std::string(ir::dtype_name(t)) + " n " + std::to_string(n) + (desc ? " desc" : ""));
        const ir::Graph whole = argsort_graph(t, {n, 2}, 0, desc);
        ir::Graph split = whole;
        passes::PassManager({"split-sort"}, bounds).run(split);
        EXPECT_GT(split.nodes.size(), 3u);
        const Literal x = sort_input({t, {n, 2}}, 5);
        EXPECT_EQ(ints(ir::interpret(split, {x})[0]), ints(ir::interpret(whole, {x})[0]));
      }
}

// Nx's s64 positions where the device has 64-bit integers, else s32.
DType positions_type() {
  const auto& c = devtest::device()->info().caps;
  return c.int64 || c.emulate_i64 ? DType::S64 : DType::S32;
}

void check_on_device(const ir::Graph& g, const Literal& x, uint32_t vendor = 0) {
  const auto want = ir::interpret(g, {x});
  runtime::CompileOptions opts;
  opts.as_vendor = vendor;
  std::vector<Literal> got;
  try {
    got = runtime::Executable::compile(devtest::device(), g, opts)->run_host({x});
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
    return;
  }
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].type, want[0].type);
  EXPECT_TRUE(got[0].data == want[0].data) << "the device's order differs from the interpreter's";
}

// Every type and direction, the lines along the innermost axis and across it, and lines
// longer than any device's shared memory holds (split-sort's stages: 20000 is 8 blocks of
// 4096 padded to 32768, or more of fewer elements).
TEST(SortDevice, EveryTypeDirectionAndLength) {
  const DeviceCaps& caps = devtest::device()->info().caps;
  for (DType t : kAll) {
    if (!has(caps, t)) continue;
    for (bool desc : {false, true}) {
      for (int64_t n : {1, 2, 3, 31, 1000, 4097}) {
        SCOPED_TRACE(std::string(ir::dtype_name(t)) + " n " + std::to_string(n) + (desc ? " desc" : ""));
        check_on_device(argsort_graph(t, {3, n}, 1, desc, positions_type()), sort_input({t, {3, n}}, unsigned(n)));
        if (n <= 1000) check_on_device(argsort_graph(t, {n, 2}, 0, desc, DType::S32), sort_input({t, {n, 2}}, unsigned(n) + 1));
      }
      // Many short lines: several groups to a workgroup, the last tile part full.
      check_on_device(argsort_graph(t, {257, 5}, 1, desc, positions_type()), sort_input({t, {257, 5}}, 8));
      SCOPED_TRACE(std::string(ir::dtype_name(t)) + " n 20000" + (desc ? " desc" : ""));
      check_on_device(argsort_graph(t, {2, 20000}, 1, desc, positions_type()), sort_input({t, {2, 20000}}, 9));
    }
  }
}

// The global steps' launch is the vendor's: lines of 100003 (padded to 131072: the global
// steps of five merge sizes), and long lines across the batch.
TEST(SortDevice, LongLinesOnEachVendorsLaunch) {
  for (uint32_t vendor : {0u, 0x10DEu})
    for (bool desc : {false, true}) {
      check_on_device(argsort_graph(DType::F32, {2, 100003}, 1, desc, DType::S32), sort_input({DType::F32, {2, 100003}}, 3), vendor);
      check_on_device(argsort_graph(DType::S32, {20000, 3}, 0, desc, positions_type()), sort_input({DType::S32, {20000, 3}}, 4), vendor);
    }
}

}  // namespace
}  // namespace nxv::codegen
