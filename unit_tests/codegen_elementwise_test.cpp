// Every elementwise op family over every type it accepts produces a module
// that passes SPIRV-Tools validation.
#include <gtest/gtest.h>

#include "codegen_testing.h"

namespace nxv::codegen {
namespace {

using ir::DType;
using cgtest::KernelBuilder;

const DType kAll[] = {DType::S8,  DType::S16,  DType::S32, DType::S64, DType::U8,  DType::U16,
                      DType::U32, DType::U64,  DType::F16, DType::BF16, DType::F32, DType::F64};

using cgtest::expect_valid;

ir::Graph unary(const std::string& op, DType in, DType out) {
  KernelBuilder k;
  auto x = k.param(in, {5, 3});
  auto y = k.add(op, {x}, out, {5, 3});
  return k.finish({y});
}

ir::Graph binary(const std::string& op, DType in, DType out, ir::Shape sa = {4, 3}, ir::Shape sb = {4, 3}) {
  KernelBuilder k;
  auto a = k.param(in, sa);
  auto b = k.param(in, sb);
  ir::Shape so = sa.size() >= sb.size() ? sa : sb;
  for (size_t i = 0; i < so.size(); ++i) {
    size_t ia = i + sa.size() - so.size(), ib = i + sb.size() - so.size();
    if (i + sa.size() >= so.size() && sa[ia] != 1) so[i] = sa[ia];
    if (i + sb.size() >= so.size() && sb[ib] != 1) so[i] = sb[ib];
  }
  auto c = k.add(op, {a, b}, out, so);
  return k.finish({c});
}

TEST(CodegenElementwise, ArithmeticEveryType) {
  for (DType t : kAll)
    for (const char* op : {"add", "subtract", "multiply", "max", "min"}) {
      SCOPED_TRACE(std::string(op) + " " + ir::dtype_name(t));
      expect_valid(binary(op, t, t));
    }
}

TEST(CodegenElementwise, IntegerOnlyOps) {
  for (DType t : kAll) {
    if (!ir::is_integer(t)) continue;
    for (const char* op : {"quotient", "remainder", "pow", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
                           "right_shift"}) {
      SCOPED_TRACE(std::string(op) + " " + ir::dtype_name(t));
      expect_valid(binary(op, t, t));
    }
    for (const char* op : {"negate", "abs", "sign", "bitwise_not", "population_count", "count_leading_zeros"}) {
      SCOPED_TRACE(std::string(op) + " " + ir::dtype_name(t));
      expect_valid(unary(op, t, t));
    }
  }
}

TEST(CodegenElementwise, FloatOps) {
  for (DType t : {DType::F16, DType::BF16, DType::F32}) {
    for (const char* op : {"divide", "pow", "remainder", "atan2"}) {
      SCOPED_TRACE(std::string(op) + " " + ir::dtype_name(t));
      expect_valid(binary(op, t, t));
    }
    for (const char* op : {"exp", "log", "sigmoid", "cos", "sin", "tan", "cosh", "sinh", "tanh", "acos", "asin", "atan",
                           "acosh", "asinh", "atanh", "sqrt", "rsqrt", "negate", "abs", "sign", "floor", "ceil",
                           "round"}) {
      SCOPED_TRACE(std::string(op) + " " + ir::dtype_name(t));
      expect_valid(unary(op, t, t));
    }
  }
  for (const char* op : {"add", "divide", "remainder", "sqrt", "rsqrt", "negate", "abs", "sign", "floor", "round"}) {
    SCOPED_TRACE(std::string(op) + " f64");
    if (std::string(op) == "add" || std::string(op) == "divide" || std::string(op) == "remainder")
      expect_valid(binary(op, DType::F64, DType::F64));
    else
      expect_valid(unary(op, DType::F64, DType::F64));
  }
}

// Division on a GPU takes one correction by its exact residual (an Fma) in f32 and native
// f64, and where the device flushes subnormals, a scale that keeps a tiny quotient's
// correction normal (guarded by an OpIsInf of the divisor); each module validates.
// Lavapipe's division is the CPU's, correctly rounded: neither.
TEST(CodegenElementwise, DivisionCorrections) {
  for (DType t : {DType::F32, DType::F64})
    for (Vendor v : {Vendor::Nvidia, Vendor::Lavapipe})
      for (bool flushes : {false, true}) {
        SCOPED_TRACE(std::string(ir::dtype_name(t)) + (v == Vendor::Nvidia ? " nvidia" : " lavapipe") +
                     (flushes ? " flushing" : " keeping subnormals"));
        DeviceCaps caps = generic_caps();
        caps.vendor_id = pci_vendor_id(v);
        caps.preserve_denorms_f32 = caps.preserve_denorms_f64 = !flushes;
        const ir::Graph g = binary("divide", t, t);
        expect_valid(g, caps);
        const std::string dis = disassemble(cgtest::compile(g, caps).spirv);
        const bool gpu = v == Vendor::Nvidia;
        // Per element of the invocation's vector: the quotient's division and the
        // correction's; the correction's test of its result and the scale's of the divisor.
        const size_t elements = cgtest::count(dis, "OpFDiv") / (gpu ? 2 : 1);
        EXPECT_GE(elements, 1u);
        EXPECT_EQ(cgtest::count(dis, "Fma"), gpu ? elements : 0u) << dis;
        EXPECT_EQ(cgtest::count(dis, "OpIsInf"), gpu ? elements * (flushes ? 2 : 1) : 0u) << dis;
      }
}

// f16 values live in f32 registers, rounded to f16 in integer arithmetic (one RoundEven for
// the subnormal range per conversion): an f16 sum is rounded once, and the store writes
// those bits rather than converting the rounded value again.
TEST(CodegenElementwise, F16ResultsAreConvertedOnce) {
  auto kb = cgtest::compile(binary("add", DType::F16, DType::F16));
  EXPECT_EQ(cgtest::count(disassemble(kb.spirv), "RoundEven"), 1u) << disassemble(kb.spirv);
}

// Where the device promises f16 conversions rounded to even with Inf and NaN kept, they are
// OpFConvert; f16's subnormal range stays in f32 arithmetic (one RoundEven per rounding)
// unless the device also keeps f16 denormals, for f16 alone: the module then asks for them
// (DenormPreserve 16) and converts them in hardware too. The sum is rounded once: the store
// converts the unrounded sum, the same conversion as the rounding step's (Emitter::
// f16_unrounded_), not the rounded value again. Each module validates.
TEST(CodegenElementwise, F16ConversionsTakeTheHardwarePathThatTheDevicePromises) {
  DeviceCaps caps = generic_caps();
  caps.vendor_id = pci_vendor_id(Vendor::Nvidia);
  caps.float16 = caps.round_to_even_f16 = caps.preserve_signed_zero_inf_nan_f16 = true;
  struct Case {
    bool denorms, independent;
    size_t round_even, denorm_preserve;
  };
  for (const Case c : {Case{false, true, 1, 0}, Case{true, false, 1, 0}, Case{true, true, 0, 1}}) {
    caps.preserve_denorms_f16 = c.denorms;
    caps.denorms_independent = c.independent;
    const auto kb = cgtest::compile(binary("add", DType::F16, DType::F16), caps);
    const std::string text = disassemble(kb.spirv);
    EXPECT_EQ(validate(kb.spirv, caps.api_version), "") << text;
    EXPECT_GE(cgtest::count(text, "OpFConvert %float"), 2u) << text;
    EXPECT_EQ(cgtest::count(text, "OpFConvert %half"), 1u) << text;
    EXPECT_EQ(cgtest::count(text, "RoundEven"), c.round_even) << c.denorms << c.independent << "\n" << text;
    EXPECT_EQ(cgtest::count(text, "DenormPreserve 16"), c.denorm_preserve) << text;
  }
}

TEST(CodegenElementwise, IntegerOperandOfFloatFunction) {
  expect_valid(unary("exp", DType::S32, DType::F32));
  expect_valid(unary("sqrt", DType::U8, DType::F32));
}

TEST(CodegenElementwise, PredicatesAndComparisons) {
  for (DType t : kAll) {
    for (const char* op : {"is_nan", "is_infinity", "logical_not"}) expect_valid(unary(op, t, DType::U8));
    for (const char* op : {"equal", "not_equal", "greater", "less", "less_equal", "greater_equal", "logical_and",
                           "logical_or", "logical_xor"}) {
      SCOPED_TRACE(std::string(op) + " " + ir::dtype_name(t));
      expect_valid(binary(op, t, DType::U8));
    }
  }
}

TEST(CodegenElementwise, ConversionsBetweenAllTypes) {
  for (DType from : kAll)
    for (DType to : kAll) {
      SCOPED_TRACE(std::string(ir::dtype_name(from)) + " -> " + ir::dtype_name(to));
      expect_valid(unary("as_type", from, to));
      if (ir::dtype_bits(from) == ir::dtype_bits(to)) expect_valid(unary("bitcast", from, to));
    }
}

TEST(CodegenElementwise, Broadcasting) {
  expect_valid(binary("add", DType::F32, DType::F32, {4, 3}, {3}));
  expect_valid(binary("add", DType::F32, DType::F32, {4, 1}, {1, 3}));
  expect_valid(binary("multiply", DType::S8, DType::S8, {}, {2, 2}));
}

TEST(CodegenElementwise, SelectAndClip) {
  KernelBuilder k;
  auto p = k.param(DType::U8, {6});
  auto a = k.param(DType::F32, {6});
  auto b = k.param(DType::S32, {});
  auto s = k.add("select", {p, a, b}, DType::F32, {6});
  auto lo = k.add("constant", {}, DType::F32, {}, {{"value", -1.5}});
  auto hi = k.add("constant", {}, DType::F32, {}, {{"value", "inf"}});
  auto c = k.add("clip", {s, lo, hi}, DType::F32, {6});
  expect_valid(k.finish({c}));
}

}  // namespace
}  // namespace nxv::codegen
