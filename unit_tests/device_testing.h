// The device the runtime tests run on (the runtime's default device) and what its float
// controls promise about subnormals.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "runtime/runtime.h"

namespace nxv::devtest {

inline std::shared_ptr<runtime::Device> device() { return runtime::Device::open(); }

// Whether the device may flush subnormals of t (denormals-are-zero and flush-to-zero, as
// CUDA's -ftz): where it does not report shaderDenormPreserveFloat32/64 (`nxv devices`:
// denorms_f32/f64). bf16 is computed in f32 and follows f32; f16 is computed in f32
// registers, where its subnormals are normal values, and keeps them.
inline bool flushes_subnormals(ir::DType t) {
  const auto& c = device()->info().caps;
  if (t == ir::DType::F32 || t == ir::DType::BF16) return !c.preserve_denorms_f32;
  return t == ir::DType::F64 && !c.preserve_denorms_f64;
}

// The device feature tensors of t need that the device (as its profile restricts it:
// NXV_PROFILE) lacks; "" where it has them. Mirrors codegen's Emitter::require_type.
inline std::string missing_feature(ir::DType t) {
  const auto& c = device()->info().caps;
  if (t == ir::DType::F64 && !c.float64) return "shaderFloat64";
  if ((t == ir::DType::S64 || t == ir::DType::U64) && !c.int64) return "shaderInt64";
  return "";
}

}  // namespace nxv::devtest

// Skips the test where the device lacks what tensors of `dtype` need, naming the feature.
#define NXV_SKIP_WITHOUT(dtype)                                                                      \
  if (const std::string nxv_missing = ::nxv::devtest::missing_feature(dtype); !nxv_missing.empty()) \
  GTEST_SKIP() << ::nxv::ir::dtype_name(dtype) << " needs " << nxv_missing << ", which " \
               << ::nxv::devtest::device()->info().name << " lacks"                                   \
               << (::nxv::devtest::device()->info().profile.empty()                                   \
                       ? std::string()                                                                \
                       : " under profile " + ::nxv::devtest::device()->info().profile)
