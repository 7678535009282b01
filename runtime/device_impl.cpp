// A logical device: the VkDevice, transfers, command recording; pools, pipelines and
// submission are its members' (memory_pool, pipeline_cache, submitter).
#include "runtime/device_impl.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "runtime/cooperative_matrix.h"
#include "runtime/vk_util.h"

namespace nxv::runtime {

namespace {
// RuntimeOptions::dispatch_times: the dispatches of a submission timed one by one.
constexpr uint32_t kDispatchStamps = 4096;

bool has_device_extension(VkPhysicalDevice phys, const char* name) {
  uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(phys, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> exts(n);
  vkEnumerateDeviceExtensionProperties(phys, nullptr, &n, exts.data());
  return std::any_of(exts.begin(), exts.end(), [&](const auto& e) { return std::strcmp(e.extensionName, name) == 0; });
}
}  // namespace

BufferImpl::~BufferImpl() { dev_->memory().release(alloc_, type_.byte_size()); }

VkBufferView BufferImpl::texel_view() const {
  const uint64_t limit = uint64_t(dev_->info().caps.max_texel_buffer_elements) * 16;
  if (bytes() > limit)
    throw Error(Error::Kind::InvalidArgument, "a tensor of " + std::to_string(bytes()) + " bytes (" + ir::to_string(type_) +
                                                  ") exceeds " + dev_->info().name + "'s largest texel buffer (" +
                                                  std::to_string(limit) + " bytes)");
  std::call_once(texel_view_made_, [&] {
    if (!alloc_.texels) alloc_.texels = dev_->memory().create_texel_view(alloc_);
  });
  return alloc_.texels;
}

const Device& BufferImpl::device() const { return *dev_; }

DeviceImpl::DeviceImpl(VkPhysicalDevice phys, DeviceInfo info, RuntimeOptions opts)
    : phys_(phys), info_(std::move(info)), opts_(std::move(opts)) {
  uint32_t queue_family = 0;
  bool timestamps = false;
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(phys_, &n, nullptr);
  std::vector<VkQueueFamilyProperties> qs(n);
  vkGetPhysicalDeviceQueueFamilyProperties(phys_, &n, qs.data());
  for (uint32_t i = 0; i < n; ++i)
    if (qs[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      queue_family = i;
      timestamps = qs[i].timestampValidBits > 0;
      break;
    }
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(phys_, &props);
  PipelineFeatures features;

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
    features.robustness = PipelineFeatures::Robustness::PerPipeline;
  } else if (opts_.robust_buffer_access && supported.robustBufferAccess) {
    feats.features.robustBufferAccess = VK_TRUE;
    features.robustness = PipelineFeatures::Robustness::DeviceWide;
  }
  const bool push_descriptors = opts_.push_descriptors && has_device_extension(phys_, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  if (push_descriptors) {
    extensions.push_back(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    VkPhysicalDevicePushDescriptorPropertiesKHR pd{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PUSH_DESCRIPTOR_PROPERTIES_KHR};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &pd};
    vkGetPhysicalDeviceProperties2(phys_, &p2);
    features.max_push_descriptors = pd.maxPushDescriptors;
  }
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executables{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  if (opts_.pipeline_statistics && has_device_extension(phys_, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) {
    VkPhysicalDeviceFeatures2 query{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &executables};
    vkGetPhysicalDeviceFeatures2(phys_, &query);
    features.capture_statistics = executables.pipelineExecutableInfo;
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
  if (features.capture_statistics) {
    extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    chain(executables);
  }
  VkPhysicalDeviceSubgroupSizeControlFeaturesEXT sizes{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT};
  if (has_device_extension(phys_, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME)) {
    VkPhysicalDeviceFeatures2 query{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &sizes};
    vkGetPhysicalDeviceFeatures2(phys_, &query);
    VkPhysicalDeviceSubgroupSizeControlPropertiesEXT range{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES_EXT};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &range};
    vkGetPhysicalDeviceProperties2(phys_, &p2);
    if (sizes.computeFullSubgroups && range.maxSubgroupSize) {
      sizes = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT};
      sizes.computeFullSubgroups = VK_TRUE;
      extensions.push_back(VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
      chain(sizes);
      features.full_subgroups = std::max(range.maxSubgroupSize, c.subgroup_size);
    }
  }
  float prio = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = queue_family;
  qci.queueCount = 1;
  qci.pQueuePriorities = &prio;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &feats};
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = uint32_t(extensions.size());
  dci.ppEnabledExtensionNames = extensions.data();
  vk_check(vkCreateDevice(phys_, &dci, nullptr, &device_), "vkCreateDevice");
  check_validation("creating the VkDevice for " + info_.name);
  if (push_descriptors)
    push_descriptor_set_ =
        reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(vkGetDeviceProcAddr(device_, "vkCmdPushDescriptorSetKHR"));
  if (!push_descriptor_set_) features.max_push_descriptors = 0;
  memory_ = std::make_unique<MemoryPool>(device_, phys_, info_);
  pipelines_ = std::make_unique<PipelineCache>(device_, info_, props, cache_path(), opts_.pipeline_cache_size, features);
  submitter_ = std::make_unique<Submitter>(device_, queue_family, timestamps ? props.limits.timestampPeriod : 0.0f,
                                           opts_.timeout_ms, info_.name, lost_, opts_.dispatch_times ? kDispatchStamps : 0);
}

DeviceImpl::~DeviceImpl() {
  vkDeviceWaitIdle(device_);
  submitter_.reset();
  // Nothing else holds a pipeline or a buffer now: executables and run_spirv hold the device too.
  pipelines_.reset();
  memory_.reset();
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

BufferPtr DeviceImpl::allocate(const ir::TensorType& type) { return allocate(type, VK_NULL_HANDLE); }

BufferPtr DeviceImpl::allocate(const ir::TensorType& type, VkBuffer prefer) {
  check_alive();
  Allocation a = memory_->allocate(type.byte_size(), prefer);
  memory_->add_in_use(type.byte_size());
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
  const MemoryPool::Staging staging = memory_->acquire_staging(staged);
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
  const MemoryPool::Staging staging = memory_->acquire_staging(staged);
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

PipelinePtr DeviceImpl::pipeline(const codegen::KernelBinary& k, const PipelineOptions& options) {
  check_alive();
  return pipelines_->get(k, options);
}

void DeviceImpl::drop_cached_pipelines() {
  pipelines_->clear();
  // A driver may free a destroyed pipeline's memory only once the queue runs again: lavapipe
  // (Mesa 22.3) frees them on its queue thread after the next submission (about 0.4 MiB of
  // host heap each, bench/pipeline_churn.cpp), so a second one returns after it has.
  for (int i = 0; i < 2; ++i) submit([](VkCommandBuffer, SubmitContext&) {});
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
  ctx.stamp(cb);
  check_validation("recording the dispatch of kernel " + p.kernel);
}

void DeviceImpl::record_barrier(VkCommandBuffer cb, const BarrierMasks& masks) {
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, masks.src_access, masks.dst_access};
  vkCmdPipelineBarrier(cb, masks.src, masks.dst, 0, 1, &mb, 0, nullptr, 0, nullptr);
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

double DeviceImpl::submit(const Recording& record, std::chrono::microseconds spin, std::vector<double>* dispatch_ms) {
  check_alive();
  return submitter_->submit(record, spin, dispatch_ms);
}

std::shared_ptr<SubmitContext> DeviceImpl::record_kept(const Recording& record) {
  check_alive();
  return submitter_->record_kept(record);
}

double DeviceImpl::submit_kept(SubmitContext& ctx, std::chrono::microseconds spin, std::vector<double>* dispatch_ms) {
  check_alive();
  return submitter_->submit_kept(ctx, spin, dispatch_ms);
}

}  // namespace nxv::runtime
