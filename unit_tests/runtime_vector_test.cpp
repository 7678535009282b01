// Vectorised elementwise kernels, compiled as for NVIDIA (as_vendor) and run on the default
// device against the reference interpreter: the results and the arguments read at the
// output position are arrays of 16-byte vectors (4 f32/s32, 2 f64) where the size allows,
// 2-element vectors or scalars where it does not; an argument also read elsewhere keeps
// per-element reads there.
//
// Tolerances: add, multiply, max, min, negate and reverse are exact, so those results must
// match bit for bit. The chain tanh(x*y+1)*sigmoid(x)-exp(-y*y) goes through the device's
// (or the math library's) transcendentals and may be contracted into fmas: within
// 1e-5 * (1 + |want|) in f32 and 1e-12 * (1 + |want|) in f64, for values of magnitude at most 2.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "codegen_testing.h"
#include "device_testing.h"
#include "ir/interpreter.h"
#include "ir/json.h"
#include "ir/literal.h"
#include "runtime/runtime.h"

namespace nxv::runtime {
namespace {

using codegen::cgtest::count;
using ir::DType;
using nlohmann::json;

constexpr uint32_t kNvidia = 0x10DE;

// A graph in the IR's JSON form, node by node (ids in order; the verifier checks the types).
class GraphJson {
 public:
  int64_t param(DType t, const ir::Shape& s) { return add("parameter", {}, t, s, {{"index", params_++}}); }
  int64_t add(const std::string& op, std::vector<int64_t> args, DType t, const ir::Shape& s, json attrs = json::object()) {
    nodes_.push_back({{"id", nodes_.size()}, {"op", op}, {"args", args}, {"type", ir::dtype_name(t)}, {"shape", s}, {"attrs", attrs}});
    return int64_t(nodes_.size()) - 1;
  }
  ir::Graph finish(const std::string& name, const std::vector<int64_t>& outputs) const {
    return ir::parse_graph(json{{"version", 1}, {"name", name}, {"nodes", nodes_}, {"outputs", outputs}}.dump());
  }

