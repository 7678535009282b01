// Helpers for tests that validate emitted SPIR-V with this machine's spirv-val or count its
// instructions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <spirv/unified1/spirv.hpp>

namespace nxv::spirvtest {

// The module with its bf16 type declared as f16: Debian 12's spirv-val (2023.1) cannot read
// SPV_KHR_bfloat16, so what it validates of a bf16 kernel is everything but that one type.
inline std::vector<uint32_t> bf16_as_f16(const std::vector<uint32_t>& in) {
  std::vector<uint32_t> out(in.begin(), in.begin() + 5);
  bool float16 = false;
  for (size_t at = 5; at < in.size();) {
    const uint32_t words = in[at] >> 16, op = in[at] & 0xFFFF;
    std::vector<uint32_t> inst(in.begin() + at, in.begin() + at + words);
    at += words;
    if (op == spv::OpCapability && (inst[1] == 5116 || inst[1] == 5118)) continue;  // BFloat16TypeKHR, ...CooperativeMatrixKHR
    if (op == spv::OpExtension && std::string(reinterpret_cast<const char*>(&inst[1])) == "SPV_KHR_bfloat16") continue;
    float16 = float16 || (op == spv::OpCapability && inst[1] == spv::CapabilityFloat16);
    if (op == spv::OpTypeFloat && words == 4) inst = {(3u << 16) | spv::OpTypeFloat, inst[1], inst[2]};
    out.insert(out.end(), inst.begin(), inst.end());
  }
  if (!float16) out.insert(out.begin() + 5, {(2u << 16) | spv::OpCapability, spv::CapabilityFloat16});
  return out;
}

// Instructions inside the module's functions (OpFunction to OpFunctionEnd): the code a
// kernel runs, without its types, constants and decorations.
inline size_t function_instructions(const std::vector<uint32_t>& words) {
  size_t count = 0;
  bool inside = false;
  for (size_t i = 5; i < words.size(); i += words[i] >> 16) {
    const uint32_t opcode = words[i] & 0xffff;
    if (opcode == spv::OpFunction) inside = true;
    count += inside;
    if (opcode == spv::OpFunctionEnd) inside = false;
  }
  return count;
}

}  // namespace nxv::spirvtest
