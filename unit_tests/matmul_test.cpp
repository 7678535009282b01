// The tiled matrix multiplication (codegen/matmul.h) against the reference interpreter:
// every tile variant, on the default device (lavapipe in CI: its direct variant through
// the runtime, the staged one through run_spirv with another vendor's tile choice), over
// edge shapes (1, primes, non-multiples of the tile, an empty contraction, many batches),
// transposed and batched operands read in place, every element type, fused epilogues,
// convolutions and their gradients as Elixir lowers them; f32 products at each precision
// (the compile option); and which variant each target selects.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <utility>

#include <spirv/unified1/spirv.hpp>

#include "codegen/kernel.h"
#include "codegen/targets/launch.h"
#include "device_testing.h"
#include "ir/graph_writer.h"
#include "ir/interpreter.h"
#include "ir/json.h"
#include "ir/literal.h"
#include "passes/pass.h"
#include "runtime/runtime.h"
#include "spirv_testing.h"
#include "test_graphs.h"

namespace nxv {
namespace {

using ir::DType;

struct Case {
  int64_t batch, m, k, n;
  DType t;
  bool transpose_a = false, transpose_b = false;
  bool epilogue = false;  // relu(x·w + bias)
  std::optional<DType> cast = std::nullopt;  // the result converted to this type last
  // The transposed operands as transposes of parameters (Nx.transpose(w), which the dot's
  // kernel fuses), the dot contracting them as it does the others.
  bool transpose_nodes = false;
  bool computed_a = false;  // a read reversed: an operand gathered per element, as a convolution's windows
};

std::string name(const Case& c) {
  return std::string(ir::dtype_name(c.t)) + " " + std::to_string(c.batch) + "x" + std::to_string(c.m) + "x" +
         std::to_string(c.k) + "x" + std::to_string(c.n) + (c.transpose_a ? " aT" : "") + (c.transpose_b ? " bT" : "") +
         (c.epilogue ? " fused" : "") + (c.cast ? std::string(" as ") + ir::dtype_name(*c.cast) : "") +
         (c.transpose_nodes ? " transpose nodes" : "") + (c.computed_a ? " computed a" : "");
}

// dot of a [batch?, m, k] (or [batch?, k, m] read transposed) and b [batch?, k, n] (or
// [batch?, n, k]), contracting k in place, as Nx.dot lowers; or, transpose_nodes, through
// transposes of the transposed ones.
ir::Graph product(const Case& c) {
  const bool batched = c.batch > 1;
  auto with_batch = [&](ir::Shape s) {
    if (batched) s.insert(s.begin(), c.batch);
    return s;
  };
  const int64_t off = batched ? 1 : 0;
  ir::Shape as = with_batch(c.transpose_a ? ir::Shape{c.k, c.m} : ir::Shape{c.m, c.k});
  ir::Shape bs = with_batch(c.transpose_b ? ir::Shape{c.n, c.k} : ir::Shape{c.k, c.n});
  const ir::Shape out = with_batch({c.m, c.n});
  const ir::Shape batch_axes = batched ? ir::Shape{0} : ir::Shape{};
  ir::GraphWriter w("matmul");
  ir::NodeId a = w.param(0, c.t, as), b = w.param(1, c.t, bs);
  const ir::NodeId bias = w.param(2, c.t, {c.n});
  a = c.computed_a ? w.node("reverse", {a}, c.t, as, {{"axes", {0}}}) : w.node("as_type", {a}, c.t, as);
  auto transposed = [&](ir::NodeId x, bool transpose, ir::Shape& s) {
    if (!c.transpose_nodes || !transpose) return x;
    std::swap(s[size_t(off)], s[size_t(off) + 1]);
    return w.node("transpose", {x}, c.t, s, {{"axes", batched ? ir::Shape{0, 2, 1} : ir::Shape{1, 0}}});
  };
  a = transposed(a, c.transpose_a, as);
  b = transposed(b, c.transpose_b, bs);
  const bool read_a = c.transpose_a && !c.transpose_nodes, read_b = c.transpose_b && !c.transpose_nodes;
  ir::NodeId last = w.node("dot", {a, b}, c.t, out,
                           {{"contract_axes1", {off + (read_a ? 0 : 1)}}, {"contract_axes2", {off + (read_b ? 1 : 0)}},
                            {"batch_axes1", batch_axes}, {"batch_axes2", batch_axes}});
  if (c.epilogue) {
    const ir::NodeId broadcast = w.node("broadcast", {bias}, c.t, out, {{"shape", out}, {"axes", {int64_t(out.size()) - 1}}});
    last = w.node("max", {w.node("add", {last, broadcast}, c.t, out), w.scalar(0, c.t)}, c.t, out);
  }
  if (c.cast) last = w.node("as_type", {last}, *c.cast, out);
  return w.finish({last});
}

std::vector<ir::Literal> inputs_for(const ir::Graph& g, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::vector<ir::Literal> in;
  for (const auto* p : g.parameters()) {
    ir::Literal lit{p->type(), std::vector<uint8_t>(p->type().byte_size())};
    for (int64_t i = 0; i < p->type().num_elements(); ++i) {
      ir::Scalar v;
      if (ir::is_float(p->type().dtype)) v.f = double(int64_t(rng() % 17) - 8) / 8;  // exact in every float type
      else v.i = ir::is_signed_int(p->type().dtype) ? int64_t(rng() % 7) - 3 : int64_t(rng() % 7), v.is_integer = true;
      ir::set_element(lit, i, v);
    }
    in.push_back(std::move(lit));
  }
  return in;
}

// Small multiples of 1/8 keep every partial sum exact in f32 and f64 up to these sizes, so
// any order of summation gives the reference's bits; f16 and bf16 round their results once.
void expect_matches(const Case& c, const ir::Literal& got, const ir::Literal& want) {
  ASSERT_EQ(got.type, want.type) << name(c);
  const double tol = c.t == DType::F16 ? 2e-3 : c.t == DType::BF16 ? 1e-2 : 0;
  int bad = 0;
  for (int64_t i = 0; i < want.type.num_elements() && bad < 5; ++i) {
    const double g = ir::get_f64(got, i), w = ir::get_f64(want, i);
    if (std::fabs(g - w) > tol * std::max(1.0, std::fabs(w))) {
      ADD_FAILURE() << name(c) << ": element " << i << " is " << g << ", want " << w;
      ++bad;
    }
  }
}

std::vector<Case> cases() {
  std::vector<Case> cs;
  for (DType t : {DType::F32, DType::F64, DType::S32, DType::F16, DType::BF16, DType::S8, DType::U8})
    cs.push_back({1, 67, 45, 71, t});
  for (auto [m, k, n] : std::vector<std::array<int64_t, 3>>{{64, 64, 64}, {128, 32, 96}, {97, 131, 61}, {16, 1024, 16},
                                                             {1, 512, 1024}, {1024, 8, 1}, {63, 17, 129}})
    cs.push_back({1, m, k, n, DType::F32});
  cs.push_back({1, 70, 50, 90, DType::F32, true, false});
  cs.push_back({1, 70, 50, 90, DType::F32, false, true});
  cs.push_back({1, 70, 50, 90, DType::F64, true, true});
  cs.push_back({7, 33, 64, 40, DType::F32});
  cs.push_back({16, 64, 64, 64, DType::F32, false, true});  // attention's q · kᵀ
  cs.push_back({3, 40, 24, 72, DType::F64, true, false});
  cs.push_back({1, 65, 37, 130, DType::F32, false, false, true});
  cs.push_back({4, 48, 33, 48, DType::F64, false, true, true});
  cs.push_back({300, 16, 16, 64, DType::F32});  // many batches
  cs.push_back({1, 64, 0, 64, DType::F32});     // an empty contraction: zeros
  cs.push_back({1, 2048, 12, 2049, DType::F32});  // enough tiles for NVIDIA's largest
  cs.push_back({1, 2047, 9, 2048, DType::F64});
  // Mid-size products on NVIDIA (at least a 128x128 tile per SM, fewer than 2048² outputs):
  // 128x64 and 64x128 tiles of graph inputs, 128x128 of an operand gathered per element.
  cs.push_back({1, 1540, 20, 1540, DType::F32});
  cs.push_back({1, 1030, 20, 2100, DType::F32, false, false, true});
  cs.push_back({1, 1540, 20, 1540, DType::F32, false, false, false, std::nullopt, false, true});
  // Products of graph inputs with fewer 128x128 tiles than NVIDIA's SMs and 512 terms or
  // more: 64x128 tiles, at most one per SM, whose k-steps two groups of invocations share;
  // edge tiles in both directions, transposed, batched, with an epilogue. Then a contraction
  // that is not whole rounds of the two groups' k-steps: one group.
  cs.push_back({1, 530, 512, 1000, DType::F32});
  cs.push_back({1, 530, 528, 1000, DType::F32, true, true, true});
  cs.push_back({2, 290, 512, 1000, DType::F32, false, true});
  cs.push_back({1, 530, 520, 1000, DType::F32});
  // Edge tiles' stores, tested per row and per run of columns (a convolution's 784 windows
  // per image), or per element where the columns are not whole runs, with an epilogue.
  cs.push_back({2, 256, 40, 784, DType::F32});
  cs.push_back({1, 130, 24, 786, DType::F32, false, false, true});
  cs.push_back({3, 250, 16, 1030, DType::F32, false, true, true});
  // Operands read as vectors (rows multiples of 4 or 2) whose tiles and k-steps overrun them.
  cs.push_back({1, 128, 36, 132, DType::F32});
  cs.push_back({1, 130, 34, 66, DType::F64});
  cs.push_back({2, 36, 20, 44, DType::F64, true, false});
  // Operands read as 64-bit pairs (lavapipe) whose tiles and k-steps overrun them, batched.
  cs.push_back({1, 136, 72, 200, DType::F32});
  cs.push_back({4, 64, 40, 136, DType::F32});
  // f64 operands read as texels of two (lavapipe), batched, overrun by tiles and k-steps.
  cs.push_back({3, 66, 70, 34, DType::F64});
  // Transposed operands read as texels (lavapipe): the first along its rows (runs of rows at
  // one k), the second along the contraction, and both; primes and sides that the tiles and
  // k-steps overrun, a contraction shorter than a k-step, batches.
  cs.push_back({1, 132, 45, 100, DType::F32, true, false});
  cs.push_back({1, 128, 8, 260, DType::F32, true, false});
  cs.push_back({2, 98, 37, 74, DType::F64, true, false});
  cs.push_back({1, 67, 52, 97, DType::F32, false, true});
  cs.push_back({1, 256, 8, 256, DType::F32, false, true});
  cs.push_back({3, 61, 74, 59, DType::F64, false, true});
  cs.push_back({1, 68, 36, 131, DType::F32, true, true});
  cs.push_back({5, 34, 126, 62, DType::F64, true, true});
  // The same through transposes of parameters.
  cs.push_back({1, 132, 45, 100, DType::F32, true, false, false, std::nullopt, true});
  cs.push_back({3, 61, 74, 59, DType::F64, false, true, false, std::nullopt, true});
  cs.push_back({1, 68, 36, 131, DType::F32, true, true, true, std::nullopt, true});
  cs.push_back({5, 34, 126, 62, DType::F64, true, true, false, std::nullopt, true});
  // Rows or a contraction not a multiple of a texel's run: those operands are not texels.
  cs.push_back({1, 71, 64, 80, DType::F64, true, false});
  cs.push_back({1, 70, 51, 90, DType::F32, true, true});
  return cs;
}

TEST(Matmul, TiledProductsMatchTheReference) {
  auto dev = runtime::Device::open();
  for (const Case& c : cases()) {
    if (c.t == DType::F64 && !devtest::missing_feature(c.t).empty()) continue;
    ir::Graph g = product(c);
    auto in = inputs_for(g, unsigned(c.m * 131 + c.k * 7 + c.n));
    auto want = ir::interpret(g, in);
    auto exe = runtime::Executable::compile(dev, g);
    auto got = exe->run_host(in);
    expect_matches(c, got.at(0), want.at(0));
  }
}

// The lowered graph's one kernel holding the dot (its prologue and epilogue fused).
std::pair<ir::Graph, const ir::Node*> lowered(const ir::Graph& g) {
  ir::Graph low = g;
  passes::PassManager(passes::default_pipeline()).run(low);
  const ir::Node* kernel = nullptr;
  for (const auto& n : low.nodes)
    if (n.op == "kernel" && n.attrs.value("kind", std::string()) == "dot") kernel = &n;
  return {std::move(low), kernel};
}

// Every tile variant on the default device: its own through the runtime above, and each
// vendor's (the staged shared-memory kernels included) as a module run through run_spirv.
TEST(Matmul, EveryTargetsTilesRunCorrectlyOnThisDevice) {
  runtime::RuntimeOptions robust;
  robust.robust_buffer_access = true;
  auto dev = runtime::Device::open(robust);
  const auto& own = dev->info().caps;
  for (const std::string target : {"nvidia", "nvidia-12k", "amd", "generic", "lavapipe"}) {
    // The device's own features and limits under another vendor's tile choice: the module must run here.
    // nvidia-12k: shared memory for one set of staged slices only, not two.
    // No texel buffers: run_spirv binds storage buffers only, so lavapipe's tiles are its
    // broadcast kernels (f32 read as pairs), as beyond maxTexelBufferElements (its texel
    // kernels run above).
    codegen::DeviceCaps caps = own;
    caps.vendor_id = codegen::target_caps(target.substr(0, target.find('-'))).vendor_id;
    caps.compute_units = codegen::target_caps(target.substr(0, target.find('-'))).compute_units;
    caps.max_texel_buffer_elements = 0;
    if (target == "nvidia-12k") caps.max_shared_memory_bytes = 12 * 1024;
    for (const Case& c : cases()) {
      if ((c.t == DType::F64 && !own.float64 && !own.emulate_f64) || c.t == DType::F16 || c.t == DType::BF16 || c.t == DType::S8 ||
          c.t == DType::U8)
        continue;  // narrow storage types need device features the canned caps may not match
      ir::Graph g = product(c);
      auto [low, kernel] = lowered(g);
      ASSERT_NE(kernel, nullptr) << name(c);
      auto kb = codegen::compile_kernel(*kernel, low, caps);
      EXPECT_EQ(codegen::validate(kb.spirv, caps.api_version), "") << target << " " << name(c);
      auto in = inputs_for(g, unsigned(c.m * 131 + c.k * 7 + c.n));
      std::vector<runtime::BufferPtr> bufs;
      for (ir::NodeId a : kernel->args) {
        const int64_t index = low.node(a).attrs.value("index", int64_t(-1));
        ASSERT_GE(index, 0) << "the kernel reads a graph input only";
        bufs.push_back(dev->upload(in[index].type, in[index].data.data(), in[index].data.size()));
      }
      runtime::SpirvLaunch launch;
      launch.push_constants.assign(kb.push_constant_bytes, 0);
      for (int i = 0; i < 3; ++i) launch.group_count[i] = kb.group_count[i];
      auto out = runtime::run_spirv(dev, kb.spirv, bufs, kernel->results, launch);
      ir::Literal got{kernel->results[0], std::vector<uint8_t>(kernel->results[0].byte_size())};
      dev->download(*out[0], got.data.data(), got.data.size());
      expect_matches(c, got, ir::interpret(g, in).at(0));
    }
  }
}

// Products the cooperative-matrix kernel takes (each at least 2^18 multiply-adds): edge
// shapes (primes, non-multiples of the tiles, short contractions, a single row of tiles,
// few rows by many columns),
// operands read 16 bytes at a time and element by element, transposed, batched, fused.
std::vector<Case> cooperative_cases(DType t) {
  std::vector<Case> cs;
  for (auto [m, k, n] : std::vector<std::array<int64_t, 3>>{{64, 64, 64}, {128, 32, 96}, {97, 131, 61}, {16, 1024, 16},
                                                             {2048, 12, 2049}, {2048, 40, 2048}, {256, 8, 256}})
    cs.push_back({1, m, k, n, t});
  cs.push_back({1, 70, 50, 90, t, true, false});
  cs.push_back({1, 72, 56, 96, t, false, true});
  cs.push_back({1, 128, 64, 256, t, true, true});
  cs.push_back({7, 33, 200, 40, t});
  cs.push_back({300, 64, 64, 64, t, false, true});  // many batches
  cs.push_back({1, 65, 37, 130, t, false, false, true});
  cs.push_back({4, 128, 96, 128, t, false, true, true});
  cs.push_back({1, 64, 576, 3136, t});  // few rows and many columns, as a convolution's
  cs.push_back({2, 32, 27, 2050, t, true, false});
  // Large enough for the 128x256 tiles on NVIDIA: partial tiles in each direction with
  // contractions that are not whole k-steps, batched, transposed and fused; one row of tiles.
  cs.push_back({3, 1030, 70, 1400, t});
  cs.push_back({2, 1030, 70, 2100, t, true, true});
  cs.push_back({1, 2100, 50, 2060, t, false, false, true});
  cs.push_back({1, 64, 64, 65600, t});
  // Many tiles of a narrow product (attention's gradients: 64 or 128 columns by the keys, or
  // 64 rows): tiles as narrow, full and partial, transposed and fused.
  cs.push_back({130, 520, 40, 64, t});
  cs.push_back({130, 64, 40, 520, t, true, false});
  cs.push_back({82, 520, 40, 100, t, false, true});
  cs.push_back({150, 500, 24, 56, t, false, false, true});
  // Results of other widths than the operands': f32 and f64, transposed, fused, partial tiles.
  cs.push_back({1, 1030, 70, 1400, t, false, false, false, DType::F32});
  cs.push_back({2, 70, 50, 96, t, true, false, true, DType::F64});
  cs.push_back({1, 65, 37, 130, t, false, true, false, DType::F32});
  return cs;
}

// On lavapipe: the kernels an H100 would run, emitted for its canned caps (SPV_KHR opcodes,
// which only a driver that has them validates), and the same kernels for a device whose
// f16 fragments only VK_NV_cooperative_matrix lists: SPV_NV opcodes, validated here.
TEST(Matmul, CooperativeKernelsForNvidiaValidate) {
  const codegen::DeviceCaps khr = codegen::target_caps("nvidia");
  codegen::DeviceCaps nv_only = khr;
  auto& shapes = nv_only.cooperative_matrix_shapes;
  shapes.erase(std::remove_if(shapes.begin(), shapes.end(), [](const auto& s) { return !s.nv; }), shapes.end());
  for (auto& s : shapes) s.khr = false;
  for (bool nv : {false, true})
    for (DType t : {DType::F16, DType::BF16})
      for (const Case& c : cooperative_cases(t)) {
        const codegen::DeviceCaps& caps = nv ? nv_only : khr;
        auto [low, kernel] = lowered(product(c));
        ASSERT_NE(kernel, nullptr) << name(c);
        auto kb = codegen::compile_kernel(*kernel, low, caps);
        if (nv && t == DType::BF16) {  // no NV bf16 fragments: the SIMT tiles
          EXPECT_EQ(kb.launch.rfind("matmul", 0), 0u) << name(c) << ": " << kb.launch;
          continue;
        }
        EXPECT_EQ(kb.launch.rfind("cooperative matmul", 0), 0u) << name(c) << ": " << kb.launch;
        EXPECT_EQ(kb.launch.find(" nv fragments") != std::string::npos, nv) << name(c) << ": " << kb.launch;
        if (nv) {
          EXPECT_EQ(codegen::validate(kb.spirv, caps.api_version), "") << name(c);
        }
      }
}

// f16 operands read element by element (transposed, padded past the contraction, fused
// with a cast) are packed into fragments from the bits they were loaded with: no
// conversion to f32 and back (PackHalf2x16) in the NV kernels above.
TEST(Matmul, F16CooperativeOperandsPackFromTheirBits) {
  codegen::DeviceCaps caps = codegen::target_caps("nvidia");
  for (auto& s : caps.cooperative_matrix_shapes) s.khr = false, s.nv = true;
  int packed = 0;
  for (const Case& c : cooperative_cases(DType::F16)) {
    auto [low, kernel] = lowered(product(c));
    const auto kb = codegen::compile_kernel(*kernel, low, caps);
    if (kb.launch.rfind("cooperative matmul", 0) != 0) continue;
    ++packed;
    EXPECT_EQ(codegen::disassemble(kb.spirv).find("PackHalf2x16"), std::string::npos) << name(c);
  }
  EXPECT_GT(packed, 0);
}

// On a device with cooperative matrices (the H100), through the runtime: each product
// against the reference interpreter. Operands are small multiples of 1/8, exact in f16 and
// bf16 and in every f32 partial sum, so only the result's one rounding differs.
TEST(Matmul, CooperativeProductsMatchTheReference) {
  auto dev = runtime::Device::open();
  const auto& shapes = dev->info().caps.cooperative_matrix_shapes;
  if (shapes.empty()) GTEST_SKIP() << dev->info().name << " has no cooperative matrices";
  for (DType t : {DType::F16, DType::BF16}) {
    const auto component = t == DType::F16 ? codegen::MatrixComponent::F16 : codegen::MatrixComponent::BF16;
    if (std::none_of(shapes.begin(), shapes.end(), [&](const auto& s) { return s.operands == component; })) continue;
    for (const Case& c : cooperative_cases(t)) {
      ir::Graph g = product(c);
      auto in = inputs_for(g, unsigned(c.m * 131 + c.k * 7 + c.n));
      auto exe = runtime::Executable::compile(dev, g);
      expect_matches(c, exe->run_host(in).at(0), ir::interpret(g, in).at(0));
    }
  }
}

// f32 operands on bf16 cooperative matrices (the compile option `precision`, issue 16).

std::string launch_at(const Case& c, const codegen::DeviceCaps& caps, codegen::Precision p) {
  codegen::DeviceCaps with = caps;
  with.f32_products = p;
  auto [low, kernel] = lowered(product(c));
  return codegen::compile_kernel(*kernel, low, with).launch;
}

// On lavapipe: the kernels each precision gives f32 products on an H100 (its canned caps:
// KHR opcodes), and the same kernels for a device whose bf16 fragments only
// VK_NV_cooperative_matrix lists: NV opcodes, validated here with bf16 read as f16.
// Highest keeps the SIMT tiles, as does High below 2048^2 outputs (three products on small
// tiles are slower than exact f32), and targets without bf16 fragments ignore the option.
TEST(Matmul, F32PrecisionKernelsForNvidiaValidate) {
  using codegen::Precision;
  const codegen::DeviceCaps khr = codegen::target_caps("nvidia");
  codegen::DeviceCaps nv_only = khr;
  for (auto& s : nv_only.cooperative_matrix_shapes) s.khr = false, s.nv = true;
  for (const Case& c : cooperative_cases(DType::F32)) {
    EXPECT_EQ(launch_at(c, khr, Precision::Highest).rfind("matmul ", 0), 0u) << name(c);
    for (Precision p : {Precision::High, Precision::Default}) {
      if (p == Precision::High && c.batch * c.m * c.n < 2048 * 2048) {
        EXPECT_EQ(launch_at(c, khr, p), launch_at(c, khr, Precision::Highest)) << name(c);
        continue;
      }
      const std::string suffix = p == Precision::High ? "f32 operands as bf16 hi + lo (3 products)" : "f32 operands as bf16";
      EXPECT_NE(launch_at(c, khr, p).find("bf16>f32 fragments, " + suffix + ";"), std::string::npos)
          << name(c) << ": " << launch_at(c, khr, p);
      codegen::DeviceCaps caps = nv_only;
      caps.f32_products = p;
      auto [low, kernel] = lowered(product(c));
      auto kb = codegen::compile_kernel(*kernel, low, caps);
      EXPECT_NE(kb.launch.find("bf16>f32 nv fragments, " + suffix + ";"), std::string::npos) << name(c) << ": " << kb.launch;
      EXPECT_EQ(codegen::validate(spirvtest::bf16_as_f16(kb.spirv), caps.api_version), "") << name(c) << " " << to_string(p);
      for (const std::string target : {"lavapipe", "generic", "amd"})
        EXPECT_EQ(launch_at(c, codegen::target_caps(target), p), launch_at(c, codegen::target_caps(target), Precision::Highest))
            << target << " " << name(c);
    }
  }
}

// Inputs uniform in [-1, 1) (which bf16 does not hold exactly), and their magnitudes.
std::pair<std::vector<ir::Literal>, std::vector<ir::Literal>> uniform_inputs(const ir::Graph& g, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<ir::Literal> in, magnitude;
  for (const auto* p : g.parameters()) {
    ir::Literal lit{p->type(), std::vector<uint8_t>(p->type().byte_size())};
    ir::Literal abs = lit;
    for (int64_t i = 0; i < p->type().num_elements(); ++i) {
      ir::Scalar v;
      v.f = dist(rng);
      ir::set_element(lit, i, v);
      v.f = std::fabs(ir::get_f64(lit, i));
      ir::set_element(abs, i, v);
    }
    in.push_back(std::move(lit));
    magnitude.push_back(std::move(abs));
  }
  return {in, magnitude};
}

// On a device with bf16 cooperative matrices (the H100): f32 products at each precision
// against the reference interpreter (which accumulates in f64 and rounds once, so within
// 2^-24 of the f64 product). Each element within the method's bound of S = sum |a||b| over
// the contraction of K terms, the reference's own rounding (2^-24 |want|) added:
//   default: each operand rounded to bf16 (8 significant bits: 2^-8 relative each), so each
//            product within 2^-7 (and 2^-16), plus K f32 additions of the tensor cores,
//            allowed 2^-23 each (as if truncating): (2^-7 + 2^-16 + K 2^-23) S;
//   high:    a = hi + lo + r with |a - hi| <= 2^-8 |a| and |r| <= 2^-16 |a|; the terms
//            dropped (lo·lo, r·b, a·r) within 3 2^-16 S, plus 3K additions: (3 2^-16 + 3K 2^-23) S;
//   highest: the SIMT kernel's f32 additions, K 2^-23 S.
// Prints each precision's largest error relative to the largest |want| (the bench's figure).
// Elsewhere (lavapipe), the option is ignored: every precision gives highest's bits.
TEST(Matmul, F32PrecisionsMatchTheReference) {
  using codegen::Precision;
  auto dev = runtime::Device::open();
  const auto& shapes = dev->info().caps.cooperative_matrix_shapes;
  const bool bf16 = std::any_of(shapes.begin(), shapes.end(), [](const auto& s) {
    return s.operands == codegen::MatrixComponent::BF16 && s.accumulator == codegen::MatrixComponent::F32;
  });
  std::vector<Case> cs = cooperative_cases(DType::F32);
  cs.push_back({1, 128, 4096, 128, DType::F32});  // a long contraction
  if (!bf16) cs = {{1, 128, 32, 96, DType::F32}, {1, 97, 131, 61, DType::F32}, {1, 65, 37, 130, DType::F32, false, false, true}};
  for (const Case& c : cs) {
    ir::Graph g = product(c);
    auto [in, magnitude] = uniform_inputs(g, unsigned(c.m * 131 + c.k * 7 + c.n));
    const ir::Literal want = ir::interpret(g, in).at(0);
    const ir::Literal scale = ir::interpret(g, magnitude).at(0);  // S (plus |bias| where fused)
    runtime::CompileOptions highest;
    const ir::Literal exact = runtime::Executable::compile(dev, g, highest)->run_host(in).at(0);
    for (Precision p : {Precision::Highest, Precision::High, Precision::Default}) {
      runtime::CompileOptions opts;
      opts.precision = p;
      const ir::Literal got = runtime::Executable::compile(dev, g, opts)->run_host(in).at(0);
      if (!bf16) {
        EXPECT_EQ(got.data, exact.data) << name(c) << " " << to_string(p);
        continue;
      }
      const double K = double(c.k);
      const double bound = p == Precision::Default ? std::ldexp(1.0, -7) + std::ldexp(1.0, -16) + K * std::ldexp(1.0, -23)
                           : p == Precision::High  ? 3 * std::ldexp(1.0, -16) + 3 * K * std::ldexp(1.0, -23)
                                                   : K * std::ldexp(1.0, -23);
      double worst = 0, largest = 0;
      int bad = 0;
      for (int64_t i = 0; i < want.type.num_elements(); ++i) {
        const double g = ir::get_f64(got, i), w = ir::get_f64(want, i);
        worst = std::max(worst, std::fabs(g - w));
        largest = std::max(largest, std::fabs(w));
        if (!(std::fabs(g - w) <= bound * ir::get_f64(scale, i) + std::ldexp(std::fabs(w), -24)) && bad++ < 5)
          ADD_FAILURE() << name(c) << " " << to_string(p) << ": element " << i << " is " << g << ", want " << w;
      }
      std::printf("%-22s %-8s max |error| / max |want| = %.3g\n", name(c).c_str(), to_string(p).c_str(),
                  largest > 0 ? worst / largest : worst);
    }
  }
}

// f32 values that sums of many products of inputs given by inputs_for round differently
// in another order (gradients read sines and cosines): within 1e-4 of the reference,
// relative to the element's magnitude where that is above 1.
void expect_close(const std::string& what, const ir::Literal& got, const ir::Literal& want) {
  ASSERT_EQ(got.type, want.type) << what;
  int bad = 0;
  for (int64_t i = 0; i < want.type.num_elements() && bad < 5; ++i) {
    const double g = ir::get_f64(got, i), w = ir::get_f64(want, i);
    if (!(std::fabs(g - w) <= 1e-4 * std::max(1.0, std::fabs(w)))) {
      ADD_FAILURE() << what << ": element " << i << " is " << g << ", want " << w;
      ++bad;
    }
  }
}

// Convolutions and the gradients of sum(sin(conv)) with respect to input and kernel, as
// Elixir's compiler lowers them (graphs/conv_*.json, written by graphs/conv_graphs.exs):
// the dots read their patches through index maps of the padded input (an implicit GEMM:
// slices stacked per spatial axis), over strides, dilations of input and kernel, padding,
// feature and batch groups, and a weight gradient whose long contraction split-reduction
// splits, and the form that folds the images into the windows (Nx.Vulkan.Conv's, here of one
// image: a last tile of windows partly past the end; rows of 12 and of 7 windows, which
// runs of 4 cross). The
// whole graph on this device, then every dot kernel under each target's tile
// choice (the staged kernels included) through run_spirv, its inputs and its result
// evaluated by the interpreter on the graph as it is before fusion.
// Graph g on this device against the interpreter, then every dot kernel under the tile
// choice of each of `targets` (the staged kernels included) through run_spirv, its inputs
// and its result evaluated by the interpreter on the graph as it is before fusion. Returns
// how many of those kernels were tiled.
int check_dot_kernels(const std::shared_ptr<runtime::Device>& dev, const ir::Graph& g, const std::string& name,
                      unsigned seed, const std::vector<std::string>& targets) {
  const auto& own = dev->info().caps;
  const auto pipeline = passes::default_pipeline();
  const auto fuse = std::find(pipeline.begin(), pipeline.end(), "fuse");
  EXPECT_NE(fuse, pipeline.end());
  const std::vector<std::string> before(pipeline.begin(), fuse), after(fuse, pipeline.end());
  const auto in = inputs_for(g, seed);
  const auto want = ir::interpret(g, in);
  const auto got = runtime::Executable::compile(dev, g)->run_host(in);
  EXPECT_EQ(got.size(), want.size()) << name;
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) expect_close(name + " output " + std::to_string(i), got[i], want[i]);

