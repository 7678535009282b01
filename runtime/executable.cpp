// Executable: the pass pipeline + codegen at compile time; one command buffer per run
// where the graph has no control flow the host drives (executable_impl.h).
#include <algorithm>
#include <map>
#include <mutex>

#include "ir/json.h"
#include "ir/literal.h"
#include "passes/pass.h"
#include "runtime/compile_log.h"
#include "runtime/executable_impl.h"
#include "runtime/vk_util.h"

namespace nxv::runtime {
namespace {

// A tensor that gets a storage buffer (one binding, one allocation, in one heap) larger than
// the device allows: an out-of-memory error naming the node, before anything is allocated.
void check_buffer_size(const ir::Node& n, const codegen::DeviceCaps& caps) {
  const std::pair<uint64_t, const char*> limits[] = {
      {caps.max_storage_buffer_range, "maxStorageBufferRange"},
      {caps.max_memory_allocation_bytes, "maxMemoryAllocationSize"},
      {caps.max_heap_bytes, "its largest device-local heap"},
  };
  for (const auto& r : n.results)
    for (const auto& [limit, what] : limits)
      if (uint64_t(r.byte_size()) > limit)
        throw Error(Error::Kind::OutOfMemory, "node " + std::to_string(n.id) + " (" + n.op + "): " + ir::to_string(r) + " takes " +
                                                  std::to_string(r.byte_size()) + " bytes, more than " + caps.name +
                                                  " allows for one buffer (" + what + ": " + std::to_string(limit) + " bytes)");
}

// The plan-buffers slot of a kernel's result, or -1 where it has a buffer of its own.
int64_t buffer_slot(const ir::Node& kernel, size_t result) {
  if (!kernel.attrs.contains("buffers")) return -1;
  return kernel.attrs["buffers"].at(result).get<int64_t>();
}

}  // namespace

ExecutableImpl::ExecutableImpl(std::shared_ptr<DeviceImpl> dev, ir::Graph source, std::vector<ir::TensorType> inputs,
                               const CompileOptions& opts)
    : dev_(std::move(dev)), source_(std::move(source)), lowered_(source_), inputs_(std::move(inputs)), submitter_(dev_) {
  const codegen::DeviceCaps caps = compile_caps(dev_->info(), opts);
  passes::PassManager pm(opts.pipeline.empty() ? passes::default_pipeline() : opts.pipeline, codegen::kernel_bounds(caps));
  pm.run(lowered_);
  for (const auto* p : lowered_.parameters()) {
    int64_t i = p->attrs.value("index", int64_t(-1));
    if (i < 0 || size_t(i) >= inputs_.size() || inputs_[i] != p->type())
      throw Error(Error::Kind::InvalidArgument, "node " + std::to_string(p->id) + " (parameter): index " +
                                                    std::to_string(i) + " does not name an input of type " +
                                                    ir::to_string(p->type()));
  }
  for (ir::NodeId id : lowered_.outputs) outputs_.push_back(lowered_.node(id).type());

  for (const auto& n : lowered_.nodes) {
    if (n.op == "kernel") {
      steps_.push_back({&n, compile_kernel_step(n, caps), nullptr});
    } else if (n.op == "while" || n.op == "cond") {
      steps_.push_back({&n, std::nullopt, std::make_unique<ControlStep>(dev_, n, lowered_, opts, binaries_)});
    } else if (n.op == "elem") {
      steps_.push_back({&n, std::nullopt, nullptr});
    } else if (n.op == "tensor") {
      ir::Literal lit = ir::literal_of(n);
      constants_[n.id] = dev_->upload(n.type(), lit.data.data(), lit.data.size());
    } else if (n.op != "parameter" && n.op != "constant") {
      throw Error(Error::Kind::Unsupported, "node " + std::to_string(n.id) + " (" + n.op +
                                                "): the runtime cannot run this op at the top level of a graph");
    }
  }
  only_kernels_ = records_only_kernels();
}

KernelStep ExecutableImpl::compile_kernel_step(const ir::Node& n, const codegen::DeviceCaps& caps) {
  // Named by the nodes the graph came with: the body's outputs, the kernel's inputs.
  for (ir::NodeId a : n.args) check_buffer_size(lowered_.node(a), caps);
  if (const auto body = n.regions.find("body"); body != n.regions.end() && body->second)
    for (ir::NodeId o : body->second->outputs) check_buffer_size(body->second->node(o), caps);
  CompileTimer timer;
  KernelStep step{&n, codegen::compile_kernel(n, lowered_, caps), nullptr};
  // A module the validator rejects is a compiler bug; never hand it to a driver.
  std::string err = codegen::validate(step.binary.spirv, caps.api_version);
  if (!err.empty()) throw Error(Error::Kind::Vulkan, "kernel " + step.binary.name + " failed SPIR-V validation: " + err);
  timer.codegen_done();
  step.pipeline = dev_->pipeline(step.binary);
  timer.log(lowered_.name, step.binary.name);
  for (const auto& slot : n.attrs.value("buffers", nlohmann::json::array()))
    if (slot.get<int64_t>() >= 0) slot_bytes_.resize(std::max<size_t>(slot_bytes_.size(), slot.get<size_t>() + 1));
  for (size_t i = 0; i < n.results.size(); ++i)
    if (int64_t slot = buffer_slot(n, i); slot >= 0)
      slot_bytes_[slot] = std::max<uint64_t>(slot_bytes_[slot], n.results[i].byte_size());
  binaries_.push_back(step.binary);
  return step;
}

std::vector<BufferPtr> ExecutableImpl::run(const std::vector<BufferPtr>& inputs, RunStats* stats) {
  // Each submit waits at most the timeout; host-driven loops are held to it as a whole,
  // or a loop whose condition never turns false would keep its caller forever.
  return run_until(inputs, stats, Clock::now() + std::chrono::milliseconds(dev_->options().timeout_ms));
}

uint64_t ExecutableImpl::bytes_per_run() const {
  uint64_t bytes = 0;
  for (uint64_t b : slot_bytes_) bytes += b;
  for (const auto& step : steps_)
    if (step.kernel)
      for (size_t i = 0; i < step.node->results.size(); ++i)
        if (buffer_slot(*step.node, i) < 0) bytes += step.node->results[i].byte_size();
  return bytes;
}

bool ExecutableImpl::records_only_kernels() const {
  return std::all_of(steps_.begin(), steps_.end(), [](const Step& s) { return s.kernel || s.node->op == "elem"; });
}

std::vector<uint32_t> ExecutableImpl::group_counts() const {
  std::vector<uint32_t> groups;
  for (const auto& step : steps_)
    if (step.kernel) groups.insert(groups.end(), step.kernel->binary.group_count, step.kernel->binary.group_count + 3);
  return groups;
}

std::vector<BufferPtr> ExecutableImpl::run_until(const std::vector<BufferPtr>& inputs, RunStats* stats,
                                                 Clock::time_point deadline) {
  auto t0 = Clock::now();
  RunStats local;
  std::vector<Pending> batch;
  std::vector<BufferPtr> outs;
  std::unique_lock<std::mutex> kept;
  if (only_kernels_) kept = submitter_.try_keep();
  if (kept.owns_lock()) {
    outs = record(inputs, batch, local, deadline, &submitter_.kept_allocations());
    submitter_.submit_kept(batch, local);
  } else {  // control flow, or another thread is running the kept recording
    outs = record(inputs, batch, local, deadline);
    submitter_.submit(batch, local);
  }
  if (stats) {
    *stats = local;
    stats->wall_ms = ms_between(t0, Clock::now());
  }
  return outs;
}

std::vector<BufferPtr> ExecutableImpl::record(const std::vector<BufferPtr>& inputs, std::vector<Pending>& batch,
                                              RunStats& stats, Clock::time_point deadline, std::vector<VkBuffer>* reuse) {
  if (inputs.size() != inputs_.size())
    throw Error(Error::Kind::InvalidArgument, "graph '" + source_.name + "' takes " + std::to_string(inputs_.size()) +
                                                  " inputs, got " + std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i] || inputs[i]->type() != inputs_[i])
      throw Error(Error::Kind::InvalidArgument,
                  "parameter " + std::to_string(i) + " expects " + ir::to_string(inputs_[i]) + ", got " +
                      (inputs[i] ? ir::to_string(inputs[i]->type()) : std::string("no buffer")));
    // Another VkDevice's buffer handle is undefined behaviour to bind, not an error Vulkan reports.
    if (&inputs[i]->device() != dev_.get())
      throw Error(Error::Kind::InvalidArgument,
                  "parameter " + std::to_string(i) + " of graph '" + source_.name + "' lives on device " +
                      std::to_string(inputs[i]->device().info().index) + " (" + inputs[i]->device().info().name +
                      "), the graph runs on device " + std::to_string(dev_->info().index) + " (" + dev_->info().name +
                      "): copy it across first");
  }
  // Every value's buffers: parameters, literals, kernel and control-flow results, and the elems naming them.
  std::map<ir::NodeId, std::vector<BufferPtr>> values;
  for (const auto* p : lowered_.parameters()) values[p->id] = {inputs.at(p->attrs.value("index", 0))};
  for (const auto& [id, buf] : constants_) values[id] = {buf};
  // Intermediates share the buffers plan-buffers assigned (allocated for this run only).
  std::vector<BufferPtr> slots(slot_bytes_.size());
  size_t allocated = 0;
  auto allocate = [&](const ir::TensorType& type) {
    if (!reuse) return dev_->allocate(type);
    if (allocated == reuse->size()) reuse->push_back(VK_NULL_HANDLE);
    BufferPtr b = dev_->allocate(type, (*reuse)[allocated]);
    (*reuse)[allocated++] = static_cast<const BufferImpl&>(*b).alloc().buffer;
    return b;
  };
  for (const auto& step : steps_) {
    const ir::Node& n = *step.node;
    if (step.kernel) {
      auto& rs = values[n.id];
      for (size_t i = 0; i < n.results.size(); ++i) {
        const int64_t slot = buffer_slot(n, i);
        if (slot < 0) {
          rs.push_back(allocate(n.results[i]));
          continue;
        }
        if (!slots[slot]) slots[slot] = allocate({ir::DType::U8, {int64_t(slot_bytes_[slot])}});
        rs.push_back(slots[slot]);
      }
      Pending p{&*step.kernel, {}};
      for (const auto& bnd : step.kernel->binary.bindings)
        p.buffers.push_back(bnd.kind == codegen::Binding::Kind::Input ? values.at(n.args.at(bnd.index)).at(0)
                                                                      : rs.at(bnd.index));
      batch.push_back(std::move(p));
      continue;
    }
    if (n.op == "elem") {  // a kernel's buffers exist before it runs, so no submit
      values[n.id] = {values.at(n.args.at(0)).at(n.attrs.value("index", 0))};
      continue;
    }
    std::vector<BufferPtr> args;
    for (ir::NodeId a : n.args) args.push_back(values.at(a).at(0));
    values[n.id] = step.control->run(std::move(args), batch, stats, deadline, submitter_);
  }

  // Tensors are immutable, so an output that is an input or a constant shares its buffer.
  std::vector<BufferPtr> outs;
  for (ir::NodeId id : lowered_.outputs) outs.push_back(values.at(id).at(0));
  return outs;
}

