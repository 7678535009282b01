// Shared between the runtime's files: Vulkan result checking and the device implementation.
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/lru_cache.h"
#include "runtime/pipeline_store.h"
#include "runtime/runtime.h"

namespace nxv::runtime {

// Maps a VkResult to the Error kind a caller can act on.
void vk_check(VkResult r, const char* what);

// The validation layer (runtime/validation.cpp), where NXV_VALIDATE asks for it.
bool validation_requested();
std::string validation_layer_missing();  // "" where the loader has the layer, else the error
const char* validation_layer_name();
VkDebugUtilsMessengerCreateInfoEXT validation_messenger_info();
// Throws Error(Vulkan) with the first validation error reported since the last check.
void check_validation(const std::string& during);
// Names a Vulkan object in validation messages (a no-op without VK_EXT_debug_utils).
void name_object(VkDevice device, VkObjectType type, uint64_t handle, const std::string& name);

// Its Vulkan objects are destroyed with the last PipelinePtr to it (DeviceImpl::pipeline).
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

struct Allocation {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  uint64_t capacity = 0;
  void* mapped = nullptr;  // non-null when the memory is host-visible and coherent
  // Its R32G32B32A32_UINT view, made on the first dispatch that binds it as texels
  // (BufferImpl::texel_view) and kept with the buffer while it is pooled.
  VkBufferView texels = VK_NULL_HANDLE;
};

class DeviceImpl;

class BufferImpl : public Buffer {
 public:
  BufferImpl(DeviceImpl* dev, ir::TensorType type, Allocation a) : dev_(dev), type_(std::move(type)), alloc_(a) {}
  ~BufferImpl() override;
  const ir::TensorType& type() const override { return type_; }
  uint64_t bytes() const override { return type_.byte_size(); }
  const Device& device() const override;
  const Allocation& alloc() const { return alloc_; }
  // The buffer's uniform texel buffer view (Allocation::texels), made on first use; throws
  // InvalidArgument where the tensor has more texels than the device's maxTexelBufferElements.
  VkBufferView texel_view() const;

 private:
  DeviceImpl* dev_;
  ir::TensorType type_;
  mutable Allocation alloc_;
  mutable std::once_flag texel_view_made_;
};

// What one submission needs besides its commands: reused across submits (reset, not
// recreated) because creating pools and fences per run dominated small graphs' wall time.
class SubmitContext {
 public:
  // A descriptor set for `layout`, valid until the submission finishes.
  VkDescriptorSet allocate_set(VkDescriptorSetLayout layout);

 private:
  friend class DeviceImpl;
  VkDevice device = VK_NULL_HANDLE;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  VkQueryPool queries = VK_NULL_HANDLE;
  std::vector<VkDescriptorPool> descriptor_pools;  // grows when a graph needs more sets
  size_t current_pool = 0;
};

class DeviceImpl : public Device {
 public:
  DeviceImpl(VkInstance instance, VkPhysicalDevice phys, DeviceInfo info, RuntimeOptions opts);
  ~DeviceImpl() override;

  const DeviceInfo& info() const override { return info_; }
  const RuntimeOptions& options() const override { return opts_; }
  BufferPtr upload(const ir::TensorType& type, const void* data, size_t bytes) override;
  void download(const Buffer& buf, void* dst, size_t bytes) override;
  std::vector<BufferPtr> upload_all(const std::vector<Upload>& uploads) override;
  void download_all(const std::vector<Download>& downloads) override;
  BufferPtr allocate(const ir::TensorType& type) override;
  // As allocate, taking the pooled buffer `prefer` if it is idle: a run that gets the
  // buffers of the run before binds the same ones, and can submit its recording again.
  BufferPtr allocate(const ir::TensorType& type, VkBuffer prefer);
  uint64_t bytes_in_use() const override { return in_use_; }
  void trim() override;

  // Pipelines are cached by a hash of the module and its launch, the
  // RuntimeOptions::pipeline_cache_size most recently used; creation goes through the
  // persisted VkPipelineCache. Hold the pointer for as long as recordings use the pipeline.
  PipelinePtr pipeline(const codegen::KernelBinary& k, const PipelineOptions& options = {});
  std::vector<PipelineStatistic> pipeline_statistics(const codegen::KernelBinary& kernel) const override;
  size_t pipelines_cached() const override;
  size_t pipelines_alive() const override { return pipelines_alive_; }
  void drop_cached_pipelines() override;
  uint64_t pipeline_cache_hits() const { return hits_; }
  uint64_t pipeline_cache_misses() const { return misses_; }
  uint64_t pipeline_store_renewals() const { return pipeline_store_->renewals(); }

