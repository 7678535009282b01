// Helpers for tests that validate emitted SPIR-V with this machine's spirv-val or count its
// instructions.
#pragma once

#include <spirv-tools/libspirv.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
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

// Whether the module declares the capability (OpCapability leads every module).
inline bool declares_capability(const std::vector<uint32_t>& words, spv::Capability capability) {
  for (size_t i = 5; i + 1 < words.size() && (words[i] & 0xffff) == spv::OpCapability; i += words[i] >> 16)
    if (words[i + 1] == uint32_t(capability)) return true;
  return false;
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

// The longest chain of dependent instructions in the module's functions: what bounds the
// latency of straight-line code once a GPU has no other work to hide it behind (a leapfrog
// step on few elements). Moves between words and pairs (composite construct, extract, copy,
// shuffle, bitcast: a uvec2 and a u64 share registers), loads, access chains and phis count
// nothing, every other instruction one.
inline size_t dependent_depth(const std::vector<uint32_t>& words) {
  struct State {
    std::unordered_map<uint32_t, size_t> depth;
    size_t deepest = 0;
    bool inside = false;
  } state;
  auto step = [](void* user, const spv_parsed_instruction_t* inst) {
    auto& st = *static_cast<State*>(user);
    const auto opcode = spv::Op(inst->opcode);
    st.inside = st.inside || opcode == spv::OpFunction;
    if (!st.inside || !inst->result_id) return SPV_SUCCESS;
    size_t from = 0;
    for (uint16_t k = 0; k < inst->num_operands; ++k) {
      const spv_parsed_operand_t& operand = inst->operands[k];
      if (operand.type != SPV_OPERAND_TYPE_ID) continue;
      if (auto it = st.depth.find(inst->words[operand.offset]); it != st.depth.end()) from = std::max(from, it->second);
    }
    const bool free = opcode == spv::OpCompositeConstruct || opcode == spv::OpCompositeExtract || opcode == spv::OpCopyObject ||
                      opcode == spv::OpBitcast ||
                      opcode == spv::OpVectorShuffle || opcode == spv::OpLoad || opcode == spv::OpAccessChain || opcode == spv::OpPhi;
    const size_t d = from + (free || opcode == spv::OpLabel || opcode == spv::OpFunction ? 0 : 1);
    st.depth[inst->result_id] = d;
    st.deepest = std::max(st.deepest, d);
    return SPV_SUCCESS;
  };
  spv_context context = spvContextCreate(SPV_ENV_UNIVERSAL_1_3);
  spvBinaryParse(context, &state, words.data(), words.size(), nullptr, step, nullptr);
  spvContextDestroy(context);
  return state.deepest;
}

}  // namespace nxv::spirvtest
