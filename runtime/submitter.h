// A device's queue: command contexts, recorded and reused, submitted under the queue's lock
// and waited for with the device's timeout.
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace nxv::runtime {

// What one submission needs besides its commands: reused across submits (reset, not
// recreated) because creating pools and fences per run dominated small graphs' wall time.
class SubmitContext {
 public:
  // A descriptor set for `layout`, valid until the submission finishes.
  VkDescriptorSet allocate_set(VkDescriptorSetLayout layout);
  // Where the submitter times dispatches one by one: a timestamp once the work recorded so
  // far has left the compute stage (call it after each dispatch). A no-op without them, or
  // past their number.
  void stamp(VkCommandBuffer cb);

 private:
  friend class Submitter;
  VkDevice device = VK_NULL_HANDLE;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  VkQueryPool queries = VK_NULL_HANDLE;
  uint32_t stamp_capacity = 0, stamps = 0;  // per-dispatch timestamps after the two of the whole
  std::vector<VkDescriptorPool> descriptor_pools;  // grows when a graph needs more sets
  size_t current_pool = 0;
};

using Recording = std::function<void(VkCommandBuffer, SubmitContext&)>;

class Submitter {
 public:
  // `timestamp_period_ns` 0: the queue has no timestamps. `lost` is set when the device is
  // lost; `device_name` names the device in timeout errors. `dispatch_stamps`: how many
  // dispatches of a submission are timed one by one (SubmitContext::stamp; 0: none).
  Submitter(VkDevice device, uint32_t queue_family, float timestamp_period_ns, uint64_t timeout_ms,
            std::string device_name, std::atomic<bool>& lost, uint32_t dispatch_stamps = 0);
  ~Submitter();  // the device must be idle
  Submitter(const Submitter&) = delete;
  Submitter& operator=(const Submitter&) = delete;

  // Records with `record`, submits once under the queue mutex, waits with the timeout.
  // The wait polls for up to `spin` before it sleeps on the fence: waking from that sleep
  // takes tens of microseconds, as much as a small graph's whole run.
  // Returns device time in ms (0 when the queue has no timestamps); appends each timed
  // dispatch's device time to `dispatch_ms`, where given: from the end of the one before
  // (or the start), so that transfers between count with it and overlapping kernels share.
  double submit(const Recording& record, std::chrono::microseconds spin, std::vector<double>* dispatch_ms = nullptr);
  // A recording kept to be submitted again with submit_kept, for as long as every buffer
  // it binds stays alive: recording costs the host about a microsecond and a half per
  // dispatch on an H100, a tenth of a small training step. Dropping it gives its
  // context back.
  std::shared_ptr<SubmitContext> record_kept(const Recording& record);
  // As submit, for a kept recording; one thread at a time per recording.
  double submit_kept(SubmitContext& ctx, std::chrono::microseconds spin, std::vector<double>* dispatch_ms = nullptr);

 private:
  std::unique_ptr<SubmitContext> acquire_context();
  void destroy_context(SubmitContext& c);
  // A context's command buffer begun, `record`ed and ended, timestamps around it.
  void record_into(SubmitContext& ctx, const Recording& record);
  // Submits a recorded context under the queue mutex (the queue is externally
  // synchronised) and waits for it; device time in ms.
  double execute(SubmitContext& ctx, std::chrono::microseconds spin, std::vector<double>* dispatch_ms);
  // A context whose submission failed: destroyed once the queue is idle, so that the GPU
  // is not still reading what is freed.
  void abandon(std::unique_ptr<SubmitContext> ctx);
  // Waits, under the queue mutex, until the GPU has finished everything submitted.
  void wait_idle();

  VkDevice device_;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_;
  float timestamp_period_ns_;
  uint64_t timeout_ms_;
  uint32_t dispatch_stamps_;
  std::string device_name_;
  std::atomic<bool>& lost_;
  std::mutex queue_mutex_;  // vkQueueSubmit needs external synchronisation
  std::mutex contexts_mutex_;
  std::vector<std::unique_ptr<SubmitContext>> idle_contexts_;
};

}  // namespace nxv::runtime
