// A device's memory pools: buffers by size class, staging memory for transfers.
#include "runtime/memory_pool.h"

#include <algorithm>
#include <bit>

#include "runtime/vk_util.h"

namespace nxv::runtime {

namespace {
// Size classes keep the pool's free lists short and make reuse likely across runs whose
// tensors differ slightly in size.
uint64_t size_class(uint64_t bytes) { return std::bit_ceil(std::max<uint64_t>(bytes, 256)); }
}  // namespace

MemoryPool::MemoryPool(VkDevice device, VkPhysicalDevice phys, const DeviceInfo& info) : device_(device), info_(info) {
  vkGetPhysicalDeviceMemoryProperties(phys, &mem_props_);
  for (uint32_t i = 0; i < mem_props_.memoryTypeCount; ++i) {
    auto f = mem_props_.memoryTypes[i].propertyFlags;
    if ((f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) && (f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) &&
        (f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) && info_.type == "cpu") {
      unified_ = true;  // lavapipe: all memory is host memory, staging would only copy twice
      break;
    }
  }
}

MemoryPool::~MemoryPool() { trim(); }

Allocation MemoryPool::allocate_memory(uint64_t capacity, bool host_visible_only) {
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

Allocation MemoryPool::allocate(uint64_t bytes, VkBuffer prefer) {
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

void MemoryPool::release(const Allocation& a, uint64_t bytes) {
  in_use_ -= bytes;
  std::lock_guard<std::mutex> lock(mutex_);
  free_.emplace(a.capacity, a);
}

std::optional<Allocation> MemoryPool::take_pooled(std::multimap<uint64_t, Allocation>& pool, uint64_t capacity,
                                                  VkBuffer prefer) {
  std::lock_guard<std::mutex> lock(mutex_);
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

MemoryPool::Staging MemoryPool::acquire_staging(uint64_t bytes) {
  uint64_t cap = size_class(bytes);
  if (auto a = take_pooled(staging_free_, cap)) return Staging(*this, *a);
  return Staging(*this, allocate_memory(cap, true));
}

void MemoryPool::release_staging(const Allocation& a) {
  std::lock_guard<std::mutex> lock(mutex_);
  staging_free_.emplace(a.capacity, a);
}

VkBufferView MemoryPool::create_texel_view(const Allocation& a) {
  VkBufferViewCreateInfo vi{VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
  vi.buffer = a.buffer;
  vi.format = VK_FORMAT_R32G32B32A32_UINT;
  vi.range = std::min<uint64_t>(a.capacity / 16, info_.caps.max_texel_buffer_elements) * 16;
  VkBufferView view;
  vk_check(vkCreateBufferView(device_, &vi, nullptr, &view), "vkCreateBufferView");
  ++texel_views_;
  return view;
}

void MemoryPool::free_raw(const Allocation& a) {
  ++buffers_destroyed_;
  if (a.texels) {
    vkDestroyBufferView(device_, a.texels, nullptr);
    --texel_views_;
  }
  if (a.mapped) vkUnmapMemory(device_, a.memory);
  vkDestroyBuffer(device_, a.buffer, nullptr);
  vkFreeMemory(device_, a.memory, nullptr);
}

void MemoryPool::trim() {
  std::multimap<uint64_t, Allocation> idle;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    idle.swap(free_);
    idle.merge(staging_free_);
  }
  for (auto& [cap, a] : idle) free_raw(a);
}

}  // namespace nxv::runtime
