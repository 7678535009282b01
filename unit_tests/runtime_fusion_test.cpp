// Fused regions on the device against plain C++ references: softmax and layer norm as one
// row kernel (serial rows and, for few long rows, a workgroup per row), softmax's gradient
// and its probabilities as one beside their product, logsumexp as one kernel, and a 32-step
// leapfrog as one kernel; edge sizes 1, 255, 257 and a prime.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstring>
#include <random>

#include "ir/interpreter.h"
#include "ir/json.h"
#include "ir/literal.h"
#include "device_testing.h"
#include "runtime/runtime.h"
#include "test_graphs.h"

namespace nxv::runtime {
namespace {

using Matrix = std::vector<std::vector<double>>;

HostTensor tensor(ir::DType t, const ir::Shape& shape, const std::vector<double>& v) {
  HostTensor h{{t, shape}, std::vector<uint8_t>(v.size() * ir::dtype_bytes(t))};
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == ir::DType::F32) {
      float f = float(v[i]);
      std::memcpy(h.data.data() + 4 * i, &f, 4);
    } else {
      std::memcpy(h.data.data() + 8 * i, &v[i], 8);
    }
  }
  return h;
}

double at(const HostTensor& h, size_t i) {
  if (h.type.dtype == ir::DType::F32) {
    float f;
    std::memcpy(&f, h.data.data() + 4 * i, 4);
    return f;
  }
  double d;
  std::memcpy(&d, h.data.data() + 8 * i, 8);
  return d;
}

std::vector<double> random(size_t n, unsigned seed, double lo = -4, double hi = 4) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = double(float(d(rng)));
  return v;
}

// softmax over the last axis, Nx's formulation: exp(x - max) / sum(exp(x - max)).
ir::Graph softmax(int64_t rows, int64_t cols) {
  std::string x = ir::shape_string({rows, cols}), r = ir::shape_string({rows, 1});
  return ir::parse_graph(R"({"version": 1, "name": "softmax", "nodes": [
    {"id": 0, "op": "parameter", "type": "f32", "shape": )" + x + R"(, "attrs": {"index": 0}},
    {"id": 1, "op": "reduce_max", "args": [0], "type": "f32", "shape": )" + r + R"(, "attrs": {"axes": [1], "keep_axes": true}},
    {"id": 2, "op": "subtract", "args": [0, 1], "type": "f32", "shape": )" + x + R"(},
    {"id": 3, "op": "exp", "args": [2], "type": "f32", "shape": )" + x + R"(},
    {"id": 4, "op": "sum", "args": [3], "type": "f32", "shape": )" + r + R"(, "attrs": {"axes": [1], "keep_axes": true}},
    {"id": 5, "op": "divide", "args": [3, 4], "type": "f32", "shape": )" + x + R"(}], "outputs": [5]})");
}

ir::Graph layer_norm(int64_t rows, int64_t cols) {
  std::string x = ir::shape_string({rows, cols}), r = ir::shape_string({rows, 1});
  std::string n = std::to_string(cols);
  return ir::parse_graph(R"({"version": 1, "name": "layer_norm", "nodes": [
    {"id": 0, "op": "parameter", "type": "f32", "shape": )" + x + R"(, "attrs": {"index": 0}},
    {"id": 1, "op": "sum", "args": [0], "type": "f32", "shape": )" + r + R"(, "attrs": {"axes": [1], "keep_axes": true}},
    {"id": 2, "op": "constant", "type": "f32", "shape": [], "attrs": {"value": )" + n + R"(}},
    {"id": 3, "op": "divide", "args": [1, 2], "type": "f32", "shape": )" + r + R"(},
    {"id": 4, "op": "subtract", "args": [0, 3], "type": "f32", "shape": )" + x + R"(},
    {"id": 5, "op": "multiply", "args": [4, 4], "type": "f32", "shape": )" + x + R"(},
    {"id": 6, "op": "sum", "args": [5], "type": "f32", "shape": )" + r + R"(, "attrs": {"axes": [1], "keep_axes": true}},
    {"id": 7, "op": "divide", "args": [6, 2], "type": "f32", "shape": )" + r + R"(},
    {"id": 8, "op": "constant", "type": "f32", "shape": [], "attrs": {"value": 1e-5}},
    {"id": 9, "op": "add", "args": [7, 8], "type": "f32", "shape": )" + r + R"(},
    {"id": 10, "op": "rsqrt", "args": [9], "type": "f32", "shape": )" + r + R"(},
    {"id": 11, "op": "multiply", "args": [4, 10], "type": "f32", "shape": )" + x + R"(}], "outputs": [11]})");
}

