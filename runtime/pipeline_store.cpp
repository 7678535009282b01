// PipelineStore: the device's VkPipelineCache, persisted and bounded.
#include "runtime/pipeline_store.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "runtime/vk_util.h"

namespace nxv::runtime {

namespace fs = std::filesystem;

PipelineStore::PipelineStore(VkDevice device, const VkPhysicalDeviceProperties& props, std::string path,
                             size_t max_pipelines)
    : device_(device), path_(std::move(path)), max_pipelines_(max_pipelines) {
  // A corrupt or foreign cache file is ignored: the header must name this exact device.
  std::vector<char> blob;
  if (!path_.empty()) {
    std::ifstream f(path_, std::ios::binary);
    blob.assign(std::istreambuf_iterator<char>(f), {});
    VkPipelineCacheHeaderVersionOne h{};
    if (blob.size() < sizeof h) blob.clear();
    else {
      std::memcpy(&h, blob.data(), sizeof h);
      if (h.headerSize < sizeof h || h.headerVersion != VK_PIPELINE_CACHE_HEADER_VERSION_ONE ||
          h.vendorID != props.vendorID || h.deviceID != props.deviceID ||
          std::memcmp(h.pipelineCacheUUID, props.pipelineCacheUUID, VK_UUID_SIZE) != 0)
        blob.clear();
    }
  }
  create_cache(blob);
}

PipelineStore::~PipelineStore() {
  save(true);
  vkDestroyPipelineCache(device_, cache_, nullptr);
}

void PipelineStore::create_cache(const std::vector<char>& initial) {
  VkPipelineCacheCreateInfo pci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  pci.initialDataSize = initial.size();
  pci.pInitialData = initial.empty() ? nullptr : initial.data();
  if (vkCreatePipelineCache(device_, &pci, nullptr, &cache_) != VK_SUCCESS) {
    pci.initialDataSize = 0;
    pci.pInitialData = nullptr;
    vk_check(vkCreatePipelineCache(device_, &pci, nullptr, &cache_), "vkCreatePipelineCache");
  }
}

VkResult PipelineStore::create(const VkComputePipelineCreateInfo& info, VkPipeline* pipeline) {
  VkResult r;
  {
    std::shared_lock lock(mu_);
    r = vkCreateComputePipelines(device_, cache_, 1, &info, nullptr, pipeline);
  }
  dirty_ = true;
  if (++created_ < max_pipelines_) return r;
  // Renewed once, by whichever creation reaches the bound first: its contents are written
  // (the file keeps the most recent pipelines for the next process) and a fresh cache begun.
  std::unique_lock lock(mu_);
  if (created_ >= max_pipelines_) renew_locked();
  return r;
}

void PipelineStore::renew() {
  std::unique_lock lock(mu_);
  renew_locked();
}

void PipelineStore::renew_locked() {
  {
    std::lock_guard<std::mutex> saving(save_mutex_);
    write(std::chrono::steady_clock::now());
  }
  vkDestroyPipelineCache(device_, cache_, nullptr);
  create_cache({});
  created_ = 0;
  ++renewals_;
}

void PipelineStore::save(bool now) {
  if (path_.empty() || !dirty_) return;
  std::shared_lock lock(mu_);
  // The whole cache is written each time (megabytes on NVIDIA), so a run that creates
  // pipelines one after another writes at most every two seconds; a write under way is not
  // waited for.
  std::unique_lock<std::mutex> saving(save_mutex_, std::try_to_lock);
  if (!saving.owns_lock()) return;
  auto t = std::chrono::steady_clock::now();
  if (!now && last_save_ != std::chrono::steady_clock::time_point{} && t - last_save_ < std::chrono::seconds(2)) return;
  write(t);
}

void PipelineStore::write(std::chrono::steady_clock::time_point t) {
  if (path_.empty()) return;
  last_save_ = t;
  dirty_ = false;
  size_t size = 0;
  if (vkGetPipelineCacheData(device_, cache_, &size, nullptr) != VK_SUCCESS) return;
  std::vector<char> data(size);
  if (vkGetPipelineCacheData(device_, cache_, &size, data.data()) != VK_SUCCESS) return;
  // Temp file + rename: a concurrent reader never sees half a cache. Failure to persist is
  // not an error, the cache is only an optimisation.
  std::error_code ec;
  fs::create_directories(fs::path(path_).parent_path(), ec);
  std::string tmp = path_ + ".tmp" + std::to_string(reinterpret_cast<uintptr_t>(this));
  {
    std::ofstream f(tmp, std::ios::binary);
    f.write(data.data(), std::streamsize(size));
    if (!f) return;
  }
  fs::rename(tmp, path_, ec);
}

}  // namespace nxv::runtime
