// A logical device: queue, pooled memory, transfers, pipelines and submission.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#if defined(__GLIBC__)
#include <malloc.h>  // malloc_trim
#endif

#include "runtime/cooperative_matrix.h"
#include "runtime/vk_util.h"

namespace nxv::runtime {

namespace {
// Size classes keep the pool's free lists short and make reuse likely across runs whose
// tensors differ slightly in size.
bool has_device_extension(VkPhysicalDevice phys, const char* name) {
  uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(phys, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> exts(n);
  vkEnumerateDeviceExtensionProperties(phys, nullptr, &n, exts.data());
  return std::any_of(exts.begin(), exts.end(), [&](const auto& e) { return std::strcmp(e.extensionName, name) == 0; });
}

uint64_t size_class(uint64_t bytes) {
  uint64_t c = 256;
  while (c < bytes) c <<= 1;
  return c;
}
}  // namespace

BufferImpl::~BufferImpl() { dev_->release(alloc_, type_.byte_size()); }

VkBufferView BufferImpl::texel_view() const {
  const uint64_t limit = uint64_t(dev_->info().caps.max_texel_buffer_elements) * 16;
  if (bytes() > limit)
    throw Error(Error::Kind::InvalidArgument, "a tensor of " + std::to_string(bytes()) + " bytes (" + ir::to_string(type_) +
                                                  ") exceeds " + dev_->info().name + "'s largest texel buffer (" +
                                                  std::to_string(limit) + " bytes)");
  std::call_once(texel_view_made_, [&] {
    if (!alloc_.texels) alloc_.texels = dev_->create_texel_view(alloc_);
  });
  return alloc_.texels;
}

const Device& BufferImpl::device() const { return *dev_; }

DeviceImpl::DeviceImpl(VkInstance instance, VkPhysicalDevice phys, DeviceInfo info, RuntimeOptions opts)
    : instance_(instance), phys_(phys), info_(std::move(info)), opts_(std::move(opts)),
      pipelines_(opts_.pipeline_cache_size) {
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(phys_, &n, nullptr);
  std::vector<VkQueueFamilyProperties> qs(n);
  vkGetPhysicalDeviceQueueFamilyProperties(phys_, &n, qs.data());
  for (uint32_t i = 0; i < n; ++i)
    if (qs[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      queue_family_ = i;
      timestamps_ = qs[i].timestampValidBits > 0;
      break;
    }
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(phys_, &props);
  timestamp_period_ns_ = props.limits.timestampPeriod;

  // Enable exactly what codegen may use (DeviceCaps reflects these).
  const auto& c = info_.caps;
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  f12.shaderInt8 = c.int8;
  f12.shaderFloat16 = c.float16;
  f12.storageBuffer8BitAccess = c.storage_buffer_8bit;
  f12.shaderSubgroupExtendedTypes = c.subgroup_extended_types;
  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, &f12};
  f11.storageBuffer16BitAccess = c.storage_buffer_16bit;
  VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &f11};
  feats.features.shaderFloat64 = c.float64;
  feats.features.shaderInt64 = c.int64;
  feats.features.shaderInt16 = c.int16;
  // Modules built elsewhere (run_spirv) cannot be proven to stay in bounds, so they run
  // bounds-checked: per pipeline where VK_EXT_pipeline_robustness allows it, else
  // device-wide when the options ask for it.
  VkPhysicalDevicePipelineRobustnessFeaturesEXT robustness{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_ROBUSTNESS_FEATURES_EXT};
  std::vector<const char*> extensions;
  if (has_device_extension(phys_, VK_EXT_PIPELINE_ROBUSTNESS_EXTENSION_NAME)) {
    VkPhysicalDeviceFeatures2 query{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &robustness};
    vkGetPhysicalDeviceFeatures2(phys_, &query);
  }
  VkPhysicalDeviceFeatures supported;
  vkGetPhysicalDeviceFeatures(phys_, &supported);
  if (robustness.pipelineRobustness) {
    extensions.push_back(VK_EXT_PIPELINE_ROBUSTNESS_EXTENSION_NAME);
    f12.pNext = &robustness;
    robust_ = Robustness::PerPipeline;
  } else if (opts_.robust_buffer_access && supported.robustBufferAccess) {
    feats.features.robustBufferAccess = VK_TRUE;
    robust_ = Robustness::DeviceWide;
  }
  const bool push_descriptors = opts_.push_descriptors && has_device_extension(phys_, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  if (push_descriptors) {
    extensions.push_back(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    VkPhysicalDevicePushDescriptorPropertiesKHR pd{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PUSH_DESCRIPTOR_PROPERTIES_KHR};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &pd};
    vkGetPhysicalDeviceProperties2(phys_, &p2);
    max_push_descriptors_ = pd.maxPushDescriptors;
  }
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executables{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  if (opts_.pipeline_statistics && has_device_extension(phys_, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) {
    VkPhysicalDeviceFeatures2 query{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &executables};
    vkGetPhysicalDeviceFeatures2(phys_, &query);
    capture_statistics_ = executables.pipelineExecutableInfo;
  }
  // Cooperative matrices through the extension whose opcodes codegen emits for each listed
  // shape (KHR where it lists the shape, else NV), bf16 ones through VK_KHR_shader_bfloat16.
  PhysicalDeviceCooperativeMatrixFeaturesKhr coop_khr;
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop_nv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  PhysicalDeviceShaderBfloat16FeaturesKhr bf16;
  auto chain = [&](auto& s) {
    s.pNext = feats.pNext;
    feats.pNext = &s;
  };
  for (const auto& shape : c.cooperative_matrix_shapes) {
    if (!shape.khr && !coop_nv.cooperativeMatrix) {
      coop_nv.cooperativeMatrix = VK_TRUE;
      extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
      chain(coop_nv);
    }
    if (shape.khr && !coop_khr.cooperativeMatrix) {
      coop_khr.cooperativeMatrix = VK_TRUE;
      extensions.push_back(kCooperativeMatrixKhr);
      chain(coop_khr);
    }
    if (shape.operands == codegen::MatrixComponent::BF16 && !bf16.shaderBFloat16Type) {
      bf16.shaderBFloat16Type = bf16.shaderBFloat16CooperativeMatrix = VK_TRUE;
      extensions.push_back(kShaderBfloat16Khr);
      chain(bf16);
    }
  }
  if (capture_statistics_) {
    extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    chain(executables);
  }
  float prio = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = queue_family_;
  qci.queueCount = 1;
  qci.pQueuePriorities = &prio;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &feats};
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = uint32_t(extensions.size());
  dci.ppEnabledExtensionNames = extensions.data();
  vk_check(vkCreateDevice(phys_, &dci, nullptr, &device_), "vkCreateDevice");
  check_validation("creating the VkDevice for " + info_.name);
  vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
  if (push_descriptors)
    push_descriptor_set_ =
        reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(vkGetDeviceProcAddr(device_, "vkCmdPushDescriptorSetKHR"));
  vkGetPhysicalDeviceMemoryProperties(phys_, &mem_props_);
  for (uint32_t i = 0; i < mem_props_.memoryTypeCount; ++i) {
    auto f = mem_props_.memoryTypes[i].propertyFlags;
    if ((f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) && (f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) &&
        (f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) && info_.type == "cpu") {
      unified_ = true;  // lavapipe: all memory is host memory, staging would only copy twice
      break;
    }
  }

  pipeline_store_ =
      std::make_unique<PipelineStore>(device_, props, cache_path(), kPipelinesPerStore * opts_.pipeline_cache_size);
}

DeviceImpl::~DeviceImpl() {
  vkDeviceWaitIdle(device_);
  for (auto& c : idle_contexts_) destroy_context(*c);
  {
    // Nothing else holds a pipeline now: executables and run_spirv hold the device too.
    std::vector<PipelinePtr> cached;
    pipelines_.clear(cached);
  }
  trim();
  pipeline_store_.reset();
  vkDestroyDevice(device_, nullptr);
}

std::string DeviceImpl::cache_path() const {
  std::string dir = opts_.cache_dir;
  if (dir.empty())
    if (const char* e = std::getenv("NXV_CACHE_DIR")) dir = e;
  if (dir.empty()) {
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) dir = std::string(x) + "/nx_vulkan";
    else if (const char* h = std::getenv("HOME")) dir = std::string(h) + "/.cache/nx_vulkan";
  }
  if (dir.empty() || dir == "none") return "";
  char name[128];
  std::snprintf(name, sizeof name, "/pipelines-%04x-%08x.bin", info_.caps.vendor_id,
                static_cast<unsigned>(std::hash<std::string>{}(info_.name + info_.driver)));
  return dir + name;
}

void DeviceImpl::check_alive() const {
  if (lost_) throw Error(Error::Kind::DeviceLost, "device " + info_.name + " was lost; reopen the runtime");
}

Allocation DeviceImpl::allocate_memory(uint64_t capacity, bool host_visible_only) {
  Allocation a;
  a.capacity = capacity;
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = capacity;
  // Any buffer may hold a kernel's group counts: a loop's gate kernel writes them into an
  // ordinary result buffer (executable.cpp, run_speculative).
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
              VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT;
  vk_check(vkCreateBuffer(device_, &bci, nullptr, &a.buffer), "vkCreateBuffer");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device_, a.buffer, &req);
  VkMemoryPropertyFlags want = host_visible_only || unified_
                                   ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                                   : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  uint32_t type = UINT32_MAX;
  for (uint32_t i = 0; i < mem_props_.memoryTypeCount && type == UINT32_MAX; ++i)
    if ((req.memoryTypeBits & (1u << i)) && (mem_props_.memoryTypes[i].propertyFlags & want) == want) type = i;
  if (type == UINT32_MAX) {
    vkDestroyBuffer(device_, a.buffer, nullptr);
    throw Error(Error::Kind::Unsupported, "no memory type for a storage buffer on " + info_.name);
  }
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = type;
  VkResult r = vkAllocateMemory(device_, &mai, nullptr, &a.memory);
  if (r != VK_SUCCESS) {
    vkDestroyBuffer(device_, a.buffer, nullptr);
    vk_check(r, ("vkAllocateMemory of " + std::to_string(capacity) + " bytes").c_str());
  }
  vkBindBufferMemory(device_, a.buffer, a.memory, 0);
  if (want & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)
    vk_check(vkMapMemory(device_, a.memory, 0, VK_WHOLE_SIZE, 0, &a.mapped), "vkMapMemory");
  return a;
}

Allocation DeviceImpl::allocate_raw(uint64_t bytes, VkBuffer prefer) {
  check_alive();
  uint64_t cap = size_class(std::max<uint64_t>(bytes, 4));
  if (cap > info_.caps.max_storage_buffer_range && bytes <= info_.caps.max_storage_buffer_range)
    cap = (bytes + 3) / 4 * 4;  // the size class would overshoot what one binding may address; whole words for packed narrow tensors
  if (bytes > info_.caps.max_storage_buffer_range)
    throw Error(Error::Kind::OutOfMemory, "a tensor of " + std::to_string(bytes) + " bytes exceeds " + info_.name +
                                              "'s largest storage buffer (" +
                                              std::to_string(info_.caps.max_storage_buffer_range) + " bytes)");
  if (bytes > info_.caps.max_memory_allocation_bytes)
    throw Error(Error::Kind::OutOfMemory, "a tensor of " + std::to_string(bytes) + " bytes exceeds " + info_.name +
                                              "'s largest allocation (maxMemoryAllocationSize " +
                                              std::to_string(info_.caps.max_memory_allocation_bytes) + " bytes)");
  cap = std::min(cap, info_.caps.max_memory_allocation_bytes);  // likewise for one allocation
  if (auto a = take_pooled(free_, cap, prefer)) return *a;
  try {
    return allocate_memory(cap, false);
  } catch (const Error& e) {
    if (e.kind() != Error::Kind::OutOfMemory) throw;
    trim();  // idle pooled memory may be what stands in the way
    return allocate_memory(cap, false);
  }
}

void DeviceImpl::release(const Allocation& a, uint64_t bytes) {
  in_use_ -= bytes;
  std::lock_guard<std::mutex> lock(pool_mutex_);
  free_.emplace(a.capacity, a);
}

std::optional<Allocation> DeviceImpl::take_pooled(std::multimap<uint64_t, Allocation>& pool, uint64_t capacity,
                                                  VkBuffer prefer) {
  std::lock_guard<std::mutex> lock(pool_mutex_);
  const auto [first, last] = pool.equal_range(capacity);
  if (first == last) return std::nullopt;
  auto it = first;
  if (prefer != VK_NULL_HANDLE)
    it = std::find_if(first, last, [&](const auto& e) { return e.second.buffer == prefer; });
  if (it == last) it = first;
  Allocation a = it->second;
  pool.erase(it);
  return a;
}

DeviceImpl::Staging DeviceImpl::acquire_staging(uint64_t bytes) {
  uint64_t cap = size_class(bytes);
  if (auto a = take_pooled(staging_free_, cap)) return Staging(*this, *a);
  return Staging(*this, allocate_memory(cap, true));
}

void DeviceImpl::release_staging(const Allocation& a) {
  std::lock_guard<std::mutex> lock(pool_mutex_);
  staging_free_.emplace(a.capacity, a);
}

VkBufferView DeviceImpl::create_texel_view(const Allocation& a) {
  VkBufferViewCreateInfo vi{VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
  vi.buffer = a.buffer;
  vi.format = VK_FORMAT_R32G32B32A32_UINT;
  vi.range = std::min<uint64_t>(a.capacity / 16, info_.caps.max_texel_buffer_elements) * 16;
  VkBufferView view;
  vk_check(vkCreateBufferView(device_, &vi, nullptr, &view), "vkCreateBufferView");
  ++texel_views_;
  return view;
}

void DeviceImpl::free_raw(const Allocation& a) {
  ++buffers_destroyed_;
  if (a.texels) {
    vkDestroyBufferView(device_, a.texels, nullptr);
    --texel_views_;
  }
  if (a.mapped) vkUnmapMemory(device_, a.memory);
  vkDestroyBuffer(device_, a.buffer, nullptr);
  vkFreeMemory(device_, a.memory, nullptr);
}

void DeviceImpl::trim() {
  std::multimap<uint64_t, Allocation> idle;
  {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    idle.swap(free_);
    idle.merge(staging_free_);
  }
  for (auto& [cap, a] : idle) free_raw(a);
}

BufferPtr DeviceImpl::allocate(const ir::TensorType& type) { return allocate(type, VK_NULL_HANDLE); }

BufferPtr DeviceImpl::allocate(const ir::TensorType& type, VkBuffer prefer) {
  Allocation a = allocate_raw(type.byte_size(), prefer);
  in_use_ += type.byte_size();
  return std::make_shared<BufferImpl>(this, type, a);
}

BufferPtr DeviceImpl::upload(const ir::TensorType& type, const void* data, size_t bytes) {
  return upload_all({{type, data, bytes}}).at(0);
}

void DeviceImpl::download(const Buffer& b, void* dst, size_t bytes) { download_all({{&b, dst, bytes}}); }

std::vector<BufferPtr> DeviceImpl::upload_all(const std::vector<Upload>& uploads) {
  std::vector<BufferPtr> bufs;
  // Offsets into the staging buffer of the uploads that need it (UINT64_MAX: written directly).
  std::vector<uint64_t> offsets;
  uint64_t staged = 0;
  for (const auto& u : uploads) {
    if (u.bytes != uint64_t(u.type.byte_size()))
      throw Error(Error::Kind::InvalidArgument, "upload of " + ir::to_string(u.type) + " needs " +
                                                    std::to_string(u.type.byte_size()) + " bytes, got " +
                                                    std::to_string(u.bytes));
    bufs.push_back(allocate(u.type));
    const auto& a = static_cast<BufferImpl&>(*bufs.back()).alloc();
    if (u.bytes == 0 || a.mapped) {
      if (u.bytes) std::memcpy(a.mapped, u.data, u.bytes);
      offsets.push_back(UINT64_MAX);
      continue;
    }
    offsets.push_back(staged);
    staged += u.bytes;
  }
  if (staged == 0) return bufs;
  const Staging staging = acquire_staging(staged);
  for (size_t i = 0; i < uploads.size(); ++i)
    if (offsets[i] != UINT64_MAX) std::memcpy(static_cast<uint8_t*>(staging.a.mapped) + offsets[i], uploads[i].data, uploads[i].bytes);
  submit([&](VkCommandBuffer cb, SubmitContext&) {
    for (size_t i = 0; i < uploads.size(); ++i) {
      if (offsets[i] == UINT64_MAX) continue;
      VkBufferCopy region{offsets[i], 0, uploads[i].bytes};
      vkCmdCopyBuffer(cb, staging.a.buffer, static_cast<BufferImpl&>(*bufs[i]).alloc().buffer, 1, &region);
    }
  });
  return bufs;
}

void DeviceImpl::download_all(const std::vector<Download>& downloads) {
  std::vector<uint64_t> offsets;
  uint64_t staged = 0;
  for (const auto& d : downloads) {
    const Buffer& b = *d.buffer;
    if (&b.device() != this)
      throw Error(Error::Kind::InvalidArgument, "download from device " + std::to_string(info().index) + " (" +
                                                    info().name + ") of a buffer that lives on device " +
                                                    std::to_string(b.device().info().index) + " (" +
                                                    b.device().info().name + ")");
    if (d.bytes > b.bytes())
      throw Error(Error::Kind::InvalidArgument, "download of " + std::to_string(d.bytes) + " bytes from a buffer of " +
                                                    std::to_string(b.bytes()));
    const auto& a = static_cast<const BufferImpl&>(b).alloc();
    if (d.bytes == 0 || a.mapped) {
      if (d.bytes) std::memcpy(d.dst, a.mapped, d.bytes);
      offsets.push_back(UINT64_MAX);
      continue;
    }
    offsets.push_back(staged);
    staged += d.bytes;
  }
  if (staged == 0) return;
  const Staging staging = acquire_staging(staged);
  submit([&](VkCommandBuffer cb, SubmitContext&) {
    for (size_t i = 0; i < downloads.size(); ++i) {
      if (offsets[i] == UINT64_MAX) continue;
      VkBufferCopy region{0, offsets[i], downloads[i].bytes};
      vkCmdCopyBuffer(cb, static_cast<const BufferImpl&>(*downloads[i].buffer).alloc().buffer, staging.a.buffer, 1,
                      &region);
    }
  });
  for (size_t i = 0; i < downloads.size(); ++i)
    if (offsets[i] != UINT64_MAX)
      std::memcpy(downloads[i].dst, static_cast<uint8_t*>(staging.a.mapped) + offsets[i], downloads[i].bytes);
}

std::string DeviceImpl::pipeline_key(const codegen::KernelBinary& k, const PipelineOptions& o) {
  std::string salt = std::to_string(k.workgroup_size[0]) + "," + std::to_string(k.bindings.size()) + "," +
                     std::to_string(o.push_constant_bytes) + (o.bounds_checked ? ",checked" : "");
  return content_hash(k.spirv.data(), k.spirv.size() * 4, salt);
}

std::vector<PipelineStatistic> DeviceImpl::pipeline_statistics(const codegen::KernelBinary& kernel) const {
  PipelineOptions o;
  o.push_constant_bytes = kernel.push_constant_bytes;
  std::lock_guard<std::mutex> lock(pipeline_mutex_);
  const PipelinePtr* p = pipelines_.peek(pipeline_key(kernel, o));
  return p ? (*p)->statistics : std::vector<PipelineStatistic>{};
}

size_t DeviceImpl::pipelines_cached() const {
  std::lock_guard<std::mutex> lock(pipeline_mutex_);
  return pipelines_.size();
}

void DeviceImpl::drop_cached_pipelines() {
  std::vector<PipelinePtr> evicted;  // destroyed after the lock, by whoever holds them last
  {
    std::lock_guard<std::mutex> lock(pipeline_mutex_);
    pipelines_.clear(evicted);
  }
  evicted.clear();
  pipeline_store_->renew();
  // A driver may free a destroyed pipeline's memory only once the queue runs again: lavapipe
  // (Mesa 22.3) frees them on its queue thread after the next submission (about 0.4 MiB of
  // host heap each, bench/pipeline_churn.cpp), so a second one returns after it has.
  for (int i = 0; i < 2; ++i) submit([](VkCommandBuffer, SubmitContext&) {});
}

std::vector<PipelineStatistic> DeviceImpl::read_statistics(VkPipeline pipeline) const {
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

PipelinePtr DeviceImpl::pipeline(const codegen::KernelBinary& k, const PipelineOptions& options) {
  // A generated module's push constants (its zero word) are pushed by record_dispatch.
  PipelineOptions o = options;
  o.push_constant_bytes = std::max(o.push_constant_bytes, k.push_constant_bytes);
  if (o.bounds_checked && robust_ == Robustness::None)
    throw Error(Error::Kind::Unsupported,
                info_.name + " cannot bounds-check " + k.name + " alone: open the device with robust_buffer_access" +
                    " (Nx.Vulkan.NativeV does)");
  const std::string key = pipeline_key(k, o);
  {
    std::unique_lock<std::mutex> lock(pipeline_mutex_);
    for (;;) {
      if (const PipelinePtr* p = pipelines_.find(key)) {
        ++hits_;
        return *p;
      }
      if (!creating_.count(key)) break;
      // Another thread is creating this very pipeline: wait for it rather than compile twice.
      pipeline_created_.wait(lock);
    }
    creating_.insert(key);
    ++misses_;
  }
  // Created without the lock held: a driver compiles for up to seconds (lavapipe's LLVM on a
  // large kernel), and a lookup of a pipeline that exists, or the creation of another, must
  // not queue behind that (on a busy machine such waits added up past test timeouts).
  // VkPipelineCache is internally synchronised, so concurrent creations may share it.
  Pipeline p;
  try {
    p = create_pipeline(k, o);
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(pipeline_mutex_);
      creating_.erase(key);
    }
    pipeline_created_.notify_all();
    throw;
  }
  // Destroyed when the last holder lets go. Every submit waits for its fence, and a failed
  // one for the queue to go idle, so by then no work on the GPU uses it; a kept recording
  // that binds it belongs to an executable, which holds the pipeline until after it.
  ++pipelines_alive_;
  PipelinePtr created(new Pipeline(std::move(p)), [this](const Pipeline* q) {
    vkDestroyPipeline(device_, q->pipeline, nullptr);
    vkDestroyPipelineLayout(device_, q->layout, nullptr);
    vkDestroyDescriptorSetLayout(device_, q->set_layout, nullptr);
    --pipelines_alive_;
    delete q;
  });
  std::vector<PipelinePtr> evicted;  // released after the lock, by whoever holds them last
  {
    std::lock_guard<std::mutex> lock(pipeline_mutex_);
    created = pipelines_.insert(key, created, evicted);
    creating_.erase(key);
  }
  pipeline_created_.notify_all();
  pipeline_store_->save(false);
  if (!evicted.empty()) return_free_heap();
  return created;
}

void DeviceImpl::return_free_heap() {
#if defined(__GLIBC__)
  const int64_t now =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  int64_t last = last_heap_return_ms_;
  if (now - last < kHeapReturnIntervalMs || !last_heap_return_ms_.compare_exchange_strong(last, now)) return;
  malloc_trim(0);
#endif
}

Pipeline DeviceImpl::create_pipeline(const codegen::KernelBinary& k, const PipelineOptions& o) {
  check_alive();
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
  std::vector<VkDescriptorSetLayoutBinding> binds;
  for (uint32_t i = 0; i < k.bindings.size(); ++i) {
    p.types.push_back(k.bindings[i].texels ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    binds.push_back({i, p.types[i], 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
  }
  VkDescriptorSetLayoutCreateInfo dl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  p.push_descriptors = push_descriptor_set_ && binds.size() <= max_push_descriptors_;
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
  if (o.bounds_checked && robust_ == Robustness::PerPipeline) cp.pNext = &checked;
  if (capture_statistics_) cp.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  VkResult r = pipeline_store_->create(cp, &p.pipeline);
  vkDestroyShaderModule(device_, module, nullptr);
  vk_check(r, ("vkCreateComputePipelines for " + k.name).c_str());
  if (validation_requested()) name_object(device_, VK_OBJECT_TYPE_PIPELINE, uint64_t(p.pipeline), "kernel " + k.name);
  check_validation("creating the pipeline of kernel " + k.name);
  if (capture_statistics_) p.statistics = read_statistics(p.pipeline);
  guard.keep = true;
  return p;
}

void DeviceImpl::record_dispatch(VkCommandBuffer cb, SubmitContext& ctx, const Pipeline& p,
                                 const std::vector<const Buffer*>& buffers, const uint32_t group_count[3],
                                 const std::vector<uint8_t>& push_constants, const Buffer* indirect,
                                 uint64_t indirect_offset) {
  VkDescriptorSet set = p.push_descriptors ? VK_NULL_HANDLE : ctx.allocate_set(p.set_layout);
  std::vector<VkDescriptorBufferInfo> infos(buffers.size());
  std::vector<VkBufferView> views(buffers.size());
  std::vector<VkWriteDescriptorSet> writes(buffers.size());
  for (size_t b = 0; b < buffers.size(); ++b) {
    const auto& buf = static_cast<const BufferImpl&>(*buffers[b]);
    writes[b] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[b].dstSet = set;
    writes[b].dstBinding = uint32_t(b);
    writes[b].descriptorCount = 1;
    writes[b].descriptorType = p.types.at(b);
    if (writes[b].descriptorType == VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER) {
      views[b] = buf.texel_view();
      writes[b].pTexelBufferView = &views[b];
      continue;
    }
    infos[b] = {buf.alloc().buffer, 0, VK_WHOLE_SIZE};
    writes[b].pBufferInfo = &infos[b];
  }
  vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
  if (p.push_descriptors) {
    if (!writes.empty())
      push_descriptor_set_(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, uint32_t(writes.size()), writes.data());
  } else {
    vkUpdateDescriptorSets(device_, uint32_t(writes.size()), writes.data(), 0, nullptr);
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0, nullptr);
  }
  // Bytes the caller does not give are zeros: a generated module's push-constant word is a
  // zero the driver must not know at compile time (codegen: Emitter::float_literal).
  std::vector<uint8_t> push = push_constants;
  if (push.size() < p.push_constant_bytes) push.resize(p.push_constant_bytes, 0);
  if (!push.empty())
    vkCmdPushConstants(cb, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, uint32_t(push.size()), push.data());
  if (indirect)
    vkCmdDispatchIndirect(cb, static_cast<const BufferImpl&>(*indirect).alloc().buffer, indirect_offset);
  else
    vkCmdDispatch(cb, group_count[0], group_count[1], group_count[2]);
  check_validation("recording the dispatch of kernel " + p.kernel);
}

void DeviceImpl::record_barrier(VkCommandBuffer cb) {
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                     VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                         VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_INDIRECT_COMMAND_READ_BIT};
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
                           VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT,
                       0, 1, &mb, 0, nullptr, 0, nullptr);
}

void DeviceImpl::record_update(VkCommandBuffer cb, const Buffer& b, const std::vector<uint8_t>& bytes) {
  // vkCmdUpdateBuffer writes whole words; buffers are allocated in size classes of at
  // least 256 bytes, so the padding stays inside the buffer.
  std::vector<uint8_t> words(bytes);
  words.resize((words.size() + 3) / 4 * 4);
  if (words.empty() || words.size() > 65536 || words.size() > static_cast<const BufferImpl&>(b).alloc().capacity)
    throw Error(Error::Kind::InvalidArgument, "an update of " + std::to_string(bytes.size()) + " bytes does not fit");
  vkCmdUpdateBuffer(cb, static_cast<const BufferImpl&>(b).alloc().buffer, 0, words.size(), words.data());
}

void DeviceImpl::record_copy(VkCommandBuffer cb, const Buffer& src, const Buffer& dst, uint64_t bytes) {
  if (bytes == 0) return;
  VkBufferCopy region{0, 0, bytes};
  vkCmdCopyBuffer(cb, static_cast<const BufferImpl&>(src).alloc().buffer, static_cast<const BufferImpl&>(dst).alloc().buffer,
                  1, &region);
}

VkDescriptorSet SubmitContext::allocate_set(VkDescriptorSetLayout layout) {
  for (;; ++current_pool) {
    if (current_pool == descriptor_pools.size()) {
      // Sized for a few hundred kernels; a bigger graph adds another pool.
      const VkDescriptorPoolSize sizes[] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 4096},
                                            {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, 1024}};
      VkDescriptorPoolCreateInfo pi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
      pi.maxSets = 512;
      pi.poolSizeCount = 2;
      pi.pPoolSizes = sizes;
      VkDescriptorPool p;
      vk_check(vkCreateDescriptorPool(device, &pi, nullptr, &p), "vkCreateDescriptorPool");
      descriptor_pools.push_back(p);
    }
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = descriptor_pools[current_pool];
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &layout;
    VkDescriptorSet set;
    VkResult r = vkAllocateDescriptorSets(device, &ai, &set);
    if (r == VK_SUCCESS) return set;
    if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL) vk_check(r, "vkAllocateDescriptorSets");
  }
}

