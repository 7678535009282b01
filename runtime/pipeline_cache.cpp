// A device's pipelines: created through its PipelineStore, cached in a bounded LRU.
#include "runtime/pipeline_cache.h"

#include <algorithm>
#include <chrono>
#if defined(__GLIBC__)
#include <malloc.h>  // malloc_trim
#endif

#include "runtime/vk_util.h"

namespace nxv::runtime {

PipelineCache::PipelineCache(VkDevice device, const DeviceInfo& info, const VkPhysicalDeviceProperties& props,
                             std::string store_path, size_t capacity, PipelineFeatures features)
    : device_(device), info_(info), features_(features), pipelines_(capacity),
      store_(std::make_unique<PipelineStore>(device, props, std::move(store_path), kPipelinesPerStore * capacity)) {}

PipelineCache::~PipelineCache() {
  std::vector<PipelinePtr> cached;
  pipelines_.clear(cached);
}

void PipelineCache::clear() {
  std::vector<PipelinePtr> evicted;  // destroyed after the lock, by whoever holds them last
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pipelines_.clear(evicted);
  }
  evicted.clear();
  store_->renew();
}

std::string PipelineCache::key(const codegen::KernelBinary& k, const PipelineOptions& o) {
  std::string salt = std::to_string(k.workgroup_size[0]) + "," + std::to_string(k.bindings.size()) + "," +
                     std::to_string(o.push_constant_bytes) + (o.bounds_checked ? ",checked" : "");
  return content_hash(k.spirv.data(), k.spirv.size() * 4, salt);
}

std::vector<PipelineStatistic> PipelineCache::statistics(const codegen::KernelBinary& kernel) const {
  PipelineOptions o;
  o.push_constant_bytes = kernel.push_constant_bytes;
  std::lock_guard<std::mutex> lock(mutex_);
  const PipelinePtr* p = pipelines_.peek(key(kernel, o));
  return p ? (*p)->statistics : std::vector<PipelineStatistic>{};
}

size_t PipelineCache::cached() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pipelines_.size();
}

std::vector<PipelineStatistic> PipelineCache::read_statistics(VkPipeline pipeline) const {
  auto properties = reinterpret_cast<PFN_vkGetPipelineExecutablePropertiesKHR>(
      vkGetDeviceProcAddr(device_, "vkGetPipelineExecutablePropertiesKHR"));
  auto statistics = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
      vkGetDeviceProcAddr(device_, "vkGetPipelineExecutableStatisticsKHR"));
  std::vector<PipelineStatistic> out;
  if (!properties || !statistics) return out;
  VkPipelineInfoKHR info{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR, nullptr, pipeline};
  uint32_t executables = 0;
  if (properties(device_, &info, &executables, nullptr) != VK_SUCCESS) return out;
  for (uint32_t i = 0; i < executables; ++i) {
    VkPipelineExecutableInfoKHR exe{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR, nullptr, pipeline, i};
    uint32_t n = 0;
    if (statistics(device_, &exe, &n, nullptr) != VK_SUCCESS) continue;
    std::vector<VkPipelineExecutableStatisticKHR> stats(n, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
    if (statistics(device_, &exe, &n, stats.data()) != VK_SUCCESS) continue;
    for (const auto& st : stats) {
      std::string value;
      switch (st.format) {
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: value = st.value.b32 ? "true" : "false"; break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: value = std::to_string(st.value.i64); break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: value = std::to_string(st.value.u64); break;
        default: value = std::to_string(st.value.f64); break;
      }
      out.push_back({std::string(executables > 1 ? std::to_string(i) + ": " : "") + st.name, value});
    }
  }
  return out;
}

PipelinePtr PipelineCache::get(const codegen::KernelBinary& k, const PipelineOptions& options) {
  // A generated module's push constants (its zero word) are pushed by record_dispatch.
  PipelineOptions o = options;
  o.push_constant_bytes = std::max(o.push_constant_bytes, k.push_constant_bytes);
  if (o.bounds_checked && features_.robustness == PipelineFeatures::Robustness::None)
    throw Error(Error::Kind::Unsupported,
                info_.name + " cannot bounds-check " + k.name + " alone: open the device with robust_buffer_access" +
                    " (Nx.Vulkan.NativeV does)");
  const std::string id = key(k, o);
  {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      if (const PipelinePtr* p = pipelines_.find(id)) {
        ++hits_;
        return *p;
      }
      if (!creating_.count(id)) break;
      // Another thread is creating this very pipeline: wait for it rather than compile twice.
      created_.wait(lock);
    }
    creating_.insert(id);
    ++misses_;
  }
  // Created without the lock held: a driver compiles for up to seconds (lavapipe's LLVM on a
  // large kernel), and a lookup of a pipeline that exists, or the creation of another, must
  // not queue behind that (on a busy machine such waits added up past test timeouts).
  // VkPipelineCache is internally synchronised, so concurrent creations may share it.
  Pipeline p;
  try {
    p = create(k, o);
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      creating_.erase(id);
    }
    created_.notify_all();
    throw;
  }
  // Destroyed when the last holder lets go. Every submit waits for its fence, and a failed
  // one for the queue to go idle, so by then no work on the GPU uses it; a kept recording
  // that binds it belongs to an executable, which holds the pipeline until after it.
  ++alive_;
  PipelinePtr created(new Pipeline(std::move(p)), [this](const Pipeline* q) {
    vkDestroyPipeline(device_, q->pipeline, nullptr);
    vkDestroyPipelineLayout(device_, q->layout, nullptr);
    vkDestroyDescriptorSetLayout(device_, q->set_layout, nullptr);
    --alive_;
    delete q;
  });
  std::vector<PipelinePtr> evicted;  // released after the lock, by whoever holds them last
  {
    std::lock_guard<std::mutex> lock(mutex_);
    created = pipelines_.insert(id, created, evicted);
    creating_.erase(id);
  }
  created_.notify_all();
  store_->save(false);
  if (!evicted.empty()) return_free_heap();
  return created;
}

