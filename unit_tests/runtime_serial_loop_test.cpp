// Loops whose body holds control flow, run as one kernel (codegen/serial_loop.h): they
// compute what the reference interpreter does, in one submit where the device allows the
// steps, across several where it bounds them (lavapipe), and driven from the host where
// one iteration alone takes more steps than a dispatch may.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "codegen/targets/launch.h"
#include "ir/interpreter.h"
#include "ir/json.h"
#include "runtime/runtime.h"

namespace nxv::runtime {
namespace {

// `depth` nested whiles over (c: s32, x: f32[width], bounds: s32 x depth): level d counts c
// up to bound d. The innermost body adds 1 to x on even c and takes 0.5 off on odd ones (a
// cond); the others run the next level on x, then take 0.25 off. Exact in f32 throughout.
std::string level(int d, int depth, int width) {
  const std::string xs = "[" + std::to_string(width) + "]";
  const auto bounds_params = [&](int first_id, int first_index) {
    std::string s;
    for (int k = 0; k < depth; ++k)
      s += R"(, {"id": )" + std::to_string(first_id + k) + R"(, "op": "parameter", "type": "s32", "shape": [], "attrs": {"index": )" +
           std::to_string(first_index + k) + "}}";
    return s;
  };
  const auto ids = [](int first, int n) {
    std::string s;
    for (int k = 0; k < n; ++k) s += ", " + std::to_string(first + k);
    return s;
  };
  std::string results = R"([{"type": "s32", "shape": []}, {"type": "f32", "shape": )" + xs + R"(})";
  for (int k = 0; k < depth; ++k) results += R"(, {"type": "s32", "shape": []})";
  results += "]";
  // Parameters: 0 c, 1 x, 10.. bounds.
  const std::string params = R"({"id": 0, "op": "parameter", "type": "s32", "shape": [], "attrs": {"index": 0}},
      {"id": 1, "op": "parameter", "type": "f32", "shape": )" + xs + R"(, "attrs": {"index": 1}})" + bounds_params(10, 2);
  const std::string condition = R"({"version": 1, "nodes": [)" + params + R"(,
      {"id": 2, "op": "less", "args": [0, )" + std::to_string(10 + d) + R"(], "type": "u8", "shape": []}], "outputs": [2]})";
  std::string body = R"({"version": 1, "nodes": [)" + params + R"(,
      {"id": 2, "op": "constant", "type": "s32", "shape": [], "attrs": {"value": 1}},
      {"id": 3, "op": "add", "args": [0, 2], "type": "s32", "shape": []},)";
  if (d == depth - 1) {
    body += R"(
      {"id": 4, "op": "constant", "type": "s32", "shape": [], "attrs": {"value": 2}},
      {"id": 5, "op": "remainder", "args": [0, 4], "type": "s32", "shape": []},
      {"id": 6, "op": "constant", "type": "s32", "shape": [], "attrs": {"value": 0}},
      {"id": 7, "op": "equal", "args": [5, 6], "type": "u8", "shape": []},
      {"id": 8, "op": "cond", "args": [7, 1], "results": [{"type": "f32", "shape": )" + xs + R"(}], "regions": {
        "branch0": {"version": 1, "nodes": [
          {"id": 0, "op": "parameter", "type": "f32", "shape": )" + xs + R"(, "attrs": {"index": 0}},
          {"id": 1, "op": "constant", "type": "f32", "shape": )" + xs + R"(, "attrs": {"value": 1}},
          {"id": 2, "op": "add", "args": [0, 1], "type": "f32", "shape": )" + xs + R"(}], "outputs": [2]},
        "branch1": {"version": 1, "nodes": [
          {"id": 0, "op": "parameter", "type": "f32", "shape": )" + xs + R"(, "attrs": {"index": 0}},
          {"id": 1, "op": "constant", "type": "f32", "shape": )" + xs + R"(, "attrs": {"value": 0.5}},
          {"id": 2, "op": "subtract", "args": [0, 1], "type": "f32", "shape": )" + xs + R"(}], "outputs": [2]}}},
      {"id": 9, "op": "elem", "args": [8], "type": "f32", "shape": )" + xs + R"(, "attrs": {"index": 0}}],
     "outputs": [3, 9)" + ids(10, depth) + "]}";
  } else {
    body += R"(
      {"id": 4, "op": "constant", "type": "s32", "shape": [], "attrs": {"value": 0}},
      {"id": 5, "op": "while", "args": [4, 1)" + ids(10, depth) + R"(], "results": )" + results + R"(, "regions": )" +
            level(d + 1, depth, width) + R"(},
      {"id": 6, "op": "elem", "args": [5], "type": "f32", "shape": )" + xs + R"(, "attrs": {"index": 1}},
      {"id": 7, "op": "constant", "type": "f32", "shape": )" + xs + R"(, "attrs": {"value": 0.25}},
      {"id": 8, "op": "subtract", "args": [6, 7], "type": "f32", "shape": )" + xs + R"(}],
     "outputs": [3, 8)" + ids(10, depth) + "]}";
  }
  return R"({"condition": )" + condition + R"(, "body": )" + body + "}";
}