std::unique_ptr<SubmitContext> DeviceImpl::acquire_context() {
  {
    std::lock_guard<std::mutex> lock(contexts_mutex_);
    if (!idle_contexts_.empty()) {
      auto c = std::move(idle_contexts_.back());
      idle_contexts_.pop_back();
      return c;
    }
  }
  auto c = std::make_unique<SubmitContext>();
  c->device = device_;
  struct Guard {
    DeviceImpl* d;
    SubmitContext* c;
    ~Guard() {
      if (c) d->destroy_context(*c);
    }
  } guard{this, c.get()};
  VkCommandPoolCreateInfo cpi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cpi.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
  cpi.queueFamilyIndex = queue_family_;
  vk_check(vkCreateCommandPool(device_, &cpi, nullptr, &c->pool), "vkCreateCommandPool");
  VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cai.commandPool = c->pool;
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = 1;
  vk_check(vkAllocateCommandBuffers(device_, &cai, &c->cb), "vkAllocateCommandBuffers");
  VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  vk_check(vkCreateFence(device_, &fi, nullptr, &c->fence), "vkCreateFence");
  if (timestamps_) {
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = 2;
    vk_check(vkCreateQueryPool(device_, &qi, nullptr, &c->queries), "vkCreateQueryPool");
  }
  guard.c = nullptr;
  return c;
}

