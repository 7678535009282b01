// check_outputs (`nxv run --check`, the differential fuzzer): floats within the tolerance
// given, 16-bit types within at least 1e-2, NaN and infinities by class, integers exactly,
// and a message naming the element, both values and the tolerance exceeded.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/check.h"
#include "ir/literal.h"

namespace nxv::ir {
namespace {

Literal values(DType t, const std::vector<double>& v) {
  Literal lit{TensorType{t, {int64_t(v.size())}}, std::vector<uint8_t>(size_t(TensorType{t, {int64_t(v.size())}}.byte_size()))};
  for (size_t i = 0; i < v.size(); ++i) {
    Scalar s;
    s.f = v[i];
    // (Only integers convert: NaN or an infinity to int64 is undefined.)
    s.is_integer = !is_float(t);
    if (s.is_integer) s.i = int64_t(v[i]);
    set_element(lit, int64_t(i), s);
  }
  return lit;
}

TEST(IrCheck, FloatsWithinTheToleranceGiven) {
  const auto want = values(DType::F32, {1.0, 0.005667, -2.0});
  const auto got = values(DType::F32, {1.0, 0.005660, -2.0});
  // 0.12% apart: beyond the default 1e-5 relative + 1e-6 absolute, within 1e-2 relative.
  const std::string diff = check_outputs({want}, {got});
  EXPECT_NE(diff.find("output 0 element 1 is 0.00566"), std::string::npos) << diff;
  EXPECT_NE(diff.find("the interpreter gives 0.005667"), std::string::npos) << diff;
  EXPECT_NE(diff.find("(beyond 1e-05 relative + 1e-06 absolute)"), std::string::npos) << diff;
  EXPECT_EQ(diff, "output 0 element 1 is 0.00566, the interpreter gives 0.005667 (beyond 1e-05 relative + 1e-06 absolute)");
  EXPECT_EQ(check_outputs({want}, {got}, Tolerance{1e-2, 0}), "");
  EXPECT_NE(check_outputs({want}, {got}, Tolerance{1e-4, 1e-7}), "");
  // An absolute tolerance alone covers it too.
  EXPECT_EQ(check_outputs({want}, {got}, Tolerance{0, 1e-5}), "");
}

TEST(IrCheck, SixteenBitTypesKeepTheirWiderTolerance) {
  const auto want = values(DType::F16, {1.0, 100.0});
  const auto got = values(DType::F16, {1.0078125, 100.5});
  EXPECT_EQ(check_outputs({want}, {got}), "");
  EXPECT_EQ(check_outputs({want}, {got}, Tolerance{0, 0}), "");
  const auto far = values(DType::F16, {1.0, 103.0});
  EXPECT_NE(check_outputs({want}, {far}).find("(beyond 0.01 relative + 0.01 absolute)"), std::string::npos);
}

TEST(IrCheck, SpecialValuesByClassIntegersExactly) {
  const double inf = INFINITY, nan = NAN;
  const auto want = values(DType::F64, {nan, inf, -inf, 0.0});
  EXPECT_EQ(check_outputs({want}, {values(DType::F64, {nan, inf, -inf, 0.0})}, Tolerance{1, 1}), "");
  // No tolerance turns an infinity into a large number or a NaN into any number.
  EXPECT_NE(check_outputs({want}, {values(DType::F64, {1.0, inf, -inf, 0.0})}, Tolerance{1e300, 1e300}), "");
  EXPECT_NE(check_outputs({want}, {values(DType::F64, {nan, 1e308, -inf, 0.0})}, Tolerance{1e300, 1e300}), "");
  const std::string diff = check_outputs({values(DType::S32, {7, 8})}, {values(DType::S32, {7, 9})}, Tolerance{1, 1});
  EXPECT_EQ(diff, "output 0 element 1 is 9, the interpreter gives 8");
  // Integers print exactly, past f32's and f64's 24 and 53 bits.
  EXPECT_EQ(check_outputs({values(DType::S32, {16777217})}, {values(DType::S32, {16777219})}),
            "output 0 element 0 is 16777219, the interpreter gives 16777217");
  EXPECT_EQ(check_outputs({values(DType::F32, {1})}, {values(DType::F64, {1})}), "output 0 is f64[1], the interpreter gives f32[1]");
}

}  // namespace
}  // namespace nxv::ir
