// Reductions, argmax/argmin and dot; on the device, reductions across rows under each
// vendor's launch against the interpreter.
#include <gtest/gtest.h>

#include <random>

#include "codegen_testing.h"
#include "device_testing.h"
#include "ir/interpreter.h"
#include "ir/json.h"
#include "passes/pass.h"
#include "runtime/runtime.h"

namespace nxv::codegen {
namespace {

using ir::DType;
using cgtest::KernelBuilder;
using json = nlohmann::json;

using cgtest::expect_valid;

DType aggregate(const std::string& op, DType t) {
  if (op == "all" || op == "any") return DType::U8;
  if ((op == "sum" || op == "product") && ir::is_integer(t)) return ir::is_signed_int(t) ? DType::S64 : DType::U64;
  return t;
}

TEST(CodegenReduce, EveryReductionTypeAndAxisSet) {
  const std::vector<std::pair<json, ir::Shape>> cases = {
      {json(nullptr), {}}, {json::array({1}), {2, 4}}, {json::array({0, 2}), {3}}, {json::array({0, 1, 2}), {}}};
  for (const char* op : {"sum", "product", "reduce_max", "reduce_min", "all", "any"})
    for (DType t : {DType::S8, DType::U16, DType::S32, DType::U64, DType::F16, DType::BF16, DType::F32, DType::F64})
      for (const auto& [axes, shape] : cases)
        for (bool keep : {false, true}) {
          SCOPED_TRACE(std::string(op) + " " + ir::dtype_name(t) + " " + axes.dump() + (keep ? " keep" : ""));
          ir::Shape out = shape;
          if (keep) {
            out = {2, 3, 4};
            if (axes.is_null()) out = {1, 1, 1};
            else for (int64_t a : axes) out[a] = 1;
          }
          KernelBuilder k;
          auto x = k.param(t, {2, 3, 4});
          auto r = k.add(op, {x}, aggregate(op, t), out, {{"axes", axes}, {"keep_axes", keep}});
          expect_valid(k.finish({r}, "reduce"));
        }
}

// A costly reduction into one output (sin's argument reduction takes hundreds of loop steps
// per element) on a device that ends loops after 65535 steps (lavapipe): the cooperative
// workgroup widens to the device's largest, where 128 invocations took 71937 steps each and
// the kernel was refused (nxv_fuzz_diff seed 1982). 65535 elements: the most before
// split-reduction splits the reduction.
TEST(CodegenReduce, CostlyFullReductionsFitLoopStepLimits) {
  const DeviceCaps caps = target_caps("lavapipe");
  for (const char* f : {"sin", "cos", "tan"})
    for (int64_t n : {16384, 65535}) {
      SCOPED_TRACE(std::string(f) + " " + std::to_string(n));
      KernelBuilder k;
      auto x = k.param(DType::F32, {n});
      auto y = k.add(f, {x}, DType::F32, {n});
      auto r = k.add("sum", {y}, DType::F32, {}, {{"axes", nullptr}, {"keep_axes", false}});
      const ir::Graph g = k.finish({r}, "reduce");
      KernelBinary kb;
      ASSERT_NO_THROW(kb = cgtest::compile(g, caps));
      EXPECT_EQ(kb.workgroup_size[0], caps.max_workgroup_invocations) << kb.launch;
      EXPECT_EQ(validate(kb.spirv, caps.api_version), "");
    }
}

TEST(CodegenReduce, ArgmaxArgmin) {
  for (const char* op : {"argmax", "argmin"})
    for (DType t : {DType::S8, DType::U32, DType::F16, DType::F32, DType::F64})
      for (const char* tie : {"low", "high"}) {
        SCOPED_TRACE(std::string(op) + " " + ir::dtype_name(t) + " " + tie);
        KernelBuilder k;
        auto x = k.param(t, {3, 5});
        auto a = k.add(op, {x}, DType::S64, {3}, {{"axis", 1}, {"keep_axis", false}, {"tie_break", tie}});
        auto b = k.add(op, {x}, DType::S32, {}, {{"axis", nullptr}, {"keep_axis", true}, {"tie_break", tie}});
        auto c = k.add(op, {x}, DType::U8, {1, 5}, {{"axis", 0}, {"keep_axis", true}, {"tie_break", tie}});
        expect_valid(k.finish({a, b, c}, "argreduce"));
      }
}

TEST(CodegenReduce, DotShapes) {
  struct Case {
    ir::Shape a, b, out;
    json c1, b1, c2, b2;
  };
  const std::vector<Case> cases = {
      {{4, 3}, {3, 5}, {4, 5}, {1}, json::array(), {0}, json::array()},
      {{3}, {3}, {}, {0}, json::array(), {0}, json::array()},
      {{2, 4, 3}, {2, 3, 5}, {2, 4, 5}, {2}, {0}, {1}, {0}},
      {{3, 4}, {5, 3}, {4, 5}, {0}, json::array(), {1}, json::array()},
      {{2, 3}, {4}, {2, 3, 4}, json::array(), json::array(), json::array(), json::array()},
      {{2, 3, 4}, {4, 3, 6}, {2, 6}, {1, 2}, json::array(), {1, 0}, json::array()},
  };
  for (DType t : {DType::S32, DType::S64, DType::F16, DType::F32, DType::F64})
    for (const auto& c : cases) {
      SCOPED_TRACE(std::string(ir::dtype_name(t)) + " " + ir::to_string({t, c.out}));
      KernelBuilder k;
      auto a = k.param(t, c.a);
      auto b = k.param(t, c.b);
      auto d = k.add("dot", {a, b}, t, c.out,
                     {{"contract_axes1", c.c1}, {"batch_axes1", c.b1}, {"contract_axes2", c.c2}, {"batch_axes2", c.b2}});
      expect_valid(k.finish({d}, "dot"));
    }
}

TEST(CodegenReduce, ReductionOfAFusedProducerAndConsumer) {
  // softmax in one kernel: both reductions are hoisted out of the per-element work.
  KernelBuilder k;
  auto x = k.param(DType::F32, {4, 9});
  auto mx = k.add("reduce_max", {x}, DType::F32, {4, 1}, {{"axes", {1}}, {"keep_axes", true}});
  auto sub = k.add("subtract", {x, mx}, DType::F32, {4, 9});
  auto e = k.add("exp", {sub}, DType::F32, {4, 9});
  auto s = k.add("sum", {e}, DType::F32, {4, 1}, {{"axes", {1}}, {"keep_axes", true}});
  auto d = k.add("divide", {e, s}, DType::F32, {4, 9});
  auto kb = cgtest::compile(k.finish({d}));
  EXPECT_EQ(validate(kb.spirv, generic_caps().api_version), "");
  // Three loops: the grid-stride loop, the max loop and the sum loop (max not recomputed inside sum).
  auto text = disassemble(kb.spirv);
  size_t loops = 0;
  for (size_t p = text.find("OpLoopMerge"); p != std::string::npos; p = text.find("OpLoopMerge", p + 1)) ++loops;
  EXPECT_EQ(loops, 3u) << text;
}

TEST(CodegenReduce, FewLongReductionsShareAWorkgroup) {
  for (DType t : {DType::F16, DType::F32, DType::F64, DType::S32, DType::U8}) {
    SCOPED_TRACE(ir::dtype_name(t));
    KernelBuilder k;
    auto x = k.param(t, {4, 1000});
    auto s = k.add("sum", {x}, aggregate("sum", t), {4}, {{"axes", {1}}});
    auto m = k.add("reduce_max", {x}, t, {4}, {{"axes", {1}}});
    auto a = k.add("argmin", {x}, DType::S64, {4}, {{"axis", 1}, {"tie_break", "high"}});
    auto all = k.add("any", {x}, DType::U8, {}, {{"axes", nullptr}});
    auto d = k.add("dot", {x, x}, t, {4, 4},
                   {{"contract_axes1", {1}}, {"batch_axes1", json::array()}, {"contract_axes2", {1}}, {"batch_axes2", json::array()}});
    auto kb = cgtest::compile(k.finish({d, s, m, a, all}, "reduce"));
    EXPECT_EQ(validate(kb.spirv, generic_caps().api_version), "") << disassemble(kb.spirv);
    auto text = disassemble(kb.spirv);
    EXPECT_NE(text.find("OpControlBarrier"), std::string::npos);
    EXPECT_NE(text.find("Workgroup"), std::string::npos);
    EXPECT_EQ(kb.group_count[0], 16u);  // one workgroup per element of the largest output
  }
}

TEST(CodegenReduce, WithoutEnoughSharedMemoryEachInvocationReducesAlone) {
  auto caps = generic_caps();
  caps.max_shared_memory_bytes = 64;
  KernelBuilder k;
  auto x = k.param(DType::F32, {2, 5000});
  auto g = k.finish({k.add("sum", {x}, DType::F32, {2}, {{"axes", {1}}})}, "reduce");
  auto shared = cgtest::compile(g);
  auto alone = cgtest::compile(g, caps);
  EXPECT_NE(disassemble(shared.spirv).find("OpControlBarrier"), std::string::npos);
  EXPECT_EQ(disassemble(alone.spirv).find("OpControlBarrier"), std::string::npos);
  EXPECT_EQ(validate(alone.spirv, caps.api_version), "");
}

// A reduction of x (one op) into `out`, as a plain graph for the runtime.
ir::Graph reduction_graph(const std::string& op, DType t, const ir::Shape& shape, DType result, const ir::Shape& out,
                          const json& attrs) {
  json g = {{"version", 1},
            {"outputs", {1}},
            {"nodes",
             {{{"id", 0}, {"op", "parameter"}, {"type", ir::dtype_name(t)}, {"shape", shape}, {"attrs", {{"index", 0}}}},
              {{"id", 1}, {"op", op}, {"type", ir::dtype_name(result)}, {"shape", out}, {"args", {0}}, {"attrs", attrs}}}}};
  return ir::parse_graph(g.dump());
}

// A product of a and b (f32 unless said) contracting a's axis `axis` with b's first.
ir::Graph product_graph(const ir::Shape& a, const ir::Shape& b, const ir::Shape& out, int64_t axis, const char* type = "f32") {
  json g = {{"version", 1},
            {"outputs", {2}},
            {"nodes",
             {{{"id", 0}, {"op", "parameter"}, {"type", type}, {"shape", a}, {"attrs", {{"index", 0}}}},
              {{"id", 1}, {"op", "parameter"}, {"type", type}, {"shape", b}, {"attrs", {{"index", 1}}}},
              {{"id", 2},
               {"op", "dot"},
               {"type", type},
               {"shape", out},
               {"args", {0, 1}},
               {"attrs", {{"contract_axes1", {axis}}, {"contract_axes2", {0}}, {"batch_axes1", json::array()}, {"batch_axes2", json::array()}}}}}}};
  return ir::parse_graph(g.dump());
}

// Small multiples of 1/8 (and small integers), with ties: every partial sum is exact in
// f32 accumulators, so any order of summation gives the interpreter's bits.
ir::Literal eighths(const ir::TensorType& t, unsigned seed) {
  ir::Literal lit{t, std::vector<uint8_t>(size_t(t.byte_size()))};
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    ir::Scalar v;
    if (ir::is_float(t.dtype)) v.f = double(int64_t(rng() % 17) - 8) / 8;
    else v.i = int64_t(rng() % 7) - (ir::is_signed_int(t.dtype) ? 3 : 0), v.is_integer = true;
    ir::set_element(lit, i, v);
  }
  return lit;
}

// g on eighths() under `vendor`'s launch on this device (or `device`), computing the types
// `emulate` names in software: the interpreter's bits.
void expect_bits_as_vendor(const ir::Graph& g, const std::string& what, uint32_t vendor,
                           std::shared_ptr<runtime::Device> device = nullptr, const std::string& emulate = "") {
  std::vector<ir::Literal> in;
  unsigned seed = 1;
  for (const auto* p : g.parameters()) in.push_back(eighths(p->type(), seed++));
  const auto want = ir::interpret(g, in);
  runtime::CompileOptions opts;
  opts.as_vendor = vendor;
  opts.emulate = emulate;
  std::vector<ir::Literal> got;
  try {
    got = runtime::Executable::compile(device ? device : devtest::device(), g, opts)->run_host(in);
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": " << e.what();
    return;
  }
  ASSERT_EQ(got.size(), 1u) << what;
  EXPECT_TRUE(got[0].type == want[0].type && got[0].data == want[0].data) << what;
}

// Reductions across rows (the reduced axes are not the innermost: column sums, a weight
// gradient's product over the batch) take workgroups of runs of consecutive outputs on GPUs:
// 8 f32 or 4 f64 outputs to a workgroup, each reduced by a share of its invocations and
// combined through shared memory. Under NVIDIA's, AMD's and the generic launch, on this
// device: output counts that are not whole runs, several reduced axes, argmax ties, f16,
// integers, columns of 256 to 25600 rows, and a dot of two operands over their first axis,
// bit for bit.
TEST(CodegenReduce, ReductionsAcrossRowsOnEachVendorsLaunch) {
  struct Case {
    std::string op;
    DType t, result;
    ir::Shape shape, out;
    json attrs;
  };
  const std::vector<Case> cases = {
      {"sum", DType::F32, DType::F32, {1024, 1000}, {1000}, {{"axes", {0}}}},
      {"reduce_max", DType::F32, DType::F32, {300, 37}, {37}, {{"axes", {0}}}},
      {"sum", DType::F32, DType::F32, {16, 20, 5}, {1, 1, 5}, {{"axes", {0, 1}}, {"keep_axes", true}}},
      {"argmax", DType::F32, DType::S32, {513, 20}, {20}, {{"axis", 0}, {"tie_break", "low"}}},
      {"argmin", DType::S32, DType::S32, {600, 9}, {9}, {{"axis", 0}, {"tie_break", "high"}}},
      {"sum", DType::F64, DType::F64, {260, 9}, {9}, {{"axes", {0}}}},
      {"sum", DType::F16, DType::F16, {512, 33}, {33}, {{"axes", {0}}}},
      {"sum", DType::S32, DType::S64, {1000, 3}, {3}, {{"axes", {0}}}},
      // Columns of n, 10n and 100n rows: each invocation's share of a column grows with them.
      {"sum", DType::F32, DType::F32, {256, 1000}, {1000}, {{"axes", {0}}}},
      {"sum", DType::F32, DType::F32, {2560, 1000}, {1000}, {{"axes", {0}}}},
      {"sum", DType::F32, DType::F32, {25600, 1000}, {1000}, {{"axes", {0}}}},
  };
  for (uint32_t vendor : {0x10DEu, 0x1002u, 0x8086u}) {
    for (const Case& c : cases) {
      if (!devtest::missing_feature(c.t).empty() || !devtest::missing_feature(c.result).empty()) continue;
      expect_bits_as_vendor(reduction_graph(c.op, c.t, c.shape, c.result, c.out, c.attrs), c.op + " " + ir::dtype_name(c.t) + " " +
                                                                               c.attrs.dump() + " as vendor " + std::to_string(vendor), vendor);
    }
    // The weight gradient of a layer of 10 units: xᵀ · dy over a batch of 600.
    expect_bits_as_vendor(product_graph({600, 70}, {600, 10}, {70, 10}, 0), "dot as vendor " + std::to_string(vendor), vendor);
  }
  // The launch: runs of 32 bytes of outputs on NVIDIA; a workgroup per output where the
  // reduction runs along the innermost axis.
  KernelBuilder k;
  auto x = k.param(DType::F32, {1024, 1000});
  auto columns = cgtest::compile(k.finish({k.add("sum", {x}, DType::F32, {1000}, {{"axes", {0}}})}, "reduce"), target_caps("nvidia"));
  EXPECT_EQ(columns.launch, "elements, cooperative in runs of 8 outputs; 256 invocations x 125 groups");
  KernelBuilder r;
  auto y = r.param(DType::F32, {1000, 1024});
  auto rows = cgtest::compile(r.finish({r.add("sum", {y}, DType::F32, {1000}, {{"axes", {1}}})}, "reduce"), target_caps("nvidia"));
  EXPECT_EQ(rows.launch, "elements, cooperative; 256 invocations x 1000 groups");
}

// Reductions along the rows of many of them (16384 and more on NVIDIA and AMD, 8192 on the
// generic target) take a workgroup per row on GPUs, 64 to 256 invocations wide by the row's
// length, rather than an invocation walking each row alone; past the device's 65535 groups
// each group takes several rows. Under NVIDIA's launch, on this device, bit for bit: a
// kernel of whole rows (x - max(x) times the sum of that), sums of 256 and 1100 terms per
// row, an argmax with ties, integers and f64; the first two under AMD's and the generic
// launch too.
// x - max(x) times the sum of that, along rows: one row kernel of two reductions.
ir::Graph centred(int64_t rows, int64_t cols) {
  const json keep = {{"axes", {1}}, {"keep_axes", true}};
  json g = {{"version", 1},
            {"outputs", {4}},
            {"nodes",
             {{{"id", 0}, {"op", "parameter"}, {"type", "f32"}, {"shape", {rows, cols}}, {"attrs", {{"index", 0}}}},
              {{"id", 1}, {"op", "reduce_max"}, {"type", "f32"}, {"shape", {rows, 1}}, {"args", {0}}, {"attrs", keep}},
              {{"id", 2}, {"op", "subtract"}, {"type", "f32"}, {"shape", {rows, cols}}, {"args", {0, 1}}},
              {{"id", 3}, {"op", "sum"}, {"type", "f32"}, {"shape", {rows, 1}}, {"args", {2}}, {"attrs", keep}},
              {{"id", 4}, {"op", "multiply"}, {"type", "f32"}, {"shape", {rows, cols}}, {"args", {2, 3}}}}}};
  return ir::parse_graph(g.dump());
}

std::string launch_on_nvidia(ir::Graph g) {
  passes::PassManager(passes::default_pipeline()).run(g);
  return cgtest::compile(g, target_caps("nvidia")).launch;
}

TEST(CodegenReduce, ReductionsOverManyRowsTakeAWorkgroupEach) {
  const json rows = {{"axes", {1}}};
  std::vector<std::pair<std::string, ir::Graph>> graphs = {
      {"centred 16384x300", centred(16384, 300)},
      {"sum 70000x256", reduction_graph("sum", DType::F32, {70000, 256}, DType::F32, {70000}, rows)},
      {"sum 16400x1100", reduction_graph("sum", DType::F32, {16400, 1100}, DType::F32, {16400}, rows)},
      {"argmax 17000x260", reduction_graph("argmax", DType::F32, {17000, 260}, DType::S32, {17000}, {{"axis", 1}, {"tie_break", "high"}})},
  };
  if (devtest::missing_feature(DType::S64).empty())
    graphs.push_back({"sum s32 16384x300", reduction_graph("sum", DType::S32, {16384, 300}, DType::S64, {16384}, rows)});
  if (devtest::missing_feature(DType::F64).empty())
    graphs.push_back({"sum f64 16384x256", reduction_graph("sum", DType::F64, {16384, 256}, DType::F64, {16384}, rows)});
  for (const auto& [what, g] : graphs) expect_bits_as_vendor(g, what + " as NVIDIA", 0x10DE);
  // AMD's and the generic target's rule is NVIDIA's: their launches of the first two.
  for (uint32_t vendor : {0x1002u, 0x8086u})
    for (size_t i = 0; i < 2; ++i) expect_bits_as_vendor(graphs[i].second, graphs[i].first + " as vendor " + std::to_string(vendor), vendor);
  // NVIDIA's launches: 64, 128 and 256 invocations by the rows' length.
  const auto launch = launch_on_nvidia;
  EXPECT_EQ(launch(graphs[0].second), "rows, cooperative; 64 invocations x 16384 groups");
  EXPECT_EQ(launch(graphs[1].second), "elements, cooperative; 64 invocations x 65535 groups");
  EXPECT_EQ(launch(graphs[2].second), "elements, cooperative; 128 invocations x 16400 groups");
  EXPECT_EQ(launch(reduction_graph("sum", DType::F32, {16384, 2100}, DType::F32, {16384}, rows)),
            "elements, cooperative; 256 invocations x 16384 groups");
}

// Rows of 32 to 255 elements take a segment of a workgroup each, up to a subgroup wide
// (32 invocations on NVIDIA), not an invocation walking a row alone. Bit for bit under
// NVIDIA's, AMD's and the generic launch on this device, by shuffles within its subgroups
// and (under a profile without them) through shared memory: row kernels and sums at row
// counts that are not whole runs of segments, at 1x, 10x and 100x rows, an argmax with
// ties, integers and f64.
TEST(CodegenReduce, ShortRowsTakeASegmentOfAWorkgroupEach) {
  const json rows = {{"axes", {1}}};
  std::vector<std::pair<std::string, ir::Graph>> graphs;
  for (int64_t n : {7, 70, 700})
    graphs.push_back({"centred " + std::to_string(n) + "x197", centred(n, 197)});
  graphs.push_back({"centred 1001x32", centred(1001, 32)});
  graphs.push_back({"centred 9x255", centred(9, 255)});
  graphs.push_back({"sum 3000x100", reduction_graph("sum", DType::F32, {3000, 100}, DType::F32, {3000}, rows)});
  graphs.push_back({"sum 13x64x33", reduction_graph("sum", DType::F32, {13, 64, 33}, DType::F32, {13, 64}, {{"axes", {2}}})});
  graphs.push_back({"argmax 500x150", reduction_graph("argmax", DType::F32, {500, 150}, DType::S32, {500}, {{"axis", 1}, {"tie_break", "high"}})});
  graphs.push_back({"max s32 300x77", reduction_graph("reduce_max", DType::S32, {300, 77}, DType::S32, {300}, rows)});
  if (devtest::missing_feature(DType::F64).empty())
    graphs.push_back({"sum f64 300x128", reduction_graph("sum", DType::F64, {300, 128}, DType::F64, {300}, rows)});
  for (const auto& [what, g] : graphs)
    for (uint32_t vendor : {0x10DEu, 0x1002u, 0x8086u}) expect_bits_as_vendor(g, what + " as vendor " + std::to_string(vendor), vendor);
  runtime::RuntimeOptions minimum;
  minimum.profile = "vulkan-minimum";
  const auto without_shuffles = runtime::Device::open(minimum);
  ASSERT_FALSE(without_shuffles->info().caps.subgroup_shuffle);
  for (size_t i : {0, 3, 5, 7}) expect_bits_as_vendor(graphs[i].second, graphs[i].first + " without shuffles", 0x10DE, without_shuffles);

  EXPECT_EQ(launch_on_nvidia(centred(700, 197)), "rows, cooperative in segments of 32 invocations; 256 invocations x 88 groups");
  EXPECT_EQ(launch_on_nvidia(centred(700, 64)), "rows, cooperative in segments of 16 invocations; 256 invocations x 44 groups");
  EXPECT_EQ(launch_on_nvidia(reduction_graph("sum", DType::F32, {3000, 100}, DType::F32, {3000}, rows)),
            "elements, cooperative in segments of 16 invocations; 256 invocations x 188 groups");
  // Rows of fewer than 32 elements stay an invocation's each; so do rows on a device of
  // subgroups narrower than 8 (segments of 4 would loop over rows past 128 elements).
  EXPECT_EQ(launch_on_nvidia(centred(700, 31)).rfind("rows; ", 0), 0u);
  // An untiled product over 128 terms (a last layer of 10 units) keeps an invocation per
  // output: neighbouring outputs share its rows of x.
  EXPECT_EQ(launch_on_nvidia(product_graph({65536, 128}, {128, 10}, {65536, 10}, 1)).rfind("elements; ", 0), 0u);
  DeviceCaps narrow = target_caps("nvidia");
  narrow.subgroup_size = 4;
  ir::Graph g = centred(700, 197);
  passes::PassManager(passes::default_pipeline()).run(g);
  EXPECT_EQ(cgtest::compile(g, narrow).launch.rfind("rows; ", 0), 0u);
}

// Products that read their second operand along its rows (x . w, w [K, N]: a batch-1 layer,
// a 10-unit one) take runs of consecutive outputs as column sums do, each run within one of
// w's rows (the largest power of two dividing N, up to 32 bytes). Under NVIDIA's, AMD's and
// the generic launch, on this device, bit for bit: contractions of 256, 2560 and 25600 terms,
// several rows of x (runs that end where x's rows do), 10 units (runs of 2), and 7 (odd:
// a workgroup per output); f64 natively and emulated.
TEST(CodegenReduce, ProductsAlongTheirWeightsRowsOnEachVendorsLaunch) {
  struct Case {
    ir::Shape x, w, out;
  };
  const std::vector<Case> cases = {
      {{1, 256}, {256, 1024}, {1, 1024}}, {{1, 2560}, {2560, 1024}, {1, 1024}},
      {{1, 25600}, {25600, 64}, {1, 64}}, {{3, 300}, {300, 64}, {3, 64}},
      {{1, 784}, {784, 1024}, {1, 1024}}, {{1, 1024}, {1024, 10}, {1, 10}},
      {{40, 1024}, {1024, 10}, {40, 10}}, {{5, 300}, {300, 7}, {5, 7}},
  };
  auto f32 = [](const ir::Shape& s) { return ir::to_string(ir::TensorType{DType::F32, s}); };
  for (uint32_t vendor : {0x10DEu, 0x1002u, 0x8086u})
    for (const Case& c : cases)
      expect_bits_as_vendor(product_graph(c.x, c.w, c.out, 1), f32(c.x) + " . " + f32(c.w) + " as vendor " + std::to_string(vendor),
                            vendor);
  for (uint32_t vendor : {0x10DEu, 0x1002u, 0x8086u})
    for (const std::string emulate : {"", "f64"}) {
      if (emulate.empty() && !devtest::missing_feature(DType::F64).empty()) continue;
      expect_bits_as_vendor(product_graph({40, 1024}, {1024, 10}, {40, 10}, 1, "f64"), "f64 emulated '" + emulate + "' as vendor " + std::to_string(vendor),
                            vendor, nullptr, emulate);
      expect_bits_as_vendor(product_graph({1, 300}, {300, 64}, {1, 64}, 1, "f64"), "f64 emulated '" + emulate + "' as vendor " + std::to_string(vendor),
                            vendor, nullptr, emulate);
    }
  EXPECT_EQ(launch_on_nvidia(product_graph({1, 784}, {784, 1024}, {1, 1024}, 1)),
            "elements, cooperative in runs of 8 outputs; 256 invocations x 128 groups");
  EXPECT_EQ(launch_on_nvidia(product_graph({1024, 1024}, {1024, 10}, {1024, 10}, 1)),
            "elements, cooperative in runs of 2 outputs; 256 invocations x 5120 groups");
  EXPECT_EQ(launch_on_nvidia(product_graph({5, 300}, {300, 7}, {5, 7}, 1)), "elements, cooperative; 256 invocations x 35 groups");
}

}  // namespace
}  // namespace nxv::codegen
