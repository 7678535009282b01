// Fragment layouts (codegen/fragment_layout.h): reading the probe's buffers back, and which
// layouts give attention a register plan. The layouts are the nvidia target's (an H100's) and
// variations of it: lavapipe has no cooperative matrices, and the probe runs where a device
// has them (runtime/fragment_probe.cpp).
#include <gtest/gtest.h>

#include <bit>
#include <cstdio>
#include <string>

#include "codegen/fragment_layout.h"
#include "device_testing.h"
#include "ir/literal.h"

namespace nxv::codegen {
namespace {

using enum MatrixComponent;

// The nvidia target's layout of 16x16 accumulators and A operands.
FragmentLayout nvidia_layout() {
  for (const auto& s : target_caps("nvidia").cooperative_matrix_shapes)
    if (s.m == 16 && s.n == 16 && s.k == 16 && s.accumulator == MatrixComponent::F32) return s.accumulator_layout;
  return {};
}

CooperativeMatrixShape shape(MatrixComponent operands = F16) {
  CooperativeMatrixShape s;
  s.m = s.n = s.k = 16, s.operands = operands, s.accumulator = F32, s.khr = true;
  return s;
}

TEST(FragmentLayout, NvidiaLayoutHasARegisterPlan) {
  CooperativeMatrixShape f = shape();
  f.accumulator_layout = f.a_layout = nvidia_layout();
  const auto p = register_layout(f, 32);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->elements, 8u);
  EXPECT_EQ(p->classes, 2u);
  EXPECT_EQ(p->class_of, (std::vector<uint32_t>{0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(p->xor_basis, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(p->row, (std::vector<uint32_t>{0, 0, 0, 0, 8, 8, 8, 8}));
  EXPECT_EQ(p->col, (std::vector<uint32_t>{0, 1, 8, 9, 0, 1, 8, 9}));
  EXPECT_EQ(p->a_from_accumulator, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  for (uint32_t l = 0; l < 32; ++l) {
    EXPECT_EQ(p->lane_row[l], l / 4);
    EXPECT_EQ(p->lane_col[l], 2 * (l % 4));
  }
}

// A's elements in another order than the accumulator's: the plan permutes them.
TEST(FragmentLayout, PermutedOperandElements) {
  CooperativeMatrixShape f = shape(BF16);
  f.accumulator_layout = f.a_layout = nvidia_layout();
  for (size_t l = 0; l < 32; ++l) {  // A's elements 2, 3 and 4, 5 swap places
    std::swap(f.a_layout.row[l * 8 + 2], f.a_layout.row[l * 8 + 4]), std::swap(f.a_layout.row[l * 8 + 3], f.a_layout.row[l * 8 + 5]);
    std::swap(f.a_layout.col[l * 8 + 2], f.a_layout.col[l * 8 + 4]), std::swap(f.a_layout.col[l * 8 + 3], f.a_layout.col[l * 8 + 5]);
  }
  const auto p = register_layout(f, 32);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->a_from_accumulator, (std::vector<uint32_t>{0, 1, 4, 5, 2, 3, 6, 7}));
}

TEST(FragmentLayout, LayoutsWithoutAPlan) {
  CooperativeMatrixShape f = shape();
  EXPECT_FALSE(register_layout(f, 32)) << "unmeasured";
  f.accumulator_layout = f.a_layout = nvidia_layout();
  CooperativeMatrixShape g = f;
  std::swap(g.a_layout.row, g.a_layout.col);  // A transposed: no invocation holds the same places
  EXPECT_FALSE(register_layout(g, 32));
  g = f;
  g.n = 8;
  EXPECT_FALSE(register_layout(g, 32)) << "n != k";
  // Rows whose invocations are no xor coset: invocations 4-7 and 8-11 trade one row's halves.
  g = f;
  for (size_t i = 0; i < 8; ++i) std::swap(g.accumulator_layout.row[5 * 8 + i], g.accumulator_layout.row[9 * 8 + i]);
  g.a_layout = g.accumulator_layout;
  EXPECT_FALSE(register_layout(g, 32));
  // Positions that are not a part of the invocation plus a part of the element.
  g = f;
  std::swap(g.accumulator_layout.col[3 * 8 + 0], g.accumulator_layout.col[3 * 8 + 1]);
  g.a_layout = g.accumulator_layout;
  EXPECT_FALSE(register_layout(g, 32));
}

// The buffers the probe writes for a layout: the accumulator's element i of invocation l
// holds 8 l + i, A's hold l and i in its type.
struct ProbeBuffers {
  std::vector<uint32_t> acc, lengths{8, 8, 0, 0};
  std::vector<uint16_t> a_lane, a_element;
};
ProbeBuffers probe_buffers(const FragmentLayout& acc, const FragmentLayout& a, MatrixComponent operands) {
  ProbeBuffers out;
  out.acc.resize(256), out.a_lane.resize(256), out.a_element.resize(256);
  auto half = [&](float x) { return operands == F16 ? ir::f32_to_f16(x) : ir::f32_to_bf16(x); };
  for (uint32_t s = 0; s < 256; ++s) {
    out.acc[acc.row[s] * 16 + acc.col[s]] = std::bit_cast<uint32_t>(float(s));
    out.a_lane[a.row[s] * 16 + a.col[s]] = half(float(s / 8));
    out.a_element[a.row[s] * 16 + a.col[s]] = half(float(s % 8));
  }
  return out;
}

TEST(FragmentLayout, ReadsTheProbesBuffers) {
  for (MatrixComponent operands : {F16, BF16}) {
    CooperativeMatrixShape f = shape(operands);
    FragmentLayout a = nvidia_layout();
    std::swap(a.row, a.col);
    const ProbeBuffers p = probe_buffers(nvidia_layout(), a, operands);
    ASSERT_TRUE(read_fragment_layouts(p.acc, p.a_lane, p.a_element, p.lengths, 32, f));
    EXPECT_EQ(f.accumulator_layout, nvidia_layout());
    EXPECT_EQ(f.a_layout, a);
  }
}

TEST(FragmentLayout, RejectsBuffersThatAreNoLayout) {
  const ProbeBuffers good = probe_buffers(nvidia_layout(), nvidia_layout(), F16);
  auto reads = [](ProbeBuffers p) {
    CooperativeMatrixShape f = shape();
    const bool ok = read_fragment_layouts(p.acc, p.a_lane, p.a_element, p.lengths, 32, f);
    EXPECT_EQ(ok, !f.accumulator_layout.row.empty());
    return ok;
  };
  ASSERT_TRUE(reads(good));
  ProbeBuffers p = good;
  p.lengths[0] = 16;  // the driver's length is not m n over the subgroup size
  EXPECT_FALSE(reads(p));
  p = good;
  p.acc[1] = p.acc[0];  // an element twice, another nowhere
  EXPECT_FALSE(reads(p));
  p = good;
  p.acc[5] = std::bit_cast<uint32_t>(0.5f);
  EXPECT_FALSE(reads(p));
  p = good;
  p.a_element[7] = ir::f32_to_f16(9.0f);  // past A's 8 elements
  EXPECT_FALSE(reads(p));
  p = good;
  p.a_lane.pop_back();
  EXPECT_FALSE(reads(p));
}

}  // namespace
}  // namespace nxv::codegen

namespace nxv::runtime {
namespace {

// The device's own layouts, where it has fragments a kernel may keep in registers: the probe
// ran as the device opened and read back a layout of each (any layout: which ones have a
// register plan is the device's affair, printed here).
TEST(FragmentLayout, ProbedOnTheDevice) {
  const codegen::DeviceCaps& caps = devtest::device()->info().caps;
  size_t probed = 0;
  for (const auto& f : caps.cooperative_matrix_shapes) {
    if (!codegen::probes_layout(f, caps.subgroup_size)) continue;
    ++probed;
    EXPECT_EQ(f.accumulator_layout.row.size(), f.m * f.n) << codegen::to_string(f);
    EXPECT_EQ(f.a_layout.row.size(), f.m * f.k) << codegen::to_string(f);
    bool canned = false;
    for (const auto& n : codegen::target_caps("nvidia").cooperative_matrix_shapes)
      canned = canned || (n.m == f.m && n.n == f.n && n.k == f.k && n.operands == f.operands && n.accumulator_layout == f.accumulator_layout &&
                          n.a_layout == f.a_layout);
    std::printf("%s: %s, %s\n", codegen::to_string(f).c_str(),
                codegen::register_layout(f, caps.subgroup_size) ? "register plan" : "no register plan",
                canned ? "the nvidia target's layouts" : "other layouts than the nvidia target's");
    for (const auto* l : {&f.accumulator_layout, &f.a_layout}) {
      std::string rows = "  rows", cols = "  cols";
      for (size_t s = 0; s < l->row.size(); ++s) rows += " " + std::to_string(l->row[s]), cols += " " + std::to_string(l->col[s]);
      std::printf("%s\n%s\n", rows.c_str(), cols.c_str());
    }
  }
  if (!probed) GTEST_SKIP() << "no KHR fragments of f16 or bf16 with f32 accumulators and n == k";
}

}  // namespace
}  // namespace nxv::runtime
