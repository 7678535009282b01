// A device's queue: command contexts and submission.
#include "runtime/submitter.h"

#include "runtime/vk_util.h"

namespace nxv::runtime {

Submitter::Submitter(VkDevice device, uint32_t queue_family, float timestamp_period_ns, uint64_t timeout_ms,
                     std::string device_name, std::atomic<bool>& lost, uint32_t dispatch_stamps)
    : device_(device), queue_family_(queue_family), timestamp_period_ns_(timestamp_period_ns), timeout_ms_(timeout_ms),
      dispatch_stamps_(timestamp_period_ns > 0 ? dispatch_stamps : 0), device_name_(std::move(device_name)), lost_(lost) {
  vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
}

Submitter::~Submitter() {
  for (auto& c : idle_contexts_) destroy_context(*c);
}

void SubmitContext::stamp(VkCommandBuffer cb) {
  if (stamps < stamp_capacity) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, queries, 2 + stamps++);
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

std::unique_ptr<SubmitContext> Submitter::acquire_context() {
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
    Submitter* d;
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
  if (timestamp_period_ns_ > 0) {
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = 2 + dispatch_stamps_;
    vk_check(vkCreateQueryPool(device_, &qi, nullptr, &c->queries), "vkCreateQueryPool");
    c->stamp_capacity = dispatch_stamps_;
  }
  guard.c = nullptr;
  return c;
}

void Submitter::destroy_context(SubmitContext& c) {
  for (auto p : c.descriptor_pools) vkDestroyDescriptorPool(device_, p, nullptr);
  if (c.queries) vkDestroyQueryPool(device_, c.queries, nullptr);
  if (c.fence) vkDestroyFence(device_, c.fence, nullptr);
  if (c.pool) vkDestroyCommandPool(device_, c.pool, nullptr);
}

void Submitter::record_into(SubmitContext& ctx, const Recording& record) {
  vk_check(vkResetCommandPool(device_, ctx.pool, 0), "vkResetCommandPool");
  for (auto p : ctx.descriptor_pools) vk_check(vkResetDescriptorPool(device_, p, 0), "vkResetDescriptorPool");
  ctx.current_pool = 0;
  ctx.stamps = 0;
  VkCommandBuffer cb = ctx.cb;
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  vk_check(vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer");
  if (ctx.queries) {
    vkCmdResetQueryPool(cb, ctx.queries, 0, 2 + ctx.stamp_capacity);
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, ctx.queries, 0);
  }
  record(cb, ctx);
  if (ctx.queries) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, ctx.queries, 1);
  vk_check(vkEndCommandBuffer(cb), "vkEndCommandBuffer");
}

double Submitter::execute(SubmitContext& ctx, std::chrono::microseconds spin, std::vector<double>* dispatch_ms) {
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
  if (r == VK_NOT_READY) r = vkWaitForFences(device_, 1, &ctx.fence, VK_TRUE, timeout_ms_ * 1000000ull);
  if (r == VK_TIMEOUT)
    throw Error(Error::Kind::Timeout, "graph did not finish within " + std::to_string(timeout_ms_) + " ms on " +
                                          device_name_);
  if (r == VK_ERROR_DEVICE_LOST) lost_ = true;
  vk_check(r, "vkWaitForFences");
  if (!ctx.queries) return 0;
  uint64_t whole[2] = {0, 0};
  if (vkGetQueryPoolResults(device_, ctx.queries, 0, 2, sizeof whole, whole, 8, VK_QUERY_RESULT_64_BIT) != VK_SUCCESS) return 0;
  const auto ms = [&](uint64_t from, uint64_t to) { return double(to - from) * timestamp_period_ns_ / 1e6; };
  // The dispatches' stamps only where asked for: a plain run reads two timestamps, as before.
  std::vector<uint64_t> each(ctx.stamps);
  if (dispatch_ms && !each.empty() &&
      vkGetQueryPoolResults(device_, ctx.queries, 2, ctx.stamps, each.size() * 8, each.data(), 8, VK_QUERY_RESULT_64_BIT) ==
          VK_SUCCESS)
    for (uint32_t i = 0; i < ctx.stamps; ++i) dispatch_ms->push_back(ms(i ? each[i - 1] : whole[0], each[i]));
  return ms(whole[0], whole[1]);
}

double Submitter::submit(const Recording& record, std::chrono::microseconds spin, std::vector<double>* dispatch_ms) {
  // One context per submission in flight: recording needs no lock, so many threads record at once.
  auto ctx = acquire_context();
  try {
    record_into(*ctx, record);
    const double ms = execute(*ctx, spin, dispatch_ms);
    std::lock_guard<std::mutex> lock(contexts_mutex_);
    idle_contexts_.push_back(std::move(ctx));
    return ms;
  } catch (...) {
    abandon(std::move(ctx));
    throw;
  }
}

std::shared_ptr<SubmitContext> Submitter::record_kept(const Recording& record) {
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

double Submitter::submit_kept(SubmitContext& ctx, std::chrono::microseconds spin, std::vector<double>* dispatch_ms) {
  try {
    return execute(ctx, spin, dispatch_ms);
  } catch (...) {
    wait_idle();  // the GPU must not still run it when it is reused
    throw;
  }
}

void Submitter::wait_idle() {
  std::lock_guard<std::mutex> lock(queue_mutex_);  // vkQueueWaitIdle needs the queue too
  vkQueueWaitIdle(queue_);
}

void Submitter::abandon(std::unique_ptr<SubmitContext> ctx) {
  wait_idle();
  destroy_context(*ctx);
}

}  // namespace nxv::runtime
