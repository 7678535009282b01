// Fused attention (codegen/attention.h) on the device against the reference interpreter's
// unfused graph: softmax(q·kᵀ·scale [+ bias] [masked]) · v as Nx writes it, compiled for
// NVIDIA's code path (as_vendor) so that fuse-attention forms one kernel, over edge shapes:
// one row, primes, lengths no tile divides, head dims no lane count divides, rows a mask
// blanks (NaN, as Nx's 0/0), and infinities in v behind masked keys (0 * inf).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "codegen/kernel.h"
#include "codegen/target.h"
#include "device_testing.h"
#include "ir/graph_writer.h"
#include "ir/interpreter.h"
#include "ir/literal.h"
#include "passes/pass.h"
#include "runtime/runtime.h"
#include "spirv_testing.h"

namespace nxv::runtime {
namespace {

using ir::DType;

struct Case {
  ir::Shape batch;
  int64_t sq, sk, d, dv;
  DType t = DType::F32;
  bool mask = false, bias = false, causal = false, k_transposed = false, divide = false;
  int64_t offset = 0;  // causal: key j kept for row i where j <= i + offset
  double magnitude = 1;  // of v's entries, to which the tolerance is relative
  double scale = 0;      // the scores' factor; 0: 1/sqrt(d)
};

ir::Shape with(ir::Shape s, std::initializer_list<int64_t> tail) {
  s.insert(s.end(), tail);
  return s;
}

ir::Shape axes(int64_t first, int64_t count) {
  ir::Shape a;
  for (int64_t i = 0; i < count; ++i) a.push_back(first + i);
  return a;
}

// The graph as Nx.Defn gives it: parameters q, k (or kᵀ), v, then the mask and the bias.
ir::Graph attention_graph(const Case& c) {
  using ir::NodeId;
  const DType t = c.t;
  const int64_t nb = int64_t(c.batch.size());
  const ir::Shape scores = with(c.batch, {c.sq, c.sk}), rows = with(c.batch, {c.sq, 1});
  const nlohmann::json batch_axes = axes(0, nb);
  ir::GraphWriter w("attention");
  const NodeId q = w.param(0, t, with(c.batch, {c.sq, c.d}));
  const NodeId k = w.param(1, t, c.k_transposed ? with(c.batch, {c.d, c.sk}) : with(c.batch, {c.sk, c.d}));
  const NodeId v = w.param(2, t, with(c.batch, {c.sk, c.dv}));
  int index = 3;
  const NodeId mask = c.mask ? w.param(index++, DType::U8, {c.sq, c.sk}) : -1;
  const NodeId bias = c.bias ? w.param(index++, t, {c.sq, c.sk}) : -1;
  NodeId s = w.node("dot", {q, k}, t, scores,
                    {{"contract_axes1", {nb + 1}}, {"batch_axes1", batch_axes}, {"contract_axes2", {c.k_transposed ? nb : nb + 1}},
                     {"batch_axes2", batch_axes}});
  const double scale = c.scale ? c.scale : 1 / std::sqrt(double(c.d));
  s = w.node(c.divide ? "divide" : "multiply", {s, w.scalar(c.divide ? 1 / scale : scale, t)}, t, scores);
  if (c.bias) s = w.node("add", {s, bias}, t, scores);
  NodeId keep = mask;
  if (c.causal) {
    const NodeId row = w.node("iota", {}, DType::S32, {c.sq, 1}, {{"axis", 0}});
    const NodeId last = w.node("add", {row, w.scalar(double(c.offset), DType::S32)}, DType::S32, {c.sq, 1});
    const NodeId col = w.node("iota", {}, DType::S32, {1, c.sk}, {{"axis", 1}});
    keep = w.node("greater_equal", {last, col}, DType::U8, {c.sq, c.sk});
  }
  if (keep >= 0) {
    keep = w.node("broadcast", {keep}, DType::U8, scores, {{"shape", scores}, {"axes", axes(nb, 2)}});
    s = w.node("select", {keep, s, w.scalar(-INFINITY, t)}, t, scores);
  }
  const nlohmann::json last_axis = {{"axes", {nb + 1}}, {"keep_axes", true}};
  const NodeId m = w.node("reduce_max", {s}, t, rows, last_axis);
  const NodeId e = w.node("exp", {w.node("subtract", {s, m}, t, scores)}, t, scores);
  const NodeId l = w.node("sum", {e}, t, rows, last_axis);
  const NodeId p = w.node("divide", {e, l}, t, scores);
  const NodeId out = w.node("dot", {p, v}, t, with(c.batch, {c.sq, c.dv}),
                            {{"contract_axes1", {nb + 1}}, {"batch_axes1", batch_axes}, {"contract_axes2", {nb}}, {"batch_axes2", batch_axes}});
  return w.finish({out});
}

ir::Literal random_literal(const ir::TensorType& type, std::mt19937& rng, double lo, double hi) {
  ir::Literal lit{type, std::vector<uint8_t>(size_t(type.byte_size()))};
  std::uniform_real_distribution<double> d(lo, hi);
  for (int64_t i = 0; i < type.num_elements(); ++i) {
    ir::Scalar s;
    if (type.dtype == DType::U8) {
      s.i = d(rng) < 0.75;  // mostly kept
      s.is_integer = true;
    } else {
      s.f = d(rng);
    }
    ir::set_element(lit, i, s);
  }
  return lit;
}

// f32: the kernel adds the terms in another order than the unfused graph and rescales them
// as its running maximum grows (a rounding per slice of keys), and NVIDIA's Exp may be
// 3 + 2|x| ulp off (Vulkan's bound): outputs, averages of v's entries in [-1, 1], within
// 3e-5. f16 and bf16: the kernel keeps scores and probabilities in f32 where the unfused
// graph rounds each to the type, so they differ by a few of the type's ulp.
double tolerance(DType t) { return t == DType::F16 ? 4e-3 : t == DType::BF16 ? 3e-2 : 3e-5; }

// Whether `bounds` leave this attention to products and a row softmax: unmasked f32 over
// separate_attention_keys or more, or of separate_attention_work multiply-adds
// (NvidiaRunsLongUnmaskedF32AttentionUnfused; the cases here stay within
// separate_attention_bytes).
bool runs_as_products(const Case& c, const passes::KernelBounds& bounds) {
  const int64_t work = ir::num_elements(c.batch) * c.sq * c.sk * (c.d + c.dv);
  const bool long_rows = bounds.separate_attention_keys > 0 && c.sk >= bounds.separate_attention_keys;
  const bool large = bounds.separate_attention_work > 0 && work >= bounds.separate_attention_work;
  return c.t == DType::F32 && (long_rows || large) && !c.mask && !c.bias && !c.causal;
}

// Whether fuse-attention forms the node for this device under NVIDIA's code path: its rows
// within the kernel's shared memory, its operands and result within the buffers a kernel
// may bind (a profile such as vulkan-minimum allows 4: mask and bias then leave it unfused),
// not long unmasked f32 attention (NvidiaRunsLongUnmaskedF32AttentionUnfused), and not f64
// where it is emulated (the unfused kernels' smaller modules).
bool fuses(const Case& c) {
  codegen::DeviceCaps caps = devtest::device()->info().caps;
  caps.vendor_id = 0x10DE;
  const auto bounds = codegen::kernel_bounds(caps);
  const int64_t bytes = c.t == DType::F64 ? 8 : 4;
  return std::max(c.d, c.dv) * bytes <= bounds.attention_row_bytes && size_t(4 + c.mask + c.bias) <= bounds.max_bindings &&
         !runs_as_products(c, bounds) && !(c.t == DType::F64 && bounds.emulated_f64_code > 1);
}

void check(const Case& c, const std::function<void(std::vector<ir::Literal>&)>& edit = {}) {
  const ir::Graph g = attention_graph(c);
  SCOPED_TRACE("batch " + ir::shape_string(c.batch) + " sq " + std::to_string(c.sq) + " sk " + std::to_string(c.sk) + " d " +
               std::to_string(c.d) + " dv " + std::to_string(c.dv) + " " + ir::dtype_name(c.t));
  std::mt19937 rng(unsigned(c.sq * 131 + c.sk * 7 + c.d));
  std::vector<ir::Literal> inputs;
  for (const auto* p : g.parameters()) inputs.push_back(random_literal(p->type(), rng, -1, 1));
  if (edit) edit(inputs);
  const std::vector<ir::Literal> want = ir::interpret(g, inputs);
  CompileOptions opts;
  opts.as_vendor = 0x10DE;
  auto exe = Executable::compile(devtest::device(), g, opts);
  RunStats st;
  const auto got = exe->run_host(inputs, &st);
  // One kernel; k read transposed counts no extra dispatch (an index map in its prologue).
  // Unfused: the scores' product, the softmax rows and the product with v at least.
  if (fuses(c)) EXPECT_EQ(st.dispatches, 1);
  else EXPECT_GE(st.dispatches, 3);
  ASSERT_EQ(got.size(), 1u);
  const double tol = tolerance(c.t);
  int bad = 0;
  for (int64_t i = 0; i < want[0].type.num_elements() && bad < 5; ++i) {
    const double w = ir::get_f64(want[0], i), v = ir::get_f64(got[0], i);
    const bool ok = std::isnan(w) ? std::isnan(v) : std::isinf(w) ? v == w : std::fabs(v - w) <= tol * (c.magnitude + std::fabs(w));
    if (!ok) {
      ++bad;
      ADD_FAILURE() << "element " << i << ": " << v << ", want " << w;
    }
  }
}

// A NaN in row 3 of q makes that row's scores NaN, an inf in row 2 makes its scores ±inf
// (a maximum of +inf, so inf - inf): both rows NaN as Nx's max and exp give them, the other
// rows untouched.
void check_nan_and_inf_scores(const Case& c) {
  if (c.sq < 4) return;
  check(c, [&](std::vector<ir::Literal>& in) {
    ir::set_element(in[0], 3 * c.d, ir::Scalar{NAN, 0, false});
    ir::set_element(in[0], 2 * c.d + 1, ir::Scalar{INFINITY, 0, false});
  });
}

TEST(Attention, EdgeShapes) {
  for (const Case& c : std::vector<Case>{{{}, 1, 1, 8, 8},
                                         {{2}, 7, 13, 8, 8},
                                         {{1, 3}, 67, 67, 64, 64},
                                         {{2}, 33, 50, 24, 40},
                                         {{3}, 5, 130, 16, 9},
                                         {{1}, 97, 31, 128, 128}}) {
    check(c);
    check_nan_and_inf_scores(c);
  }
}

// n, 10n, 100n keys: the online softmax over 1, 10 and 100 slices of keys. Unmasked, 4000
// keys run unfused on NVIDIA; a causal mask that keeps every key keeps them in the kernel.
TEST(Attention, LongSequences) {
  for (int64_t s : {40, 400, 4000}) {
    Case c{{1}, 40, s, 32, 32};
    check(c);
    c.causal = true;
    c.offset = s;
    check(c);
  }
}

TEST(Attention, Causal) {
  for (int64_t offset : {0, 3, -2}) {
    Case c{{2}, 70, 70, 32, 32};
    c.causal = true;
    c.offset = offset;
    check(c);  // offset -2: rows 0 and 1 keep nothing, NaN as in Nx
  }
  Case wide{{1}, 20, 90, 16, 16};
  wide.causal = true;
  wide.offset = 70;
  check(wide);
}

// v near the type's largest: Nx divides the probabilities before the product, so each row
// is an average of v and finite; a kernel that divides the weighted sum only at the end
// must keep that sum from overflowing (two keys of v = 3e38 and equal scores gave inf).
TEST(Attention, ValuesNearTheLargestStayFinite) {
  for (DType t : {DType::F32, DType::F64}) {
    if (!devtest::missing_feature(t).empty()) continue;
    const double big = t == DType::F32 ? 3e38 : 1.7e308;
    Case two{{}, 2, 2, 8, 8, t}, many{{2}, 33, 300, 16, 16, t};
    many.causal = true;  // keeps every key, and fused on NVIDIA's path at 300 keys too
    many.offset = 300;
    two.magnitude = many.magnitude = big;
    for (const Case& c : {two, many})
      check(c, [&](std::vector<ir::Literal>& in) {
        for (int64_t i = 0; i < in[2].type.num_elements(); ++i) {
          const double x = ir::get_f64(in[2], i);
          ir::set_element(in[2], i, ir::Scalar{c.sk == 2 ? big : big * x, 0, false});
        }
        if (c.sk == 2)  // equal scores: both keys weigh 1/2
          for (int64_t i = 0; i < in[1].type.num_elements(); ++i) ir::set_element(in[1], i, ir::Scalar{0, 0, false});
      });
  }
}

// A row the mask blanks is NaN; an inf in v behind a masked key is 0 * inf = NaN in the
// rows that mask it, inf in the others.
void check_blank_row_and_inf(const Case& c) {
  check(c, [&](std::vector<ir::Literal>& in) {
    ir::Scalar zero{0, 0, true}, one{0, 1, true}, inf{INFINITY, 0, false};
    for (int64_t j = 0; j < c.sk; ++j) ir::set_element(in[3], 4 * c.sk + j, zero);
    for (int64_t i = 0; i < c.sq; ++i) ir::set_element(in[3], i * c.sk + 5, i % 2 ? one : zero);
    ir::set_element(in[2], 5 * c.dv + 3, inf);
  });
}

// A NaN score beside keys the mask drops: k's key 0 NaN, and row 6 keeps key 0 and keys 64
// on, so that its first slice of keys (16 to 64 wide) holds the NaN and -inf only. Nx's max
// is NaN there and so is the row; a maximum that passed the NaN over would leave that
// slice's probabilities 0 and the row finite.
void check_nan_beside_masked_keys(const Case& c) {
  check(c, [&](std::vector<ir::Literal>& in) {
    ir::Scalar zero{0, 0, true}, one{0, 1, true};
    ir::set_element(in[1], 0, ir::Scalar{NAN, 0, false});
    for (int64_t j = 0; j < c.sk; ++j) ir::set_element(in[3], 6 * c.sk + j, j == 0 || j >= 64 ? one : zero);
  });
}

TEST(Attention, MaskBiasAndDivide) {
  Case c{{2}, 45, 77, 16, 24};
  c.mask = c.bias = c.divide = true;
  check(c);
  check_blank_row_and_inf(c);
  check_nan_beside_masked_keys(c);
}

TEST(Attention, TransposedKey) {
  Case c{{2, 2}, 50, 50, 32, 32};
  c.k_transposed = true;
  check(c);
}

// f16 and bf16: on a device with cooperative matrices (the H100's KHR fragments) the
// cooperative kernel, elsewhere the SIMT one, over the edge shapes: head dims the fragments
// do not divide (padded with zeros), rows past the last tile's, masks, bias, causal
// offsets, k read transposed, many slices of keys.
std::vector<Case> half_cases(DType t) {
  std::vector<Case> cs{{{}, 1, 1, 8, 8, t},       {{2}, 7, 13, 8, 8, t},     {{1, 3}, 67, 67, 64, 64, t},
                       {{2}, 33, 50, 24, 40, t},   {{3}, 5, 130, 16, 9, t},   {{1}, 97, 31, 128, 128, t},
                       {{1}, 40, 1000, 64, 64, t}};
  Case causal{{2}, 37, 70, 32, 32, t};
  causal.causal = true;
  cs.push_back(causal);
  causal.offset = -2;  // rows 0 and 1 keep nothing: NaN
  cs.push_back(causal);
  Case masked{{2}, 45, 77, 16, 24, t};
  masked.mask = masked.bias = masked.divide = true;
  cs.push_back(masked);
  Case transposed{{2, 2}, 50, 50, 32, 32, t};
  transposed.k_transposed = true;
  cs.push_back(transposed);
  return cs;
}

TEST(Attention, HalfTypes) {
  for (DType t : {DType::F16, DType::BF16}) {
    if (!devtest::missing_feature(t).empty()) continue;
    for (const Case& c : half_cases(t)) {
      check(c);
      check_nan_and_inf_scores(c);
      if (c.mask) check_blank_row_and_inf(c), check_nan_beside_masked_keys(c);
    }
  }
}

// Maxima that move late: keys at a quarter, half and three quarters of 400 (and 130) hold
// k = 4, 8, 12 in every component, so a row's running maximum jumps there, after slices
// where it moved little or not at all, by an amount that depends on the row (its q's sum,
// either sign): the outputs summed so far are rescaled by factors far from 1.
TEST(Attention, MaximaMovingLate) {
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    if (!devtest::missing_feature(t).empty()) continue;
    Case long_rows{{2}, 37, 400, 32, 32, t}, short_rows{{1}, 70, 130, 64, 64, t};
    long_rows.causal = true, long_rows.offset = 400;  // every key kept, fused on NVIDIA's path
    for (const Case& c : {long_rows, short_rows})
      check(c, [&](std::vector<ir::Literal>& in) {
        for (int64_t step = 1; step <= 3; ++step)
          for (int64_t i = 0; i < c.d; ++i)
            ir::set_element(in[1], step * c.sk / 4 * c.d + i, ir::Scalar{4.0 * double(step), 0, false});
      });
  }
}

// Nx computes f16 scores in f16: a product past f16's largest is inf there. Row 2's q and
// key 1 of 300 each (a product of 90,000 per component): row 2 NaN (inf - inf) even though
// scaled by 1/sqrt(d) it would fit; row 3's -300 gives -inf, key 1 weighs 0. The same
// with a bias, and scaled up by 8, where the scaled score overflows.
TEST(Attention, F16ScoresOverflowAsInNx) {
  if (!devtest::missing_feature(DType::F16).empty()) GTEST_SKIP() << devtest::missing_feature(DType::F16);
  Case plain{{2}, 9, 13, 8, 8, DType::F16}, biased = plain;
  biased.mask = biased.bias = true;
  auto big = [](const Case& c, double at) {
    return [c, at](std::vector<ir::Literal>& in) {
      for (int64_t j = 0; j < c.d; ++j) {
        ir::set_element(in[0], 2 * c.d + j, ir::Scalar{at, 0, false});
        ir::set_element(in[0], 3 * c.d + j, ir::Scalar{-at, 0, false});
        ir::set_element(in[1], 1 * c.d + j, ir::Scalar{at, 0, false});
      }
    };
  };
  check(plain, big(plain, 300));
  check(biased, big(biased, 300));
  // Scores of 32,768 fit; scaled by 8 they do not.
  Case up = plain;
  up.scale = 8;
  for (int64_t d : {8, 128}) {
    up.d = d;
    check(up, big(up, d == 8 ? 64 : 16));
  }
}

// The kernel of a lowered graph that computes an attention node, or null.
const ir::Node* attention_kernel(const ir::Graph& low) {
  for (const auto& n : low.nodes)
    if (n.op == "kernel" && n.regions.count("body"))
      for (const auto& b : n.regions.at("body")->nodes)
        if (b.op == "attention") return &n;
  return nullptr;
}

// NVIDIA's bounds leave unmasked f32 attention over 512 keys or more, or of 2^30
// multiply-adds or more, to products and a row softmax, faster there than its fused
// kernel, while the scores fit separate_attention_bytes; shorter and smaller, masked,
// causal and f16 attention fuse.
TEST(Attention, NvidiaRunsLongUnmaskedF32AttentionUnfused) {
  const passes::KernelBounds nvidia = codegen::kernel_bounds(codegen::target_caps("nvidia"));
  ASSERT_EQ(nvidia.separate_attention_keys, 512);
  auto fused = [](Case c, int64_t bytes) {
    passes::KernelBounds bounds = codegen::kernel_bounds(codegen::target_caps("nvidia"));
    bounds.separate_attention_bytes = bytes;
    ir::Graph low = attention_graph(c);
    passes::PassManager(passes::default_pipeline(), bounds).run(low);
    return attention_kernel(low) != nullptr;
  };
  const Case long_f32{{2}, 100, 512, 64, 64};
  const int64_t scores = 2 * 100 * 512 * 4;
  EXPECT_FALSE(fused(long_f32, scores));
  EXPECT_TRUE(fused(long_f32, scores - 1));
  EXPECT_TRUE(fused({{2}, 100, 511, 64, 64}, scores));
  Case c = long_f32;
  c.causal = true;
  EXPECT_TRUE(fused(c, scores));
  c = long_f32;
  c.mask = true;
  EXPECT_TRUE(fused(c, scores));
  c = long_f32;
  c.bias = true;
  EXPECT_TRUE(fused(c, scores));
  c = long_f32;
  c.t = DType::F16;
  EXPECT_TRUE(fused(c, scores));
  // Short rows: ViT-B/16's 197 at batch 32 (2^30.8 multiply-adds) runs as products, at batch
  // 8 fused; head dim 128 reaches the bound at half the scores of head dim 64.
  ASSERT_EQ(nvidia.separate_attention_work, int64_t(1) << 30);
  const int64_t plenty = int64_t(1) << 40;
  EXPECT_FALSE(fused({{32, 12}, 197, 197, 64, 64}, plenty));
  EXPECT_TRUE(fused({{8, 12}, 197, 197, 64, 64}, plenty));
  EXPECT_FALSE(fused({{32, 16}, 128, 128, 64, 64}, plenty));    // 2^30 exactly
  EXPECT_TRUE(fused({{32, 16}, 128, 127, 64, 64}, plenty));
  EXPECT_FALSE(fused({{16, 16}, 128, 128, 128, 128}, plenty));  // 2^30 exactly
  c = {{32, 12}, 197, 197, 64, 64};
  c.causal = true;
  EXPECT_TRUE(fused(c, plenty));
}

// On any device: the cooperative kernels an H100 would run (its canned caps: SPV_KHR
// opcodes, which only a driver that has them validates), and the same kernels for a device
// whose fragments only VK_NV_cooperative_matrix lists: SPV_NV opcodes, validated here (bf16
// read as f16); each with the H100's fragment layout in registers, and through shared memory
// where the layout is unknown.
// f32 keeps the SIMT kernel.
TEST(Attention, CooperativeKernelsForNvidiaValidate) {
  for (bool registers : {false, true}) {
  codegen::DeviceCaps khr = codegen::target_caps("nvidia");
  if (!registers)
    for (auto& s : khr.cooperative_matrix_shapes) s.accumulator_layout = s.a_layout = {};
  codegen::DeviceCaps nv_only = khr;
  for (auto& s : nv_only.cooperative_matrix_shapes) s.khr = false, s.nv = true;
  for (DType t : {DType::F16, DType::BF16, DType::F32})
    for (const Case& c : half_cases(t)) {
      SCOPED_TRACE("sq " + std::to_string(c.sq) + " sk " + std::to_string(c.sk) + " d " + std::to_string(c.d) + " dv " +
                   std::to_string(c.dv) + " " + ir::dtype_name(t));
      ir::Graph low = attention_graph(c);
      passes::PassManager(passes::default_pipeline(), codegen::kernel_bounds(khr)).run(low);
      const ir::Node* kernel = attention_kernel(low);
      // Long unmasked f32 attention runs as products (NvidiaRunsLongUnmaskedF32AttentionUnfused).
      if (runs_as_products(c, codegen::kernel_bounds(khr))) {
        EXPECT_EQ(kernel, nullptr);
        continue;
      }
      ASSERT_NE(kernel, nullptr);
      for (bool nv : {false, true}) {
        const auto kb = codegen::compile_kernel(*kernel, low, nv ? nv_only : khr);
        const std::string want = t == DType::F32 ? "attention " : std::string("cooperative attention ");
        EXPECT_EQ(kb.launch.rfind(want, 0), 0u) << kb.launch;
        EXPECT_EQ(kb.launch.find("softmax in registers") != std::string::npos, registers && t != DType::F32) << kb.launch;
        EXPECT_EQ(kb.launch.find(" nv fragments") != std::string::npos, nv && t != DType::F32) << kb.launch;
        if (nv) {
          EXPECT_EQ(codegen::validate(t == DType::BF16 ? spirvtest::bf16_as_f16(kb.spirv) : kb.spirv, khr.api_version), "");
        }
      }
    }
  }
}

}  // namespace
}  // namespace nxv::runtime