void PipelineCache::return_free_heap() {
#if defined(__GLIBC__)
  const int64_t now =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  int64_t last = last_heap_return_ms_;
  if (now - last < kHeapReturnIntervalMs || !last_heap_return_ms_.compare_exchange_strong(last, now)) return;
  malloc_trim(0);
#endif
}

Pipeline PipelineCache::create(const codegen::KernelBinary& k, const PipelineOptions& o) {
  Pipeline p;
  struct Guard {
    VkDevice device;
    Pipeline& p;
    bool keep = false;
    ~Guard() {
      if (keep) return;
      if (p.layout) vkDestroyPipelineLayout(device, p.layout, nullptr);
      if (p.set_layout) vkDestroyDescriptorSetLayout(device, p.set_layout, nullptr);
    }
  } guard{device_, p};
  create_layouts(k, o, p);
  create_pipeline(k, o, p);
  guard.keep = true;
  return p;
}

void PipelineCache::create_layouts(const codegen::KernelBinary& k, const PipelineOptions& o, Pipeline& p) {
  std::vector<VkDescriptorSetLayoutBinding> binds;
  for (uint32_t i = 0; i < k.bindings.size(); ++i) {
    p.types.push_back(k.bindings[i].texels ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    binds.push_back({i, p.types[i], 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
  }
  VkDescriptorSetLayoutCreateInfo dl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  p.push_descriptors = features_.max_push_descriptors > 0 && binds.size() <= features_.max_push_descriptors;
  if (p.push_descriptors) dl.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
  dl.bindingCount = uint32_t(binds.size());
  dl.pBindings = binds.data();
  vk_check(vkCreateDescriptorSetLayout(device_, &dl, nullptr, &p.set_layout), "vkCreateDescriptorSetLayout");
  VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &p.set_layout;
  VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, o.push_constant_bytes};
  if (o.push_constant_bytes) {
    pl.pushConstantRangeCount = 1;
    pl.pPushConstantRanges = &push;
  }
  p.push_constant_bytes = o.push_constant_bytes;
  p.kernel = k.name;
  if (o.push_constant_bytes > info_.caps.max_push_constant_bytes)
    throw Error(Error::Kind::Unsupported, "kernel " + k.name + " takes " + std::to_string(o.push_constant_bytes) +
                                              " bytes of push constants; " + info_.name + " allows " +
                                              std::to_string(info_.caps.max_push_constant_bytes));
  vk_check(vkCreatePipelineLayout(device_, &pl, nullptr, &p.layout), "vkCreatePipelineLayout");
}

void PipelineCache::create_pipeline(const codegen::KernelBinary& k, const PipelineOptions& o, Pipeline& p) {
  VkShaderModuleCreateInfo sm{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  sm.codeSize = k.spirv.size() * 4;
  sm.pCode = k.spirv.data();
  VkShaderModule module;
  vk_check(vkCreateShaderModule(device_, &sm, nullptr, &module), ("vkCreateShaderModule for " + k.name).c_str());
  VkComputePipelineCreateInfo cp{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  cp.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, nullptr, 0, VK_SHADER_STAGE_COMPUTE_BIT, module, "main",
              nullptr};
  cp.layout = p.layout;
  VkPipelineRobustnessCreateInfoEXT checked{VK_STRUCTURE_TYPE_PIPELINE_ROBUSTNESS_CREATE_INFO_EXT};
  checked.storageBuffers = VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_ROBUST_BUFFER_ACCESS_EXT;
  if (o.bounds_checked && features_.robustness == PipelineFeatures::Robustness::PerPipeline) cp.pNext = &checked;
  if (features_.capture_statistics) cp.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  if (features_.full_subgroups && k.workgroup_size[0] % features_.full_subgroups == 0 && k.workgroup_size[1] == 1 &&
      k.workgroup_size[2] == 1)
    cp.stage.flags |= VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT_EXT;
  VkResult r = store_->create(cp, &p.pipeline);
  vkDestroyShaderModule(device_, module, nullptr);
  vk_check(r, ("vkCreateComputePipelines for " + k.name).c_str());
  if (validation_requested()) name_object(device_, VK_OBJECT_TYPE_PIPELINE, uint64_t(p.pipeline), "kernel " + k.name);
  check_validation("creating the pipeline of kernel " + k.name);
  if (features_.capture_statistics) p.statistics = read_statistics(p.pipeline);
}

}  // namespace nxv::runtime
