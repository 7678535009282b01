// Literals: 16-bit float conversions against an exhaustive nearest-value search, JSON and
// base64 round trips, and the errors for malformed data.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "ir/literal.h"

namespace nxv::ir {
namespace {

// The 16-bit pattern nearest to f among all finite values of `decode`, ties to the even
// pattern; beyond the largest finite value by half an ulp or more, infinity.
uint16_t nearest(float f, float (*decode)(uint16_t), uint16_t inf_bits, double half_ulp_above_max) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(double(f));
  uint16_t best = 0;
  double best_err = INFINITY;
  for (uint32_t bits = 0; bits < inf_bits; ++bits) {
    double err = std::fabs(double(decode(uint16_t(bits))) - a);
    if (err < best_err || (err == best_err && (bits & 1) == 0)) best = uint16_t(bits), best_err = err;
  }
  if (a >= half_ulp_above_max) best = inf_bits;
  return uint16_t(sign | best);
}

TEST(IrLiteral, HalfRoundsToNearestEvenBfloatTruncates) {
  // Every 16-bit pattern survives a trip through f32 (NaNs stay NaN).
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = f16_to_f32(uint16_t(h));
    if (std::isnan(f)) EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(f))));
    else EXPECT_EQ(f32_to_f16(f), h) << h;
    float b = bf16_to_f32(uint16_t(h));
    if (std::isnan(b)) EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(b))));
    else EXPECT_EQ(f32_to_bf16(b), h) << h;
  }
  // Values between representable ones, including exact ties and subnormals.
  std::mt19937 rng(3);
  std::vector<float> xs = {65504.f, 65519.f, 65520.f, 1e-8f, 2.98e-8f, 5.96e-8f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, -0.0f};
  for (int i = 0; i < 300; ++i) xs.push_back(std::ldexp(std::uniform_real_distribution<float>(-1, 1)(rng), int(rng() % 40) - 26));
  for (float x : xs) {
    EXPECT_EQ(f32_to_f16(x), nearest(x, f16_to_f32, 0x7C00, 65520.0)) << x;
    // Nx writes a bf16 as the top half of the f32.
    uint32_t bits;
    std::memcpy(&bits, &x, 4);
    EXPECT_EQ(f32_to_bf16(x), uint16_t(bits >> 16)) << x;
  }
}

// Tensors of no elements, as constant folding makes them: data_b64 "" and data [] (under
// UBSan, the empty base64 case was a memcpy from a null pointer; nxv_fuzz_diff found it).
TEST(IrLiteral, EmptyTensors) {
  for (const char* text : {R"({"type": "f32", "shape": [0, 3], "data_b64": ""})", R"({"type": "s8", "shape": [2, 0], "data": []})"}) {
    Literal lit = literal_from_json(nlohmann::json::parse(text));
    EXPECT_EQ(lit.type.num_elements(), 0) << text;
    EXPECT_TRUE(lit.data.empty()) << text;
  }
}

TEST(IrLiteral, JsonAndBase64RoundTrip) {
  auto j = nlohmann::json::parse(R"({"type": "f32", "shape": [2, 3], "data": [1.5, "nan", "-inf", "inf", "-0.0", -2]})");
  Literal lit = literal_from_json(j);
  EXPECT_TRUE(std::isnan(get_f64(lit, 1)));
  EXPECT_TRUE(std::signbit(get_f64(lit, 4)));
  EXPECT_EQ(get_f64(lit, 5), -2.0);
  EXPECT_EQ(literal_to_json(lit), j);
  std::string b64 = base64_encode(lit.data.data(), lit.data.size());
  Literal again = literal_from_json({{"type", "f32"}, {"shape", {2, 3}}, {"data_b64", b64}});
  EXPECT_EQ(again.data, lit.data);
  // Integers wrap to the type's width, as Nx stores them.
  Literal u8 = literal_from_json(nlohmann::json::parse(R"({"type": "u8", "shape": [3], "data": [255, 256, -1]})"));
  EXPECT_EQ(u8.data, (std::vector<uint8_t>{255, 0, 255}));
  Literal u64 = literal_from_json(nlohmann::json::parse(R"({"type": "u64", "shape": [1], "data": [18446744073709551615]})"));
  EXPECT_EQ(literal_to_json(u64)["data"][0].get<uint64_t>(), 18446744073709551615ull);
}

