// Loops whose condition the host follows (runtime/host_loop.h): which loops qualify, how
// many iterations go in one submit, and that such loops, recorded several iterations per
// submit, compute what the reference interpreter does, as do loops the device decides.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>

#include "ir/interpreter.h"
#include "ir/json.h"
#include "runtime/host_loop.h"
#include "runtime/runtime.h"
#include "test_graphs.h"

namespace nxv::runtime {
namespace {

// A while over (i: s32, x: f32[n], bound: s32) from (0, parameter 0, parameter 1), with
// condition `cond_nodes` and body i + 1, x * 0.5 + 1 (x * 2 when `doubling`), bound passed
// on; outputs i and x.
ir::Graph loop_graph(int n, const std::string& cond_nodes, int cond_output, bool doubling = false) {
  const std::string s = std::to_string(n);
  const std::string x_step = doubling ? R"(
       {"id": 5, "op": "constant", "type": "f32", "shape": [], "attrs": {"value": 2}},
       {"id": 6, "op": "multiply", "args": [1, 5], "type": "f32", "shape": [)" + s + R"(]}], "outputs": [4, 6, 2]}}},)"
                                      : R"(
       {"id": 5, "op": "constant", "type": "f32", "shape": [], "attrs": {"value": 0.5}},
       {"id": 6, "op": "multiply", "args": [1, 5], "type": "f32", "shape": [)" + s + R"(]},
       {"id": 7, "op": "constant", "type": "f32", "shape": [], "attrs": {"value": 1}},
       {"id": 8, "op": "add", "args": [6, 7], "type": "f32", "shape": [)" + s + R"(]}], "outputs": [4, 8, 2]}}},)";
  return ir::parse_graph(R"({"version": 1, "name": "loop", "nodes": [
    {"id": 0, "op": "parameter", "type": "f32", "shape": [)" + s + R"(], "attrs": {"index": 0}},
    {"id": 1, "op": "parameter", "type": "s32", "shape": [], "attrs": {"index": 1}},
    {"id": 2, "op": "constant", "type": "s32", "shape": [], "attrs": {"value": 0}},
    {"id": 3, "op": "while", "args": [2, 0, 1], "results": [{"type": "s32", "shape": []},
       {"type": "f32", "shape": [)" + s + R"(]}, {"type": "s32", "shape": []}],
     "regions": {
      "condition": {"version": 1, "nodes": [
       {"id": 0, "op": "parameter", "type": "s32", "shape": [], "attrs": {"index": 0}},
       {"id": 1, "op": "parameter", "type": "f32", "shape": [)" + s + R"(], "attrs": {"index": 1}},
       {"id": 2, "op": "parameter", "type": "s32", "shape": [], "attrs": {"index": 2}},)" +
                         cond_nodes + R"(], "outputs": [)" + std::to_string(cond_output) + R"(]},
      "body": {"version": 1, "nodes": [
       {"id": 0, "op": "parameter", "type": "s32", "shape": [], "attrs": {"index": 0}},
       {"id": 1, "op": "parameter", "type": "f32", "shape": [)" + s + R"(], "attrs": {"index": 1}},
       {"id": 2, "op": "parameter", "type": "s32", "shape": [], "attrs": {"index": 2}},
       {"id": 3, "op": "constant", "type": "s32", "shape": [], "attrs": {"value": 1}},
       {"id": 4, "op": "add", "args": [0, 3], "type": "s32", "shape": []},)" +
                         x_step + R"(
    {"id": 4, "op": "elem", "args": [3], "type": "s32", "shape": [], "attrs": {"index": 0}},
    {"id": 5, "op": "elem", "args": [3], "type": "f32", "shape": [)" + s + R"(], "attrs": {"index": 1}}],
   "outputs": [4, 5]})");
}

// i < bound: the host follows i and bound.
const char* kCounted = R"(
       {"id": 3, "op": "less", "args": [0, 2], "type": "u8", "shape": []})";