// Also compiled as for NVIDIA (as_vendor): few long rows then get a workgroup each, their
// folds and element loops straight-line up to 32 positions per invocation.
void check_rows(const ir::Graph& g, int64_t rows, int64_t cols, unsigned seed, bool norm, uint32_t vendor = 0) {
  SCOPED_TRACE(g.name + " " + std::to_string(rows) + "x" + std::to_string(cols) + " vendor " + std::to_string(vendor));
  CompileOptions opts;
  opts.as_vendor = vendor;
  auto exe = Executable::compile(Device::open(), g, opts);
  auto x = random(size_t(rows * cols), seed);
  RunStats st;
  auto out = exe->run_host({tensor(ir::DType::F32, {rows, cols}, x)}, &st);
  if (cols > 1) {  // a 1-wide row is the same index: no row kernel needed
    EXPECT_EQ(st.dispatches, 1);
  }
  for (int64_t i = 0; i < rows; ++i) {
    const double* row = &x[size_t(i * cols)];
    double a = 0, b = 0;
    if (norm) {
      for (int64_t j = 0; j < cols; ++j) a += row[j];
      a /= double(cols);
      for (int64_t j = 0; j < cols; ++j) b += (row[j] - a) * (row[j] - a);
      b = 1 / std::sqrt(b / double(cols) + 1e-5);
    } else {
      a = *std::max_element(row, row + cols);
      for (int64_t j = 0; j < cols; ++j) b += std::exp(row[j] - a);
    }
    for (int64_t j = 0; j < cols; ++j) {
      double want = norm ? (row[j] - a) * b : std::exp(row[j] - a) / b;
      // f32 accumulation over up to ~10^4 terms: relative 1e-4 (softmax), absolute 1e-3 (normalised values ~1).
      double got = at(out[0], size_t(i * cols + j));
      ASSERT_NEAR(got, want, norm ? 1e-3 : 1e-4 * want + 1e-7) << "row " << i << " col " << j;
    }
  }
}

TEST(RuntimeFusion, SoftmaxIsOneRowKernel) {
  for (uint32_t vendor : {0u, 0x10DEu})
    for (auto [r, c] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 255}, {5, 257}, {257, 31}, {4, 2053}, {2, 8192}, {3, 9000}})
      check_rows(softmax(r, c), r, c, unsigned(r * 7 + c), false, vendor);
}

TEST(RuntimeFusion, LayerNormIsOneRowKernel) {
  for (uint32_t vendor : {0u, 0x10DEu})
    for (auto [r, c] : std::vector<std::pair<int64_t, int64_t>>{{1, 2}, {7, 256}, {2, 4099}, {129, 17}})
      check_rows(layer_norm(r, c), r, c, unsigned(r * 11 + c), true, vendor);
}

