#include "ir/literal.h"

#include <cmath>
#include <cctype>
#include <cstring>

#include "ir/json.h"

namespace nxv::ir {

using nlohmann::json;

// A float literal written into an integer type: truncated toward zero, then wrapped modulo
// 2^64 as integer literals are (casting a double beyond int64's range is undefined).
int64_t wrapped_int64(double f) {
  const double t = std::trunc(f);
  if (std::fabs(t) < 0x1p63) return int64_t(t);
  double m = std::fmod(t, 0x1p64);  // a multiple of 2^11 here, so the addition below is exact
  if (m < 0) m += 0x1p64;
  return int64_t(uint64_t(m));
}

Scalar parse_scalar(const json& v) {
  Scalar s;
  if (v.is_boolean()) {
    s.i = v.get<bool>();
    s.f = double(s.i);
    s.is_integer = true;
  } else if (v.is_number_unsigned()) {
    s.i = int64_t(v.get<uint64_t>());
    s.f = double(v.get<uint64_t>());
    s.is_integer = true;
  } else if (v.is_number_integer()) {
    s.i = v.get<int64_t>();
    s.f = double(s.i);
    s.is_integer = true;
  } else if (v.is_number_float()) {
    s.f = v.get<double>();
    s.i = std::isfinite(s.f) ? wrapped_int64(s.f) : 0;
  } else if (v.is_string()) {
    const std::string& t = v.get_ref<const std::string&>();
    if (t == "nan") s.f = NAN;
    else if (t == "inf") s.f = INFINITY;
    else if (t == "-inf") s.f = -INFINITY;
    else if (t == "-0.0") s.f = -0.0;
    else throw IrError("'" + t + "' is not a number (use a JSON number, \"nan\", \"inf\", \"-inf\" or \"-0.0\")");
  } else {
    throw IrError("expected a number, got " + v.dump());
  }
  return s;
}

uint16_t f32_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000;
  const uint32_t abs = x & 0x7FFFFFFF;
  if (abs > 0x7F800000) return uint16_t(sign | 0x7E00);  // NaN stays NaN
  if (abs >= 0x477FF000) return uint16_t(sign | 0x7C00);  // rounds to or beyond infinity
  if (abs < 0x38800000) {                                   // subnormal or zero in f16
    // Add the magic 0.5 so that the FPU's own round-to-nearest-even does the rounding.
    float v;
    std::memcpy(&v, &abs, 4);
    v += 0.5f;
    uint32_t r;
    std::memcpy(&r, &v, 4);
    return uint16_t(sign | (r - 0x3F000000));
  }
  uint32_t mant_odd = (abs >> 13) & 1;
  uint32_t r = abs + 0xC8000FFF + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
  return uint16_t(sign | (r >> 13));
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  float v;
  if (exp == 0) {
    v = std::ldexp(float(mant), -24);
  } else if (exp == 31) {
    uint32_t bits = 0x7F800000 | (mant << 13);
    std::memcpy(&v, &bits, 4);
  } else {
    uint32_t bits = ((exp + 112) << 23) | (mant << 13);
    std::memcpy(&v, &bits, 4);
  }
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  bits |= sign;
  std::memcpy(&v, &bits, 4);
  return v;
}

// Nx stores a bf16 as the top half of the f32 (truncation), and so do we everywhere.
uint16_t f32_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7FFFFFFF) > 0x7F800000) return 0x7FC0;  // NaN, as the device writes it
  return uint16_t(x >> 16);
}