ir::Graph nest(int depth, int width = 8) {
  const std::string xs = "[" + std::to_string(width) + "]";
  std::string bounds;
  for (int k = 0; k < depth; ++k)
    bounds += R"(, {"id": )" + std::to_string(10 + k) + R"(, "op": "parameter", "type": "s32", "shape": [], "attrs": {"index": )" +
              std::to_string(1 + k) + "}}";
  std::string args = "2, 0";
  std::string results = R"([{"type": "s32", "shape": []}, {"type": "f32", "shape": )" + xs + R"(})";
  for (int k = 0; k < depth; ++k) {
    args += ", " + std::to_string(10 + k);
    results += R"(, {"type": "s32", "shape": []})";
  }
  return ir::parse_graph(R"({"version": 1, "name": "nest", "nodes": [
    {"id": 0, "op": "parameter", "type": "f32", "shape": )" + xs + R"(, "attrs": {"index": 0}})" + bounds + R"(,
    {"id": 2, "op": "constant", "type": "s32", "shape": [], "attrs": {"value": 0}},
    {"id": 3, "op": "while", "args": [)" + args + R"(], "results": )" + results + "]" + R"(, "regions": )" + level(0, depth, width) + R"(},
    {"id": 4, "op": "elem", "args": [3], "type": "f32", "shape": )" + xs + R"(, "attrs": {"index": 1}}],
   "outputs": [4]})");
}

HostTensor s32(int32_t v) {
  HostTensor t{{ir::DType::S32, {}}, std::vector<uint8_t>(4)};
  std::memcpy(t.data.data(), &v, 4);
  return t;
}

HostTensor ramp(int n = 8) {
  HostTensor t{{ir::DType::F32, {n}}, std::vector<uint8_t>(4 * size_t(n))};
  for (int i = 0; i < n; ++i) {
    const float v = 0.5f * float(i) - 1.0f;
    std::memcpy(t.data.data() + 4 * i, &v, 4);
  }
  return t;
}

bool has_serial_kernel(const Executable& exe) {
  const auto& ks = exe.kernels();
  return std::any_of(ks.begin(), ks.end(), [](const codegen::KernelBinary& k) { return k.name.find("serial_while") != std::string::npos; });
}

// These loops' kernels bind their state (a buffer per loop value), control words and
// scratch: more storage buffers than a device with the spec's minimum of 4 allows, where the
// loops run from the host instead (the suite's HostLoop and Runtime tests cover that).
constexpr uint32_t kLoopKernelBindings = 8;
#define SKIP_WITHOUT_SERIAL_KERNEL(exe)                                                                      \
  if (!has_serial_kernel(exe) && Device::open()->info().caps.max_storage_buffers < kLoopKernelBindings) \
  GTEST_SKIP() << "no serial kernel: the loop needs more storage buffers than "                            \
               << Device::open()->info().caps.max_storage_buffers << " (maxPerStageDescriptorStorageBuffers)"

TEST(SerialLoop, ANestRunsAsOneKernelInOneSubmit) {
  auto dev = Device::open();
  const ir::Graph g = nest(3);
  const std::vector<HostTensor> inputs{ramp(), s32(5), s32(4), s32(3)};
  const auto want = ir::interpret(g, inputs).at(0).data;

  auto serial = Executable::compile(dev, g);
  SKIP_WITHOUT_SERIAL_KERNEL(*serial);
  ASSERT_TRUE(has_serial_kernel(*serial));
  RunStats st;
  EXPECT_EQ(serial->run_host(inputs, &st).at(0).data, want);
  EXPECT_EQ(st.submits, 1);
  EXPECT_EQ(st.dispatches, 1);

  CompileOptions host;
  host.serial_loops = false;
  auto driven = Executable::compile(dev, g, host);
  EXPECT_FALSE(has_serial_kernel(*driven));
  RunStats hs;
  EXPECT_EQ(driven->run_host(inputs, &hs).at(0).data, want);
  EXPECT_GT(hs.submits, 5 * 4);  // the inner loops, at least a submit per middle iteration
}