// Softmax's gradient as Nx writes it, dS = e (g / l - rowsum(g p)), beside a product of the
// probabilities p (attention's dV): p, the gradient and the row statistics both read come
// out of one row kernel with two results, the product out of its own.
ir::Graph softmax_gradient(int64_t rows, int64_t cols) {
  std::string x = ir::shape_string({rows, cols}), r = ir::shape_string({rows, 1});
  return ir::parse_graph(R"({"version": 1, "name": "softmax_gradient", "nodes": [
    {"id": 0, "op": "parameter", "type": "f32", "shape": )" + x + R"(, "attrs": {"index": 0}},
    {"id": 1, "op": "parameter", "type": "f32", "shape": )" + x + R"(, "attrs": {"index": 1}},
    {"id": 2, "op": "parameter", "type": "f32", "shape": [)" + std::to_string(cols) + R"(, 3], "attrs": {"index": 2}},
    {"id": 3, "op": "reduce_max", "args": [0], "type": "f32", "shape": )" + r + R"(, "attrs": {"axes": [1], "keep_axes": true}},
    {"id": 4, "op": "subtract", "args": [0, 3], "type": "f32", "shape": )" + x + R"(},
    {"id": 5, "op": "exp", "args": [4], "type": "f32", "shape": )" + x + R"(},
    {"id": 6, "op": "sum", "args": [5], "type": "f32", "shape": )" + r + R"(, "attrs": {"axes": [1], "keep_axes": true}},
    {"id": 7, "op": "divide", "args": [5, 6], "type": "f32", "shape": )" + x + R"(},
    {"id": 8, "op": "dot", "args": [7, 2], "type": "f32", "shape": )" + ir::shape_string({rows, 3}) + R"(, "attrs": {"contract_axes1": [1], "contract_axes2": [0]}},
    {"id": 9, "op": "multiply", "args": [1, 7], "type": "f32", "shape": )" + x + R"(},
    {"id": 10, "op": "sum", "args": [9], "type": "f32", "shape": )" + r + R"(, "attrs": {"axes": [1], "keep_axes": true}},
    {"id": 11, "op": "divide", "args": [1, 6], "type": "f32", "shape": )" + x + R"(},
    {"id": 12, "op": "subtract", "args": [11, 10], "type": "f32", "shape": )" + x + R"(},
    {"id": 13, "op": "multiply", "args": [12, 5], "type": "f32", "shape": )" + x + R"(}], "outputs": [8, 13, 7]})");
}

// The dispatches of x·w alone (two where the product is split along k).
int64_t product_dispatches(const CompileOptions& opts, int64_t rows, int64_t cols, const HostTensor& x, const HostTensor& w) {
  RunStats st;
  Executable::compile(Device::open(), ir::parse_graph(R"({"version": 1, "name": "product", "nodes": [
    {"id": 0, "op": "parameter", "type": "f32", "shape": )" + ir::shape_string({rows, cols}) + R"(, "attrs": {"index": 0}},
    {"id": 1, "op": "parameter", "type": "f32", "shape": )" + ir::shape_string({cols, 3}) + R"(, "attrs": {"index": 1}},
    {"id": 2, "op": "dot", "args": [0, 1], "type": "f32", "shape": )" + ir::shape_string({rows, 3}) + R"(, "attrs": {"contract_axes1": [1], "contract_axes2": [0]}}],
    "outputs": [2]})"), opts)
      ->run_host({x, w}, &st);
  return st.dispatches;
}