float bf16_to_f32(uint16_t h) {
  uint32_t x = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

void set_element(Literal& lit, int64_t i, const Scalar& v) {
  const DType t = lit.type.dtype;
  uint8_t* p = lit.data.data() + i * dtype_bytes(t);
  if (is_float(t)) {
    double d = v.is_integer ? double(v.i) : v.f;
    switch (t) {
      case DType::F64: std::memcpy(p, &d, 8); return;
      case DType::F32: { float f = float(d); std::memcpy(p, &f, 4); return; }
      case DType::F16: { uint16_t h = f32_to_f16(float(d)); std::memcpy(p, &h, 2); return; }
      default: { uint16_t h = f32_to_bf16(float(d)); std::memcpy(p, &h, 2); return; }
    }
  }
  // Floats were truncated toward zero by parse_scalar; the low bytes of the little-endian
  // int64 are the wrapped-around value of any narrower type.
  std::memcpy(p, &v.i, dtype_bytes(t));
}

int64_t get_i64(const Literal& lit, int64_t i) {
  const DType t = lit.type.dtype;
  const uint8_t* p = lit.data.data() + i * dtype_bytes(t);
  switch (t) {
    case DType::S8: return int8_t(*p);
    case DType::S16: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case DType::S32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::U8: return *p;
    case DType::U16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case DType::U32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::S64:
    case DType::U64: { int64_t v; std::memcpy(&v, p, 8); return v; }
    default: return int64_t(get_f64(lit, i));
  }
}

double smallest_normal(DType t) {
  return t == DType::F64 ? 0x1p-1022 : t == DType::F16 ? 0x1p-14 : 0x1p-126;
}

void flush_subnormals(Literal& lit) {
  const DType t = lit.type.dtype;
  if (!is_float(t)) return;
  const double smallest = smallest_normal(t);
  for (int64_t k = 0; k < lit.type.num_elements(); ++k) {
    const double v = get_f64(lit, k);
    if (v != 0 && std::fabs(v) < smallest) {
      Scalar zero;
      zero.f = std::copysign(0.0, v);
      set_element(lit, k, zero);
    }
  }
}

double get_f64(const Literal& lit, int64_t i) {
  const DType t = lit.type.dtype;
  const uint8_t* p = lit.data.data() + i * dtype_bytes(t);
  switch (t) {
    case DType::F64: { double v; std::memcpy(&v, p, 8); return v; }
    case DType::F32: { float v; std::memcpy(&v, p, 4); return v; }
    case DType::F16: { uint16_t v; std::memcpy(&v, p, 2); return f16_to_f32(v); }
    case DType::BF16: { uint16_t v; std::memcpy(&v, p, 2); return bf16_to_f32(v); }
    case DType::U64: { uint64_t v; std::memcpy(&v, p, 8); return double(v); }
    default: return double(get_i64(lit, i));
  }
}

namespace {
const char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// The data is checked against the shape before anything of the shape's size is allocated.
Literal from_data(const TensorType& type, const json& attrs, const std::string& where) {
  if (attrs.contains("data_b64") && attrs["data_b64"].is_string()) {
    std::string bytes;
    try {
      bytes = base64_decode(attrs["data_b64"].get<std::string>());
    } catch (const IrError& e) {
      throw IrError(where + "data_b64: " + e.what());
    }
    if (int64_t(bytes.size()) != type.byte_size())
      throw IrError(where + "data_b64 holds " + std::to_string(bytes.size()) + " bytes, " + to_string(type) + " needs " +
                    std::to_string(type.byte_size()));
    return Literal{type, std::vector<uint8_t>(bytes.begin(), bytes.end())};
  }
  if (!attrs.contains("data") || !attrs["data"].is_array())
    throw IrError(where + "needs data (a flat array) or data_b64");
  const json& data = attrs["data"];
  if (int64_t(data.size()) != type.num_elements())
    throw IrError(where + "data has " + std::to_string(data.size()) + " values, " + to_string(type) + " needs " +
                  std::to_string(type.num_elements()));
  Literal lit{type, std::vector<uint8_t>(type.byte_size())};
  for (int64_t i = 0; i < type.num_elements(); ++i) set_element(lit, i, parse_scalar(data[i]));
  return lit;
}
}  // namespace

std::string base64_encode(const uint8_t* data, size_t n) {
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = uint32_t(data[i]) << 16 | (i + 1 < n ? uint32_t(data[i + 1]) << 8 : 0) | (i + 2 < n ? data[i + 2] : 0);
    out += kB64[(v >> 18) & 63];
    out += kB64[(v >> 12) & 63];
    out += i + 1 < n ? kB64[(v >> 6) & 63] : '=';
    out += i + 2 < n ? kB64[v & 63] : '=';
  }
  return out;
}

