// validate/disassemble through SPIRV-Tools, GLSL through SPIRV-Cross.
#include <spirv-tools/libspirv.hpp>
#include <spirv_cross/spirv_cross_c.h>

#include <stdexcept>

#include "codegen/kernel.h"

namespace nxv::codegen {

namespace {
spv_target_env vulkan_env(uint32_t api_version) {
  uint32_t major = api_version >> 22 & 0x7F, minor = api_version >> 12 & 0x3FF;
  if (major > 1 || minor >= 3) return SPV_ENV_VULKAN_1_3;
  if (minor == 2) return SPV_ENV_VULKAN_1_2;
  return SPV_ENV_VULKAN_1_1;
}
}  // namespace

std::string validate(const std::vector<uint32_t>& spirv, uint32_t vulkan_api_version) {
  spvtools::SpirvTools tools(vulkan_env(vulkan_api_version));
  std::string messages;
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t& pos, const char* msg) {
    messages += "word " + std::to_string(pos.index) + ": " + msg + "\n";
  });
  if (tools.Validate(spirv)) return "";
  return messages.empty() ? "invalid SPIR-V" : messages;
}

std::string disassemble(const std::vector<uint32_t>& spirv) {
  spvtools::SpirvTools tools(SPV_ENV_UNIVERSAL_1_3);
  std::string text, error;
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t&, const char* msg) { error = msg; });
  if (!tools.Disassemble(spirv, &text, SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES | SPV_BINARY_TO_TEXT_OPTION_INDENT))
    throw std::runtime_error("cannot disassemble SPIR-V: " + error);
  return text;
}

std::string to_glsl(const std::vector<uint32_t>& spirv) {
  spvc_context ctx = nullptr;
  if (spvc_context_create(&ctx) != SPVC_SUCCESS) throw std::runtime_error("spirv-cross: cannot create a context");
  struct Guard {
    spvc_context c;
    ~Guard() { spvc_context_destroy(c); }
  } guard{ctx};
  auto check = [&](spvc_result r) {
    if (r != SPVC_SUCCESS) throw std::runtime_error(std::string("spirv-cross: ") + spvc_context_get_last_error_string(ctx));
  };
  spvc_parsed_ir ir = nullptr;
  check(spvc_context_parse_spirv(ctx, spirv.data(), spirv.size(), &ir));
  spvc_compiler compiler = nullptr;
  check(spvc_context_create_compiler(ctx, SPVC_BACKEND_GLSL, ir, SPVC_CAPTURE_MODE_TAKE_OWNERSHIP, &compiler));
  spvc_compiler_options options = nullptr;
  check(spvc_compiler_create_compiler_options(compiler, &options));
  check(spvc_compiler_options_set_uint(options, SPVC_COMPILER_OPTION_GLSL_VERSION, 450));
  check(spvc_compiler_options_set_bool(options, SPVC_COMPILER_OPTION_GLSL_ES, SPVC_FALSE));
  check(spvc_compiler_options_set_bool(options, SPVC_COMPILER_OPTION_GLSL_VULKAN_SEMANTICS, SPVC_TRUE));
  check(spvc_compiler_install_compiler_options(compiler, options));
  const char* source = nullptr;
  check(spvc_compiler_compile(compiler, &source));
  return source;
}

}  // namespace nxv::codegen
