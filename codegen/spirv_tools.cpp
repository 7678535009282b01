// validate/disassemble through SPIRV-Tools, GLSL through SPIRV-Cross.
#include <spirv-tools/libspirv.hpp>
#include <spirv_cross/spirv_cross_c.h>
#include <spirv/unified1/spirv.hpp>

#include <pthread.h>

#include <algorithm>
#include <exception>
#include <functional>
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


// Capabilities newer than Debian 12's spirv-val (2023.1), which rejects them as unknown:
// SPV_KHR_cooperative_matrix's and SPV_KHR_bfloat16's.
bool declares_newer_capability(const std::vector<uint32_t>& spirv) {
  for (size_t at = 5; at + 1 < spirv.size() && (spirv[at] & 0xFFFF) == spv::OpCapability; at += spirv[at] >> 16)
    if (spirv[at + 1] == 6022 || spirv[at + 1] == 5116 || spirv[at + 1] == 5118) return true;
  return false;
}
}  // namespace

std::string validate(const std::vector<uint32_t>& spirv, uint32_t vulkan_api_version) {
  if (declares_newer_capability(spirv)) return "";
  spvtools::SpirvTools tools(vulkan_env(vulkan_api_version));
  std::string messages;
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t& pos, const char* msg) {
    messages += "word " + std::to_string(pos.index) + ": " + msg + "\n";
  });
  if (tools.Validate(spirv)) return "";
  return messages.empty() ? "invalid SPIR-V" : messages;
}

std::string disassemble(const std::vector<uint32_t>& spirv) {
  if (declares_newer_capability(spirv))
    return "; not disassembled: the module uses SPV_KHR_cooperative_matrix or SPV_KHR_bfloat16, which this "
           "SPIRV-Tools predates\n";
  spvtools::SpirvTools tools(SPV_ENV_UNIVERSAL_1_3);
  std::string text, error;
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t&, const char* msg) { error = msg; });
  if (!tools.Disassemble(spirv, &text, SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES | SPV_BINARY_TO_TEXT_OPTION_INDENT))
    throw std::runtime_error("cannot disassemble SPIR-V: " + error);
  return text;
}

namespace {
// Runs `use` on a SPIRV-Cross compiler for `spirv`; SPIRV-Cross's errors become exceptions.
template <typename F>
auto with_cross_compiler(const std::vector<uint32_t>& spirv, spvc_backend backend, F use) {
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
  check(spvc_context_create_compiler(ctx, backend, ir, SPVC_CAPTURE_MODE_TAKE_OWNERSHIP, &compiler));
  return use(compiler, check);
}

// Runs fn on a thread with a stack of `bytes`, its exception rethrown here.
std::string on_own_stack(size_t bytes, const std::function<std::string()>& fn) {
  struct Job {
    const std::function<std::string()>& fn;
    std::string result;
    std::exception_ptr error;
  } job{fn, {}, nullptr};
  auto entry = [](void* p) -> void* {
    auto* j = static_cast<Job*>(p);
    try {
      j->result = j->fn();
    } catch (...) {
      j->error = std::current_exception();
    }
    return nullptr;
  };
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, bytes);
  pthread_t thread;
  const int failed = pthread_create(&thread, &attr, entry, &job);
  pthread_attr_destroy(&attr);
  if (failed) throw std::runtime_error("cannot start a thread for SPIRV-Cross");
  pthread_join(thread, nullptr);
  if (job.error) std::rethrow_exception(job.error);
  return job.result;
}