void DeviceImpl::destroy_context(SubmitContext& c) {
  for (auto p : c.descriptor_pools) vkDestroyDescriptorPool(device_, p, nullptr);
  if (c.queries) vkDestroyQueryPool(device_, c.queries, nullptr);
  if (c.fence) vkDestroyFence(device_, c.fence, nullptr);
  if (c.pool) vkDestroyCommandPool(device_, c.pool, nullptr);
}

void DeviceImpl::record_into(SubmitContext& ctx, const std::function<void(VkCommandBuffer, SubmitContext&)>& record) {
  vk_check(vkResetCommandPool(device_, ctx.pool, 0), "vkResetCommandPool");
  for (auto p : ctx.descriptor_pools) vk_check(vkResetDescriptorPool(device_, p, 0), "vkResetDescriptorPool");
  ctx.current_pool = 0;
  VkCommandBuffer cb = ctx.cb;
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  vk_check(vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer");
  if (ctx.queries) {
    vkCmdResetQueryPool(cb, ctx.queries, 0, 2);
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, ctx.queries, 0);
  }
  record(cb, ctx);
  if (ctx.queries) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, ctx.queries, 1);
  vk_check(vkEndCommandBuffer(cb), "vkEndCommandBuffer");
}

double DeviceImpl::execute(SubmitContext& ctx, std::chrono::microseconds spin) {
  vk_check(vkResetFences(device_, 1, &ctx.fence), "vkResetFences");
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &ctx.cb;
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    VkResult r = vkQueueSubmit(queue_, 1, &si, ctx.fence);
    if (r == VK_ERROR_DEVICE_LOST) lost_ = true;
    vk_check(r, "vkQueueSubmit");
  }
  check_validation("submitting a command buffer");
  VkResult r = VK_NOT_READY;
  for (auto spin_until = std::chrono::steady_clock::now() + spin;
       r == VK_NOT_READY && std::chrono::steady_clock::now() < spin_until;)
    r = vkGetFenceStatus(device_, ctx.fence);
  if (r == VK_NOT_READY) r = vkWaitForFences(device_, 1, &ctx.fence, VK_TRUE, opts_.timeout_ms * 1000000ull);
  if (r == VK_TIMEOUT)
    throw Error(Error::Kind::Timeout, "graph did not finish within " + std::to_string(opts_.timeout_ms) + " ms on " +
                                          info_.name);
  if (r == VK_ERROR_DEVICE_LOST) lost_ = true;
  vk_check(r, "vkWaitForFences");
  if (!ctx.queries) return 0;
  uint64_t ts[2] = {0, 0};
  if (vkGetQueryPoolResults(device_, ctx.queries, 0, 2, sizeof ts, ts, 8, VK_QUERY_RESULT_64_BIT) != VK_SUCCESS) return 0;
  return double(ts[1] - ts[0]) * timestamp_period_ns_ / 1e6;
}

