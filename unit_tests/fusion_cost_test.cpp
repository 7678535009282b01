// The fusion cost model on random graphs of slices, pads, concatenates, reverses and adds
// (seeded): after the pipeline, every kernel's estimated work per element stays within
// the bound, and a few of them, run on the device, match the reference interpreter.
#include <gtest/gtest.h>

#include <random>

#include "ir/interpreter.h"
#include "ir/json.h"
#include "ir/literal.h"
#include "passes/fusion_cost.h"
#include "passes/pass.h"
#include "device_testing.h"
#include "runtime/runtime.h"

namespace nxv::passes {
namespace {

// f32[4, len] values built from one parameter: each new value reads one or two earlier
// ones, so reads fan out through index maps as in Nx's scans, windows and FFT stages.
ir::Graph random_graph(unsigned seed, int steps) {
  std::mt19937 rng(seed);
  auto pick = [&](int64_t n) { return int64_t(rng() % uint64_t(n)); };
  nlohmann::json nodes = nlohmann::json::array();
  std::vector<std::pair<int64_t, int64_t>> values;  // (id, length)
  auto add = [&](nlohmann::json n, int64_t len) {
    const int64_t id = int64_t(nodes.size());
    n["id"] = id;
    n["type"] = "f32";
    n["shape"] = {4, len};
    nodes.push_back(std::move(n));
    values.push_back({id, len});
    return id;
  };
  add({{"op", "parameter"}, {"attrs", {{"index", 0}}}}, 64);
  nodes.push_back({{"id", 1}, {"op", "constant"}, {"type", "f32"}, {"shape", nlohmann::json::array()}, {"attrs", {{"value", 0}}}});
  // Recent values are read more often: chains get deep.
  auto recent = [&]() { return values[values.size() - 1 - size_t(pick(std::min<int64_t>(3, int64_t(values.size()))))]; };
  for (int s = 0; s < steps; ++s) {
    auto [a, la] = recent();
    switch (pick(5)) {
      case 0: {  // a strided slice
        const int64_t stride = 1 + pick(2), start = pick(std::max<int64_t>(1, la / 4));
        const int64_t length = std::max<int64_t>(1, la - start - pick(2));
        add({{"op", "slice"}, {"args", {a}},
             {"attrs", {{"start", {0, start}}, {"lengths", {4, length}}, {"strides", {1, stride}}}}},
            (length + stride - 1) / stride);
        break;
      }
      case 1: {  // a pad, interior or not, kept below 256 elements
        const int64_t lo = pick(3), hi = pick(3), interior = la < 100 ? pick(2) : 0;
        add({{"op", "pad"}, {"args", {a, 1}}, {"attrs", {{"config", {{0, 0, 0}, {lo, hi, interior}}}}}},
            lo + hi + la + std::max<int64_t>(0, la - 1) * interior);
        break;
      }
      case 2: {  // a concatenate of two values
        auto [b, lb] = recent();
        if (la + lb > 256) break;
        add({{"op", "concatenate"}, {"args", {a, b}}, {"attrs", {{"axis", 1}}}}, la + lb);
        break;
      }
      case 3:
        add({{"op", "reverse"}, {"args", {a}}, {"attrs", {{"axes", {1}}}}}, la);
        break;
      default: {  // two shifted reads of one value added: a diamond
        if (la < 2) break;
        const int64_t n = la - 1;
        const int64_t x = add({{"op", "slice"}, {"args", {a}}, {"attrs", {{"start", {0, 0}}, {"lengths", {4, n}}, {"strides", {1, 1}}}}}, n);
        const int64_t y = add({{"op", "slice"}, {"args", {a}}, {"attrs", {{"start", {0, 1}}, {"lengths", {4, n}}, {"strides", {1, 1}}}}}, n);
        add({{"op", "add"}, {"args", {x, y}}}, n);
      }
    }
  }
  return ir::parse_graph(nlohmann::json{{"version", 1}, {"name", "random" + std::to_string(seed)}, {"nodes", nodes},
                                        {"outputs", {values.back().first}}}
                             .dump());
}

// Small integers: every sum is exact, so the device's results equal the interpreter's.
ir::Literal integers(const ir::TensorType& t) {
  ir::Literal lit{t, std::vector<uint8_t>(size_t(t.num_elements()) * 4)};
  for (int64_t k = 0; k < t.num_elements(); ++k) {
    ir::Scalar v;
    v.f = double(k % 13) - 6;
    v.i = int64_t(v.f);
    ir::set_element(lit, k, v);
  }
  return lit;
}

// The buffers the cost model made kernels of `lowered` read.
int cost_model_cuts(const ir::Graph& lowered) {
  int cuts = 0;
  for (const auto& n : lowered.nodes) {
    const nlohmann::json reads = n.attrs.value("reads", nlohmann::json::object());
    for (const auto& [id, why] : reads.items()) cuts += why.is_string() && why.get<std::string>().rfind("cost model", 0) == 0;
  }
  return cuts;
}

TEST(FusionCost, RandomIndexMapGraphsStayWithinTheBound) {
  const KernelBounds bounds;
  int kernels = 0, cut = 0;
  for (unsigned seed = 1; seed <= 200; ++seed) {
    ir::Graph g = random_graph(seed, 24);
    SCOPED_TRACE(ir::write_graph(g));
    PassManager(default_pipeline(), bounds).run(g);
    for (const auto& n : g.nodes) {
      if (n.op != "kernel") continue;
      ++kernels;
      const Estimate e = estimate_kernel(n);
      EXPECT_TRUE(e.work <= bounds.min_split_work || e.duplication() <= bounds.max_duplication)
          << "kernel %" << n.id << ": work " << e.work << " per element, " << e.duplication() << "x what it needs";
    }
    cut += cost_model_cuts(g);
  }
  // The graphs do exercise the model: some of their reads are cuts.
  EXPECT_GT(cut, 20) << "of " << kernels << " kernels";
}

TEST(FusionCost, SplitRandomGraphsMatchTheInterpreter) {
  int tried = 0;
  for (unsigned seed = 1; tried < 6 && seed <= 200; ++seed) {
    const ir::Graph g = random_graph(seed, 24);
    ir::Graph lowered = g;
    PassManager(default_pipeline()).run(lowered);
    if (cost_model_cuts(lowered) == 0) continue;  // only graphs the model split
    ++tried;
    SCOPED_TRACE(ir::write_graph(g));
    const std::vector<ir::Literal> in{integers(g.parameters()[0]->type())};
    const auto want = ir::interpret(g, in);
    const auto got = runtime::Executable::compile(runtime::Device::open(), g)->run_host(in);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(got[0].data, want[0].data);
  }
  EXPECT_EQ(tried, 6);
}

// Forty f64 sin(exp(x)): each sin's exact remainder is a loop of up to 2101 steps, 84,081
// in one kernel, past lavapipe's 65535 per invocation. Split by the device's bounds, it
// runs (on any device) and matches the interpreter to 1e-9 (a few ulp per function, forty
// times); inputs in [-2, 2] keep every argument small.
TEST(FusionCost, LongF64MathChainRunsWithinTheLoopLimit) {
  auto dev = runtime::Device::open();
  if (!devtest::missing_feature(ir::DType::F64).empty()) GTEST_SKIP() << "the device has no Float64";
  nlohmann::json nodes = {{{"id", 0}, {"op", "parameter"}, {"type", "f64"}, {"shape", {1000}}, {"attrs", {{"index", 0}}}}};
  for (int k = 1; k <= 80; ++k)
    nodes.push_back({{"id", k}, {"op", k % 2 ? "exp" : "sin"}, {"args", {k - 1}}, {"type", "f64"}, {"shape", {1000}}});
  const ir::Graph g = ir::parse_graph(nlohmann::json{{"version", 1}, {"name", "sin_exp"}, {"nodes", nodes}, {"outputs", {80}}}.dump());
  ir::Literal x{{ir::DType::F64, {1000}}, std::vector<uint8_t>(8000)};
  for (int64_t k = 0; k < 1000; ++k) ir::set_element(x, k, ir::Scalar{double(k) / 250 - 2});
  const auto want = ir::interpret(g, {x});
  runtime::RunStats st;
  const auto got = runtime::Executable::compile(dev, g)->run_host({x}, &st);
  for (int64_t k = 0; k < 1000; ++k)
    ASSERT_NEAR(ir::get_f64(got[0], k), ir::get_f64(want[0], k), 1e-9) << "element " << k;
  if (dev->info().caps.max_loop_steps) {
    EXPECT_GT(st.dispatches, 1);
  }
}

// Where f64 is emulated, a chain of f64 arithmetic is split at the code bound that its
// software form would pass, and the same chain in f32 is not.
TEST(FusionCost, EmulatedF64CodeCountsAtItsSoftwareSize) {
  for (const char* t : {"f64", "f32"}) {
    nlohmann::json nodes = {{{"id", 0}, {"op", "parameter"}, {"type", t}, {"shape", {1000}}, {"attrs", {{"index", 0}}}}};
    for (int k = 1; k <= 400; ++k)
      nodes.push_back({{"id", k}, {"op", k % 2 ? "multiply" : "add"}, {"args", {k - 1, 0}}, {"type", t}, {"shape", {1000}}});
    const ir::Graph g = ir::parse_graph(nlohmann::json{{"version", 1}, {"name", "chain"}, {"nodes", nodes}, {"outputs", {400}}}.dump());
    const Estimate e = estimate_body(g);
    EXPECT_GT(e.code, 400);
    EXPECT_EQ(e.code_f64 > 0, std::string(t) == "f64");
    KernelBounds native, emulated;
    native.max_code = emulated.max_code = 20000;
    emulated.emulated_f64_code = 60;
    EXPECT_LE(excess(e, native), 1) << t;
    EXPECT_EQ(excess(e, emulated) > 1, std::string(t) == "f64") << t;
  }
}

}  // namespace
}  // namespace nxv::passes