 private:
  json nodes_ = json::array();
  int params_ = 0;
};

ir::Graph binary(const std::string& op, DType t, int64_t n) {
  GraphJson g;
  auto x = g.param(t, {n}), y = g.param(t, {n});
  return g.finish(op, {g.add(op, {x, y}, t, {n})});
}

// bench/workloads.cpp's chain: tanh(x*y + 1) * sigmoid(x) - exp(-y*y).
ir::Graph chain(DType t, int64_t n) {
  GraphJson g;
  auto x = g.param(t, {n}), y = g.param(t, {n});
  auto one = g.add("constant", {}, t, {}, {{"value", 1}});
  auto th = g.add("tanh", {g.add("add", {g.add("multiply", {x, y}, t, {n}), one}, t, {n})}, t, {n});
  auto e = g.add("exp", {g.add("multiply", {g.add("negate", {y}, t, {n}), y}, t, {n})}, t, {n});
  auto s = g.add("multiply", {th, g.add("sigmoid", {x}, t, {n})}, t, {n});
  return g.finish("chain", {g.add("subtract", {s, e}, t, {n})});
}

// Floats uniform in [-4, 4); integers over the whole s32 range, so adds wrap.
ir::Literal random_input(const ir::TensorType& t, unsigned seed) {
  ir::Literal lit{t, std::vector<uint8_t>(t.byte_size())};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(-4, 4);
  for (int64_t k = 0; k < t.num_elements(); ++k) {
    ir::Scalar v;
    v.f = d(rng);
    v.i = int64_t(int32_t(rng()));
    v.is_integer = !ir::is_float(t.dtype);
    ir::set_element(lit, k, v);
  }
  return lit;
}

struct Outcome {
  std::vector<ir::Literal> got, want;
  std::string spirv;  // every kernel's, disassembled
  int dispatches = 0;
};

Outcome run_as_nvidia(const ir::Graph& g, unsigned seed) {
  CompileOptions opts;
  opts.as_vendor = kNvidia;
  auto exe = Executable::compile(Device::open(), g, opts);
  std::vector<ir::Literal> in;
  for (const auto& t : exe->input_types()) in.push_back(random_input(t, seed++));
  Outcome r;
  RunStats st;
  r.got = exe->run_host(in, &st);
  r.want = ir::interpret(g, in);
  r.dispatches = st.dispatches;
  for (const auto& k : exe->kernels()) r.spirv += codegen::disassemble(k.spirv);
  return r;
}

void expect_close(const Outcome& r, double tol) {
  ASSERT_EQ(r.got.size(), r.want.size());
  for (size_t o = 0; o < r.got.size(); ++o) {
    ASSERT_EQ(r.got[o].type, r.want[o].type);
    if (tol == 0) {
      EXPECT_EQ(r.got[o].data, r.want[o].data) << "output " << o;
      continue;
    }
    for (int64_t k = 0; k < r.want[o].type.num_elements(); ++k) {
      const double w = ir::get_f64(r.want[o], k);
      ASSERT_NEAR(ir::get_f64(r.got[o], k), w, tol * (1 + std::abs(w))) << "output " << o << " element " << k;
    }
  }
}

bool has_vectors(const Outcome& r, DType t, uint32_t lanes) {
  const std::string elem = t == DType::F64 ? "double" : t == DType::F32 ? "float" : "uint";
  return r.spirv.find("OpTypeRuntimeArray %v" + std::to_string(lanes) + elem) != std::string::npos;
}

// What vector_lanes(k, 16) gives a kernel of n elements of t: the widest 16-byte-or-less
// vector whose width divides n.
uint32_t expected_lanes(DType t, int64_t n) {
  for (uint32_t lanes : {4u, 2u})
    if (lanes * ir::dtype_bytes(t) <= 16 && n % lanes == 0) return lanes;
  return 1;
}

// Sizes: one element; 6 (2-element vectors); a multiple of 4; one that is odd (scalar
// code); and one past 2^20 (NVIDIA then computes two vector positions per iteration, the
// second clamped and guarded at the end).
const std::vector<int64_t> kSizes = {1, 6, 1024, 1027, (1 << 20) + 2};

TEST(RuntimeVector, AddsMatchTheInterpreterBitForBit) {
  for (DType t : {DType::F32, DType::S32, DType::F64}) {  // f64 last: skips the rest without shaderFloat64
    NXV_SKIP_WITHOUT(t);
    for (int64_t n : kSizes) {
      SCOPED_TRACE(std::string(ir::dtype_name(t)) + " n=" + std::to_string(n));
      Outcome r = run_as_nvidia(binary("add", t, n), unsigned(n));
      EXPECT_EQ(r.dispatches, 1);
      const uint32_t lanes = expected_lanes(t, n);
      EXPECT_EQ(has_vectors(r, t, lanes), lanes > 1) << r.spirv;
      expect_close(r, 0);
    }
  }
}

TEST(RuntimeVector, ChainMatchesTheInterpreter) {
  for (DType t : {DType::F32, DType::F64}) {
    NXV_SKIP_WITHOUT(t);
    for (int64_t n : {int64_t(1027), int64_t(4096), int64_t(6)}) {
      SCOPED_TRACE(std::string(ir::dtype_name(t)) + " n=" + std::to_string(n));
      Outcome r = run_as_nvidia(chain(t, n), unsigned(n) + 7);
      EXPECT_EQ(r.dispatches, 1);
      const uint32_t lanes = expected_lanes(t, n);
      EXPECT_EQ(has_vectors(r, t, lanes), lanes > 1) << r.spirv;
      expect_close(r, t == DType::F64 ? 1e-12 : 1e-5);
    }
  }
}

// max(x * broadcast(b), reverse(x)): x is read as vectors at the output position and by
// components reversed; b, broadcast along the rows, stays an array of scalars.
TEST(RuntimeVector, BroadcastAndReversedReadsStayScalar) {
  GraphJson g;
  const ir::Shape s{64, 48};
  auto x = g.param(DType::F32, s), b = g.param(DType::F32, {48});
  auto xb = g.add("multiply", {x, g.add("broadcast", {b}, DType::F32, s, {{"shape", s}, {"axes", {1}}})}, DType::F32, s);
  auto out = g.add("max", {xb, g.add("reverse", {x}, DType::F32, s, {{"axes", {1}}})}, DType::F32, s);
  Outcome r = run_as_nvidia(g.finish("mixed", {out}), 3);
  EXPECT_EQ(r.dispatches, 1);
  EXPECT_TRUE(has_vectors(r, DType::F32, 4)) << r.spirv;
  EXPECT_NE(r.spirv.find("OpTypeRuntimeArray %float"), std::string::npos) << r.spirv;
  expect_close(r, 0);
}

// Three results of elementwise regions that share x * y (fuse merges them into one kernel):
// each is written as vectors, x and y are loaded once per position and x * y computed once
// per lane.
TEST(RuntimeVector, SeveralResultsOfOneKernel) {
  // The merged kernel binds x, y and the three results.
  if (const uint32_t most = devtest::device()->info().caps.max_storage_buffers; most < 5)
    GTEST_SKIP() << "one kernel needs 5 storage buffers; the device allows " << most
                 << " (maxPerStageDescriptorStorageBuffers), so fusion splits it (lit: config_vulkan-minimum.test)";
  for (int64_t side : {32, 5}) {
    SCOPED_TRACE("side " + std::to_string(side));
    GraphJson g;
    const ir::Shape s{side, side};
    auto x = g.param(DType::F32, s), y = g.param(DType::F32, s);
    auto xy = g.add("multiply", {x, y}, DType::F32, s);
    auto hi = g.add("max", {xy, x}, DType::F32, s), lo = g.add("min", {xy, y}, DType::F32, s);
    Outcome r = run_as_nvidia(g.finish("several", {hi, lo, g.add("negate", {xy}, DType::F32, s)}), 11);
    EXPECT_EQ(r.dispatches, 1);
    EXPECT_EQ(has_vectors(r, DType::F32, 4), side % 2 == 0) << r.spirv;
    if (side % 2 == 0) {
      EXPECT_EQ(count(r.spirv, "OpLoad %v4float"), 2u) << r.spirv;
      EXPECT_EQ(count(r.spirv, "OpFMul"), 4u) << r.spirv;
      EXPECT_EQ(count(r.spirv, "OpStore"), 3u) << r.spirv;
    }
    expect_close(r, 0);
  }
}

}  // namespace
}  // namespace nxv::runtime