double DeviceImpl::submit(const std::function<void(VkCommandBuffer, SubmitContext&)>& record,
                          std::chrono::microseconds spin) {
  check_alive();
  // One context per submission in flight: recording needs no lock, so many threads record at once.
  auto ctx = acquire_context();
  try {
    record_into(*ctx, record);
    const double ms = execute(*ctx, spin);
    std::lock_guard<std::mutex> lock(contexts_mutex_);
    idle_contexts_.push_back(std::move(ctx));
    return ms;
  } catch (...) {
    abandon(std::move(ctx));
    throw;
  }
}

std::shared_ptr<SubmitContext> DeviceImpl::record_kept(
    const std::function<void(VkCommandBuffer, SubmitContext&)>& record) {
  check_alive();
  auto ctx = acquire_context();
  try {
    record_into(*ctx, record);
  } catch (...) {
    abandon(std::move(ctx));
    throw;
  }
  return std::shared_ptr<SubmitContext>(ctx.release(), [this](SubmitContext* c) {
    std::lock_guard<std::mutex> lock(contexts_mutex_);
    idle_contexts_.emplace_back(c);
  });
}

double DeviceImpl::submit_kept(SubmitContext& ctx, std::chrono::microseconds spin) {
  check_alive();
  try {
    return execute(ctx, spin);
  } catch (...) {
    wait_idle();  // the GPU must not still run it when it is reused
    throw;
  }
}

void DeviceImpl::wait_idle() {
  std::lock_guard<std::mutex> lock(queue_mutex_);  // vkQueueWaitIdle needs the queue too
  vkQueueWaitIdle(queue_);
}

void DeviceImpl::abandon(std::unique_ptr<SubmitContext> ctx) {
  wait_idle();
  destroy_context(*ctx);
}

}  // namespace nxv::runtime