  // Records a dispatch of `p` with buffers[i] at binding i. With `indirect`, the group
  // counts are the three words at `indirect_offset` in that buffer when the dispatch runs,
  // not `group_count`. Commands recorded in one command buffer are ordered only by
  // record_barrier.
  void record_dispatch(VkCommandBuffer cb, SubmitContext& ctx, const Pipeline& p, const std::vector<const Buffer*>& buffers,
                       const uint32_t group_count[3], const std::vector<uint8_t>& push_constants = {},
                       const Buffer* indirect = nullptr, uint64_t indirect_offset = 0);
  // Records a write of `bytes` (at most 64 KiB) into `b`.
  void record_update(VkCommandBuffer cb, const Buffer& b, const std::vector<uint8_t>& bytes);
  // Copies src's first `bytes` into dst.
  void record_copy(VkCommandBuffer cb, const Buffer& src, const Buffer& dst, uint64_t bytes);
  // Makes the writes of the dispatches and transfers recorded before it visible to the
  // dispatches, transfers and indirect reads recorded after it, which start only once
  // those before have finished.
  static void record_barrier(VkCommandBuffer cb);

  // Records with `record`, submits once under the queue mutex, waits with the timeout.
  // The wait polls for up to `spin` before it sleeps on the fence: waking from that sleep
  // takes tens of microseconds, as much as a small graph's whole run.
  // Returns device time in ms (0 when the queue has no timestamps).
  double submit(const std::function<void(VkCommandBuffer, SubmitContext&)>& record,
                std::chrono::microseconds spin = std::chrono::microseconds(200));
  // A recording kept to be submitted again with submit_kept, for as long as every buffer
  // it binds stays alive: recording costs the host about a microsecond and a half per
  // dispatch on an H100, a tenth of a small training step. Dropping it gives its
  // context back.
  std::shared_ptr<SubmitContext> record_kept(const std::function<void(VkCommandBuffer, SubmitContext&)>& record);
  // As submit, for a kept recording; one thread at a time per recording.
  double submit_kept(SubmitContext& ctx, std::chrono::microseconds spin);
  // Grows whenever a buffer is destroyed: a kept recording made before may bind a handle
  // that now names another buffer.
  uint64_t buffers_destroyed() const { return buffers_destroyed_; }
  // Texel views alive: one per allocation, pooled ones included, that a dispatch bound as texels.
  int64_t texel_views() const { return texel_views_; }

  VkDevice device() const { return device_; }
  void release(const Allocation& a, uint64_t bytes);
  // A view of `a` as R32G32B32A32_UINT texels, as many as it holds up to maxTexelBufferElements.
  VkBufferView create_texel_view(const Allocation& a);

