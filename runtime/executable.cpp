// Executable: the pass pipeline + codegen at compile time; one command buffer per run.
#include <chrono>
#include <map>
#include <mutex>

#include "ir/json.h"
#include "passes/pass.h"
#include "runtime/vk_util.h"

namespace nxv::runtime {
namespace {

// Raw little-endian bytes of a `tensor` literal (docs/ir.md: data_b64).
std::string literal_bytes(const ir::Node& n) {
  if (!n.attrs.contains("data_b64") || !n.attrs["data_b64"].is_string())
    throw Error(Error::Kind::Unsupported, "node " + std::to_string(n.id) +
                                              " (tensor): the runtime takes literal tensors as data_b64");
  const std::string& in = n.attrs["data_b64"].get_ref<const std::string&>();
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char ch : in) {
    int v = ch >= 'A' && ch <= 'Z' ? ch - 'A' : ch >= 'a' && ch <= 'z' ? ch - 'a' + 26
          : ch >= '0' && ch <= '9' ? ch - '0' + 52 : ch == '+' ? 62 : ch == '/' ? 63 : -1;
    if (v < 0) continue;  // padding and whitespace
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(char((acc >> bits) & 0xFF));
    }
  }
  if (int64_t(out.size()) != n.type().byte_size())
    throw Error(Error::Kind::InvalidArgument, "node " + std::to_string(n.id) + " (tensor): data_b64 holds " +
                                                  std::to_string(out.size()) + " bytes, " +
                                                  ir::to_string(n.type()) + " needs " +
                                                  std::to_string(n.type().byte_size()));
  return out;
}

struct KernelStep {
  const ir::Node* node;
  codegen::KernelBinary binary;
  const Pipeline* pipeline;
};

class ExecutableImpl : public Executable {
 public:
  ExecutableImpl(std::shared_ptr<DeviceImpl> dev, ir::Graph source, const CompileOptions& opts)
      : dev_(std::move(dev)), source_(std::move(source)), lowered_(source_) {
    passes::PassManager pm(opts.pipeline.empty() ? passes::default_pipeline() : opts.pipeline);
    pm.run(lowered_);
    for (const auto* p : source_.parameters()) inputs_.push_back(p->type());
    for (ir::NodeId id : lowered_.outputs) outputs_.push_back(lowered_.node(id).type());

    const auto& caps = dev_->info().caps;
    for (const auto& n : lowered_.nodes) {
      if (n.op == "kernel") {
        KernelStep step{&n, codegen::compile_kernel(n, lowered_, caps), nullptr};
        // A module the validator rejects is a compiler bug; never hand it to a driver.
        std::string err = codegen::validate(step.binary.spirv, caps.api_version);
        if (!err.empty())
          throw Error(Error::Kind::Vulkan, "kernel " + step.binary.name + " failed SPIR-V validation: " + err);
        step.pipeline = &dev_->pipeline(step.binary);
        binaries_.push_back(step.binary);
        steps_.push_back(std::move(step));
      } else if (n.op == "tensor") {
        std::string bytes = literal_bytes(n);
        constants_[n.id] = dev_->upload(n.type(), bytes.data(), bytes.size());
      } else if (n.op != "parameter" && n.op != "elem" && n.op != "constant") {
        throw Error(Error::Kind::Unsupported, "node " + std::to_string(n.id) + " (" + n.op +
                                                  "): the runtime cannot run this op at the top level of a graph");
      }
    }
  }

  std::shared_ptr<Device> device() const override { return dev_; }
  const ir::Graph& source() const override { return source_; }
  const ir::Graph& lowered() const override { return lowered_; }
  const std::vector<codegen::KernelBinary>& kernels() const override { return binaries_; }
  const std::vector<ir::TensorType>& input_types() const override { return inputs_; }
  const std::vector<ir::TensorType>& output_types() const override { return outputs_; }

