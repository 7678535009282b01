// Runs an emulated 64-bit routine (codegen/soft64.h) over arrays of bit patterns on the test
// device, so that soft_i64 and soft_f64 tests compare every lane with the host's result.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "codegen/soft64.h"
#include "codegen/kernel.h"
#include "runtime/runtime.h"

namespace nxv::softtest {

using codegen::Soft64;
using codegen::spirv::Id;
namespace spirv = codegen::spirv;

// What a routine returns: a uvec2, a bool, or a u32; the kernel widens the last two to a
// uvec2 (0/1, or the u32 in the low word) so every result comes back as a uint64_t.
enum class Result { Word64, Bool, Word32 };

constexpr uint32_t kLocalSize = 64;

// The device run_soft runs on: run_spirv checks bounds through robust buffer access where the
// device cannot for one pipeline alone (lavapipe).
inline std::shared_ptr<runtime::Device> soft_device() {
  runtime::RuntimeOptions opts;
  opts.robust_buffer_access = true;
  return runtime::Device::open(opts);
}

// Whether run_soft's builder computes the routines' 64-bit integer steps as native
// instructions (Builder::native_int64), as where emulated f64 meets a device with
// shaderInt64: set by SoftRoutines' parameter.
inline bool run_native_int64 = false;

// The fixture of the routine suites: each test runs on 32-bit words alone (Words32/...) and
// with native 64-bit integer steps (Int64/...).
class SoftRoutines : public testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    // (The profile is the process's: the device is opened once to ask.)
    static const bool has_int64 = soft_device()->info().caps.int64;
    if (GetParam() && !has_int64) GTEST_SKIP() << "the device lacks shaderInt64";
    run_native_int64 = GetParam();
  }
  void TearDown() override { run_native_int64 = false; }
};
#define NXV_SOFT_ROUTINE_SUITE(suite)                                  \
  INSTANTIATE_TEST_SUITE_P(Words32, suite, testing::Values(false)); \
  INSTANTIATE_TEST_SUITE_P(Int64, suite, testing::Values(true))

// The routine over each element of `inputs` (one array per operand, uvec2 each; a routine
// that takes a u32 uses the low word), as one kernel of the builder's making, spirv-val'd and
// checked to declare no f64 (and, but for run_native_int64, no 64-bit type or capability:
// what a device without them accepts).
inline std::vector<uint64_t> run_soft(const std::shared_ptr<runtime::Device>& dev,
                                      const std::function<Id(Soft64&, const std::vector<Id>&)>& routine,
                                      const std::vector<std::vector<uint64_t>>& inputs, Result result = Result::Word64) {
  const size_t n = inputs.at(0).size();
  spirv::Builder b;
  b.set_native_int64(run_native_int64);
  Soft64 s(b);
  std::vector<Id> buffers;
  for (size_t i = 0; i <= inputs.size(); ++i)
    buffers.push_back(b.storage_buffer(s.uvec2, 8, uint32_t(i), i < inputs.size()));
  b.begin_main();
  Id gid = b.builtin_x(spv::BuiltInGlobalInvocationId);
  Id ptr = b.type_pointer(spv::StorageClassStorageBuffer, s.uvec2);
  b.if_then(s.test(spv::OpULessThan, {gid, s.c(uint32_t(n))}), [&] {
    std::vector<Id> args;
    for (size_t i = 0; i < inputs.size(); ++i)
      args.push_back(b.op(spv::OpLoad, s.uvec2, {b.op(spv::OpAccessChain, ptr, {buffers[i], s.c(0), gid})}));
    Id r = routine(s, args);
    if (result == Result::Bool) r = s.select(r, s.c64(1), s.c64(0));
    if (result == Result::Word32) r = s.pair(r, s.c(0));
    b.op_void(spv::OpStore, {b.op(spv::OpAccessChain, ptr, {buffers.back(), s.c(0), gid}), r});
  });
  b.end_main(kLocalSize);
  std::vector<uint32_t> words = b.finish();
  const std::string invalid = codegen::validate(words, dev->info().caps.api_version);
  const std::string text = codegen::disassemble(words);
  EXPECT_EQ(invalid, "") << text;
  std::vector<const char*> wide{"OpTypeFloat 64", "Float64"};
  if (!run_native_int64) wide.insert(wide.end(), {"OpTypeInt 64", "Int64"});
  for (const char* w : wide) EXPECT_EQ(text.find(w), std::string::npos) << w << " in\n" << text;

  std::vector<runtime::BufferPtr> in;
  for (const auto& v : inputs) in.push_back(dev->upload({ir::DType::U64, {int64_t(n)}}, v.data(), n * 8));
  runtime::SpirvLaunch launch;
  launch.group_count[0] = uint32_t((n + kLocalSize - 1) / kLocalSize);
  auto out = runtime::run_spirv(dev, words, in, {{ir::DType::U64, {int64_t(n)}}}, launch);
  std::vector<uint64_t> r(n);
  dev->download(*out.at(0), r.data(), n * 8);
  return r;
}

inline uint64_t bits_of(double d) { return std::bit_cast<uint64_t>(d); }
inline double double_of(uint64_t u) { return std::bit_cast<double>(u); }
inline uint32_t bits_of_f32(float f) { return std::bit_cast<uint32_t>(f); }
inline float f32_of(uint32_t u) { return std::bit_cast<float>(u); }

}  // namespace nxv::softtest
