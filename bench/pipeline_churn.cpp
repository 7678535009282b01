// nxv_pipeline_churn: creates and destroys compute pipelines with plain Vulkan (none of the
// runtime), sampling host RSS and malloc's heap, to tell a driver's per-pipeline memory from
// the runtime's (docs/reliability.md, Soak). Each pipeline is one of `--distinct` modules
// (a loop whose bound differs), created through a VkPipelineCache renewed every `--renew`
// creations (0: none), and destroyed with its module at once, or after the `--keep` created
// after it; at the end the pipelines left are destroyed, two empty batches submitted, the device
// destroyed and malloc's free heap trimmed, with a sample after each. With --dispatch each pipeline runs once before it goes (lavapipe compiles a
// pipeline's code when it is first dispatched); with --submit-every=N an empty submission
// and a queue wait follow every N creations.
//   nxv_pipeline_churn [--count=N] [--distinct=N] [--renew=N] [--keep=N] [--dispatch]
//                      [--submit-every=N] [--device=SUBSTRING] [--sample-every=N]
#include <malloc.h>
#include <spirv-tools/libspirv.hpp>
#include <vulkan/vulkan.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/host_memory.h"
#include "cli/flags.h"

namespace {

struct Args {
  long count = 5000, distinct = 1000000, renew = 0, keep = 0, sample_every = 500, submit_every = 0;
  bool dispatch = false;
  std::string device = "llvmpipe";
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto value = [&](const char* name) { return nxv::cli::flag_value(argv[i], name); };
    if (const char* v = value("count")) a.count = std::stol(v);
    else if (const char* v = value("distinct")) a.distinct = std::max(1L, std::stol(v));
    else if (const char* v = value("renew")) a.renew = std::stol(v);
    else if (const char* v = value("keep")) a.keep = std::stol(v);
    else if (const char* v = value("sample-every")) a.sample_every = std::max(1L, std::stol(v));
    else if (const char* v = value("device")) a.device = v;
    else if (const char* v = value("submit-every")) a.submit_every = std::stol(v);
    else if (s == "--dispatch") a.dispatch = true;
    else throw std::invalid_argument("unknown argument " + s + " (see the comment atop bench/pipeline_churn.cpp)");
  }
  return a;
}

void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS) throw std::runtime_error(std::string(what) + " failed: VkResult " + std::to_string(r));
}

// data[i] = data[i] * 3 + 1 repeated `bound` times: each bound is a module of its own.
std::vector<uint32_t> module_with_bound(long bound) {
  const std::string text = R"(
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main" %gid
               OpExecutionMode %main LocalSize 64 1 1
               OpDecorate %gid BuiltIn GlobalInvocationId
               OpDecorate %arr ArrayStride 4
               OpMemberDecorate %Buf 0 Offset 0
               OpDecorate %Buf Block
               OpDecorate %buf DescriptorSet 0
               OpDecorate %buf Binding 0
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %uint = OpTypeInt 32 0
      %v3uint = OpTypeVector %uint 3
   %p_v3uint = OpTypePointer Input %v3uint
        %gid = OpVariable %p_v3uint Input
        %arr = OpTypeRuntimeArray %uint
        %Buf = OpTypeStruct %arr
      %p_Buf = OpTypePointer StorageBuffer %Buf
        %buf = OpVariable %p_Buf StorageBuffer
     %p_uint = OpTypePointer StorageBuffer %uint
     %p_func = OpTypePointer Function %uint
       %bool = OpTypeBool
      %uint0 = OpConstant %uint 0
      %uint1 = OpConstant %uint 1
      %uint3 = OpConstant %uint 3
      %bound = OpConstant %uint )" + std::to_string(bound) + R"(
       %main = OpFunction %void None %fn
      %entry = OpLabel
          %i = OpVariable %p_func Function
         %id = OpLoad %v3uint %gid
          %x = OpCompositeExtract %uint %id 0
          %p = OpAccessChain %p_uint %buf %uint0 %x
               OpStore %i %uint0
               OpBranch %head
       %head = OpLabel
         %iv = OpLoad %uint %i
       %more = OpULessThan %bool %iv %bound
               OpLoopMerge %exit %cont None
               OpBranchConditional %more %body %exit
       %body = OpLabel
          %v = OpLoad %uint %p
         %v3 = OpIMul %uint %v %uint3
         %v1 = OpIAdd %uint %v3 %uint1
               OpStore %p %v1
               OpBranch %cont
       %cont = OpLabel
         %in = OpIAdd %uint %iv %uint1
               OpStore %i %in
               OpBranch %head
       %exit = OpLabel
               OpReturn
               OpFunctionEnd
)";
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_1);
  std::vector<uint32_t> words;
  if (!tools.Assemble(text, &words)) throw std::runtime_error("the churn module does not assemble");
  return words;
}

