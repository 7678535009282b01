// Split-K (passes/split-dot) run on this device under NVIDIA's code path (as_vendor, with
// 4 compute units assumed: products under 4 tiles of 128x128 split into parts for 8)
// against the reference interpreter: plain, batched and convolution-shaped contractions, a
// contraction no part count divides (padded with zeros), a fused epilogue, f32, f64 and s32;
// products that stay whole (a short contraction, tiny ones, f32 ones whose 64x128 tiles
// fill the compute units) beside them.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "codegen/targets/launch.h"
#include "device_testing.h"
#include "ir/graph_writer.h"
#include "ir/interpreter.h"
#include "ir/literal.h"
#include "passes/pass.h"
#include "runtime/runtime.h"

namespace nxv {
namespace {

using ir::DType;

struct Case {
  std::string name;
  DType t;
  ir::Shape a, b, out;
  std::vector<int64_t> c1, c2, b1 = {}, b2 = {};
  int64_t parts;           // what split-dot makes of it (1: whole)
  bool epilogue = false;   // relu(x·w + 1/2)
};

ir::Graph graph_of(const Case& c) {
  ir::GraphWriter w("split");
  const ir::NodeId a = w.param(0, c.t, c.a), b = w.param(1, c.t, c.b);
  ir::NodeId last = w.node("dot", {a, b}, c.t, c.out,
                           {{"contract_axes1", c.c1}, {"contract_axes2", c.c2}, {"batch_axes1", c.b1}, {"batch_axes2", c.b2}});
  if (c.epilogue) {
    const ir::NodeId half = w.node("broadcast", {w.scalar(0.5, c.t)}, c.t, c.out, {{"shape", c.out}, {"axes", nlohmann::json::array()}});
    last = w.node("max", {w.node("add", {last, half}, c.t, c.out), w.scalar(0, c.t)}, c.t, c.out);
  }
  return w.finish({last});
}

// Floats uniform in [-1, 1) (`exact`: multiples of 1/8 from -1 to 1, whose every partial sum
// is exact at these sizes, so that any order gives the reference's bits); integers in [-3, 3].
std::vector<ir::Literal> inputs_for(const ir::Graph& g, bool exact, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1, 1);
  std::vector<ir::Literal> in;
  for (const auto* p : g.parameters()) {
    ir::Literal lit{p->type(), std::vector<uint8_t>(p->type().byte_size())};
    for (int64_t i = 0; i < p->type().num_elements(); ++i) {
      ir::Scalar v;
      if (!ir::is_float(p->type().dtype)) v.i = int64_t(rng() % 7) - 3, v.is_integer = true;
      else v.f = exact ? double(int64_t(rng() % 17) - 8) / 8 : uniform(rng);
      ir::set_element(lit, i, v);
    }
    in.push_back(std::move(lit));
  }
  return in;
}

ir::Literal absolute(ir::Literal x) {
  for (int64_t i = 0; i < x.type.num_elements(); ++i) {
    ir::Scalar v;
    v.f = std::fabs(ir::get_f64(x, i));
    ir::set_element(x, i, v);
  }
  return x;
}

runtime::CompileOptions as_nvidia() {
  runtime::CompileOptions o;
  o.as_vendor = codegen::pci_vendor_id(codegen::Vendor::Nvidia);
  o.as_compute_units = 4;
  return o;
}

// The parts split-dot cuts the graph's dot into under `opts` (1: none): the dot's new batch axis.
int64_t parts_under(const ir::Graph& g, const runtime::CompileOptions& opts) {
  ir::Graph split = g;
  codegen::DeviceCaps caps = runtime::compile_caps(devtest::device()->info(), opts);
  passes::PassManager({"split-dot"}, codegen::kernel_bounds(caps)).run(split);
  for (const auto& n : split.nodes)
    if (n.op == "sum" && split.node(n.args.at(0)).op == "dot") {
      const auto& partial = split.node(n.args.at(0)).type().shape;
      return partial.at(size_t(n.attrs.at("axes").at(0).get<int64_t>()));
    }
  return 1;
}

std::vector<Case> cases() {
  std::vector<Case> cs;
  // Under as_nvidia's 4 compute units a wave is 4 tiles, and each part costs 32 terms more
  // than it contracts. 64 x 256 outputs (1 tile's worth, 2 launched) contracting 2048 and
  // 4096: at least 4 parts, which take two waves (of 544 and 1056 terms; 8 parts take four
  // of 288 and 544). f32 128 x 256 outputs stay whole: their 4 tiles of 64x128 fill the 4
  // compute units; f64 takes other tiles and splits: 2 parts fill one wave (1 x 1056 terms).
  for (int64_t k : {2048, 4096})
    cs.push_back({"f32 64x" + std::to_string(k) + "x256", DType::F32, {64, k}, {k, 256}, {64, 256}, {1}, {0}, {}, {}, 4});
  cs.push_back({"f32 128x2048x256 whole", DType::F32, {128, 2048}, {2048, 256}, {128, 256}, {1}, {0}, {}, {}, 1});
  cs.push_back({"f64 128x2048x256", DType::F64, {128, 2048}, {2048, 256}, {128, 256}, {1}, {0}, {}, {}, 2});
  // 2053, a prime: 1 tile, at least 4 parts to fill a wave: 4, the contraction padded to
  // 4 x 514.
  cs.push_back({"f32 128x2053x128 padded", DType::F32, {128, 2053}, {2053, 128}, {128, 128}, {1}, {0}, {}, {}, 4});
  // The second operand transposed ([n, k]), the contraction last on both; 1.2 tiles' worth of
  // outputs (2 tiles launched): 4 parts, two waves of 750 terms (6 parts: three of 500).
  cs.push_back({"f32 200x3000x100 bT", DType::F32, {200, 3000}, {100, 3000}, {200, 100}, {1}, {1}, {}, {}, 4});
  cs.push_back({"f32 128x2048x128 fused", DType::F32, {128, 2048}, {2048, 128}, {128, 128}, {1}, {0}, {}, {}, 4, true});
  cs.push_back({"f64 128x1536x192", DType::F64, {128, 1536}, {1536, 192}, {128, 192}, {1}, {0}, {}, {}, 4});
  // Batched: 2 x 96 x 100 outputs (2 tiles) contracting 2048, 4 parts after the batch axis.
  cs.push_back({"s32 2x96x2048x100", DType::S32, {2, 96, 2048}, {2, 2048, 100}, {2, 96, 100}, {2}, {1}, {0}, {0}, 4});
  // Convolution-shaped, as bench/sweep.cpp's stage-4 layers: patches [1, batch, cin, h, w,
  // taps, taps] by weights [1, cout, cin, taps, taps], the input channels cut first.
  cs.push_back({"f32 conv 4x6x6 512->64 3x3", DType::F32, {1, 4, 512, 6, 6, 3, 3}, {1, 64, 512, 3, 3}, {1, 4, 6, 6, 64},
                {2, 5, 6}, {2, 3, 4}, {0}, {0}, 8});
  // Whole: parts of a 512 contraction would be too short; tiny products.
  cs.push_back({"f32 128x512x256 whole", DType::F32, {128, 512}, {512, 256}, {128, 256}, {1}, {0}, {}, {}, 1});
  cs.push_back({"f32 3x700x5 whole", DType::F32, {3, 700}, {700, 5}, {3, 5}, {1}, {0}, {}, {}, 1});
  cs.push_back({"s32 1x1x1 whole", DType::S32, {1, 1}, {1, 1}, {1, 1}, {1}, {0}, {}, {}, 1});
  return cs;
}

TEST(SplitDot, SplitProductsMatchTheReferenceUnderNvidiasPath) {
  auto dev = devtest::device();
  devtest::LeftOut left_out;
  for (const Case& c : cases()) {
    if (left_out(c.t)) continue;
    const ir::Graph g = graph_of(c);
    EXPECT_EQ(parts_under(g, as_nvidia()), c.parts) << c.name;
    // f32 from uniform inputs differs from the reference by the rounding of two summation
    // orders: at most 2 K u sum |a b| for K terms, u = 2^-24. Exact inputs (the epilogue's
    // case), f64 and integers: the reference's bits.
    const bool rounded = c.t == DType::F32 && !c.epilogue;
    const auto in = inputs_for(g, !rounded, unsigned(c.a.back() * 31 + c.b.back()));
    const ir::Literal want = ir::interpret(g, in).at(0);
    const ir::Literal got = runtime::Executable::compile(dev, g, as_nvidia())->run_host(in).at(0);
    ASSERT_EQ(got.type, want.type) << c.name;
    int64_t contraction = 1;
    for (int64_t x : c.c1) contraction *= c.a.at(size_t(x));
    const ir::Literal bound = rounded ? ir::interpret(g, {absolute(in[0]), absolute(in[1])}).at(0) : want;
    int bad = 0;
    for (int64_t i = 0; i < want.type.num_elements() && bad < 5; ++i) {
      const double w = ir::get_f64(want, i), x = ir::get_f64(got, i);
      const double tol = rounded ? 2.0 * double(contraction) * std::ldexp(1.0, -24) * ir::get_f64(bound, i) : 0;
      if (!(std::fabs(x - w) <= tol)) {
        ADD_FAILURE() << c.name << ": element " << i << " is " << x << ", want " << w << " (tolerance " << tol << ")";
        ++bad;
      }
    }
  }
  NXV_SKIP_IF_LEFT_OUT(left_out);
}

// Emulated f64 dots run one element per invocation, untiled: they stay whole; native f64 and
// f32 beside them still split. A reduced f32 precision leaves f32 products to the
// cooperative matrices (where the device has them): whole too.
TEST(SplitDot, EmulatedAndReducedPrecisionProductsStayWhole) {
  const Case f64{"f64", DType::F64, {128, 1536}, {1536, 192}, {128, 192}, {1}, {0}, {}, {}, 4};
  const Case f32{"f32", DType::F32, {64, 2048}, {2048, 256}, {64, 256}, {1}, {0}, {}, {}, 4};
  runtime::CompileOptions emulated = as_nvidia();
  emulated.emulate = "f64";
  EXPECT_EQ(parts_under(graph_of(f64), emulated), 1);
  EXPECT_EQ(parts_under(graph_of(f32), emulated), 4);
  runtime::CompileOptions high = as_nvidia();
  high.precision = codegen::Precision::High;
  EXPECT_EQ(parts_under(graph_of(f32), high), 1);
  // Without a count of compute units (lavapipe's own caps), nothing splits.
  runtime::CompileOptions unknown = as_nvidia();
  unknown.as_compute_units = 0;
  if (devtest::device()->info().caps.compute_units == 0) {
    EXPECT_EQ(parts_under(graph_of(f32), unknown), 1);
  }
}

}  // namespace
}  // namespace nxv