TEST(SerialLoop, ALoopThatDoesNotRunLeavesItsArguments) {
  auto dev = Device::open();
  const ir::Graph g = nest(2);
  const std::vector<HostTensor> inputs{ramp(), s32(0), s32(7)};
  auto exe = Executable::compile(dev, g);
  SKIP_WITHOUT_SERIAL_KERNEL(*exe);
  ASSERT_TRUE(has_serial_kernel(*exe));
  EXPECT_EQ(exe->run_host(inputs).at(0).data, inputs[0].data);
}

// g as a serial kernel gives the interpreter's result, in more than one submit.
void expect_the_reference_across_dispatches(const ir::Graph& g, const std::vector<HostTensor>& inputs) {
  auto exe = Executable::compile(Device::open(), g);
  SKIP_WITHOUT_SERIAL_KERNEL(*exe);
  ASSERT_TRUE(has_serial_kernel(*exe));
  RunStats st;
  EXPECT_EQ(exe->run_host(inputs, &st).at(0).data, ir::interpret(g, inputs).at(0).data);
  EXPECT_GT(st.submits, 1);
}

// Elements enough for a stage of the serial loop to be a loop of three trips.
int wider_than_the_group() { return int(2 * codegen::serial_workgroup_size(Device::open()->info().caps) + 1); }

// A dispatch takes a bounded number of loop steps (lavapipe's limit, or a budget that keeps
// it short): a long loop takes several, each going on from the iterations the last one
// completed.
TEST(SerialLoop, ALongLoopGoesOnAcrossDispatches) {
  expect_the_reference_across_dispatches(nest(2), {ramp(), s32(12000), s32(5)});
}

// Stages wider than the serial loop's group are loops of their own. Where a driver branches
// by masks (gallivm), a loop's last test runs its body once more with no invocation active,
// each of those stage loops then taking a step: the kernel counts them, or the driver
// ends its loops first and the nest returns early as if done.
TEST(SerialLoop, StagesWiderThanTheGroupGoOnAcrossDispatches) {
  const int width = wider_than_the_group();
  expect_the_reference_across_dispatches(nest(2, width), {ramp(width), s32(12000), s32(1)});
}

