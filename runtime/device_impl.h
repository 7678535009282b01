// A logical device (Kompute's Manager): creates the VkDevice with what codegen may use, and
// holds its memory pool, pipeline cache and submitter; transfers and command recording.
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/hazards.h"
#include "runtime/memory_pool.h"
#include "runtime/pipeline_cache.h"
#include "runtime/runtime.h"
#include "runtime/submitter.h"

namespace nxv::runtime {

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

class DeviceImpl : public Device {
 public:
  DeviceImpl(VkPhysicalDevice phys, DeviceInfo info, RuntimeOptions opts);
  ~DeviceImpl() override;

  const DeviceInfo& info() const override { return info_; }
  // The fragment shapes with their measured layouts (runtime/fragment_probe.h), set once
  // as the device opens, before any kernel is compiled for it.
  void set_cooperative_matrix_shapes(std::vector<codegen::CooperativeMatrixShape> s) {
    info_.caps.cooperative_matrix_shapes = std::move(s);
  }
  const RuntimeOptions& options() const override { return opts_; }
  BufferPtr upload(const ir::TensorType& type, const void* data, size_t bytes) override;
  void download(const Buffer& buf, void* dst, size_t bytes) override;
  std::vector<BufferPtr> upload_all(const std::vector<Upload>& uploads) override;
  void download_all(const std::vector<Download>& downloads) override;
  BufferPtr allocate(const ir::TensorType& type) override;
  // As allocate, taking the pooled buffer `prefer` if it is idle: a run that gets the
  // buffers of the run before binds the same ones, and can submit its recording again.
  BufferPtr allocate(const ir::TensorType& type, VkBuffer prefer);
  uint64_t bytes_in_use() const override { return memory_->bytes_in_use(); }
  void trim() override { memory_->trim(); }
  MemoryPool& memory() { return *memory_; }

  // Pipelines are cached by a hash of the module and its launch, the
  // RuntimeOptions::pipeline_cache_size most recently used; creation goes through the
  // persisted VkPipelineCache. Hold the pointer for as long as recordings use the pipeline.
  PipelinePtr pipeline(const codegen::KernelBinary& k, const PipelineOptions& options = {});
  std::vector<PipelineStatistic> pipeline_statistics(const codegen::KernelBinary& kernel) const override {
    return pipelines_->statistics(kernel);
  }
  size_t pipelines_cached() const override { return pipelines_->cached(); }
  size_t pipelines_alive() const override { return pipelines_->alive(); }
  void drop_cached_pipelines() override;
  uint64_t pipeline_cache_hits() const { return pipelines_->hits(); }
  uint64_t pipeline_cache_misses() const { return pipelines_->misses(); }
  uint64_t pipeline_store_renewals() const { return pipelines_->store_renewals(); }

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
  // Orders the commands recorded after it behind those recorded before it, with the masks
  // of plan_barriers (runtime/hazards.h).
  static void record_barrier(VkCommandBuffer cb, const BarrierMasks& masks);

  // Submitter::submit, record_kept and submit_kept, on a device not lost.
  double submit(const Recording& record, std::chrono::microseconds spin = std::chrono::microseconds(200),
                std::vector<double>* dispatch_ms = nullptr);
  std::shared_ptr<SubmitContext> record_kept(const Recording& record);
  double submit_kept(SubmitContext& ctx, std::chrono::microseconds spin, std::vector<double>* dispatch_ms = nullptr);
  uint64_t buffers_destroyed() const { return memory_->buffers_destroyed(); }
  int64_t texel_views() const { return memory_->texel_views(); }

  VkDevice device() const { return device_; }

 private:
  std::string cache_path() const;
  void check_alive() const;

  VkPhysicalDevice phys_;
  DeviceInfo info_;
  RuntimeOptions opts_;
  VkDevice device_ = VK_NULL_HANDLE;
  // VK_KHR_push_descriptor, where the device has it: a dispatch's buffers written into the
  // command buffer, without a descriptor set to allocate and update (host time per dispatch).
  PFN_vkCmdPushDescriptorSetKHR push_descriptor_set_ = nullptr;
  std::atomic<bool> lost_{false};
  std::unique_ptr<MemoryPool> memory_;
  std::unique_ptr<PipelineCache> pipelines_;
  std::unique_ptr<Submitter> submitter_;
};

}  // namespace nxv::runtime
