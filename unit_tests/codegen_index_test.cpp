// Index-mapping ops (no data movement: each output element reads its source).
#include <gtest/gtest.h>

#include "codegen_testing.h"

namespace nxv::codegen {
namespace {

using ir::DType;
using cgtest::KernelBuilder;
using json = nlohmann::json;

using cgtest::expect_valid;

ir::Graph one(DType t, ir::Shape in, const std::string& op, ir::Shape out, json attrs) {
  KernelBuilder k;
  auto x = k.param(t, in);
  return k.finish({k.add(op, {x}, t, out, attrs)});
}

TEST(CodegenIndex, ShapeOpsEveryType) {
  for (DType t : {DType::S8, DType::U16, DType::S32, DType::U64, DType::F16, DType::BF16, DType::F32, DType::F64}) {
    SCOPED_TRACE(ir::dtype_name(t));
    expect_valid(one(t, {2, 3, 4}, "transpose", {4, 2, 3}, {{"axes", {2, 0, 1}}}));
    expect_valid(one(t, {2, 3, 4}, "reshape", {6, 4}, json::object()));
    expect_valid(one(t, {2, 1, 4}, "squeeze", {2, 4}, {{"axes", {1}}}));
    expect_valid(one(t, {3, 1}, "broadcast", {2, 3, 5}, {{"shape", {2, 3, 5}}, {"axes", {1, 2}}}));
    expect_valid(one(t, {2, 3, 4}, "reverse", {2, 3, 4}, {{"axes", {0, 2}}}));
  }
}

TEST(CodegenIndex, StaticAndDynamicSlice) {
  expect_valid(one(DType::F32, {10, 8}, "slice", {3, 2},
                   {{"start", {2, 1}}, {"lengths", {5, 4}}, {"strides", {2, 3}}}));
  for (DType st : {DType::S32, DType::S64, DType::U8, DType::U32}) {
    KernelBuilder k;
    auto x = k.param(DType::F16, {10, 8});
    auto s = k.param(st, {});
    auto y = k.add("slice", {x, s}, DType::F16, {4, 8},
                   {{"start", {{{"arg", 1}}, 0}}, {"lengths", {4, 8}}, {"strides", {1, 1}}});
    expect_valid(k.finish({y}));
  }
}

TEST(CodegenIndex, PutSlice) {
  KernelBuilder k;
  auto x = k.param(DType::S16, {6, 5});
  auto u = k.param(DType::S16, {2, 3});
  auto s = k.param(DType::S64, {});
  auto y = k.add("put_slice", {x, u, s}, DType::S16, {6, 5}, {{"start", {{{"arg", 2}}, 1}}});
  expect_valid(k.finish({y}));
}

TEST(CodegenIndex, PadWithNegativeAndInterior) {
  KernelBuilder k;
  auto x = k.param(DType::BF16, {4, 5});
  auto v = k.param(DType::BF16, {});
  auto y = k.add("pad", {x, v}, DType::BF16, {9, 3}, {{"config", {{1, 1, 1}, {-1, -1, 0}}}});
  expect_valid(k.finish({y}));
}

TEST(CodegenIndex, ConcatenateAndStack) {
  KernelBuilder k;
  auto a = k.param(DType::U8, {2, 3});
  auto b = k.param(DType::U8, {2, 1});
  auto c = k.param(DType::U8, {2, 3});
  auto cat = k.add("concatenate", {a, b, c}, DType::U8, {2, 7}, {{"axis", 1}});
  auto st = k.add("stack", {a, c}, DType::U8, {2, 2, 3}, {{"axis", 1}});
  expect_valid(k.finish({cat, st}));
}

// Shifted slices of one value, stacked (a convolution's patches) and concatenated: the
// value is read once, at the selected slice's position (Emitter::select_common_source).
TEST(CodegenIndex, StackedSlicesOfOneValue) {
  KernelBuilder k;
  auto x = k.param(DType::F32, {2, 6});
  auto p = k.add("pad", {x, k.add("constant", {}, DType::F32, {}, {{"value", 0.0}})}, DType::F32, {2, 8},
                 {{"config", {{0, 0, 0}, {1, 1, 0}}}});
  std::vector<ir::NodeId> slices;
  for (int64_t s = 0; s < 3; ++s)
    slices.push_back(k.add("slice", {p}, DType::F32, {2, 6}, {{"start", {0, s}}, {"lengths", {2, 6}}, {"strides", {1, 1}}}));
  auto st = k.add("stack", slices, DType::F32, {2, 6, 3}, {{"axis", 2}});
  auto cat = k.add("concatenate", slices, DType::F32, {6, 6}, {{"axis", 0}});
  expect_valid(k.finish({st, cat}));
}

TEST(CodegenIndex, IotaAndEye) {
  KernelBuilder k;
  auto i0 = k.add("iota", {}, DType::S64, {3, 4}, {{"axis", 1}});
  auto i1 = k.add("iota", {}, DType::F32, {3, 4}, {{"axis", nullptr}});
  auto e = k.add("eye", {}, DType::U8, {3, 4}, json::object());
  expect_valid(k.finish({i0, i1, e}));
}

TEST(CodegenIndex, InconsistentShapesAreRejectedNotReadOutOfBounds) {
  auto error = [](const ir::Graph& g) -> std::string {
    try {
      cgtest::compile(g);
    } catch (const ir::IrError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error(one(DType::F32, {4, 4}, "slice", {2, 2}, {{"start", {3, 0}}, {"lengths", {2, 2}}, {"strides", {1, 1}}})),
            "node 101 (slice): slice window out of bounds on axis 0 (f32[4,4] -> f32[2,2])");
  EXPECT_EQ(error(one(DType::F32, {4, 4}, "reshape", {5, 3}, json::object())),
            "node 101 (reshape): reshape changes the element count (f32[4,4] -> f32[5,3])");
  EXPECT_EQ(error(one(DType::F32, {2, 3}, "transpose", {2, 3}, {{"axes", {1, 0}}})),
            "node 101 (transpose): transpose axes are not a permutation matching the shapes (f32[2,3] -> f32[2,3])");
  EXPECT_EQ(error(one(DType::F32, {2, 3}, "reverse", {2, 3}, {{"axes", "all"}})),
            "node 101 (reverse): attrs.axes must be a list of integers");
  EXPECT_EQ(error(one(DType::F32, {2, 3}, "reverse", {2, 3}, {{"axes", {"x"}}})).rfind("node 101 (reverse): malformed attributes", 0),
            0u);
  KernelBuilder k;
  auto a = k.param(DType::F32, {2, 3});
  auto b = k.param(DType::F32, {3, 3});
  EXPECT_EQ(error(k.finish({k.add("concatenate", {a, b}, DType::F32, {2, 6}, {{"axis", 1}})})),
            "node 102 (concatenate): operand 1 f32[3,3] does not fit the result f32[2,6]");
}

}  // namespace
}  // namespace nxv::codegen