// Strict RFC 4648: a character outside the alphabet or padding anywhere but the end is an
// error, not skipped (skipping it would silently shift or zero the tensor's bytes).
void check_base64(const std::string& in) {
  if (in.size() % 4) throw IrError("base64 text of " + std::to_string(in.size()) + " characters is not a multiple of 4");
  const size_t pad = !in.empty() && in.back() == '=' ? (in[in.size() - 2] == '=' ? 2 : 1) : 0;
  for (size_t i = 0; i < in.size() - pad; ++i) {
    const unsigned char ch = static_cast<unsigned char>(in[i]);
    if (!std::isalnum(ch) && ch != '+' && ch != '/')
      throw IrError("invalid base64 character " + (std::isprint(ch) ? "'" + std::string(1, char(ch)) + "'" : "code " + std::to_string(ch)) +
                    " at offset " + std::to_string(i));
  }
}

std::string base64_decode(const std::string& in) {
  check_base64(in);
  std::string out;
  out.reserve(in.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  for (char ch : in) {
    if (ch == '=') break;
    const int v = ch >= 'A' && ch <= 'Z' ? ch - 'A' : ch >= 'a' && ch <= 'z' ? ch - 'a' + 26 : ch >= '0' && ch <= '9' ? ch - '0' + 52 : ch == '+' ? 62 : 63;
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(char((acc >> bits) & 0xFF));
    }
  }
  return out;
}

bool is_literal(const Node& n) { return n.op == "constant" || n.op == "tensor"; }

void set_tensor_literal(Node& n, const Literal& lit) {
  n.op = "tensor";
  n.args.clear();
  n.attrs = {{"data_b64", base64_encode(lit.data.data(), lit.data.size())}};
}

Literal literal_of(const Node& n) {
  const TensorType& t = n.type();
  if (n.op == "constant") {
    if (!n.attrs.contains("value")) throw IrError(n, "constant without attrs.value");
    Scalar v;
    try {
      v = parse_scalar(n.attrs["value"]);
    } catch (const IrError& e) {
      throw IrError(n, e.what());
    }
    Literal lit{t, std::vector<uint8_t>(t.byte_size())};
    for (int64_t i = 0; i < t.num_elements(); ++i) set_element(lit, i, v);
    return lit;
  }
  if (n.op != "tensor") throw IrError(n, "not a literal");
  try {
    return from_data(t, n.attrs, "");
  } catch (const IrError& e) {
    throw IrError(n, e.what());
  }
}

Literal literal_from_json(const json& j) {
  if (!j.is_object() || !j.contains("type") || !j.contains("shape"))
    throw IrError("a tensor must be {\"type\": .., \"shape\": [..], \"data\": [..]}, got " + j.dump().substr(0, 80));
  const TensorType t = tensor_type_from_json(j);
  return from_data(t, j, "tensor " + to_string(t) + ": ");
}

json literal_to_json(const Literal& lit) {
  json data = json::array();
  for (int64_t i = 0; i < lit.type.num_elements(); ++i) {
    if (!is_float(lit.type.dtype)) {
      if (lit.type.dtype == DType::U64) data.push_back(uint64_t(get_i64(lit, i)));
      else data.push_back(get_i64(lit, i));
      continue;
    }
    data.push_back(float_json(get_f64(lit, i)));
  }
  return {{"type", dtype_name(lit.type.dtype)}, {"shape", lit.type.shape}, {"data", data}};
}

json float_json(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0 && std::signbit(v)) return "-0.0";
  return v;
}

}  // namespace nxv::ir