// softmax_gradient's outputs (product, gradient, probabilities) against a double reference.
void check_softmax_gradient(const std::vector<HostTensor>& out, int64_t rows, int64_t cols, const std::vector<double>& x,
                            const std::vector<double>& g, const std::vector<double>& w) {
  for (int64_t i = 0; i < rows; ++i) {
    const size_t r0 = size_t(i * cols);
    const double m = *std::max_element(x.begin() + long(r0), x.begin() + long(r0 + cols));
    double l = 0, gp = 0, gp_mag = 0;
    for (int64_t j = 0; j < cols; ++j) l += std::exp(x[r0 + j] - m);
    for (int64_t j = 0; j < cols; ++j) {
      const double p = std::exp(x[r0 + j] - m) / l;
      gp += g[r0 + j] * p, gp_mag += std::abs(g[r0 + j] * p);
    }
    for (int k = 0; k < 3; ++k) {
      double want = 0, mag = 0;
      for (int64_t j = 0; j < cols; ++j) {
        const double t = std::exp(x[r0 + j] - m) / l * w[size_t(j * 3 + k)];
        want += t, mag += std::abs(t);
      }
      // f32 products and sums of up to 9000 terms: 1e-5 of the terms' magnitudes.
      ASSERT_NEAR(at(out[0], size_t(i * 3 + k)), want, 1e-5 * mag + 1e-7) << "row " << i << " product column " << k;
    }
    for (int64_t j = 0; j < cols; ++j) {
      const double e = std::exp(x[r0 + j] - m), p = e / l;
      const double want = e * (g[r0 + j] / l - gp);
      // f32 rounding of each step: 1e-5 of the magnitudes the difference is taken of.
      ASSERT_NEAR(at(out[1], r0 + size_t(j)), want, 1e-5 * e * (std::abs(g[r0 + j]) / l + gp_mag) + 1e-9) << "row " << i << " col " << j;
      ASSERT_NEAR(at(out[2], r0 + size_t(j)), p, 1e-5 * p + 1e-9) << "row " << i << " col " << j;
    }
  }
}

TEST(RuntimeFusion, SoftmaxGradientIsOneRowKernelBesideItsProduct) {
  for (uint32_t vendor : {0u, 0x10DEu})
    for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{3, 255}, {5, 257}, {257, 31}, {2, 8192}, {3, 9000}}) {
      SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + " vendor " + std::to_string(vendor));
      CompileOptions opts;
      opts.as_vendor = vendor;
      auto exe = Executable::compile(Device::open(), softmax_gradient(rows, cols), opts);
      const auto x = random(size_t(rows * cols), unsigned(rows + cols)), g = random(size_t(rows * cols), 3);
      const auto w = random(size_t(cols * 3), 4, -1, 1);
      const HostTensor xt = tensor(ir::DType::F32, {rows, cols}, x), wt = tensor(ir::DType::F32, {cols, 3}, w);
      RunStats st;
      auto out = exe->run_host({xt, tensor(ir::DType::F32, {rows, cols}, g), wt}, &st);
      // One row kernel where a kernel may bind 6 storage buffers: before the merge the
      // gradient's reads the scores, g, the max, the sum and the probabilities. Below that
      // (vulkan-minimum's 4) fusion gives those buffers of their own and more kernels.
      if (Device::open()->info().caps.max_storage_buffers >= 6) {
        EXPECT_EQ(st.dispatches, product_dispatches(opts, rows, cols, xt, wt) + 1);
      }
      check_softmax_gradient(out, rows, cols, x, g, w);
    }
}