void sample(long created) {
  using nxv::bench::mib;
  const nxv::bench::Heap h = nxv::bench::heap();
  std::printf("created=%ld rss=%.1f MiB heap_in_use=%.1f MiB heap_arenas=%.1f MiB\n", created,
              mib(nxv::bench::rss_bytes()), mib(h.in_use), mib(h.arenas));
  std::fflush(stdout);
}

struct Vk {
  VkInstance instance = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDescriptorPool descriptors = VK_NULL_HANDLE;
  VkDescriptorSet set = VK_NULL_HANDLE;

  explicit Vk(const std::string& want) {
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.apiVersion = VK_API_VERSION_1_1;
    VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ici.pApplicationInfo = &app;
    check(vkCreateInstance(&ici, nullptr, &instance), "vkCreateInstance");
    uint32_t n = 0;
    vkEnumeratePhysicalDevices(instance, &n, nullptr);
    std::vector<VkPhysicalDevice> phys(n);
    vkEnumeratePhysicalDevices(instance, &n, phys.data());
    VkPhysicalDevice chosen = VK_NULL_HANDLE;
    for (auto p : phys) {
      VkPhysicalDeviceProperties props;
      vkGetPhysicalDeviceProperties(p, &props);
      if (std::strstr(props.deviceName, want.c_str())) {
        chosen = p;
        std::printf("device: %s\n", props.deviceName);
        break;
      }
    }
    if (!chosen) throw std::runtime_error("no device whose name contains " + want);
    const float priority = 1;
    VkDeviceQueueCreateInfo q{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    q.queueCount = 1;
    q.pQueuePriorities = &priority;
    VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &q;
    check(vkCreateDevice(chosen, &dci, nullptr, &device), "vkCreateDevice");
    vkGetDeviceQueue(device, 0, 0, &queue);
    VkCommandPoolCreateInfo cpi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    cpi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    check(vkCreateCommandPool(device, &cpi, nullptr, &pool), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cai.commandPool = pool;
    cai.commandBufferCount = 1;
    check(vkAllocateCommandBuffers(device, &cai, &cb), "vkAllocateCommandBuffers");
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    check(vkCreateFence(device, &fci, nullptr, &fence), "vkCreateFence");
    VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bci.size = 64 * 4;
    bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    check(vkCreateBuffer(device, &bci, nullptr, &buffer), "vkCreateBuffer");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(device, buffer, &req);
    VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    mai.allocationSize = req.size;
    mai.memoryTypeIndex = uint32_t(__builtin_ctz(req.memoryTypeBits));
    check(vkAllocateMemory(device, &mai, nullptr, &memory), "vkAllocateMemory");
    check(vkBindBufferMemory(device, buffer, memory, 0), "vkBindBufferMemory");
    VkDescriptorSetLayoutBinding b{0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    VkDescriptorSetLayoutCreateInfo dl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    dl.bindingCount = 1;
    dl.pBindings = &b;
    check(vkCreateDescriptorSetLayout(device, &dl, nullptr, &set_layout), "vkCreateDescriptorSetLayout");
    VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pl.setLayoutCount = 1;
    pl.pSetLayouts = &set_layout;
    check(vkCreatePipelineLayout(device, &pl, nullptr, &layout), "vkCreatePipelineLayout");
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1};
    VkDescriptorPoolCreateInfo dpi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    dpi.maxSets = 1;
    dpi.poolSizeCount = 1;
    dpi.pPoolSizes = &size;
    check(vkCreateDescriptorPool(device, &dpi, nullptr, &descriptors), "vkCreateDescriptorPool");
    VkDescriptorSetAllocateInfo dsa{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    dsa.descriptorPool = descriptors;
    dsa.descriptorSetCount = 1;
    dsa.pSetLayouts = &set_layout;
    check(vkAllocateDescriptorSets(device, &dsa, &set), "vkAllocateDescriptorSets");
    VkDescriptorBufferInfo info{buffer, 0, VK_WHOLE_SIZE};
    VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    w.dstSet = set;
    w.descriptorCount = 1;
    w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    w.pBufferInfo = &info;
    vkUpdateDescriptorSets(device, 1, &w, 0, nullptr);
  }
  ~Vk() {
    vkDestroyDescriptorPool(device, descriptors, nullptr);
    vkDestroyBuffer(device, buffer, nullptr);
    vkFreeMemory(device, memory, nullptr);
    vkDestroyFence(device, fence, nullptr);
    vkDestroyCommandPool(device, pool, nullptr);
    vkDestroyPipelineLayout(device, layout, nullptr);
    vkDestroyDescriptorSetLayout(device, set_layout, nullptr);
    vkDestroyDevice(device, nullptr);
    vkDestroyInstance(instance, nullptr);
  }

  VkPipeline create(const std::vector<uint32_t>& spirv, VkPipelineCache cache) {
    VkShaderModuleCreateInfo sm{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    sm.codeSize = spirv.size() * 4;
    sm.pCode = spirv.data();
    VkShaderModule module;
    check(vkCreateShaderModule(device, &sm, nullptr, &module), "vkCreateShaderModule");
    VkComputePipelineCreateInfo cp{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    cp.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, nullptr, 0, VK_SHADER_STAGE_COMPUTE_BIT, module,
                "main", nullptr};
    cp.layout = layout;
    VkPipeline p;
    const VkResult r = vkCreateComputePipelines(device, cache, 1, &cp, nullptr, &p);
    vkDestroyShaderModule(device, module, nullptr);
    check(r, "vkCreateComputePipelines");
    return p;
  }
  // Runs `p` (VK_NULL_HANDLE: nothing) in one submission and waits for it.
  void submit(VkPipeline p) {
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(vkBeginCommandBuffer(cb, &begin), "vkBeginCommandBuffer");
    if (p) {
      vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p);
      vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, nullptr);
      vkCmdDispatch(cb, 1, 1, 1);
    }
    check(vkEndCommandBuffer(cb), "vkEndCommandBuffer");
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cb;
    check(vkQueueSubmit(queue, 1, &si, fence), "vkQueueSubmit");
    check(vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    check(vkResetFences(device, 1, &fence), "vkResetFences");
  }
  VkPipelineCache new_cache() {
    VkPipelineCacheCreateInfo pci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    VkPipelineCache c;
    check(vkCreatePipelineCache(device, &pci, nullptr, &c), "vkCreatePipelineCache");
    return c;
  }
};

}  // namespace

int main(int argc, char** argv) try {
  const Args a = parse(argc, argv);
  sample(0);
  {
    Vk vk(a.device);
    sample(0);
    VkPipelineCache cache = a.renew ? vk.new_cache() : VK_NULL_HANDLE;
    std::deque<VkPipeline> kept;
    const auto start = std::chrono::steady_clock::now();
    for (long i = 1; i <= a.count; ++i) {
      kept.push_back(vk.create(module_with_bound(1 + i % a.distinct), cache));
      if (a.dispatch) vk.submit(kept.back());
      while (long(kept.size()) > a.keep) {
        vkDestroyPipeline(vk.device, kept.front(), nullptr);
        kept.pop_front();
      }
      if (a.renew && i % a.renew == 0) {
        vkDestroyPipelineCache(vk.device, cache, nullptr);
        cache = vk.new_cache();
      }
      if (a.submit_every && i % a.submit_every == 0) vk.submit(VK_NULL_HANDLE);
      if (i % a.sample_every == 0) sample(i);
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%ld pipelines in %.1f s\n", a.count, s);
    for (VkPipeline p : kept) vkDestroyPipeline(vk.device, p, nullptr);
    if (cache) vkDestroyPipelineCache(vk.device, cache, nullptr);
    std::printf("all pipelines and the cache destroyed: ");
    sample(a.count);
    vk.submit(VK_NULL_HANDLE);
    std::printf("after an empty submission: ");
    sample(a.count);
    vk.submit(VK_NULL_HANDLE);
    std::printf("after a second empty submission: ");
    sample(a.count);
  }
  std::printf("device and instance destroyed: ");
  sample(a.count);
  malloc_trim(0);
  std::printf("after malloc_trim(0): ");
  sample(a.count);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "nxv_pipeline_churn: error: %s\n", e.what());
  return 2;
}