  ir::Graph pre = g;
  passes::PassManager(before).run(pre);
  ir::Graph low = pre;
  passes::PassManager(after).run(low);
  int tiled = 0;
  for (const auto& kernel : low.nodes) {
    if (kernel.op != "kernel" || kernel.attrs.value("kind", std::string()) != "dot") continue;
    ir::Graph probe = pre;
    probe.outputs = kernel.args;
    probe.outputs.push_back(kernel.id);
    const auto values = ir::interpret(probe, in);
    for (const std::string& target : targets) {
      codegen::DeviceCaps caps = own;
      caps.vendor_id = codegen::target_caps(target).vendor_id;
      const std::string what = name + " " + target + " k" + std::to_string(kernel.id);
      auto kb = codegen::compile_kernel(kernel, low, caps);
      tiled += kb.launch.rfind("matmul", 0) == 0;
      EXPECT_EQ(codegen::validate(kb.spirv, caps.api_version), "") << what;
      std::vector<runtime::BufferPtr> bufs;
      for (size_t a = 0; a < kernel.args.size(); ++a)
        bufs.push_back(dev->upload(values[a].type, values[a].data.data(), values[a].data.size()));
      runtime::SpirvLaunch launch;
      launch.push_constants.assign(kb.push_constant_bytes, 0);
      for (int i = 0; i < 3; ++i) launch.group_count[i] = kb.group_count[i];
      auto out = runtime::run_spirv(dev, kb.spirv, bufs, kernel.results, launch);
      ir::Literal result{kernel.results[0], std::vector<uint8_t>(kernel.results[0].byte_size())};
      dev->download(*out[0], result.data.data(), result.data.size());
      expect_close(what, result, values.back());
    }
  }
  return tiled;
}

// Convolutions and the gradients of sum(sin(conv)) with respect to input and kernel, as
// Elixir's compiler lowers them (graphs/conv_*.json, written by graphs/conv_graphs.exs):
// the dots read their patches through index maps of the padded input (an implicit GEMM:
// slices stacked per spatial axis), over strides, dilations of input and kernel, padding,
// feature and batch groups, and a weight gradient whose long contraction split-reduction
// splits, and the form that folds the images into the windows (Nx.Vulkan.Conv's, here of one
// image: a last tile of windows partly past the end; rows of 12 and of 7 windows, which
// runs of 4 cross), whose tiles store each element where the transpose to channels first
// puts it. Each on every target's tiles (check_dot_kernels).
TEST(Matmul, ConvolutionsAndGradientsOnEveryTargetsTiles) {
  runtime::RuntimeOptions robust;
  robust.robust_buffer_access = true;
  auto dev = runtime::Device::open(robust);
  devtest::LeftOut left_out;
  for (const std::string name :
       {"same", "strided_dilated", "feature_groups", "batch_groups", "long_contraction", "folded", "folded_odd_rows"}) {
    const ir::Graph g = test_graph("conv_" + name + ".json");
    bool lacks = false;
    for (const auto& n : g.nodes)
      for (const auto& r : n.results) lacks = left_out(r.dtype) || lacks;
    if (lacks) continue;
    EXPECT_GE(check_dot_kernels(dev, g, name, 7, {"nvidia", "amd", "generic", "lavapipe"}), 2 * 4)
        << name << ": the forward and the weight gradient's dots are tiled on every target";
  }
  NXV_SKIP_IF_LEFT_OUT(left_out);
}

// A convolution of a ReLU's output whose padding NVIDIA's fusion keeps in memory
// (KernelBounds::pad_product_types, pad_product_work): under that target's code, on this
// device, the ReLU and the pad are one kernel and the product's gather reads its result,
// with the same result as the interpreter's. 8 images of 64 channels at 32x32 padded by 1
// on each side, 256 output channels: 2^30.2 multiply-adds, just over the bound, in tiles
// enough for the 64 compute units assumed (unsplit).
TEST(Matmul, ConvolutionPaddedInMemoryForTheProduct) {
  auto dev = runtime::Device::open();
  const int64_t b = 8, c = 64, h = 32, w = 32, o = 256;
  std::string nodes = R"({"id": 0, "op": "parameter", "type": "f32", "shape": )" + ir::shape_string({b, c, h, w}) + R"(, "attrs": {"index": 0}},
    {"id": 1, "op": "parameter", "type": "f32", "shape": )" + ir::shape_string({o, c, 9}) + R"(, "attrs": {"index": 1}},
    {"id": 2, "op": "constant", "type": "f32", "shape": [], "attrs": {"value": 0.0}},
    {"id": 6, "op": "max", "args": [0, 2], "type": "f32", "shape": )" + ir::shape_string({b, c, h, w}) + R"(},
    {"id": 3, "op": "pad", "args": [6, 2], "type": "f32", "shape": )" + ir::shape_string({b, c, h + 2, w + 2}) +
                      R"(, "attrs": {"config": [[0, 0, 0], [0, 0, 0], [1, 1, 0], [1, 1, 0]]}})";
  std::string taps;
  for (int64_t t = 0; t < 9; ++t) {
    nodes += R"(, {"id": )" + std::to_string(10 + t) + R"(, "op": "slice", "args": [3], "type": "f32", "shape": )" +
             ir::shape_string({b, c, h, w}) + R"(, "attrs": {"start": )" + ir::shape_string({0, 0, t / 3, t % 3}) + R"(, "lengths": )" +
             ir::shape_string({b, c, h, w}) + R"(, "strides": [1, 1, 1, 1]}})";
    taps += (t ? ", " : "") + std::to_string(10 + t);
  }
  nodes += R"(, {"id": 4, "op": "stack", "args": [)" + taps + R"(], "type": "f32", "shape": )" + ir::shape_string({b, c, 9, h, w}) +
           R"(, "attrs": {"axis": 2}},
    {"id": 5, "op": "dot", "args": [4, 1], "type": "f32", "shape": )" + ir::shape_string({b, h, w, o}) +
           R"(, "attrs": {"contract_axes1": [1, 2], "contract_axes2": [1, 2]}})";
  const ir::Graph g = ir::parse_graph(R"({"version": 1, "name": "padded", "nodes": [)" + nodes + R"(], "outputs": [5]})");
  runtime::CompileOptions nvidia;
  nvidia.as_vendor = codegen::target_caps("nvidia").vendor_id;
  nvidia.as_compute_units = 64;
  const auto exe = runtime::Executable::compile(dev, g, nvidia);
  int pads = 0, dots = 0;
  for (const auto& k : exe->lowered().nodes) {
    if (k.op != "kernel") continue;
    const auto fused = k.attrs.value("fused_nodes", std::vector<int64_t>{});
    pads += fused == std::vector<int64_t>{6, 3};
    dots += k.attrs.value("kind", std::string()) == "dot";
  }
  EXPECT_EQ(pads, 1) << "the ReLU and the pad are a kernel of their own";
  EXPECT_EQ(dots, 1) << "one product, unsplit";
  const auto in = inputs_for(g, 11);
  const auto want = ir::interpret(g, in);
  const auto got = exe->run_host(in);
  ASSERT_EQ(got.size(), 1u);
  expect_close("padded conv", got[0], want[0]);
}

// Operands that reshapes give axes of 1 (a convolution's kernel given a batch axis) are read
// in place, as vectors where the contraction runs through memory as one row, though its
// last axis (3 taps) is shorter than a vector; a reshape that drops an axis of 1 keeps
// the element reads. Products of 40, 400 and 4000 rows in f32 and f64, on every target's
// tiles.
TEST(Matmul, OperandsBehindAxesOfOneAreReadInPlace) {
  runtime::RuntimeOptions robust;
  robust.robust_buffer_access = true;
  auto dev = runtime::Device::open(robust);
  devtest::LeftOut left_out;
  const int64_t o = 64, c = 32;
  for (const std::string t : {"f32", "f64"}) {
    if (left_out(ir::parse_dtype(t))) continue;
    for (const int64_t n : {40, 400, 4000}) {
      for (const bool drops : {false, true}) {
        // x: [n, c, 3, 3] -> [1, n, c, 3, 3]; w: [o, c, 3, 3] -> [1, o, 1, c, 3, 3], or
        // [o, 1, c, 3, 3] -> [1, o, c, 3, 3] (an axis of 1 dropped).
        const ir::Shape ws = drops ? ir::Shape{o, 1, c, 3, 3} : ir::Shape{o, c, 3, 3};
        const ir::Shape wr = drops ? ir::Shape{1, o, c, 3, 3} : ir::Shape{1, o, 1, c, 3, 3};
        const std::string wc = drops ? "[2, 3, 4]" : "[3, 4, 5]";
        const std::string nodes =
            R"({"id": 0, "op": "parameter", "type": ")" + t + R"(", "shape": )" + ir::shape_string({n, c, 3, 3}) + R"(, "attrs": {"index": 0}},
    {"id": 1, "op": "parameter", "type": ")" + t + R"(", "shape": )" + ir::shape_string(ws) + R"(, "attrs": {"index": 1}},
    {"id": 2, "op": "reshape", "args": [0], "type": ")" + t + R"(", "shape": )" + ir::shape_string({1, n, c, 3, 3}) + R"(},
    {"id": 3, "op": "reshape", "args": [1], "type": ")" + t + R"(", "shape": )" + ir::shape_string(wr) + R"(},
    {"id": 4, "op": "dot", "args": [2, 3], "type": ")" + t + R"(", "shape": )" + ir::shape_string(drops ? ir::Shape{1, n, o} : ir::Shape{1, n, o, 1}) +
            R"(, "attrs": {"contract_axes1": [2, 3, 4], "contract_axes2": )" + wc + R"(, "batch_axes1": [0], "batch_axes2": [0]}})";
        const ir::Graph g = ir::parse_graph(R"({"version": 1, "name": "unit_axes", "nodes": [)" + nodes + R"(], "outputs": [4]})");
        const std::string what = t + " n=" + std::to_string(n) + (drops ? " dropping" : "");
        // (lavapipe's tiles read these as texels, which run_spirv does not bind: the whole
        // graph on this device runs them.)
        EXPECT_EQ(check_dot_kernels(dev, g, what, unsigned(n), {"nvidia", "amd", "generic"}), 3) << what;
      }
    }
  }
  NXV_SKIP_IF_LEFT_OUT(left_out);
}

// A product whose elements are moved before its epilogue (ir/dot_epilogue.h): batch axes
// and free axes of several dims, transposed keeping the last axis last, reshaped, then
// biased per output channel and rectified, in one tiled kernel that stores each element
// where the moves put it. Shapes past and short of every target's tiles (rows of 30 to 130
// windows, 40 to 70 channels), in f32 and f64 on every target's tiles, in f16 and
// bf16 on lavapipe's (the others convert 16-bit values with capabilities lavapipe lacks);
// and the moves alone (the kernel's result a transpose or a reshape of the product).
TEST(Matmul, MovedEpiloguesStoreWhereTheMovesPutEachElement) {
  runtime::RuntimeOptions robust;
  robust.robust_buffer_access = true;
  auto dev = runtime::Device::open(robust);
  devtest::LeftOut left_out;
  struct Moved {
    int64_t batch, out, k, images, windows;
    std::string t;
    int tail;  // 0: bias and relu after the moves; 1: the transpose alone; 2: a reshape alone
  };
  const std::vector<Moved> cases = {{1, 70, 33, 5, 50, "f32", 0}, {3, 48, 72, 2, 45, "f32", 0},  {2, 64, 40, 9, 30, "f32", 1},
                                    {1, 64, 19, 3, 130, "f32", 2}, {1, 70, 33, 5, 50, "f64", 0}, {2, 48, 40, 4, 37, "f16", 0},
                                    {1, 40, 48, 3, 61, "bf16", 1}};
  for (const Moved& c : cases) {
    const DType dt = ir::parse_dtype(c.t);
    if (left_out(dt)) continue;
    const std::string t = "\"" + c.t + "\"";
    const ir::Shape ws{c.batch, c.out, c.k}, xs{c.batch, c.k, c.images, c.windows};
    const ir::Shape ds{c.batch, c.out, c.images, c.windows}, ms{c.batch, c.images, c.out, c.windows};
    const ir::Shape rs{c.batch * c.images, c.out, c.windows};
    std::string nodes = R"({"id": 0, "op": "parameter", "type": )" + t + R"(, "shape": )" + ir::shape_string(ws) + R"(, "attrs": {"index": 0}},
      {"id": 1, "op": "parameter", "type": )" + t + R"(, "shape": )" + ir::shape_string(xs) + R"(, "attrs": {"index": 1}},
      {"id": 2, "op": "parameter", "type": )" + t + R"(, "shape": [)" + std::to_string(c.out) + R"(], "attrs": {"index": 2}},
      {"id": 3, "op": "dot", "args": [0, 1], "type": )" + t + R"(, "shape": )" + ir::shape_string(ds) + R"(, "attrs": {"contract_axes1": [2], "contract_axes2": [1], "batch_axes1": [0], "batch_axes2": [0]}},
      {"id": 4, "op": "transpose", "args": [3], "type": )" + t + R"(, "shape": )" + ir::shape_string(ms) + R"(, "attrs": {"axes": [0, 2, 1, 3]}},
      {"id": 5, "op": "reshape", "args": [4], "type": )" + t + R"(, "shape": )" + ir::shape_string(rs) + R"(},
      {"id": 6, "op": "broadcast", "args": [2], "type": )" + t + R"(, "shape": )" + ir::shape_string(rs) + R"(, "attrs": {"shape": )" + ir::shape_string(rs) + R"(, "axes": [1]}},
      {"id": 7, "op": "add", "args": [5, 6], "type": )" + t + R"(, "shape": )" + ir::shape_string(rs) + R"(},
      {"id": 8, "op": "constant", "type": )" + t + R"(, "shape": [], "attrs": {"value": 0.0}},
      {"id": 9, "op": "max", "args": [7, 8], "type": )" + t + R"(, "shape": )" + ir::shape_string(rs) + R"(},
      {"id": 10, "op": "reshape", "args": [3], "type": )" + t + R"(, "shape": [)" + std::to_string(c.batch * c.out) + ", " + std::to_string(c.images * c.windows) + R"(]})";
    const int output = c.tail == 0 ? 9 : c.tail == 1 ? 4 : 10;
    const ir::Graph g = ir::parse_graph(R"({"version": 1, "name": "moved", "nodes": [)" + nodes + R"(], "outputs": [)" +
                                        std::to_string(output) + "]}");
    const std::string what = c.t + " " + std::to_string(c.batch) + "x" + std::to_string(c.out) + "x" + std::to_string(c.k) + "x" +
                             std::to_string(c.images) + "x" + std::to_string(c.windows) + " tail " + std::to_string(c.tail);
    const std::vector<std::string> targets = ir::dtype_bits(dt) == 16 ? std::vector<std::string>{"lavapipe"}
                                                                      : std::vector<std::string>{"nvidia", "amd", "generic", "lavapipe"};
    const auto [low, kernel] = lowered(g);
    ASSERT_NE(kernel, nullptr) << what;
    EXPECT_EQ(std::vector<ir::NodeId>{kernel->id}, low.outputs) << what << ": the product's kernel computes the result";
    // (Emulated 64-bit products take one element per loop: codegen/targets/launch.cpp.)
    const int tiled = dev->info().caps.emulated(dt) ? 0 : int(targets.size());
    EXPECT_EQ(check_dot_kernels(dev, g, what, unsigned(c.out * 7 + c.windows), targets), tiled)
        << what << ": the product and its moves are one kernel, tiled where the type is not emulated, on every target";
  }
  NXV_SKIP_IF_LEFT_OUT(left_out);
}