// A while over (c, x: f32[width]) to `bound`: on even c, x goes through a loop of its own
// (a cond branch holding a while stays a cond), `trips` trips adding 1; on odd c it loses 0.5.
ir::Graph loop_in_a_branch(int width) {
  const std::string xs = "[" + std::to_string(width) + "]";
  const auto param = [](int id, const std::string& type, const std::string& shape, int index) {
    return R"({"id": )" + std::to_string(id) + R"(, "op": "parameter", "type": ")" + type + R"(", "shape": )" + shape +
           R"(, "attrs": {"index": )" + std::to_string(index) + "}}";
  };
  const std::string state = R"([{"type": "s32", "shape": []}, {"type": "f32", "shape": )" + xs +
                            R"(}, {"type": "s32", "shape": []})";
  const std::string inner_params = param(0, "s32", "[]", 0) + ", " + param(1, "f32", xs, 1) + ", " + param(10, "s32", "[]", 2);
  const std::string inner = R"({"condition": {"version": 1, "nodes": [)" + inner_params + R"(,
        {"id": 2, "op": "less", "args": [0, 10], "type": "u8", "shape": []}], "outputs": [2]},
      "body": {"version": 1, "nodes": [)" + inner_params + R"(,
        {"id": 2, "op": "constant", "type": "s32", "shape": [], "attrs": {"value": 1}},
        {"id": 3, "op": "add", "args": [0, 2], "type": "s32", "shape": []},
        {"id": 4, "op": "constant", "type": "f32", "shape": )" + xs + R"(, "attrs": {"value": 1}},
        {"id": 5, "op": "add", "args": [1, 4], "type": "f32", "shape": )" + xs + R"(}], "outputs": [3, 5, 10]}})";
  const std::string branch_params = param(0, "f32", xs, 0) + ", " + param(10, "s32", "[]", 1);
  const std::string branches = R"({
      "branch0": {"version": 1, "nodes": [)" + branch_params + R"(,
        {"id": 1, "op": "constant", "type": "s32", "shape": [], "attrs": {"value": 0}},
        {"id": 2, "op": "while", "args": [1, 0, 10], "results": )" + state + R"(], "regions": )" + inner + R"(},
        {"id": 3, "op": "elem", "args": [2], "type": "f32", "shape": )" + xs + R"(, "attrs": {"index": 1}}], "outputs": [3]},
      "branch1": {"version": 1, "nodes": [)" + branch_params + R"(,
        {"id": 1, "op": "constant", "type": "f32", "shape": )" + xs + R"(, "attrs": {"value": 0.5}},
        {"id": 2, "op": "subtract", "args": [0, 1], "type": "f32", "shape": )" + xs + R"(}], "outputs": [2]}})";
  const std::string outer_params = inner_params + ", " + param(11, "s32", "[]", 3);
  const std::string outer = R"({"condition": {"version": 1, "nodes": [)" + outer_params + R"(,
        {"id": 2, "op": "less", "args": [0, 10], "type": "u8", "shape": []}], "outputs": [2]},
      "body": {"version": 1, "nodes": [)" + outer_params + R"(,
        {"id": 2, "op": "constant", "type": "s32", "shape": [], "attrs": {"value": 1}},
        {"id": 3, "op": "add", "args": [0, 2], "type": "s32", "shape": []},
        {"id": 4, "op": "constant", "type": "s32", "shape": [], "attrs": {"value": 2}},
        {"id": 5, "op": "remainder", "args": [0, 4], "type": "s32", "shape": []},
        {"id": 6, "op": "constant", "type": "s32", "shape": [], "attrs": {"value": 0}},
        {"id": 7, "op": "equal", "args": [5, 6], "type": "u8", "shape": []},
        {"id": 8, "op": "cond", "args": [7, 1, 11], "results": [{"type": "f32", "shape": )" + xs + R"(}], "regions": )" + branches + R"(},
        {"id": 9, "op": "elem", "args": [8], "type": "f32", "shape": )" + xs + R"(, "attrs": {"index": 0}}], "outputs": [3, 9, 10, 11]}})";
  return ir::parse_graph(R"({"version": 1, "name": "loop_in_a_branch", "nodes": [
    )" + param(0, "f32", xs, 0) + ", " + param(1, "s32", "[]", 1) + ", " + param(5, "s32", "[]", 2) + R"(,
    {"id": 2, "op": "constant", "type": "s32", "shape": [], "attrs": {"value": 0}},
    {"id": 3, "op": "while", "args": [2, 0, 1, 5], "results": )" + state + R"(, {"type": "s32", "shape": []}], "regions": )" + outer + R"(},
    {"id": 4, "op": "elem", "args": [3], "type": "f32", "shape": )" + xs + R"(, "attrs": {"index": 1}}],
   "outputs": [4]})");
}

// The branch not taken runs too where a driver branches by masks (gallivm), with no
// invocation active, its loops taking a step each: the kernel counts them.
TEST(SerialLoop, ALoopInABranchNotTakenGoesOnAcrossDispatches) {
  const int width = wider_than_the_group();
  expect_the_reference_across_dispatches(loop_in_a_branch(width), {ramp(width), s32(20000), s32(3)});
}

// One iteration of the outer loop takes 300 x 300 innermost trips, more than a dispatch may:
// the outer loop is driven from the host, and its body's loop runs as a serial kernel of
// its own.
TEST(SerialLoop, AnIterationLongerThanADispatchAllowsFallsBackToTheHost) {
  auto dev = Device::open();
  const ir::Graph g = nest(3);
  const std::vector<HostTensor> inputs{ramp(), s32(2), s32(300), s32(300)};
  auto exe = Executable::compile(dev, g);
  SKIP_WITHOUT_SERIAL_KERNEL(*exe);
  ASSERT_TRUE(has_serial_kernel(*exe));
  RunStats st;
  EXPECT_EQ(exe->run_host(inputs, &st).at(0).data, ir::interpret(g, inputs).at(0).data);
  // Again, now that the executable knows: the host drives the outer loop from the start.
  EXPECT_EQ(exe->run_host(inputs, &st).at(0).data, ir::interpret(g, inputs).at(0).data);
  EXPECT_GT(st.submits, 2);
}

TEST(SerialLoop, AnEndlessNestEndsInATimeoutNamingTheLoop) {
  RuntimeOptions opts;
  opts.timeout_ms = 400;  // a distinct option set: a device of its own
  auto dev = Device::open(opts);
  const ir::Graph g = nest(2);
  // The outer bound is never reached: the inner loop has no trips, and c counts to 2^31 - 1.
  auto exe = Executable::compile(dev, g);
  try {
    exe->run_host({ramp(), s32(2147483647), s32(0)});
    FAIL() << "an endless loop returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::Timeout);
    EXPECT_NE(std::string(e.what()).find("node 3 (while)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nxv::runtime