std::string glsl_of(const std::vector<uint32_t>& spirv) {
  return with_cross_compiler(spirv, SPVC_BACKEND_GLSL, [](spvc_compiler compiler, auto check) {
    spvc_compiler_options options = nullptr;
    check(spvc_compiler_create_compiler_options(compiler, &options));
    check(spvc_compiler_options_set_uint(options, SPVC_COMPILER_OPTION_GLSL_VERSION, 450));
    check(spvc_compiler_options_set_bool(options, SPVC_COMPILER_OPTION_GLSL_ES, SPVC_FALSE));
    check(spvc_compiler_options_set_bool(options, SPVC_COMPILER_OPTION_GLSL_VULKAN_SEMANTICS, SPVC_TRUE));
    check(spvc_compiler_install_compiler_options(compiler, options));
    const char* source = nullptr;
    check(spvc_compiler_compile(compiler, &source));
    return std::string(source);
  });
}
}  // namespace

// SPIRV-Cross writes each expression recursively, as deep as its tree: a dot's prologue of
// index maps is one expression per operand load, and a convolution's overflowed a dirty NIF
// scheduler's 320 KB stack (Nx.Vulkan.explain). It runs on a thread with room for that.
std::string to_glsl(const std::vector<uint32_t>& spirv) {
  return on_own_stack(size_t(256) << 20, [&] { return glsl_of(spirv); });
}

ModuleInterface reflect(const std::vector<uint32_t>& spirv) {
  return with_cross_compiler(spirv, SPVC_BACKEND_NONE, [](spvc_compiler compiler, auto check) {
    ModuleInterface m;
    const spvc_entry_point* entries = nullptr;
    size_t n = 0;
    check(spvc_compiler_get_entry_points(compiler, &entries, &n));
    for (size_t i = 0; i < n; ++i)
      m.compute_main = m.compute_main ||
                       (std::string(entries[i].name) == "main" && entries[i].execution_model == SpvExecutionModelGLCompute);
    if (m.compute_main) {
      check(spvc_compiler_set_entry_point(compiler, "main", SpvExecutionModelGLCompute));
      for (uint32_t d = 0; d < 3; ++d)
        m.workgroup_size[d] = spvc_compiler_get_execution_mode_argument_by_index(compiler, SpvExecutionModeLocalSize, d);
    }
    spvc_resources resources = nullptr;
    check(spvc_compiler_create_shader_resources(compiler, &resources));
    auto list = [&](spvc_resource_type type) {
      const spvc_reflected_resource* rs = nullptr;
      size_t count = 0;
      check(spvc_resources_get_resource_list_for_type(resources, type, &rs, &count));
      return std::vector<spvc_reflected_resource>(rs, rs + count);
    };
    for (const auto& r : list(SPVC_RESOURCE_TYPE_STORAGE_BUFFER))
      m.storage_buffers.push_back({spvc_compiler_get_decoration(compiler, r.id, SpvDecorationDescriptorSet),
                                   spvc_compiler_get_decoration(compiler, r.id, SpvDecorationBinding)});
    for (auto type : {SPVC_RESOURCE_TYPE_UNIFORM_BUFFER, SPVC_RESOURCE_TYPE_STORAGE_IMAGE, SPVC_RESOURCE_TYPE_SAMPLED_IMAGE,
                      SPVC_RESOURCE_TYPE_SEPARATE_IMAGE, SPVC_RESOURCE_TYPE_SEPARATE_SAMPLERS,
                      SPVC_RESOURCE_TYPE_ACCELERATION_STRUCTURE})
      m.other_resources += list(type).size();
    for (const auto& r : list(SPVC_RESOURCE_TYPE_PUSH_CONSTANT)) {
      size_t bytes = 0;
      check(spvc_compiler_get_declared_struct_size(compiler, spvc_compiler_get_type_handle(compiler, r.base_type_id),
                                                   &bytes));
      m.push_constant_bytes = std::max<uint32_t>(m.push_constant_bytes, uint32_t(bytes));
    }
    const SpvCapability* caps = nullptr;
    size_t ncaps = 0;
    check(spvc_compiler_get_declared_capabilities(compiler, &caps, &ncaps));
    m.capabilities.assign(caps, caps + ncaps);
    return m;
  });
}

}  // namespace nxv::codegen
