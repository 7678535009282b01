// The VkPipelineCache every pipeline of a device is created through: read from and written to
// the cache directory, and renewed once it holds a bounded number of pipelines.
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

namespace nxv::runtime {

class PipelineStore {
 public:
  // `path` ("" for none) holds the cache between processes; a file made for another device
  // or driver is ignored. After `max_pipelines` creations the cache is written and started
  // afresh: a driver's cache keeps every pipeline created through it (about 1.5 KiB each on
  // NVIDIA), so a process compiling graphs without end would otherwise grow without end.
  PipelineStore(VkDevice device, const VkPhysicalDeviceProperties& props, std::string path, size_t max_pipelines);
  ~PipelineStore();
  PipelineStore(const PipelineStore&) = delete;
  PipelineStore& operator=(const PipelineStore&) = delete;

  VkResult create(const VkComputePipelineCreateInfo& info, VkPipeline* pipeline);
  // Writes the cache when pipelines were created since the last write: at most every two
  // seconds unless `now`.
  void save(bool now);
  // Writes the cache and starts afresh, as after `max_pipelines` creations.
  void renew();
  // How many times the cache was renewed.
  uint64_t renewals() const { return renewals_; }

 private:
  void create_cache(const std::vector<char>& initial);
  void renew_locked();  // under mu_ alone
  void write(std::chrono::steady_clock::time_point t);  // under mu_ (either mode) and save_mutex_

  VkDevice device_;
  std::string path_;
  size_t max_pipelines_;
  std::shared_mutex mu_;  // pipelines are created under it shared, the cache renewed under it alone
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  std::atomic<size_t> created_{0};
  std::atomic<uint64_t> renewals_{0};
  std::atomic<bool> dirty_{false};
  std::mutex save_mutex_;
  std::chrono::steady_clock::time_point last_save_;
};

}  // namespace nxv::runtime