// sum(x) < 1000: decided by the vector the body computes.
const char* kOnData = R"(
       {"id": 3, "op": "sum", "args": [1], "type": "f32", "shape": [], "attrs": {"axes": [0], "keep_axes": false}},
       {"id": 4, "op": "constant", "type": "f32", "shape": [], "attrs": {"value": 1000}},
       {"id": 5, "op": "less", "args": [3, 4], "type": "u8", "shape": []})";

const ir::Node& while_node(const ir::Graph& g) { return g.node(3); }

std::optional<HostLoop> host_loop_of(const ir::Graph& g) {
  const auto& w = while_node(g);
  return HostLoop::of(*w.regions.at("condition"), *w.regions.at("body"));
}

ir::Literal s32(int32_t v) {
  ir::Literal l{{ir::DType::S32, {}}, std::vector<uint8_t>(4)};
  std::memcpy(l.data.data(), &v, 4);
  return l;
}

int32_t as_s32(const ir::Literal& l) {
  int32_t v;
  std::memcpy(&v, l.data.data(), 4);
  return v;
}

HostTensor ramp(int n) {
  HostTensor t{{ir::DType::F32, {n}}, std::vector<uint8_t>(size_t(n) * 4)};
  for (int i = 0; i < n; ++i) {
    const float v = 0.25f * float(i % 7) + 0.5f;
    std::memcpy(t.data.data() + 4 * i, &v, 4);
  }
  return t;
}

TEST(HostLoop, FollowsACounterAndTheBoundItIsComparedWith) {
  auto loop = host_loop_of(loop_graph(4, kCounted, 3));
  ASSERT_TRUE(loop);
  EXPECT_EQ(loop->followed(), (std::vector<size_t>{0, 2}));
  std::vector<ir::Literal> v{s32(0), s32(3)};
  int iterations = 0;
  for (; loop->continues(v); v = loop->next(v)) ++iterations;
  EXPECT_EQ(iterations, 3);
  EXPECT_EQ(as_s32(v[0]), 3);
  EXPECT_EQ(as_s32(v[1]), 3);
}

TEST(HostLoop, LeavesLoopsThatTheDataDecidesToTheDevice) {
  EXPECT_FALSE(host_loop_of(loop_graph(4, kOnData, 5)));
  // The same with the counter also compared: the condition still reads the data.
  const std::string both = std::string(kOnData) + R"(,
       {"id": 6, "op": "less", "args": [0, 2], "type": "u8", "shape": []},
       {"id": 7, "op": "logical_and", "args": [5, 6], "type": "u8", "shape": []})";
  EXPECT_FALSE(host_loop_of(loop_graph(4, both, 7)));
}

TEST(HostLoop, LeavesConditionsOnFloatsToTheDevice) {
  // x[0] < 10: x is small enough for the host, but the host's float arithmetic may differ
  // from the device's in the last place, and the loop must stop where the device's does.
  const char* on_element = R"(
       {"id": 3, "op": "slice", "args": [1], "type": "f32", "shape": [1], "attrs": {"start": [0], "lengths": [1], "strides": [1]}},
       {"id": 4, "op": "reshape", "args": [3], "type": "f32", "shape": []},
       {"id": 5, "op": "constant", "type": "f32", "shape": [], "attrs": {"value": 10}},
       {"id": 6, "op": "less", "args": [4, 5], "type": "u8", "shape": []})";
  EXPECT_FALSE(host_loop_of(loop_graph(4, on_element, 6)));
}

TEST(HostLoop, IterationsPerSubmitAmortiseASubmitWithinTheMemoryBudget) {
  EXPECT_EQ(iterations_per_submit(0.1, 1024), 100u);     // 10 ms of work
  EXPECT_EQ(iterations_per_submit(20.0, 1024), 4u);      // at least 4 (a loaded machine's waits)
  EXPECT_EQ(iterations_per_submit(60.0, 1024), 1u);      // slow iterations go alone
  EXPECT_EQ(iterations_per_submit(0.0, 1024), 256u);     // at most 256
  EXPECT_EQ(iterations_per_submit(0.01, 16u << 20), 4u);  // 64 MiB in all
  EXPECT_EQ(iterations_per_submit(0.01, 1u << 30), 1u);
}

