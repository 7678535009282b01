// The device the runtime tests run on (the runtime's default device) and what its float
// controls promise about subnormals.
#pragma once

#include <memory>

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

}  // namespace nxv::devtest