// Transposes that move the innermost axis run in 32x32 tiles on GPUs (staged through
// shared memory when they transpose a kernel argument's two innermost axes, else in tile
// order), in plain order on lavapipe: both code paths run here (as_vendor), and every
// element must land where a plain loop puts it (batched, non-square, not tiled, f64 and
// u8, a transpose added to a second argument, one also read at other positions).
TEST(RuntimeFusion, TransposesInTilesMatchTheReference) {
  struct Case {
    ir::Shape shape;
    std::vector<int64_t> axes;
    std::string type;
    std::string consumer;  // elementwise op over the transposed value and a second argument
  };
  devtest::LeftOut left_out;
  for (uint32_t vendor : {0u, 0x10DEu})
    for (const Case& c : std::vector<Case>{{{64, 96}, {1, 0}, "f32", "subtract"},
                                           {{3, 32, 64}, {0, 2, 1}, "f32", "subtract"},
                                           {{64, 32}, {1, 0}, "f64", "subtract"},
                                           {{96, 32}, {1, 0}, "u8", "max"},
                                           {{32, 2, 64}, {2, 1, 0}, "f32", "subtract"},
                                           {{33, 65}, {1, 0}, "f32", "subtract"}}) {
      if (left_out(ir::parse_dtype(c.type))) continue;
      ir::Shape out;
      for (int64_t a : c.axes) out.push_back(c.shape[size_t(a)]);
      const std::string ax = ir::shape_string(c.axes);
      const std::string in_t = R"(", "shape": )" + ir::shape_string(c.shape), out_t = R"(", "shape": )" + ir::shape_string(out);
      // Output 0: consumer(transpose(x), y); where output 1 is there too, the transpose is
      // also read reversed, so not at the output position only.
      for (const std::string outputs : {"[3]", "[3, 5]"}) {
      auto g = ir::parse_graph(R"({"version": 1, "name": "t", "nodes": [
        {"id": 0, "op": "parameter", "type": ")" + c.type + in_t + R"(, "attrs": {"index": 0}},
        {"id": 1, "op": "parameter", "type": ")" + c.type + out_t + R"(, "attrs": {"index": 1}},
        {"id": 2, "op": "transpose", "args": [0], "type": ")" + c.type + out_t + R"(, "attrs": {"axes": )" + ax + R"(}},
        {"id": 3, "op": ")" + c.consumer + R"(", "args": [2, 1], "type": ")" + c.type + out_t + R"(},
        {"id": 4, "op": "reverse", "args": [2], "type": ")" + c.type + out_t + R"(, "attrs": {"axes": [0]}},
        {"id": 5, "op": "add", "args": [2, 4], "type": ")" + c.type + out_t + R"(}], "outputs": )" + outputs + "}");
      const ir::DType t = ir::parse_dtype(c.type);
      std::vector<ir::Literal> in;
      for (const ir::Shape& s : {c.shape, out}) {
        ir::Literal lit{{t, s}, std::vector<uint8_t>(size_t(ir::num_elements(s)) * size_t(ir::dtype_bytes(t)))};
        std::mt19937 rng(unsigned(ir::num_elements(s)));
        for (int64_t k = 0; k < ir::num_elements(s); ++k) {
          ir::Scalar v;
          v.i = int64_t(rng() % 100);
          v.f = double(v.i) / 7;
          v.is_integer = !ir::is_float(t);
          ir::set_element(lit, k, v);
        }
        in.push_back(std::move(lit));
      }
      CompileOptions opts;
      opts.as_vendor = vendor;
      auto got = Executable::compile(Device::open(), g, opts)->run_host(in);
      auto want = ir::interpret(g, in);
      ASSERT_EQ(got.size(), want.size());
      for (size_t k = 0; k < got.size(); ++k)
        EXPECT_EQ(got[k].data, want[k].data) << c.type << ir::shape_string(c.shape) << outputs << " vendor " << vendor << " output " << k;
      }
    }
  NXV_SKIP_IF_LEFT_OUT(left_out);
}

// 64-bit integer arithmetic in fused elementwise kernels, bit for bit against the reference:
// Nx.Random.randint's s64 draws (graphs/randint_s64.json) and u64 6 * (x rem 10) + (y rem 10)
// over full-range values. NVIDIA's driver computed both wrong in 2-vectors (each pair its
// first lane's value); codegen/targets/nvidia.cpp keeps such kernels scalar.
TEST(RuntimeFusion, Int64ArithmeticMatchesTheReference) {
  NXV_SKIP_WITHOUT(ir::DType::S64);
  auto randint = test_graph("randint_s64.json");
  HostTensor key{{ir::DType::U32, {2}}, std::vector<uint8_t>(8)};
  const uint32_t seed[2] = {0, 1234};
  std::memcpy(key.data.data(), seed, 8);
  auto got = Executable::compile(Device::open(), randint)->run_host({key});
  auto want = ir::interpret(randint, {key});
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) EXPECT_EQ(got[k].data, want[k].data) << "randint output " << k;

  for (const char* t : {"u64", "s64"}) {
    const std::string type = t;
    auto g = ir::parse_graph(R"({"version": 1, "outputs": [7], "nodes": [
      {"id": 0, "op": "parameter", "type": ")" + type + R"(", "shape": [1027], "attrs": {"index": 0}},
      {"id": 1, "op": "parameter", "type": ")" + type + R"(", "shape": [1027], "attrs": {"index": 1}},
      {"id": 2, "op": "constant", "type": ")" + type + R"(", "shape": [1027], "attrs": {"value": 10}},
      {"id": 3, "op": "remainder", "type": ")" + type + R"(", "shape": [1027], "args": [0, 2]},
      {"id": 4, "op": "constant", "type": ")" + type + R"(", "shape": [1027], "attrs": {"value": 6}},
      {"id": 5, "op": "multiply", "type": ")" + type + R"(", "shape": [1027], "args": [4, 3]},
      {"id": 6, "op": "remainder", "type": ")" + type + R"(", "shape": [1027], "args": [1, 2]},
      {"id": 7, "op": "add", "type": ")" + type + R"(", "shape": [1027], "args": [5, 6]}]})");
    std::mt19937_64 rng(99);
    std::vector<HostTensor> in;
    for (int i = 0; i < 2; ++i) {
      HostTensor h{{ir::parse_dtype(type), {1027}}, std::vector<uint8_t>(1027 * 8)};
      for (size_t e = 0; e < 1027; ++e) {
        const uint64_t v = rng();
        std::memcpy(h.data.data() + 8 * e, &v, 8);
      }
      in.push_back(std::move(h));
    }
    auto out = Executable::compile(Device::open(), g)->run_host(in);
    EXPECT_EQ(out.at(0).data, ir::interpret(g, in).at(0).data) << type;
  }
}

// Shared intermediate buffers (plan-buffers) change nothing in the results: the chain of
// dots from lit_tests/passes/plan-buffers.test, with and without the pass, bit for bit.
TEST(RuntimeFusion, PlannedBuffersGiveTheSameResults) {
  auto g = test_graph("dot_chain.json");
  auto x = random(64 * 64, 23, -0.2, 0.2);
  auto with = Executable::compile(Device::open(), g)->run_host({tensor(ir::DType::F32, {64, 64}, x)});
  CompileOptions unplanned;
  unplanned.pipeline = {"canonicalize", "simplify", "cse", "dce", "split-reduction", "fuse", "lower-to-kernels"};
  auto without = Executable::compile(Device::open(), g, unplanned)->run_host({tensor(ir::DType::F32, {64, 64}, x)});
  ASSERT_EQ(with.size(), without.size());
  for (size_t i = 0; i < with.size(); ++i) EXPECT_EQ(with[i].data, without[i].data) << "output " << i;
  EXPECT_TRUE(std::any_of(with[1].data.begin(), with[1].data.end(), [](uint8_t b) { return b != 0; }));
}

// 32 unrolled leapfrog steps on a standard normal (grad log p(q) = -q), as eXMC's
// integrator unrolls them: detect-chains turns them into one kernel with a loop of 32
// iterations. Checked against the same arithmetic in C++ (f64; the device may contract
// a*b+c into an fma, hence 1e-12).
TEST(RuntimeFusion, UnrolledLeapfrogRunsAsALoopInOneKernel) {
  NXV_SKIP_WITHOUT(ir::DType::F64);
  const int64_t d = 37;
  const int steps = 32;
  std::string nodes = R"({"id": 0, "op": "parameter", "type": "f64", "shape": [37], "attrs": {"index": 0}},
    {"id": 1, "op": "parameter", "type": "f64", "shape": [37], "attrs": {"index": 1}},
    {"id": 2, "op": "parameter", "type": "f64", "shape": [], "attrs": {"index": 2}},
    {"id": 3, "op": "constant", "type": "f64", "shape": [], "attrs": {"value": 0.5}},
    {"id": 4, "op": "multiply", "args": [2, 3], "type": "f64", "shape": []})";
  int64_t next = 5, q = 0, p = 1;
  auto add = [&](const std::string& op, std::vector<int64_t> args) {
    std::string a;
    for (size_t i = 0; i < args.size(); ++i) a += (i ? ", " : "") + std::to_string(args[i]);
    nodes += R"(, {"id": )" + std::to_string(next) + R"(, "op": ")" + op + R"(", "args": [)" + a + R"(], "type": "f64", "shape": [37]})";
    return next++;
  };
  for (int i = 0; i < steps; ++i) {
    p = add("add", {p, add("multiply", {4, add("negate", {q})})});
    q = add("add", {q, add("multiply", {2, p})});
    p = add("add", {p, add("multiply", {4, add("negate", {q})})});
  }
  auto g = ir::parse_graph(R"({"version": 1, "name": "leapfrog", "nodes": [)" + nodes + R"(], "outputs": [)" +
                           std::to_string(q) + ", " + std::to_string(p) + "]}");
  auto exe = Executable::compile(Device::open(), g);
  if (!devtest::missing_feature(ir::DType::F64).empty()) GTEST_SKIP() << "the device has no Float64";
  EXPECT_EQ(exe->kernels().size(), 1u);
  int loops = 0;
  for (const auto& n : exe->lowered().nodes)
    if (n.op == "kernel")
      for (const auto& b : n.regions.at("body")->nodes) loops += b.op == "repeat" ? int(b.attrs["count"]) : 0;
  EXPECT_GE(loops, steps - 1);  // the window may leave one step unrolled at either end
  auto q0 = random(size_t(d), 41), p0 = random(size_t(d), 43);
  const double eps = 0.05;
  auto out = exe->run_host({tensor(ir::DType::F64, {d}, q0), tensor(ir::DType::F64, {d}, p0), tensor(ir::DType::F64, {}, {eps})});
  for (int64_t k = 0; k < d; ++k) {
    double qq = q0[size_t(k)], pp = p0[size_t(k)];
    for (int i = 0; i < steps; ++i) {
      pp = pp + eps * 0.5 * -qq;
      qq = qq + eps * pp;
      pp = pp + eps * 0.5 * -qq;
    }
    EXPECT_NEAR(at(out[0], size_t(k)), qq, 1e-12 * (1 + std::fabs(qq)));
    EXPECT_NEAR(at(out[1], size_t(k)), pp, 1e-12 * (1 + std::fabs(pp)));
  }
}

// A large elementwise kernel with two results at an odd size: on GPUs whose launch unrolls
// the grid loop (NVIDIA: 4 positions per iteration), the last iteration's positions past
// the end must be computed in bounds and not stored.
TEST(RuntimeFusion, LargeElementwiseKernelsCoverEveryPositionOnce) {
  const int64_t n = (1 << 20) + 3;
  const std::string s = "[" + std::to_string(n) + "]";
  auto g = ir::parse_graph(R"({"version": 1, "name": "two", "nodes": [
    {"id": 0, "op": "parameter", "type": "f32", "shape": )" + s + R"(, "attrs": {"index": 0}},
    {"id": 1, "op": "parameter", "type": "f32", "shape": )" + s + R"(, "attrs": {"index": 1}},
    {"id": 2, "op": "multiply", "args": [0, 1], "type": "f32", "shape": )" + s + R"(},
    {"id": 3, "op": "negate", "args": [2], "type": "f32", "shape": )" + s + R"(},
    {"id": 4, "op": "subtract", "args": [2, 0], "type": "f32", "shape": )" + s + R"(}], "outputs": [3, 4]})");
  auto x = random(size_t(n), 51), y = random(size_t(n), 53);
  RunStats st;
  auto out = Executable::compile(Device::open(), g)->run_host({tensor(ir::DType::F32, {n}, x), tensor(ir::DType::F32, {n}, y)}, &st);
  EXPECT_EQ(st.dispatches, 1);
  for (int64_t k = 0; k < n; ++k) {
    const float m = float(x[size_t(k)]) * float(y[size_t(k)]);
    ASSERT_EQ(at(out[0], size_t(k)), double(-m)) << k;
    // A driver may contract x * y - x into one FMA (NVIDIA does once the loads are vectors).
    const double want = double(m - float(x[size_t(k)]));
    ASSERT_NEAR(at(out[1], size_t(k)), want, 1e-6 * (1 + std::fabs(want))) << k;
  }
}