// Enough iterations for several submits; the reference interpreter runs the same graph.
TEST(HostLoop, LongCountedAndDataDrivenLoopsMatchTheInterpreter) {
  auto dev = Device::open();
  for (bool counted : {true, false}) {
    SCOPED_TRACE(counted ? "counted" : "on data");
    auto g = counted ? loop_graph(8, kCounted, 3) : loop_graph(8, kOnData, 5, true);
    const std::vector<HostTensor> inputs{ramp(8), s32(700)};
    auto want = ir::interpret(g, inputs);
    RunStats st;
    auto got = Executable::compile(dev, g)->run_host(inputs, &st);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].data, want[i].data) << "output " << i;
    const int iterations = as_s32(want[0]);
    EXPECT_EQ(iterations, counted ? 700 : 7);  // the ramp sums to 8.75, doubled 7 times to 1120
    // Counted: only x's kernel per iteration (the host writes the counter, whose initial
    // value is uploaded with the executable). On data: the iterations speculatively, 1, 2
    // and 4 per submit, the first with the condition (more submits only where iterations
    // are slow enough for 10 ms to hold fewer: a loaded machine).
    if (counted) {
      EXPECT_EQ(st.dispatches, iterations);
    } else {
      EXPECT_GE(st.submits, 3);
      EXPECT_LE(st.submits, iterations);
    }
  }
}

// sum(x) > 0 and i < bound: the data decides, so the iterations run speculatively behind
// gates. Loops that end before the first iteration, inside the first submit, at the end of
// a submit and inside a later one, and a long one, against the interpreter.
TEST(HostLoop, SpeculativeIterationsStopWhereTheLoopDoes) {
  auto dev = Device::open();
  const std::string on_data_and_count = R"(
       {"id": 3, "op": "sum", "args": [1], "type": "f32", "shape": [], "attrs": {"axes": [0], "keep_axes": false}},
       {"id": 4, "op": "constant", "type": "f32", "shape": [], "attrs": {"value": 0}},
       {"id": 5, "op": "greater", "args": [3, 4], "type": "u8", "shape": []},
       {"id": 6, "op": "less", "args": [0, 2], "type": "u8", "shape": []},
       {"id": 7, "op": "logical_and", "args": [5, 6], "type": "u8", "shape": []})";
  auto g = loop_graph(8, on_data_and_count, 7);
  ASSERT_FALSE(host_loop_of(g));
  auto exe = Executable::compile(dev, g);
  for (int32_t bound : {0, 1, 2, 3, 4, 6, 7, 8, 700}) {
    SCOPED_TRACE("bound " + std::to_string(bound));
    const std::vector<HostTensor> inputs{ramp(8), s32(bound)};
    auto want = ir::interpret(g, inputs);
    ASSERT_EQ(as_s32(want[0]), bound);
    RunStats st;
    auto got = exe->run_host(inputs, &st);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].data, want[i].data) << "output " << i;
    // Submits of 1, 2, 4, ... iterations (of fewer where 10 ms holds fewer: on a loaded
    // machine), the first with the initial counter and the condition: one at least.
    int submits = 0;
    for (int ran = 0, n = 1; ran < bound; ran += n, n *= 2) ++submits;
    EXPECT_GE(st.submits, std::max(submits, 1));
    if (bound <= 1) {
      EXPECT_EQ(st.submits, 1);
    }
    if (bound > 8) {
      EXPECT_LT(st.submits, bound / 4);
    }
  }
}