namespace {

// A graph's inputs are its parameters, numbered 0..n-1.
std::vector<ir::TensorType> parameter_types(const ir::Graph& g) {
  std::vector<ir::TensorType> types;
  for (const auto* p : g.parameters()) {
    if (p->attrs.value("index", int64_t(-1)) != int64_t(types.size()))
      throw Error(Error::Kind::InvalidArgument, "node " + std::to_string(p->id) +
                                                    " (parameter): parameters must be numbered 0.." +
                                                    std::to_string(g.parameters().size() - 1));
    types.push_back(p->type());
  }
  return types;
}

// Compiled executables are shared: compiling the same graph twice pays only a lookup.
// Each cache holds its device (through its executables) for as long as it is not empty,
// and devices stay open for the life of the process, so a device's address names it.
std::mutex cache_mutex;
LruCache<std::string, std::shared_ptr<Executable>>& cache_of(const Device& device) {
  static std::map<const Device*, LruCache<std::string, std::shared_ptr<Executable>>> caches;
  return caches.try_emplace(&device, device.options().executable_cache_size).first->second;
}

}  // namespace

std::shared_ptr<Executable> Executable::compile(std::shared_ptr<Device> device, const ir::Graph& graph,
                                                const CompileOptions& opts) {
  auto dev = std::dynamic_pointer_cast<DeviceImpl>(device);
  if (!dev) throw Error(Error::Kind::InvalidArgument, "Executable::compile needs a device from Device::open");
  std::string key = ir::write_graph(graph);
  for (const auto& p : opts.pipeline) key += "\n" + p;
  key += "\nvendor " + std::to_string(opts.as_vendor) + " " + std::to_string(opts.as_compute_units);
  if (!opts.serial_loops) key += "\nno serial loops";
  key += "\nprecision " + codegen::to_string(opts.precision);
  key += "\nemulate " + opts.emulate;
  key = content_hash(key.data(), key.size(), dev->info().name + dev->options().device);
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    if (const auto* exe = cache_of(*dev).find(key)) return *exe;
  }
  ir::Graph g = graph;
  g.reindex();
  auto inputs = parameter_types(g);
  std::shared_ptr<Executable> exe = std::make_shared<ExecutableImpl>(dev, std::move(g), std::move(inputs), opts);
  std::vector<std::shared_ptr<Executable>> evicted;  // released after the lock: destroying one takes time
  std::lock_guard<std::mutex> lock(cache_mutex);
  return cache_of(*dev).insert(key, exe, evicted);
}

size_t Executable::cached(const Device& device) {
  std::lock_guard<std::mutex> lock(cache_mutex);
  return cache_of(device).size();
}

void Executable::drop_cached(const Device& device) {
  std::vector<std::shared_ptr<Executable>> evicted;
  std::lock_guard<std::mutex> lock(cache_mutex);
  cache_of(device).clear(evicted);
}

}  // namespace nxv::runtime
