// Scan kernels (codegen/scan.h): every op, type, axis and direction validates on each
// target's code path; the launch walks lines serially or takes a workgroup per line as the
// device's limits and vendor say; a scan read inside another kernel folds per element.
#include <gtest/gtest.h>

#include "codegen/emitter.h"
#include "codegen_testing.h"

namespace nxv::codegen {
namespace {

using ir::DType;
using cgtest::KernelBuilder;

const char* kScans[] = {"cumulative_sum", "cumulative_product", "cumulative_min", "cumulative_max"};

ir::Graph scan_graph(const std::string& op, DType t, const ir::Shape& s, int64_t axis, bool reverse) {
  KernelBuilder k;
  auto x = k.param(t, s);
  auto r = k.add(op, {x}, t, s, {{"axis", axis}, {"reverse", reverse}});
  return k.finish({r}, "scan");
}

TEST(CodegenScan, EveryOpTypeAxisAndTargetValidates) {
  const std::vector<std::pair<ir::Shape, int64_t>> cases = {{{1}, 0}, {{700}, 0}, {{3, 5, 100}, 2}, {{3, 5, 100}, 1}, {{3, 5, 100}, 0}};
  for (const char* target : {"generic", "nvidia", "amd", "lavapipe"})
    for (const char* op : kScans)
      for (DType t : {DType::S8, DType::U8, DType::S32, DType::S64, DType::U64, DType::F16, DType::BF16, DType::F32, DType::F64})
        for (const auto& [shape, axis] : cases)
          for (bool reverse : {false, true}) {
            SCOPED_TRACE(std::string(target) + " " + op + " " + ir::to_string({t, shape}) + " axis " + std::to_string(axis) + (reverse ? " reverse" : ""));
            cgtest::expect_valid(scan_graph(op, t, shape, axis, reverse), target_caps(target));
          }
}

TEST(CodegenScan, InnermostLinesTakeAWorkgroupWhereBarriersAreCheap) {
  const auto g = scan_graph("cumulative_sum", DType::F32, {4, 1000}, 1, false);
  auto nv = cgtest::compile(g, target_caps("nvidia"));
  // Runs of 32 bytes: 125 f32 runs of 8, in a workgroup of 128.
  EXPECT_EQ(nv.launch, "scan 4 lines of 1000, a workgroup per line in runs of 8; 128 invocations x 4 groups");
  auto nv64 = cgtest::compile(scan_graph("cumulative_sum", DType::F64, {4, 1000}, 1, false), target_caps("nvidia"));
  EXPECT_EQ(nv64.launch, "scan 4 lines of 1000, a workgroup per line in runs of 4; 128 invocations x 4 groups");
  EXPECT_NE(disassemble(nv.spirv).find("OpControlBarrier"), std::string::npos);
  // lavapipe: an invocation per line, no barriers (each would make LLVM build a coroutine).
  auto lp = cgtest::compile(g, target_caps("lavapipe"));
  EXPECT_EQ(lp.launch.rfind("scan 4 lines of 1000, serial per invocation;", 0), 0u) << lp.launch;
  EXPECT_EQ(disassemble(lp.spirv).find("OpControlBarrier"), std::string::npos);
  // Short lines and other axes: an invocation per line, which coalesces across lines.
  auto col = cgtest::compile(scan_graph("cumulative_max", DType::F32, {1000, 64}, 0, true), target_caps("nvidia"));
  EXPECT_EQ(col.launch.rfind("scan 64 lines of 1000, serial per invocation (coalesced across lines);", 0), 0u) << col.launch;
  auto shorts = cgtest::compile(scan_graph("cumulative_sum", DType::F32, {4096, 8}, 1, false), target_caps("nvidia"));
  EXPECT_EQ(shorts.launch.rfind("scan 4096 lines of 8, serial per invocation;", 0), 0u) << shorts.launch;
}

TEST(CodegenScan, WorkgroupFollowsTheDevicesLimits) {
  auto caps = target_caps("nvidia");
  caps.max_workgroup_invocations = 64;
  auto small = cgtest::compile(scan_graph("cumulative_product", DType::F64, {2, 5000}, 1, true), caps);
  EXPECT_EQ(small.workgroup_size[0], 64u);
  EXPECT_EQ(small.launch.rfind("scan 2 lines of 5000, a workgroup per line", 0), 0u) << small.launch;
  // A line of 100 needs 16 invocations of 8 elements, not the device's 64.
  auto short_line = cgtest::compile(scan_graph("cumulative_sum", DType::F32, {2, 100}, 1, false), caps);
  EXPECT_EQ(short_line.workgroup_size[0], 16u);
  // The tile's stage and the runs' totals beyond shared memory: fewer invocations
  // (128 f32 runs of 8 need 4.6 KB, 64 of them 2.3 KB).
  caps = target_caps("nvidia");
  caps.max_shared_memory_bytes = 4096;
  auto staged = cgtest::compile(scan_graph("cumulative_sum", DType::F32, {2, 5000}, 1, false), caps);
  EXPECT_EQ(staged.workgroup_size[0], 64u) << staged.launch;
  // Shared memory too small for the runs' totals: an invocation per line.
  caps.max_shared_memory_bytes = 64;
  auto alone = cgtest::compile(scan_graph("cumulative_sum", DType::F32, {2, 5000}, 1, false), caps);
  EXPECT_EQ(alone.launch.rfind("scan 2 lines of 5000, serial per invocation", 0), 0u) << alone.launch;
}

// Integer folds scan the runs' totals in subgroups where the device has subgroup
// arithmetic (exact in any order); float folds through subgroup shuffles, in our order.
TEST(CodegenScan, IntegerRunsScanInSubgroups) {
  auto caps = target_caps("nvidia");
  caps.subgroup_arithmetic = caps.subgroup_shuffle = true;
  for (const char* op : kScans)
    for (DType t : {DType::U8, DType::S32, DType::S64, DType::F32}) {
      SCOPED_TRACE(std::string(op) + " " + ir::dtype_name(t));
      auto kb = cgtest::compile(scan_graph(op, t, {4, 1000}, 1, true), caps);
      EXPECT_EQ(validate(kb.spirv, caps.api_version), "");
      const std::string text = disassemble(kb.spirv);
      EXPECT_EQ(text.find("InclusiveScan") != std::string::npos, ir::is_integer(t)) << text;
      EXPECT_EQ(text.find("OpGroupNonUniformShuffle ") != std::string::npos, !ir::is_integer(t)) << text;
      EXPECT_NE(text.find("OpControlBarrier"), std::string::npos);
    }
  // Without shuffles a float fold's runs go through shared memory.
  caps.subgroup_shuffle = false;
  const std::string text = disassemble(cgtest::compile(scan_graph("cumulative_sum", DType::F32, {4, 1000}, 1, false), caps).spirv);
  EXPECT_EQ(text.find("OpGroupNonUniform"), std::string::npos) << text;
}

ir::Graph carried_graph(const std::string& op, DType t, const ir::Shape& s, int64_t axis, bool reverse, int64_t segment) {
  KernelBuilder k;
  auto x = k.param(t, s);
  ir::Shape cs = s;
  cs[axis] = (s[axis] + segment - 1) / segment;
  auto c = k.param(t, cs);
  auto r = k.add(op, {x, c}, t, s, {{"axis", axis}, {"reverse", reverse}, {"segment", segment}});
  return k.finish({r}, "scan");
}

// Segments scanned from their carries (split-scan's last pass): whole and short last
// segments, on every target's code path, every op, a narrow, a wide and a float type.
TEST(CodegenScan, CarriedSegmentsValidate) {
  const std::vector<std::tuple<ir::Shape, int64_t, int64_t>> cases = {
      {{5000}, 0, 1024}, {{3, 4096}, 1, 1024}, {{2, 3000, 3}, 1, 1000}, {{9000, 2}, 0, 8192}};
  for (const char* target : {"generic", "nvidia", "lavapipe"})
    for (const char* op : kScans)
      for (DType t : {DType::S8, DType::U64, DType::F16, DType::F32})
        for (const auto& [shape, axis, segment] : cases)
          for (bool reverse : {false, true}) {
            SCOPED_TRACE(std::string(target) + " " + op + " " + ir::to_string({t, shape}) + " axis " + std::to_string(axis) + (reverse ? " reverse" : ""));
            cgtest::expect_valid(carried_graph(op, t, shape, axis, reverse, segment), target_caps(target));
          }
  auto nv = cgtest::compile(carried_graph("cumulative_sum", DType::F32, {3, 20000}, 1, false, 8192), target_caps("nvidia"));
  EXPECT_EQ(nv.launch, "scan 9 lines of 8192 from carries, a workgroup per line in runs of 8; 128 invocations x 9 groups");
  auto lp = cgtest::compile(carried_graph("cumulative_sum", DType::F32, {20000, 3}, 0, true, 1024), target_caps("lavapipe"));
  EXPECT_EQ(lp.launch.rfind("scan 60 lines of 1024 from carries, serial per invocation (coalesced across lines);", 0), 0u) << lp.launch;
}

// The block split-scan cuts long lines into, from the device's limits: four tiles of a
// workgroup's runs where lines take workgroups, else short enough for one invocation.
TEST(CodegenScan, BlocksFollowTheDevicesLimits) {
  EXPECT_EQ(kernel_bounds(target_caps("nvidia")).scan_block, 4 * 128 * 8);
  EXPECT_EQ(kernel_bounds(target_caps("lavapipe")).scan_block, 1024);
  auto caps = target_caps("amd");
  caps.max_workgroup_invocations = 64;
  EXPECT_EQ(kernel_bounds(caps).scan_block, 4 * 64 * 8);
  caps = target_caps("lavapipe");
  caps.max_loop_steps = 2000;
  EXPECT_EQ(kernel_bounds(caps).scan_block, 500);
}

TEST(CodegenScan, PrologueIsFusedAndTheScanIsTheKernelsOutput) {
  KernelBuilder k;
  auto x = k.param(DType::S32, {8, 300});
  auto f = k.add("as_type", {x}, DType::F32, {8, 300});
  auto e = k.add("exp", {f}, DType::F32, {8, 300});
  auto r = k.add("cumulative_sum", {e}, DType::F32, {8, 300}, {{"axis", 1}, {"reverse", false}});
  for (const char* target : {"nvidia", "lavapipe"}) {
    auto kb = cgtest::compile(k.finish({r}, "scan"), target_caps(target));
    EXPECT_EQ(kb.name, "k1_cumulative_sum");
    EXPECT_EQ(validate(kb.spirv, generic_caps().api_version), "");
  }
}

// A scan that is not a kernel's one result (a serial loop's stage may hold one) is computed
// per element, each folding its line's prefix.
TEST(CodegenScan, ScanInsideAnotherKernelFoldsPerElement) {
  for (const char* op : kScans)
    for (bool reverse : {false, true}) {
      KernelBuilder k;
      auto x = k.param(DType::F32, {6, 9});
      auto r = k.add(op, {x}, DType::F32, {6, 9}, {{"axis", 0}, {"reverse", reverse}});
      auto e = k.add("exp", {r}, DType::F32, {6, 9});
      auto kb = cgtest::compile(k.finish({e, r}, "elementwise"));
      EXPECT_EQ(kb.launch.rfind("elements", 0), 0u) << kb.launch;
      EXPECT_EQ(validate(kb.spirv, generic_caps().api_version), "");
    }
}

// A scan with carries read inside another kernel folds its element's segment from its carry.
TEST(CodegenScan, CarriedScanInsideAnotherKernelFoldsPerElement) {
  for (bool reverse : {false, true}) {
    KernelBuilder k;
    auto x = k.param(DType::F32, {10, 3});
    auto c = k.param(DType::F32, {3, 3});
    auto r = k.add("cumulative_sum", {x, c}, DType::F32, {10, 3}, {{"axis", 0}, {"reverse", reverse}, {"segment", 4}});
    auto e = k.add("exp", {r}, DType::F32, {10, 3});
    auto kb = cgtest::compile(k.finish({e, r}, "elementwise"));
    EXPECT_EQ(kb.launch.rfind("elements", 0), 0u) << kb.launch;
    EXPECT_EQ(validate(kb.spirv, generic_caps().api_version), "");
  }
}

TEST(CodegenScan, BadAxisNamesTheNode) {
  KernelBuilder k;
  auto x = k.param(DType::F32, {4, 5});
  auto r = k.add("cumulative_sum", {x}, DType::F32, {4, 5}, {{"axis", 2}});
  try {
    cgtest::compile(k.finish({r}, "scan"));
    FAIL() << "expected an IrError";
  } catch (const ir::IrError& e) {
    EXPECT_NE(std::string(e.what()).find("cumulative_sum"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("axis out of range for f32[4,5]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nxv::codegen