// A counted loop between two kernels, its counter from a literal (uploaded with the
// executable) and its bound a parameter: nothing pending computes what the host follows,
// so the kernel before the loop shares the first iteration's submit, and the last
// iterations share the kernel after it.
// Three iterations: the first alone (to time it), then the rest, together where the first
// took under 50 ms (host_loop.cpp: at least four then fit), else one per submit: 2 submits,
// or 3 on a machine loaded enough to stretch the first past that (CI's validation-layer lane
// did). Unshared, the kernels around the loop would make it 4 or 5.
// (Exact ops: the results equal the interpreter's on any device.)
TEST(HostLoop, KernelsAroundACountedLoopShareItsSubmits) {
  auto dev = Device::open();
  auto g = ir::parse_graph(R"({"version": 1, "name": "around", "nodes": [
    {"id": 0, "op": "parameter", "type": "f32", "shape": [4], "attrs": {"index": 0}},
    {"id": 1, "op": "parameter", "type": "s32", "shape": [], "attrs": {"index": 1}},
    {"id": 2, "op": "add", "args": [0, 0], "type": "f32", "shape": [4]},
    {"id": 7, "op": "constant", "type": "s32", "shape": [], "attrs": {"value": 0}},
    {"id": 3, "op": "while", "args": [7, 2, 1], "results": [{"type": "s32", "shape": []},
       {"type": "f32", "shape": [4]}, {"type": "s32", "shape": []}],
     "regions": {
      "condition": {"version": 1, "nodes": [
       {"id": 0, "op": "parameter", "type": "s32", "shape": [], "attrs": {"index": 0}},
       {"id": 1, "op": "parameter", "type": "s32", "shape": [], "attrs": {"index": 2}},
       {"id": 2, "op": "less", "args": [0, 1], "type": "u8", "shape": []}], "outputs": [2]},
      "body": {"version": 1, "nodes": [
       {"id": 0, "op": "parameter", "type": "s32", "shape": [], "attrs": {"index": 0}},
       {"id": 1, "op": "parameter", "type": "f32", "shape": [4], "attrs": {"index": 1}},
       {"id": 2, "op": "parameter", "type": "s32", "shape": [], "attrs": {"index": 2}},
       {"id": 3, "op": "constant", "type": "s32", "shape": [], "attrs": {"value": 1}},
       {"id": 4, "op": "add", "args": [0, 3], "type": "s32", "shape": []},
       {"id": 5, "op": "multiply", "args": [1, 1], "type": "f32", "shape": [4]}], "outputs": [4, 5, 2]}}},
    {"id": 5, "op": "elem", "args": [3], "type": "f32", "shape": [4], "attrs": {"index": 1}},
    {"id": 6, "op": "negate", "args": [5], "type": "f32", "shape": [4]}],
   "outputs": [6]})");
  ASSERT_TRUE(host_loop_of(g));  // (the while is node 3)
  auto exe = Executable::compile(dev, g);
  const std::vector<HostTensor> inputs{ramp(4), s32(3)};
  RunStats st;
  auto got = exe->run_host(inputs, &st);
  EXPECT_EQ(got.at(0).data, ir::interpret(g, inputs).at(0).data);
  EXPECT_EQ(st.dispatches, 1 + 3 + 1);
  EXPECT_GE(st.submits, 2);
  EXPECT_LE(st.submits, 3);
}

TEST(HostLoop, AnEndlessCountedLoopEndsInATimeoutNamingTheLoop) {
  RuntimeOptions opts;
  opts.timeout_ms = 300;  // a distinct option set: a device of its own
  auto dev = Device::open(opts);
  const char* forever = R"(
       {"id": 3, "op": "constant", "type": "s32", "shape": [], "attrs": {"value": 0}},
       {"id": 4, "op": "greater_equal", "args": [0, 3], "type": "u8", "shape": []})";
  auto g = loop_graph(4, forever, 4);
  ASSERT_TRUE(host_loop_of(g));
  auto exe = Executable::compile(dev, g);
  const auto start = std::chrono::steady_clock::now();
  try {
    exe->run_host({ramp(4), s32(0)});
    FAIL() << "the loop ended";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::Timeout);
    EXPECT_NE(std::string(e.what()).find("node 3 (while) of graph 'loop'"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  auto counted = loop_graph(4, kCounted, 3);
  const std::vector<HostTensor> inputs{ramp(4), s32(5)};
  auto want = ir::interpret(counted, inputs);
  auto got = Executable::compile(dev, counted)->run_host(inputs);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].data, want[i].data) << "output " << i;
}

}  // namespace
}  // namespace nxv::runtime
