// Host tensor values: building them from the JSON forms the IR uses (`tensor` data and
// data_b64, `constant` values), reading and writing single elements, and the 16-bit float
// conversions (f16: round to nearest even; bf16: the top half of the f32, as Nx stores it).
#pragma once

#include <string>

#include "ir/ir.h"

namespace nxv::ir {

// A JSON number, boolean, or one of "nan", "inf", "-inf", "-0.0", as a double and, for
// integers, exactly as an int64 (u64 values above 2^63 wrap, as Nx stores them).
struct Scalar {
  double f = 0;
  int64_t i = 0;
  bool is_integer = false;
};
Scalar parse_scalar(const nlohmann::json& v);  // throws IrError

// Element i of `lit` written from / read as a double (integers convert exactly up to 2^53)
// or as the integer bit pattern (sign- or zero-extended).
void set_element(Literal& lit, int64_t i, const Scalar& v);
double get_f64(const Literal& lit, int64_t i);
int64_t get_i64(const Literal& lit, int64_t i);
// The smallest normal magnitude of a float type.
double smallest_normal(DType t);
// Each subnormal element of a float literal made a zero of its sign, as a device that keeps
// no denormals of that width computes (integer literals are left as they are).
void flush_subnormals(Literal& lit);

// `tensor` nodes (attrs data or data_b64) and `constant` nodes (value broadcast to the shape).
Literal literal_of(const Node& n);
// Whether `n` is one of those: its value is known at compile time.
bool is_literal(const Node& n);
// Makes `n` a `tensor` node holding `lit` (data_b64, the form the runtime uploads).
void set_tensor_literal(Node& n, const Literal& lit);
// A JSON tensor `{"type", "shape", "data" | "data_b64"}`, the form `nxv run --inputs` reads.
Literal literal_from_json(const nlohmann::json& j);
nlohmann::json literal_to_json(const Literal& lit);  // data as numbers and "nan"/"inf" strings
// A float as the IR's JSON spells it: a number, or "nan", "inf", "-inf", "-0.0". JSON text has
// no non-finite numbers (a dump writes null for them), and graphs are keyed by their dump.
nlohmann::json float_json(double v);

std::string base64_encode(const uint8_t* data, size_t n);
std::string base64_decode(const std::string& text);  // throws IrError, as check_base64
void check_base64(const std::string& text);          // IrError naming a bad character or length

uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);
float bf16_to_f32(uint16_t h);

}  // namespace nxv::ir