  std::vector<BufferPtr> run(const std::vector<BufferPtr>& inputs, RunStats* stats) override {
    auto t0 = std::chrono::steady_clock::now();
    if (inputs.size() != inputs_.size())
      throw Error(Error::Kind::InvalidArgument, "graph '" + source_.name + "' takes " + std::to_string(inputs_.size()) +
                                                    " inputs, got " + std::to_string(inputs.size()));
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i] || inputs[i]->type() != inputs_[i])
        throw Error(Error::Kind::InvalidArgument,
                    "parameter " + std::to_string(i) + " expects " + ir::to_string(inputs_[i]) + ", got " +
                        (inputs[i] ? ir::to_string(inputs[i]->type()) : std::string("no buffer")));
    }
    // Every value's buffer: parameters, constants, kernel results and the elems naming them.
    std::map<ir::NodeId, std::vector<BufferPtr>> values;
    for (const auto* p : lowered_.parameters()) values[p->id] = {inputs.at(p->attrs.value("index", 0))};
    for (const auto& [id, buf] : constants_) values[id] = {buf};
    for (const auto& n : lowered_.nodes) {
      if (n.op == "kernel") {
        auto& rs = values[n.id];
        for (const auto& r : n.results) rs.push_back(dev_->allocate(r));
      } else if (n.op == "elem") {
        values[n.id] = {values.at(n.args.at(0)).at(n.attrs.value("index", 0))};
      }
    }

    uint32_t descriptors = 0;
    for (const auto& s : steps_) descriptors += std::max<uint32_t>(1, s.pipeline->bindings);
    VkDevice vk = dev_->device();
    VkDescriptorPool pool = VK_NULL_HANDLE;
    if (!steps_.empty()) {
      VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptors};
      VkDescriptorPoolCreateInfo pi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
      pi.maxSets = uint32_t(steps_.size());
      pi.poolSizeCount = 1;
      pi.pPoolSizes = &size;
      vk_check(vkCreateDescriptorPool(vk, &pi, nullptr, &pool), "vkCreateDescriptorPool");
    }
    struct PoolGuard {
      VkDevice d;
      VkDescriptorPool p;
      ~PoolGuard() {
        if (p) vkDestroyDescriptorPool(d, p, nullptr);
      }
    } guard{vk, pool};

    std::vector<VkDescriptorSet> sets(steps_.size());
    for (size_t s = 0; s < steps_.size(); ++s) {
      const auto& step = steps_[s];
      VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
      ai.descriptorPool = pool;
      ai.descriptorSetCount = 1;
      ai.pSetLayouts = &step.pipeline->set_layout;
      vk_check(vkAllocateDescriptorSets(vk, &ai, &sets[s]), "vkAllocateDescriptorSets");
      std::vector<VkDescriptorBufferInfo> infos(step.binary.bindings.size());
      std::vector<VkWriteDescriptorSet> writes(infos.size());
      for (size_t b = 0; b < infos.size(); ++b) {
        const auto& bnd = step.binary.bindings[b];
        const BufferPtr& buf = bnd.kind == codegen::Binding::Kind::Input ? values.at(step.node->args.at(bnd.index)).at(0)
                                                                         : values.at(step.node->id).at(bnd.index);
        infos[b] = {static_cast<BufferImpl&>(*buf).alloc().buffer, 0, VK_WHOLE_SIZE};
        writes[b] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        writes[b].dstSet = sets[s];
        writes[b].dstBinding = uint32_t(b);
        writes[b].descriptorCount = 1;
        writes[b].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[b].pBufferInfo = &infos[b];
      }
      vkUpdateDescriptorSets(vk, uint32_t(writes.size()), writes.data(), 0, nullptr);
    }

    double device_ms = 0;
    if (!steps_.empty())
      device_ms = dev_->submit([&](VkCommandBuffer cb, VkQueryPool) {
        for (size_t s = 0; s < steps_.size(); ++s) {
          const auto& k = steps_[s].binary;
          vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, steps_[s].pipeline->pipeline);
          vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, steps_[s].pipeline->layout, 0, 1, &sets[s], 0,
                                  nullptr);
          vkCmdDispatch(cb, k.group_count[0], k.group_count[1], k.group_count[2]);
          // Later kernels read what this one wrote.
          VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_SHADER_WRITE_BIT,
                             VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT};
          vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                               VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0,
                               nullptr, 0, nullptr);
        }
      });

    // Tensors are immutable, so an output that is an input or a constant shares its buffer.
    std::vector<BufferPtr> outs;
    for (ir::NodeId id : lowered_.outputs) outs.push_back(values.at(id).at(0));
    if (stats) {
      stats->dispatches = int(steps_.size());
      stats->submits = steps_.empty() ? 0 : 1;
      stats->device_ms = device_ms;
      stats->wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    return outs;
  }

 private:
  std::shared_ptr<DeviceImpl> dev_;
  ir::Graph source_, lowered_;
  std::vector<ir::TensorType> inputs_, outputs_;
  std::vector<codegen::KernelBinary> binaries_;
  std::vector<KernelStep> steps_;
  std::map<ir::NodeId, BufferPtr> constants_;
};

}  // namespace

std::shared_ptr<Executable> Executable::compile(std::shared_ptr<Device> device, const ir::Graph& graph,
                                                const CompileOptions& opts) {
  auto dev = std::dynamic_pointer_cast<DeviceImpl>(device);
  if (!dev) throw Error(Error::Kind::InvalidArgument, "Executable::compile needs a device from Device::open");
  std::string key = ir::write_graph(graph);
  for (const auto& p : opts.pipeline) key += "\n" + p;
  key = content_hash(key.data(), key.size(), dev->info().name + dev->options().device);
  // Compiled executables are shared: compiling the same graph twice pays only a lookup.
  static std::mutex m;
  static std::map<std::pair<const Device*, std::string>, std::shared_ptr<Executable>> cache;
  {
    std::lock_guard<std::mutex> lock(m);
    if (auto it = cache.find({dev.get(), key}); it != cache.end()) return it->second;
  }
  ir::Graph g = graph;
  g.reindex();
  auto exe = std::make_shared<ExecutableImpl>(dev, std::move(g), opts);
  std::lock_guard<std::mutex> lock(m);
  return cache.emplace(std::make_pair(dev.get(), key), exe).first->second;
}

}  // namespace nxv::runtime