// Long reductions into few outputs run as two kernels (split-reduction): a full f32 sum of
// exp(x) against a double reference, an s32 column max (exact, through the -2^31 padding)
// and an integer sum accumulated in s64 (exact), at a prime extent that needs padding.
TEST(RuntimeFusion, SplitReductionsMatchTheReference) {
  NXV_SKIP_WITHOUT(ir::DType::S64);
  const int64_t n = 1000003, rows = 100003;
  auto g = ir::parse_graph(R"({"version": 1, "name": "split", "nodes": [
    {"id": 0, "op": "parameter", "type": "f32", "shape": [)" + std::to_string(n) + R"(], "attrs": {"index": 0}},
    {"id": 1, "op": "parameter", "type": "s32", "shape": [)" + std::to_string(rows) + R"(, 3], "attrs": {"index": 1}},
    {"id": 2, "op": "exp", "args": [0], "type": "f32", "shape": [)" + std::to_string(n) + R"(]},
    {"id": 3, "op": "sum", "args": [2], "type": "f32", "shape": []},
    {"id": 4, "op": "reduce_max", "args": [1], "type": "s32", "shape": [1, 3], "attrs": {"axes": [0], "keep_axes": true}},
    {"id": 5, "op": "sum", "args": [1], "type": "s64", "shape": []}], "outputs": [3, 4, 5]})");
  auto exe = Executable::compile(Device::open(), g);
  auto x = random(size_t(n), 5, -2, 2);
  std::mt19937 rng(9);
  std::vector<int32_t> m(size_t(rows * 3));
  for (auto& v : m) v = int32_t(uint32_t(rng()) - (1u << 30));  // negative and positive, large (no signed overflow)
  HostTensor mt{{ir::DType::S32, {rows, 3}}, std::vector<uint8_t>(m.size() * 4)};
  std::memcpy(mt.data.data(), m.data(), mt.data.size());
  RunStats st;
  auto out = exe->run_host({tensor(ir::DType::F32, {n}, x), mt}, &st);
  double sum = 0;
  for (double v : x) sum += double(float(std::exp(v)));
  // f32 partial sums of ~1000 terms each: relative 1e-5 of the total.
  EXPECT_NEAR(at(out[0], 0), sum, 1e-5 * sum);
  int64_t isum = 0;
  int32_t cmax[3] = {INT32_MIN, INT32_MIN, INT32_MIN};
  for (int64_t i = 0; i < rows; ++i)
    for (int k = 0; k < 3; ++k) cmax[k] = std::max(cmax[k], m[size_t(i * 3 + k)]), isum += m[size_t(i * 3 + k)];
  for (int k = 0; k < 3; ++k) {
    int32_t got;
    std::memcpy(&got, out[1].data.data() + 4 * k, 4);
    EXPECT_EQ(got, cmax[k]);
  }
  int64_t got_sum;
  std::memcpy(&got_sum, out[2].data.data(), 8);
  EXPECT_EQ(got_sum, isum);
  EXPECT_LE(st.dispatches, 7);  // two per split reduction, fused producers, at most one reshape
}

}  // namespace
}  // namespace nxv::runtime