TEST(IrLiteral, MalformedDataIsAnError) {
  auto err = [](const char* text) {
    try {
      literal_from_json(nlohmann::json::parse(text));
    } catch (const IrError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(err(R"({"type": "f32", "shape": [3], "data": [1, 2]})"), "tensor f32[3]: data has 2 values, f32[3] needs 3");
  EXPECT_EQ(err(R"({"type": "f32", "shape": [1], "data": ["one"]})"),
            "'one' is not a number (use a JSON number, \"nan\", \"inf\", \"-inf\" or \"-0.0\")");
  EXPECT_EQ(err(R"({"type": "s32", "shape": [2], "data_b64": "AQAAAA=="})"), "tensor s32[2]: data_b64 holds 4 bytes, s32[2] needs 8");
  EXPECT_EQ(err(R"({"type": "c64", "shape": [1], "data": [1]})"), "complex type c64 is not supported");
  // Kinds and sizes are checked before anything of the shape's size is allocated.
  EXPECT_EQ(err(R"({"type": 32, "shape": [1], "data": [1]})"), "missing string 'type'");
  EXPECT_EQ(err(R"({"type": "f32", "shape": 3, "data": [1]})"), "missing array 'shape'");
  EXPECT_EQ(err(R"({"type": "f32", "shape": [1099511627776], "data": [1, 2]})"),
            "tensor f32[1099511627776]: data has 2 values, f32[1099511627776] needs 1099511627776");
  EXPECT_EQ(err(R"({"type": "f32", "shape": [4611686018427387905, 4], "data": [1]})"),
            "bad shape: shape [4611686018427387905,4] has more than 2^63 elements");
  EXPECT_EQ(err(R"({"type": "f64", "shape": [1152921504606846976, 2], "data": [1]})"),
            "bad shape: f64[1152921504606846976,2] takes more than 2^63 bytes");
}

// Invalid base64 used to be skipped, leaving zeros or shifted bytes.
TEST(IrLiteral, InvalidBase64IsAnError) {
  auto err = [](const std::string& b64) {
    try {
      literal_from_json({{"type", "u8"}, {"shape", {3}}, {"data_b64", b64}});
    } catch (const IrError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(err("AAEC"), "");
  EXPECT_EQ(err("AA*C"), "tensor u8[3]: data_b64: invalid base64 character '*' at offset 2");
  EXPECT_EQ(err("AA C"), "tensor u8[3]: data_b64: invalid base64 character ' ' at offset 2");
  EXPECT_EQ(err("A=EC"), "tensor u8[3]: data_b64: invalid base64 character '=' at offset 1");
  EXPECT_EQ(err("AAE"), "tensor u8[3]: data_b64: base64 text of 3 characters is not a multiple of 4");
  EXPECT_EQ(err(std::string("AA\0C", 4)), "tensor u8[3]: data_b64: invalid base64 character code 0 at offset 2");
  EXPECT_EQ(base64_decode("AAE="), std::string("\0\1", 2));
}

// Nx 0.7.2 on Nx.BinaryBackend: Nx.tensor(300, type: :u8) and Nx.u8(300) are 44,
// Nx.tensor(200, type: :s8) is -56; literals here wrap the same way (docs/ir.md).
TEST(IrLiteral, OutOfRangeIntegersWrapAsNxStoresThem) {
  Literal u8 = literal_from_json(nlohmann::json::parse(R"({"type": "u8", "shape": [2], "data": [300, -1]})"));
  EXPECT_EQ(u8.data, (std::vector<uint8_t>{44, 255}));
  Literal s8 = literal_from_json(nlohmann::json::parse(R"({"type": "s8", "shape": [1], "data": [200]})"));
  EXPECT_EQ(get_i64(s8, 0), -56);
  Node c;
  c.id = 0;
  c.op = "constant";
  c.results = {{DType::U8, {}}};
  c.attrs = {{"value", 300}};
  EXPECT_EQ(get_i64(literal_of(c), 0), 44);
}

}  // namespace
}  // namespace nxv::ir
