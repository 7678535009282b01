// A device's memory: buffers in size classes, pooled when idle, and host-visible staging
// memory for transfers, pooled likewise.
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <map>
#include <mutex>
#include <optional>

#include "runtime/runtime.h"

namespace nxv::runtime {

struct Allocation {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  uint64_t capacity = 0;
  void* mapped = nullptr;  // non-null when the memory is host-visible and coherent
  // Its R32G32B32A32_UINT view, made on the first dispatch that binds it as texels
  // (BufferImpl::texel_view) and kept with the buffer while it is pooled.
  VkBufferView texels = VK_NULL_HANDLE;
};

class MemoryPool {
 public:
  MemoryPool(VkDevice device, VkPhysicalDevice phys, const DeviceInfo& info);
  ~MemoryPool();  // frees what is idle; every buffer must have been released
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  // Room for `bytes` within the device's limits (a size class, or exactly the bytes where the
  // class would pass a binding's range): the idle allocation `prefer` if it has that
  // capacity, else another idle one, else new memory (after freeing the idle ones, if the
  // device is out of memory). Throws Error(OutOfMemory) naming the limit a tensor passes.
  Allocation allocate(uint64_t bytes, VkBuffer prefer = VK_NULL_HANDLE);
  // Back to the pool: `bytes` no longer in use.
  void release(const Allocation& a, uint64_t bytes);
  // Frees every idle allocation, device and staging.
  void trim();

  // Host-visible memory for one transfer, pooled like device memory: a vkAllocateMemory and
  // vkFreeMemory per upload took milliseconds on NVIDIA and serialised the threads serving
  // from two GPUs in one process. Back in the pool when the Staging goes, however the
  // transfer ends.
  struct Staging {
    Staging(MemoryPool& pool, Allocation a) : pool(pool), a(a) {}
    Staging(const Staging&) = delete;
    Staging& operator=(const Staging&) = delete;
    ~Staging() { pool.release_staging(a); }
    MemoryPool& pool;
    const Allocation a;
  };
  Staging acquire_staging(uint64_t bytes);

  // A view of `a` as R32G32B32A32_UINT texels, as many as it holds up to maxTexelBufferElements.
  VkBufferView create_texel_view(const Allocation& a);

  // Device-local memory is host-visible (lavapipe): buffers are written in place, no staging.
  bool unified() const { return unified_; }
  uint64_t bytes_in_use() const { return in_use_; }
  void add_in_use(uint64_t bytes) { in_use_ += bytes; }
  // Grows whenever a buffer is destroyed: a kept recording made before may bind a handle
  // that now names another buffer.
  uint64_t buffers_destroyed() const { return buffers_destroyed_; }
  // Texel views alive: one per allocation, pooled ones included, that a dispatch bound as texels.
  int64_t texel_views() const { return texel_views_; }

 private:
  Allocation allocate_memory(uint64_t capacity, bool host_visible_only);
  // An idle allocation of exactly `capacity` from `pool` (free_ or staging_free_), if any.
  std::optional<Allocation> take_pooled(std::multimap<uint64_t, Allocation>& pool, uint64_t capacity,
                                       VkBuffer prefer = VK_NULL_HANDLE);
  void release_staging(const Allocation& a);
  void free_raw(const Allocation& a);

  VkDevice device_;
  const DeviceInfo& info_;
  VkPhysicalDeviceMemoryProperties mem_props_{};
  bool unified_ = false;
  std::mutex mutex_;
  std::multimap<uint64_t, Allocation> free_;          // capacity → idle allocation
  std::multimap<uint64_t, Allocation> staging_free_;  // the same, host-visible, for transfers
  std::atomic<uint64_t> in_use_{0};
  std::atomic<uint64_t> buffers_destroyed_{0};
  std::atomic<int64_t> texel_views_{0};
};

}  // namespace nxv::runtime