// Which kernel each target selects, by shape.
TEST(Matmul, TargetsSelectTilesBySize) {
  auto launch_of = [](const Case& c, const std::string& target, uint32_t texels = 1u << 27) {
    auto [low, kernel] = lowered(product(c));
    codegen::DeviceCaps caps = codegen::target_caps(target);
    caps.max_texel_buffer_elements = texels;
    return codegen::compile_kernel(*kernel, low, caps).launch;
  };
  EXPECT_EQ(launch_of({1, 256, 256, 256, DType::F32}, "nvidia").rfind("matmul 32x32x32 tiles, 2x2 per invocation, staged", 0), 0u);
  EXPECT_EQ(launch_of({1, 1024, 256, 1024, DType::F32, false, false, false, std::nullopt, false, true}, "nvidia")
                .rfind("matmul 64x64x16 tiles, 4x4 per invocation, staged", 0),
            0u);
  EXPECT_EQ(launch_of({1, 256, 256, 256, DType::F64}, "nvidia").rfind("matmul 64x64x16 tiles, 4x4 per invocation, staged", 0), 0u);
  EXPECT_EQ(launch_of({1, 4096, 64, 4096, DType::F32}, "nvidia").rfind("matmul 128x128x8 tiles, 8x8 per invocation, staged, vectors of 4", 0), 0u);
  EXPECT_EQ(launch_of({1, 4096, 64, 4096, DType::F64}, "nvidia").rfind("matmul 128x128x8 tiles, 8x8 per invocation, staged, vectors of 2", 0), 0u);
  // Mid-size: as many 128x128 tiles as the SMs (132) and fewer than 2048² outputs. Graph
  // inputs take 128x64 tiles over 128 invocations (the longer side 128); an operand gathered
  // per element (a convolution's windows) 128x128, which reload its slices half as often,
  // unless 64x128 tiles fit one round of three per SM (1540²: 325 of them, where 169 of
  // 128x128 would leave 95 of the 264 places empty).
  EXPECT_EQ(launch_of({1, 1540, 64, 1540, DType::F32}, "nvidia").rfind("matmul 128x64x8 tiles, 8x8 per invocation, staged, vectors of 4; 128 invocations", 0), 0u);
  EXPECT_EQ(launch_of({1, 1030, 64, 2100, DType::F32}, "nvidia").rfind("matmul 64x128x8 tiles, 8x8 per invocation, staged, vectors of 4; 128 invocations", 0), 0u);
  EXPECT_EQ(launch_of({1, 1540, 64, 1540, DType::F32, false, false, false, std::nullopt, false, true}, "nvidia")
                .rfind("matmul 64x128x8 tiles, 8x8 per invocation, staged, vectors of 4; 128 invocations x 325 groups", 0),
            0u);
  EXPECT_EQ(launch_of({1, 1900, 64, 2048, DType::F32, false, false, false, std::nullopt, false, true}, "nvidia")
                .rfind("matmul 128x128x8 tiles, 8x8 per invocation, staged, vectors of 4; 256 invocations x 240 groups", 0),
            0u);
  EXPECT_EQ(launch_of({1, 1000, 64, 1000, DType::S32}, "nvidia").rfind("matmul 64x64x16 tiles", 0), 0u);
  // f32 products of graph inputs whose 128x128 tiles (two per SM) would leave SMs idle, with
  // fewer tiles than the 132 SMs (64 here, 48 in BERT-base's output projection at 1024 rows)
  // or a second and last wave under a fifth full (300, ViT-B/16's output projection), take
  // 64x128 over 128 invocations where that gives half the SMs a tile.
  const char* k64x128 = "matmul 64x128x8 tiles, 8x8 per invocation, staged, vectors of 4; 128 invocations";
  EXPECT_EQ(launch_of({1, 1000, 64, 1000, DType::F32}, "nvidia").rfind(k64x128, 0), 0u);
  EXPECT_EQ(launch_of({1, 6304, 768, 768, DType::F32}, "nvidia").rfind(k64x128, 0), 0u);
  // Where that is one tile per SM at most and the contraction 512 terms or more, two groups
  // of 128 invocations share the k-steps (BERT-base's output projection, 96 tiles; a 1024²
  // MLP layer, 128); not where the contraction is not whole rounds of their k-steps.
  const char* sliced = "matmul 64x128x8 tiles, 8x8 per invocation, staged, vectors of 4, k-steps in 2 slices; 256 invocations";
  EXPECT_EQ(launch_of({1, 1024, 768, 768, DType::F32}, "nvidia").rfind(sliced, 0), 0u);
  EXPECT_EQ(launch_of({1, 1024, 1024, 1024, DType::F32}, "nvidia").rfind(sliced, 0), 0u);
  EXPECT_EQ(launch_of({1, 1024, 520, 1024, DType::F32}, "nvidia").rfind(k64x128, 0), 0u);
  // Not where the second wave is fuller (512 tiles: BERT-large's output projection) ...
  EXPECT_EQ(launch_of({1, 8192, 64, 1024, DType::F32}, "nvidia").rfind("matmul 128x128x8 tiles", 0), 0u);
  // ... nor where 64x128 tiles would leave half the SMs idle (36: GPT-2's QKV projection of
  // one 128-token sequence), which takes 64x64: 72 of them, one for half the SMs or more.
  EXPECT_EQ(launch_of({1, 128, 768, 2304, DType::F32}, "nvidia").rfind("matmul 64x64x16 tiles, 4x4 per invocation", 0), 0u);
  // Fewer than 256 64x64 tiles: 32x32, unless the 64x64 tiles are one for half the SMs
  // (contractions below 1024 terms) or for every SM (1024 terms or more: an MLP's first
  // weight gradient at batch 1024). GPT-2's output projection of one sequence (24 tiles of
  // 64x64) and a 784 x 256 layer (52) keep 32x32.
  EXPECT_EQ(launch_of({1, 784, 1024, 1024, DType::F32}, "nvidia").rfind("matmul 64x64x16 tiles, 4x4 per invocation", 0), 0u);
  EXPECT_EQ(launch_of({1, 128, 768, 768, DType::F32}, "nvidia").rfind("matmul 32x32x32 tiles, 2x2 per invocation", 0), 0u);
  EXPECT_EQ(launch_of({1, 784, 512, 256, DType::F32}, "nvidia").rfind("matmul 32x32x32 tiles, 2x2 per invocation", 0), 0u);
  // Few columns (a convolution's output channels): tiles of their width.
  EXPECT_EQ(launch_of({1, 32768, 576, 64, DType::F32}, "nvidia").rfind("matmul 128x64x8 tiles, 8x8 per invocation, staged", 0), 0u);
  EXPECT_EQ(launch_of({1, 32768, 288, 32, DType::F32}, "nvidia").rfind("matmul 128x32x8 tiles, 8x8 per invocation, staged", 0), 0u);
  EXPECT_EQ(launch_of({1, 256, 256, 256, DType::F32}, "lavapipe").rfind("matmul 64x32x16 tiles, 8x4 per invocation, direct, texels;", 0), 0u);
  // Operands of more texels than a texel buffer holds: read as pairs through storage buffers.
  EXPECT_EQ(launch_of({1, 256, 256, 256, DType::F32}, "lavapipe", 256 * 256 / 4 - 1)
                .rfind("matmul 128x64x32 tiles, 16x8 per invocation, subgroup broadcast, vectors of 2 pairs;", 0),
            0u);
  EXPECT_EQ(launch_of({1, 256, 256, 256, DType::F64}, "lavapipe").rfind("matmul 64x32x16 tiles, 8x4 per invocation, direct, texels;", 0), 0u);
  // Transposed operands as texels too: the first along its rows, the second along the contraction.
  for (const auto& [a, b] : std::vector<std::pair<bool, bool>>{{true, false}, {false, true}, {true, true}})
    for (DType t : {DType::F32, DType::F64})
      for (bool nodes : {false, true}) {
        const Case c{1, 256, 256, 256, t, a, b, false, std::nullopt, nodes};
        EXPECT_EQ(launch_of(c, "lavapipe").rfind("matmul 64x32x16 tiles, 8x4 per invocation, direct, texels;", 0), 0u) << name(c);
      }
  // Rows that are not whole texels (odd) in a first operand read across the contraction: subgroup broadcasts.
  EXPECT_EQ(launch_of({1, 255, 256, 256, DType::F64, true}, "lavapipe").rfind("matmul 128x32x8 tiles, 16x4 per invocation, subgroup broadcast;", 0), 0u);
  // A contraction that is not whole texels in a second operand read along it: pairs.
  EXPECT_EQ(launch_of({1, 256, 254, 256, DType::F32, false, true}, "lavapipe").rfind("matmul 128x64x32 tiles, 16x8 per invocation, subgroup broadcast, vectors of 2 pairs;", 0), 0u);
  EXPECT_EQ(launch_of({1, 256, 256, 256, DType::F64}, "generic").rfind("matmul 64x64x8 tiles", 0), 0u);
  // f16 and bf16 on the tensor cores where the device lists their fragments; elsewhere the SIMT tiles.
  EXPECT_EQ(launch_of({1, 4096, 4096, 4096, DType::F16}, "nvidia"),
            "cooperative matmul 128x256x32 tiles, 2x4 subgroups of 16x16x16 f16>f32 fragments; 256 invocations x 512 groups");
  EXPECT_EQ(launch_of({1, 1024, 1024, 1024, DType::F16}, "nvidia"),
            "cooperative matmul 64x64x32 tiles, 2x2 subgroups of 16x16x16 f16>f32 fragments; 128 invocations x 256 groups");
  EXPECT_EQ(launch_of({1, 4096, 4096, 4096, DType::BF16}, "nvidia").rfind("cooperative matmul 128x256x32 tiles, 2x4 subgroups of 16x16x16 bf16>f32 fragments", 0), 0u);
  // Many tiles of a narrow product (attention's gradients at 512 keys, head dims 64 and 128)
  // take tiles as narrow; 64x64 where both sides are.
  EXPECT_EQ(launch_of({256, 512, 512, 64, DType::BF16}, "nvidia"),
            "cooperative matmul 256x64x32 tiles, 4x2 subgroups of 16x16x16 bf16>f32 fragments; 256 invocations x 512 groups");
  EXPECT_EQ(launch_of({256, 64, 512, 512, DType::F16}, "nvidia"),
            "cooperative matmul 64x256x32 tiles, 2x4 subgroups of 16x16x16 f16>f32 fragments; 256 invocations x 512 groups");
  EXPECT_EQ(launch_of({128, 512, 512, 128, DType::BF16}, "nvidia"),
            "cooperative matmul 256x128x32 tiles, 4x2 subgroups of 16x16x16 bf16>f32 fragments; 256 invocations x 256 groups");
  EXPECT_EQ(launch_of({1100, 64, 64, 64, DType::F16}, "nvidia"),
            "cooperative matmul 64x64x32 tiles, 2x2 subgroups of 16x16x16 f16>f32 fragments; 128 invocations x 1100 groups");
  EXPECT_EQ(launch_of({1, 256, 256, 256, DType::F16}, "lavapipe").rfind("matmul 128x32x8 tiles, 16x4 per invocation, subgroup broadcast", 0), 0u);
  EXPECT_EQ(launch_of({1, 256, 256, 256, DType::F16}, "amd").rfind("matmul 64x64x16 tiles", 0), 0u);
  // Matrix-vector products and tiny ones stay per element.
  EXPECT_EQ(launch_of({1, 1024, 1024, 1, DType::F32}, "nvidia").find("matmul"), std::string::npos);
  EXPECT_EQ(launch_of({1, 8, 8, 8, DType::F32}, "nvidia").find("matmul"), std::string::npos);
}

}  // namespace
}  // namespace nxv
