// A device's compute pipelines: created from kernels through its PipelineStore, kept in a
// bounded LRU by content hash, each destroyed with the last pointer to it.
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "runtime/lru_cache.h"
#include "runtime/pipeline_store.h"
#include "runtime/runtime.h"

namespace nxv::runtime {

// Its Vulkan objects are destroyed with the last PipelinePtr to it (PipelineCache::get).
struct Pipeline {
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  std::vector<VkDescriptorType> types;  // per binding: storage buffer, or uniform texel buffer
  std::string kernel;  // the kernel's name, for validation errors
  uint32_t push_constant_bytes = 0;
  bool push_descriptors = false;  // its buffers are bound by vkCmdPushDescriptorSetKHR
  std::vector<PipelineStatistic> statistics;  // RuntimeOptions::pipeline_statistics
};

using PipelinePtr = std::shared_ptr<const Pipeline>;

struct PipelineOptions {
  uint32_t push_constant_bytes = 0;
  bool bounds_checked = false;  // robust buffer access: for modules this compiler did not generate
};

// What the VkDevice was created with that pipelines depend on.
struct PipelineFeatures {
  // How bounds-checked pipelines are had: per pipeline (VK_EXT_pipeline_robustness), by the
  // whole device (robustBufferAccess), or not at all.
  enum class Robustness { None, PerPipeline, DeviceWide } robustness = Robustness::None;
  // VK_KHR_push_descriptor, with the most bindings one push may write (0 without it).
  uint32_t max_push_descriptors = 0;
  bool capture_statistics = false;  // VK_KHR_pipeline_executable_properties enabled for them
  // Kernels number their invocations by SubgroupId x SubgroupSize + lane (attention's and the
  // reductions' shuffles), which holds only where every subgroup is full. Where
  // VK_EXT_subgroup_size_control's computeFullSubgroups is enabled, pipelines whose workgroup
  // is a multiple of this many invocations (the device's largest subgroup) are created
  // requiring full subgroups; 0 without it, where drivers fill them in practice.
  uint32_t full_subgroups = 0;
};

class PipelineCache {
 public:
  // The `capacity` most recently used pipelines stay alive; `store_path` ("" for none) holds
  // the driver's VkPipelineCache between processes.
  PipelineCache(VkDevice device, const DeviceInfo& info, const VkPhysicalDeviceProperties& props, std::string store_path,
                size_t capacity, PipelineFeatures features);
  ~PipelineCache();  // nothing else may hold a pipeline by then
  PipelineCache(const PipelineCache&) = delete;
  PipelineCache& operator=(const PipelineCache&) = delete;

  // The pipeline of kernel `k`, created on a miss (one thread creates it, others asking for
  // it meanwhile wait). Hold the pointer for as long as recordings use the pipeline.
  PipelinePtr get(const codegen::KernelBinary& k, const PipelineOptions& options = {});
  std::vector<PipelineStatistic> statistics(const codegen::KernelBinary& kernel) const;
  size_t cached() const;
  size_t alive() const { return alive_; }
  // Lets go of every cached pipeline (destroyed once nothing else holds them) and renews the store.
  void clear();
  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }
  uint64_t store_renewals() const { return store_->renewals(); }

 private:
  Pipeline create(const codegen::KernelBinary& k, const PipelineOptions& options);
  // create's steps: p's descriptor set layout (push descriptors where the device takes all
  // of k's bindings that way) and pipeline layout; then its pipeline from k's module.
  void create_layouts(const codegen::KernelBinary& k, const PipelineOptions& options, Pipeline& p);
  void create_pipeline(const codegen::KernelBinary& k, const PipelineOptions& options, Pipeline& p);
  // The cache's key of kernel `k` created with `options` (their push constants resolved).
  static std::string key(const codegen::KernelBinary& k, const PipelineOptions& options);
  std::vector<PipelineStatistic> read_statistics(VkPipeline pipeline) const;
  // After evictions, at most every kHeapReturnIntervalMs: gives the pages of free heap back
  // to the system (glibc's malloc_trim). A driver's pipeline may hold much host heap
  // (lavapipe: about 0.4 MiB each, a quarter of it resident while new); freed, glibc keeps
  // it, and as other allocations reuse it ever more of it stays resident: in 4-minute soaks
  // on lavapipe (docs/reliability.md) RSS reached 438 MiB with a trim every 5 s against 539
  // to 577 without, at 2 ms a trim.
  void return_free_heap();

  VkDevice device_;
  const DeviceInfo& info_;
  PipelineFeatures features_;
  mutable std::mutex mutex_;
  LruCache<std::string, PipelinePtr> pipelines_;
  std::atomic<size_t> alive_{0};
  std::set<std::string> creating_;  // keys some thread is creating now
  std::condition_variable created_;
  // Pipelines are created through it; it is renewed after this many times the pipelines the
  // LRU keeps alive.
  static constexpr size_t kPipelinesPerStore = 4;
  std::unique_ptr<PipelineStore> store_;
  std::atomic<uint64_t> hits_{0}, misses_{0};
  static constexpr int64_t kHeapReturnIntervalMs = 5000;
  std::atomic<int64_t> last_heap_return_ms_{0};
};

}  // namespace nxv::runtime