 private:
  // A context's command buffer begun, `record`ed and ended, timestamps around it.
  void record_into(SubmitContext& ctx, const std::function<void(VkCommandBuffer, SubmitContext&)>& record);
  // Submits a recorded context under the queue mutex (the queue is externally
  // synchronised) and waits for it; device time in ms.
  double execute(SubmitContext& ctx, std::chrono::microseconds spin);
  // A context whose submission failed: destroyed once the queue is idle, so that the GPU
  // is not still reading what is freed.
  void abandon(std::unique_ptr<SubmitContext> ctx);
  // Waits, under the queue mutex, until the GPU has finished everything submitted.
  void wait_idle();
  Allocation allocate_raw(uint64_t bytes, VkBuffer prefer = VK_NULL_HANDLE);
  Allocation allocate_memory(uint64_t capacity, bool host_visible_only);
  // Host-visible memory for one transfer, pooled like device memory: a vkAllocateMemory and
  // vkFreeMemory per upload took milliseconds on NVIDIA and serialised the threads serving
  // from two GPUs in one process. Back in the pool when the Staging goes, however the
  // transfer ends.
  struct Staging {
    Staging(DeviceImpl& dev, Allocation a) : dev(dev), a(a) {}
    Staging(const Staging&) = delete;
    Staging& operator=(const Staging&) = delete;
    ~Staging() { dev.release_staging(a); }
    DeviceImpl& dev;
    const Allocation a;
  };
  Staging acquire_staging(uint64_t bytes);
  // An idle allocation of exactly `capacity` from `pool` (free_ or staging_free_), if any.
  std::optional<Allocation> take_pooled(std::multimap<uint64_t, Allocation>& pool, uint64_t capacity,
                                       VkBuffer prefer = VK_NULL_HANDLE);
  void release_staging(const Allocation& a);
  void free_raw(const Allocation& a);
  // After evictions from the pipeline cache, at most every kHeapReturnIntervalMs: gives the
  // pages of free heap back to the system (glibc's malloc_trim). A driver's pipeline may
  // hold much host heap (lavapipe: about 0.4 MiB each, a quarter of it resident while new);
  // freed, glibc keeps it, and as other allocations reuse it ever more of it stays
  // resident: in 4-minute soaks on lavapipe (docs/reliability.md) RSS reached 438 MiB with
  // a trim every 5 s against 539 to 577 without, at 2 ms a trim.
  void return_free_heap();
  Pipeline create_pipeline(const codegen::KernelBinary& k, const PipelineOptions& options);
  // The pipelines_ key of kernel `k` created with `options` (their push constants resolved).
  static std::string pipeline_key(const codegen::KernelBinary& k, const PipelineOptions& options);
  std::vector<PipelineStatistic> read_statistics(VkPipeline pipeline) const;
  std::string cache_path() const;
  void check_alive() const;
  std::unique_ptr<SubmitContext> acquire_context();
  void destroy_context(SubmitContext& c);

  VkInstance instance_;
  VkPhysicalDevice phys_;
  DeviceInfo info_;
  RuntimeOptions opts_;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  float timestamp_period_ns_ = 0;
  bool timestamps_ = false;
  VkPhysicalDeviceMemoryProperties mem_props_{};
  bool unified_ = false;  // device-local memory is host-visible: no staging needed
  enum class Robustness { None, PerPipeline, DeviceWide } robust_ = Robustness::None;
  // VK_KHR_push_descriptor, where the device has it: a dispatch's buffers written into the
  // command buffer, without a descriptor set to allocate and update (host time per dispatch).
  PFN_vkCmdPushDescriptorSetKHR push_descriptor_set_ = nullptr;
  uint32_t max_push_descriptors_ = 0;
  bool capture_statistics_ = false;  // VK_KHR_pipeline_executable_properties enabled for them

  std::mutex queue_mutex_;  // vkQueueSubmit needs external synchronisation
  std::mutex pool_mutex_;
  std::multimap<uint64_t, Allocation> free_;          // capacity → idle allocation
  std::multimap<uint64_t, Allocation> staging_free_;  // the same, host-visible, for transfers
  std::atomic<uint64_t> in_use_{0};
  std::atomic<uint64_t> buffers_destroyed_{0};
  std::atomic<int64_t> texel_views_{0};
  mutable std::mutex pipeline_mutex_;
  LruCache<std::string, PipelinePtr> pipelines_;
  std::atomic<size_t> pipelines_alive_{0};
  std::set<std::string> creating_;                      // keys some thread is creating now
  std::condition_variable pipeline_created_;
  // Pipelines are created through it; it is renewed after this many times the pipelines the
  // LRU keeps alive (RuntimeOptions::pipeline_cache_size).
  static constexpr size_t kPipelinesPerStore = 4;
  std::unique_ptr<PipelineStore> pipeline_store_;
  std::atomic<uint64_t> hits_{0}, misses_{0};
  static constexpr int64_t kHeapReturnIntervalMs = 5000;
  std::atomic<int64_t> last_heap_return_ms_{0};
  std::atomic<bool> lost_{false};
  std::mutex contexts_mutex_;
  std::vector<std::unique_ptr<SubmitContext>> idle_contexts_;
};

// Content hash used for pipeline and executable caches: two independent FNV-1a-64 streams
// (128 bits), so accidental collisions among the few thousand modules a process sees are
// negligible; this is no defence against an adversary, which a local cache does not need.
std::string content_hash(const void* data, size_t bytes, const std::string& salt = "");

}  // namespace nxv::runtime
