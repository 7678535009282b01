// The device the runtime tests run on (the runtime's default device), what its float
// controls promise about subnormals, and the environment variables that choose its options.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "ir/literal.h"
#include "runtime/runtime.h"

namespace nxv::devtest {

inline std::shared_ptr<runtime::Device> device() { return runtime::Device::open(); }

// Sets an environment variable for a scope, restoring what it was (the suite may itself run
// under NXV_PROFILE, NXV_TIMEOUT_MS and the like).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() { old_ ? setenv(name_, old_->c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// Whether the device may flush subnormals of t (denormals-are-zero and flush-to-zero, as
// CUDA's -ftz): where it does not report shaderDenormPreserveFloat32/64 (`nxv devices`:
// denorms_f32/f64). bf16 is computed in f32 and follows f32; f16 is computed in f32
// registers, where its subnormals are normal values, and keeps them.
inline bool flushes_subnormals(ir::DType t) {
  const auto& c = device()->info().caps;
  if (t == ir::DType::F32 || t == ir::DType::BF16) return !c.preserve_denorms_f32;
  return t == ir::DType::F64 && !c.emulate_f64 && !c.preserve_denorms_f64;  // software keeps them
}

// v, or the zero of v's sign where v is subnormal in t (f64, or f32 and bf16): the value a
// device that flushes t's subnormals (flushes_subnormals) takes instead.
inline double zero_if_subnormal(ir::DType t, double v) {
  const double smallest_normal = t == ir::DType::F64 ? 0x1p-1022 : 0x1p-126;
  return v != 0 && std::fabs(v) < smallest_normal ? std::copysign(0.0, v) : v;
}

// lit with its subnormals (zero_if_subnormal) as zeros; every other element keeps its bits.
inline ir::Literal zero_subnormals(ir::Literal lit) {
  for (int64_t k = 0; k < lit.type.num_elements(); ++k) {
    const double v = ir::get_f64(lit, k);
    if (v == 0 || zero_if_subnormal(lit.type.dtype, v) != 0) continue;
    ir::Scalar zero;
    zero.f = std::copysign(0.0, v);
    ir::set_element(lit, k, zero);
  }
  return lit;
}

// Whether the device promises IEEE Inf/NaN/signed-zero semantics for t's register width
// (shaderSignedZeroInfNanPreserveFloat32/64). Without it the driver may fold arithmetic on
// values it knows (x - x to 0 where x is an Inf literal) as fast-math does.
inline bool preserves_special_values(ir::DType t) {
  const auto& c = device()->info().caps;
  // Emulated f64 is integer arithmetic, which no driver folds as floats.
  return t == ir::DType::F64 ? c.emulate_f64 || c.preserve_signed_zero_inf_nan_f64 : c.preserve_signed_zero_inf_nan_f32;
}

// The device feature tensors of t need that the device (as its profile restricts it:
// NXV_PROFILE) lacks; "" where it has them. Mirrors codegen's Emitter::require_type.
inline std::string missing_feature(ir::DType t) {
  const auto& c = device()->info().caps;
  if (t == ir::DType::F64 && !c.float64 && !c.emulate_f64) return "shaderFloat64";
  if ((t == ir::DType::S64 || t == ir::DType::U64) && !c.int64 && !c.emulate_i64) return "shaderInt64";
  return "";
}

// The cases of a test left out for types the device lacks: the test runs the others and
// ends skipped, naming what it left out (NXV_SKIP_IF_LEFT_OUT), so that skips are counted.
class LeftOut {
 public:
  // True (and noted) where the device lacks what tensors of t need.
  bool operator()(ir::DType t) {
    const std::string f = missing_feature(t);
    if (!f.empty()) notes_.insert(std::string(ir::dtype_name(t)) + " (" + f + ")");
    return !f.empty();
  }
  bool empty() const { return notes_.empty(); }
  std::string reason() const {
    std::string r = "left out, as the device lacks what they need: ";
    for (auto it = notes_.begin(); it != notes_.end(); ++it) r += (it == notes_.begin() ? "" : ", ") + *it;
    return r;
  }

 private:
  std::set<std::string> notes_;
};

}  // namespace nxv::devtest

#define NXV_SKIP_IF_LEFT_OUT(left_out) \
  if (!(left_out).empty()) GTEST_SKIP() << (left_out).reason()

// Skips the test where the device lacks what tensors of `dtype` need, naming the feature.
#define NXV_SKIP_WITHOUT(dtype)                                                                      \
  if (const std::string nxv_missing = ::nxv::devtest::missing_feature(dtype); !nxv_missing.empty()) \
  GTEST_SKIP() << ::nxv::ir::dtype_name(dtype) << " needs " << nxv_missing << ", which " \
               << ::nxv::devtest::device()->info().name << " lacks"                                   \
               << (::nxv::devtest::device()->info().profile.empty()                                   \
                       ? std::string()                                                                \
                       : " under profile " + ::nxv::devtest::device()->info().profile)
