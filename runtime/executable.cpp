// Executable: the pass pipeline + codegen at compile time; one command buffer per run.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>

#include "codegen/serial_loop.h"
#include "ir/json.h"
#include "ir/literal.h"
#include "passes/pass.h"
#include "runtime/compile_log.h"
#include "runtime/hazards.h"
#include "runtime/host_loop.h"
#include "runtime/device_impl.h"
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

struct KernelStep {
  const ir::Node* node;
  codegen::KernelBinary binary;
  PipelinePtr pipeline;
};

class ExecutableImpl;

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

// A `while` compiled into one kernel with its nested control flow (codegen/serial_loop.h).
struct SerialStep {
  codegen::SerialLoopBinary binary;
  KernelStep kernel;
  std::vector<BufferPtr> constants;  // uploaded once, by binding index
  // Cleared once a dispatch completes no iteration (one iteration takes more loop steps than
  // the driver allows a dispatch): the loop's regions run it from then on.
  std::atomic<bool> usable{true};
};

// One top-level node that is not a parameter/literal: a kernel dispatch, or a `while`/`cond`
// driven from the host, whose regions are executables of their own.
struct Step {
  const ir::Node* node;
  std::optional<KernelStep> kernel;
  std::map<std::string, std::shared_ptr<ExecutableImpl>> regions;
  std::optional<HostLoop> host_loop;  // a `while` whose condition the host follows
  std::vector<BufferPtr> gate_start;   // a speculative `while`'s first gate's inputs: running, none passed
  std::shared_ptr<SerialStep> serial = nullptr;
};

// A kernel with its buffers bound, or (kernel null) bytes to write into buffers[0] or, with
// `copy`, buffers[1]'s contents to copy there, waiting for the submit that records it. It
// holds the buffers until then: one freed earlier could go to another thread's run meanwhile. A kernel with `indirect` takes its
// group counts from that buffer at `indirect_offset` when it runs.
struct Pending {
  const KernelStep* kernel;
  std::vector<BufferPtr> buffers;
  std::vector<uint8_t> bytes = {};
  BufferPtr indirect = nullptr;
  uint64_t indirect_offset = 0;
  bool copy = false;
};

// The buffers a pending command reads and writes, for ordering it against the others
// and for knowing what a batch writes.
void accesses(const Pending& p, std::vector<const void*>& reads, std::vector<const void*>& writes) {
  reads.clear();
  writes.clear();
  if (!p.kernel) {
    writes.push_back(p.buffers.at(0).get());
    if (p.copy) reads.push_back(p.buffers.at(1).get());
    return;
  }
  const auto& bindings = p.kernel->binary.bindings;
  for (size_t k = 0; k < bindings.size(); ++k) {
    const auto kind = bindings[k].kind;
    if (kind != codegen::Binding::Kind::Output) reads.push_back(p.buffers.at(k).get());
    if (kind != codegen::Binding::Kind::Input && kind != codegen::Binding::Kind::Constant)
      writes.push_back(p.buffers.at(k).get());
  }
  if (p.indirect) reads.push_back(p.indirect.get());
}

// Whether a kernel or update waiting in `batch` writes `b`.
bool written_by(const std::vector<Pending>& batch, const Buffer* b) {
  std::vector<const void*> reads, writes;
  for (const auto& p : batch) {
    accesses(p, reads, writes);
    if (std::find(writes.begin(), writes.end(), b) != writes.end()) return true;
  }
  return false;
}

// A while loop's body followed by its condition on the new state: outputs are the new
// state and, last, whether to go on.
ir::Graph body_then_condition(const ir::Graph& body, const ir::Graph& condition) {
  ir::Graph g = body;
  const ir::NodeId offset = body.next_id();
  std::map<ir::NodeId, ir::NodeId> id_of;
  for (const auto& n : condition.nodes) {
    if (n.op == "parameter") {
      id_of[n.id] = body.outputs.at(n.attrs.value("index", size_t(0)));
      continue;
    }
    ir::Node copy = n;
    copy.id = n.id + offset;
    for (auto& a : copy.args) a = id_of.at(a);
    id_of[n.id] = copy.id;
    g.nodes.push_back(std::move(copy));
  }
  g.outputs.push_back(id_of.at(condition.outputs.at(0)));
  g.reindex();
  return g;
}

ir::Literal download_literal(DeviceImpl& dev, const BufferPtr& b) {
  ir::Literal lit{b->type(), std::vector<uint8_t>(b->bytes())};
  dev.download(*b, lit.data.data(), lit.data.size());
  return lit;
}

bool truthy(DeviceImpl& dev, const BufferPtr& b) {
  const ir::Literal lit = download_literal(dev, b);
  return std::any_of(lit.data.begin(), lit.data.end(), [](uint8_t v) { return v != 0; });
}

void add_stats(RunStats* into, const RunStats& s) {
  if (!into) return;
  into->dispatches += s.dispatches;
  into->submits += s.submits;
  into->recorded += s.recorded;
  into->device_ms += s.device_ms;
  into->dispatch_ms.insert(into->dispatch_ms.end(), s.dispatch_ms.begin(), s.dispatch_ms.end());
}

// Records the pending kernels and writes into `cb`, with barriers only where a command
// depends on one before it (runtime/hazards.h): kernels that do not depend on each other
// (a backward pass's weight and input gradients) run side by side on the GPU.
void record_batch(DeviceImpl& dev, const std::vector<Pending>& batch, VkCommandBuffer cb, SubmitContext& ctx) {
  std::vector<Command> commands(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    accesses(batch[i], commands[i].reads, commands[i].writes);
    commands[i].kind = {batch[i].kernel != nullptr, batch[i].kernel == nullptr, batch[i].indirect != nullptr};
  }
  const std::vector<std::optional<BarrierMasks>> barriers = plan_barriers(commands);
  std::vector<const Buffer*> buffers;
  for (size_t i = 0; i < batch.size(); ++i) {
    const Pending& p = batch[i];
    if (barriers[i]) DeviceImpl::record_barrier(cb, *barriers[i]);
    if (!p.kernel) {
      if (p.copy) dev.record_copy(cb, *p.buffers.at(1), *p.buffers.at(0), p.buffers.at(0)->bytes());
      else dev.record_update(cb, *p.buffers.at(0), p.bytes);
      continue;
    }
    buffers.clear();
    for (const auto& b : p.buffers) buffers.push_back(b.get());
    dev.record_dispatch(cb, ctx, *p.kernel->pipeline, buffers, p.kernel->binary.group_count, {}, p.indirect.get(),
                        p.indirect_offset);
  }
}

size_t count_dispatches(const std::vector<Pending>& batch) {
  return std::count_if(batch.begin(), batch.end(), [](const Pending& p) { return p.kernel != nullptr; });
}

// The body of a loop the host follows, without the followed entries' new values: the host
// writes those (kernels of a scalar op or two would each cost a dispatch per iteration).
ir::Graph device_body(const ir::Graph& body, const HostLoop& loop) {
  ir::Graph g = body;
  g.outputs.clear();
  for (size_t i = 0, f = 0; i < body.outputs.size(); ++i) {
    if (f < loop.followed().size() && loop.followed()[f] == i)
      ++f;
    else
      g.outputs.push_back(body.outputs[i]);
  }
  return g;
}

bool has_control_flow(const ir::Graph& g) {
  return std::any_of(g.nodes.begin(), g.nodes.end(), [](const ir::Node& n) { return n.op == "while" || n.op == "cond"; });
}

// The region through the pipeline, and the regions of its loops and conds in turn.
std::shared_ptr<codegen::SerialRegion> lower_nest(const ir::Graph& g, const std::vector<std::string>& pipeline,
                                                  const passes::KernelBounds& bounds) {
  auto r = std::make_shared<codegen::SerialRegion>();
  r->graph = g;
  passes::PassManager(pipeline, bounds).run(r->graph);
  for (const auto& n : r->graph.nodes) {
    if (n.op != "while" && n.op != "cond") continue;
    for (const auto& [name, region] : n.regions) r->nested[n.id][name] = lower_nest(*region, pipeline, bounds);
  }
  return r;
}

// The gate after each speculative iteration of a `while` (run_speculative). From whether
// the loop still ran before the iteration (u8), how many gates it has passed in this
// submit (s32), and the iteration's predicate, it computes the same two after it and the
// group counts of the next iteration's kernels: theirs while the loop runs, zeros (a
// dispatch that does nothing) once it has stopped. `groups` holds three per kernel.
ir::Graph gate_graph(const std::vector<uint32_t>& groups, const ir::TensorType& predicate) {
  const std::string n = std::to_string(groups.size()), p = ir::dtype_name(predicate.dtype);
  return ir::parse_graph(R"({"version": 1, "name": "while_gate", "nodes": [
    {"id": 0, "op": "parameter", "type": "u8", "shape": [], "attrs": {"index": 0}},
    {"id": 1, "op": "parameter", "type": "s32", "shape": [], "attrs": {"index": 1}},
    {"id": 2, "op": "parameter", "type": ")" + p + R"(", "shape": [], "attrs": {"index": 2}},
    {"id": 3, "op": "constant", "type": ")" + p + R"(", "shape": [], "attrs": {"value": 0}},
    {"id": 4, "op": "not_equal", "args": [2, 3], "type": "u8", "shape": []},
    {"id": 5, "op": "logical_and", "args": [0, 4], "type": "u8", "shape": []},
    {"id": 6, "op": "as_type", "args": [5], "type": "s32", "shape": []},
    {"id": 7, "op": "add", "args": [1, 6], "type": "s32", "shape": []},
    {"id": 8, "op": "tensor", "type": "u32", "shape": [)" + n + R"(], "attrs": {"data": )" +
                         nlohmann::json(groups).dump() + R"(}},
    {"id": 9, "op": "constant", "type": "u32", "shape": [)" + n + R"(], "attrs": {"value": 0}},
    {"id": 10, "op": "broadcast", "args": [5], "type": "u8", "shape": [)" + n + R"(], "attrs": {"shape": [)" + n +
                         R"(], "axes": []}},
    {"id": 11, "op": "select", "args": [10, 8, 9], "type": "u32", "shape": [)" + n + R"(]}],
    "outputs": [5, 7, 11]})");
}

class ExecutableImpl : public Executable {
 public:
  // `inputs` are the types the graph receives; parameter i reads inputs[attrs.index].
  ExecutableImpl(std::shared_ptr<DeviceImpl> dev, ir::Graph source, std::vector<ir::TensorType> inputs,
                 const CompileOptions& opts)
      : dev_(std::move(dev)), source_(std::move(source)), lowered_(source_), inputs_(std::move(inputs)) {
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
        // Named by the nodes the graph came with: the body's outputs, the kernel's inputs.
        for (ir::NodeId a : n.args) check_buffer_size(lowered_.node(a), caps);
        if (const auto body = n.regions.find("body"); body != n.regions.end() && body->second)
          for (ir::NodeId o : body->second->outputs) check_buffer_size(body->second->node(o), caps);
        const auto t0 = Clock::now();
        const double c0 = thread_cpu_ms();
        KernelStep step{&n, codegen::compile_kernel(n, lowered_, caps), nullptr};
        // A module the validator rejects is a compiler bug; never hand it to a driver.
        std::string err = codegen::validate(step.binary.spirv, caps.api_version);
        if (!err.empty())
          throw Error(Error::Kind::Vulkan, "kernel " + step.binary.name + " failed SPIR-V validation: " + err);
        const auto t1 = Clock::now();
        const double c1 = thread_cpu_ms();
        step.pipeline = dev_->pipeline(step.binary);
        log_kernel_compile(lowered_.name, step.binary.name,
                           {ms_between(t0, t1), ms_between(t1, Clock::now()), c1 - c0, thread_cpu_ms() - c1});
        for (const auto& slot : n.attrs.value("buffers", nlohmann::json::array()))
          if (slot.get<int64_t>() >= 0) slot_bytes_.resize(std::max<size_t>(slot_bytes_.size(), slot.get<size_t>() + 1));
        for (size_t i = 0; i < n.results.size(); ++i)
          if (int64_t slot = buffer_slot(n, i); slot >= 0)
            slot_bytes_[slot] = std::max<uint64_t>(slot_bytes_[slot], n.results[i].byte_size());
        binaries_.push_back(step.binary);
        steps_.push_back({&n, std::move(step), {}});
      } else if (n.op == "while" || n.op == "cond") {
        steps_.push_back(control_step(n, opts));
      } else if (n.op == "elem") {
        steps_.push_back({&n, std::nullopt, {}});
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

  std::shared_ptr<Device> device() const override { return dev_; }
  const ir::Graph& source() const override { return source_; }
  const ir::Graph& lowered() const override { return lowered_; }
  const std::vector<codegen::KernelBinary>& kernels() const override { return binaries_; }
  const std::vector<ir::TensorType>& input_types() const override { return inputs_; }
  const std::vector<ir::TensorType>& output_types() const override { return outputs_; }

  std::vector<BufferPtr> run(const std::vector<BufferPtr>& inputs, RunStats* stats) override {
    // Each submit waits at most the timeout; host-driven loops are held to it as a whole,
    // or a loop whose condition never turns false would keep its caller forever.
    return run_until(inputs, stats, Clock::now() + std::chrono::milliseconds(dev_->options().timeout_ms));
  }

  // Device memory one run allocates (its kernels' results).
  uint64_t bytes_per_run() const {
    uint64_t bytes = 0;
    for (uint64_t b : slot_bytes_) bytes += b;
    for (const auto& step : steps_)
      if (step.kernel)
        for (size_t i = 0; i < step.node->results.size(); ++i)
          if (buffer_slot(*step.node, i) < 0) bytes += step.node->results[i].byte_size();
    return bytes;
  }

  // Whether a run only records kernels, never submitting on its own (no control flow the
  // host drives), and the group counts of those kernels in the order they are recorded.
  bool records_only_kernels() const {
    return std::all_of(steps_.begin(), steps_.end(), [](const Step& s) { return s.kernel || s.node->op == "elem"; });
  }
  std::vector<uint32_t> group_counts() const {
    std::vector<uint32_t> groups;
    for (const auto& step : steps_)
      if (step.kernel) groups.insert(groups.end(), step.kernel->binary.group_count, step.kernel->binary.group_count + 3);
    return groups;
  }

  // Submits `batch` and waits for it.
  void submit_batch(std::vector<Pending>& batch, RunStats& stats) const {
    if (batch.empty()) return;
    const auto t0 = Clock::now();
    stats.device_ms += dev_->submit([&](VkCommandBuffer cb, SubmitContext& ctx) { record_batch(*dev_, batch, cb, ctx); },
                                    spin(), &stats.dispatch_ms);
    stats.recorded += 1;
    finish_batch(batch, stats, t0);
  }

  // Submits a batch of this graph's kernels alone (a run without control flow), again
  // submitting the last run's recording where this run binds the same buffers: repeated
  // calls on the same device tensors. The caller holds kept_mutex_.
  void submit_kept(std::vector<Pending>& batch, RunStats& stats) const {
    if (batch.empty()) return;
    const auto t0 = Clock::now();
    std::vector<VkBuffer> bound;
    for (const auto& p : batch)
      for (const auto& b : p.buffers) bound.push_back(static_cast<const BufferImpl&>(*b).alloc().buffer);
    const uint64_t destroyed = dev_->buffers_destroyed();
    if (!kept_.ctx || kept_.bound != bound || kept_.buffers_destroyed != destroyed) {
      kept_.ctx.reset();
      kept_.ctx = dev_->record_kept([&](VkCommandBuffer cb, SubmitContext& ctx) { record_batch(*dev_, batch, cb, ctx); });
      kept_.bound = std::move(bound);
      kept_.buffers_destroyed = destroyed;
      stats.recorded += 1;
    }
    try {
      stats.device_ms += dev_->submit_kept(*kept_.ctx, spin(), &stats.dispatch_ms);
    } catch (...) {
      kept_.ctx.reset();
      throw;
    }
    finish_batch(batch, stats, t0);
  }

  // How long to poll for a submit's end before sleeping: about as long as this graph's
  // last submit took, so that a run of a few hundred microseconds does not also pay the
  // wake-up from a sleeping wait, within a bound that keeps a long run from holding a CPU
  // core for all of it.
  std::chrono::microseconds spin() const {
    using std::chrono::microseconds;
    const auto expected = microseconds(int64_t(1250 * last_submit_ms_.load(std::memory_order_relaxed)) + 50);
    return std::clamp(expected, microseconds(200), microseconds(2000));
  }

  void finish_batch(std::vector<Pending>& batch, RunStats& stats, Clock::time_point t0) const {
    last_submit_ms_.store(ms_between(t0, Clock::now()), std::memory_order_relaxed);
    stats.dispatches += count_dispatches(batch);
    stats.submits += 1;
    batch.clear();
  }

  std::vector<BufferPtr> run_until(const std::vector<BufferPtr>& inputs, RunStats* stats, Clock::time_point deadline) {
    auto t0 = Clock::now();
    RunStats local;
    std::vector<Pending> batch;
    std::vector<BufferPtr> outs;
    if (std::unique_lock<std::mutex> kept(kept_mutex_, std::defer_lock); only_kernels_ && kept.try_lock()) {
      outs = record(inputs, batch, local, deadline, &kept_.allocations);
      submit_kept(batch, local);
    } else {  // control flow, or another thread is running the kept recording
      outs = record(inputs, batch, local, deadline);
      submit_batch(batch, local);
    }
    if (stats) {
      *stats = local;
      stats->wall_ms = ms_between(t0, Clock::now());
    }
    return outs;
  }

  // Appends the graph's kernels to `batch` with their buffers bound, and returns its
  // outputs, which hold their values once the batch is submitted. Control flow submits
  // the batch first, because the host must see the values it branches on; a speculative
  // loop, which the device decides, takes it into its first submit, and a host-followed
  // loop whose followed values no pending kernel computes records behind it.
  // `reuse` lists the buffers a kept run allocated, in order: this run takes the same ones
  // where they are idle, and the list is updated to what it got (submit_kept).
  std::vector<BufferPtr> record(const std::vector<BufferPtr>& inputs, std::vector<Pending>& batch, RunStats& stats,
                                Clock::time_point deadline, std::vector<VkBuffer>* reuse = nullptr) {
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
                        "), the graph runs on device " + std::to_string(dev_->info().index) + " (" +
                        dev_->info().name + "): copy it across first");
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
      if (step.serial && step.serial->usable) {
        std::vector<BufferPtr> state;
        if (run_serial(step, args, state, batch, stats, deadline)) {
          values[n.id] = std::move(state);
          continue;
        }
        args = std::move(state);  // the host drives the loop on from the state it reached
      }
      if (step.regions.count("gate")) {  // the device decides: no values for the host yet
        values[n.id] = run_speculative(step, std::move(args), batch, stats, deadline);
        continue;
      }
      // A host-followed loop reads only the entries it follows, often literals (a counter
      // from 0): no submit unless a pending kernel computes one.
      const bool reads_pending =
          !step.host_loop || std::any_of(step.host_loop->followed().begin(), step.host_loop->followed().end(),
                                         [&](size_t i) { return written_by(batch, args.at(i).get()); });
      if (reads_pending) submit_batch(batch, stats);
      values[n.id] = n.op == "while" ? run_while(step, std::move(args), batch, stats, deadline)
                                     : run_cond(step, args, batch, stats, deadline);
    }

    // Tensors are immutable, so an output that is an input or a constant shares its buffer.
    std::vector<BufferPtr> outs;
    for (ir::NodeId id : lowered_.outputs) outs.push_back(values.at(id).at(0));
    return outs;
  }

 private:
  Step control_step(const ir::Node& n, const CompileOptions& opts) {
    Step step{&n, std::nullopt, {}, std::nullopt};
    std::vector<ir::TensorType> arg_types;
    for (ir::NodeId a : n.args) arg_types.push_back(lowered_.node(a).type());
    // cond branches receive the captured values that follow the predicates.
    const size_t skip = n.op == "cond" ? n.regions.size() - 1 : 0;
    std::vector<ir::TensorType> region_inputs(arg_types.begin() + skip, arg_types.end());
    // What runs, by the region an error names. A while whose condition the host follows
    // runs only its body, less the entries the host follows; another runs its condition
    // once, then one submit per iteration: the body and the condition on its result. The
    // body alone never runs then, so it is not compiled (its kernels would double the
    // loop's compile time).
    std::vector<std::tuple<std::string, std::string, ir::Graph>> runnable;
    if (n.op == "while") {
      const ir::Graph& condition = *n.regions.at("condition");
      const ir::Graph& body = *n.regions.at("body");
      step.host_loop = HostLoop::of(condition, body);
      if (step.host_loop) {
        runnable.emplace_back("body", "body", device_body(body, *step.host_loop));
      } else {
        runnable.emplace_back("condition", "condition", condition);
        runnable.emplace_back("iteration", "body", body_then_condition(body, condition));
      }
    } else {
      for (const auto& [name, region] : n.regions) runnable.emplace_back(name, name, *region);
    }
    for (auto& [name, region_name, graph] : runnable) {
      try {
        step.regions[name] = std::make_shared<ExecutableImpl>(dev_, std::move(graph), region_inputs, opts);
      } catch (const ir::IrError& e) {
        throw ir::IrError(n, "in region '" + region_name + "': " + e.what());
      } catch (const Error& e) {
        throw Error(e.kind(),
                    "node " + std::to_string(n.id) + " (" + n.op + ") region '" + region_name + "': " + e.what());
      }
      const auto& sub = step.regions[name]->kernels();
      binaries_.insert(binaries_.end(), sub.begin(), sub.end());
    }
    if (n.op == "while" && opts.serial_loops) step.serial = serial_step(n, opts);
    // An iteration that is kernels alone can run speculatively behind a gate.
    if (const auto it = step.regions.find("iteration"); it != step.regions.end() && it->second->records_only_kernels()) {
      const auto groups = it->second->group_counts();
      const ir::TensorType& predicate = it->second->output_types().back();
      if (!groups.empty() && predicate.num_elements() == 1) {
        step.regions["gate"] = std::make_shared<ExecutableImpl>(
            dev_, gate_graph(groups, predicate), std::vector<ir::TensorType>{{ir::DType::U8, {}}, {ir::DType::S32, {}}, predicate},
            opts);
        const auto& sub = step.regions["gate"]->kernels();
        binaries_.insert(binaries_.end(), sub.begin(), sub.end());
        const uint8_t running = 1;
        const int32_t passed = 0;
        step.gate_start = {dev_->upload({ir::DType::U8, {}}, &running, 1), dev_->upload({ir::DType::S32, {}}, &passed, 4)};
      }
    }
    return step;
  }

  // A loop whose regions hold control flow, as one kernel; null where it cannot be one (the
  // loop is then driven from the host as before).
  std::shared_ptr<SerialStep> serial_step(const ir::Node& n, const CompileOptions& opts) {
    const auto pipeline = opts.pipeline.empty() ? passes::default_pipeline() : opts.pipeline;
    const codegen::DeviceCaps caps = compile_caps(dev_->info(), opts);
    // The passes only take control flow away (and bring it up only from loops and conds
    // already there): a loop whose regions hold none is not lowered again here.
    if (!has_control_flow(*n.regions.at("condition")) && !has_control_flow(*n.regions.at("body"))) return nullptr;
    auto s = std::make_shared<SerialStep>();
    const auto t0 = Clock::now();
    const double c0 = thread_cpu_ms();
    try {
      const auto condition = lower_nest(*n.regions.at("condition"), pipeline, codegen::kernel_bounds(caps));
      const auto body = lower_nest(*n.regions.at("body"), pipeline, codegen::kernel_bounds(caps));
      if (!has_control_flow(condition->graph) && !has_control_flow(body->graph)) return nullptr;
      s->binary = codegen::compile_serial_loop(n, *condition, *body, caps);
    } catch (const ir::IrError&) {
      return nullptr;
    }
    const auto t1 = Clock::now();
    const double c1 = thread_cpu_ms();
    s->kernel = {&n, s->binary.kernel, dev_->pipeline(s->binary.kernel)};
    log_kernel_compile(lowered_.name, s->binary.kernel.name,
                       {ms_between(t0, t1), ms_between(t1, Clock::now()), c1 - c0, thread_cpu_ms() - c1});
    for (const auto& lit : s->binary.constants) s->constants.push_back(dev_->upload(lit.type, lit.data.data(), lit.data.size()));
    binaries_.push_back(s->binary.kernel);
    return s;
  }

  // Dispatches the serial loop until its condition is false, each dispatch from the state
  // the last one committed, and returns true with `state` its results; false, with `state`
  // the state reached, once a dispatch completes no iteration.
  bool run_serial(const Step& step, const std::vector<BufferPtr>& args, std::vector<BufferPtr>& state,
                  std::vector<Pending>& batch, RunStats& stats, Clock::time_point deadline) {
    SerialStep& s = *step.serial;
    const ir::Node& n = *step.node;
    std::vector<BufferPtr> scratch;
    for (const auto& t : n.results) state.push_back(dev_->allocate(t));
    for (uint64_t bytes : s.binary.scratch_bytes) scratch.push_back(dev_->allocate({ir::DType::U8, {int64_t(bytes)}}));
    const std::vector<uint32_t> zeros(codegen::kSerialControlWords, 0);
    BufferPtr control = dev_->upload({ir::DType::U32, {int64_t(zeros.size())}}, zeros.data(), zeros.size() * 4);
    for (size_t k = 0; k < state.size(); ++k) batch.push_back({nullptr, {state[k], args.at(k)}, {}, nullptr, 0, true});
    std::vector<BufferPtr> buffers;
    for (const auto& bnd : s.kernel.binary.bindings) {
      switch (bnd.kind) {
        case codegen::Binding::Kind::Input: throw Error(Error::Kind::Vulkan, "a serial loop binds no inputs");
        case codegen::Binding::Kind::Output: buffers.push_back(state.at(bnd.index)); break;
        case codegen::Binding::Kind::Scratch: buffers.push_back(scratch.at(bnd.index)); break;
        case codegen::Binding::Kind::Constant: buffers.push_back(s.constants.at(bnd.index)); break;
        case codegen::Binding::Kind::Control: buffers.push_back(control); break;
      }
    }
    for (uint64_t done = 0;;) {
      if (Clock::now() > deadline) throw loop_timeout(step, done);
      batch.push_back({&s.kernel, buffers});
      submit_in_loop(step, done, batch, stats);
      uint32_t words[codegen::kSerialControlWords];
      dev_->download(*control, words, sizeof words);
      if (words[codegen::kSerialDone]) return true;
      if (words[codegen::kSerialCommitted] == 0) {
        s.usable = false;
        return false;
      }
      done += words[codegen::kSerialCommitted];
    }
  }

  static int64_t buffer_slot(const ir::Node& kernel, size_t result) {
    if (!kernel.attrs.contains("buffers")) return -1;
    return kernel.attrs["buffers"].at(result).get<int64_t>();
  }

  // A failure inside a region names the node and region it is in: the loop that meets the
  // deadline may be nested deep in regions, whose graphs have no names.
  template <typename F>
  static auto in_region(const Step& step, const std::string& name, F&& f) {
    try {
      return f(*step.regions.at(name));
    } catch (const Error& e) {
      const std::string shown = name == "iteration" ? "body" : name;
      throw Error(e.kind(), "node " + std::to_string(step.node->id) + " (" + step.node->op + ") region '" + shown +
                                "': " + e.what());
    }
  }

  std::vector<BufferPtr> run_region(const Step& step, const std::string& name, const std::vector<BufferPtr>& inputs,
                                    RunStats& stats, Clock::time_point deadline) {
    return in_region(step, name, [&](ExecutableImpl& region) {
      RunStats s;
      auto out = region.run_until(inputs, &s, deadline);
      add_stats(&stats, s);
      return out;
    });
  }

  std::vector<BufferPtr> record_region(const Step& step, const std::string& name, const std::vector<BufferPtr>& inputs,
                                       std::vector<Pending>& batch, RunStats& stats, Clock::time_point deadline) {
    return in_region(step, name, [&](ExecutableImpl& region) { return region.record(inputs, batch, stats, deadline); });
  }

  Error loop_timeout(const Step& step, uint64_t done) const {
    return Error(Error::Kind::Timeout, "node " + std::to_string(step.node->id) + " (while)" +
                                           (source_.name.empty() ? "" : " of graph '" + source_.name + "'") +
                                           " was still looping after " + std::to_string(done) +
                                           " iterations when the run reached its limit of " +
                                           std::to_string(dev_->options().timeout_ms) + " ms");
  }

  // A loop's submit that runs past the timeout is the loop still looping when the run
  // reached its limit, and says so (the submit alone cannot name the loop).
  void submit_in_loop(const Step& step, uint64_t done, std::vector<Pending>& batch, RunStats& stats) const {
    try {
      submit_batch(batch, stats);
    } catch (const Error& e) {
      if (e.kind() != Error::Kind::Timeout) throw;
      throw loop_timeout(step, done);
    }
  }

  // Kernels left in `batch` (a host-followed loop's last iterations) hold the results
  // once the caller submits it, with whatever it records next.
  std::vector<BufferPtr> run_while(const Step& step, std::vector<BufferPtr> state, std::vector<Pending>& batch,
                                   RunStats& stats, Clock::time_point deadline) {
    if (step.host_loop) return run_host_loop(step, std::move(state), batch, stats, deadline);
    auto c = run_region(step, "condition", state, stats, deadline);
    for (uint64_t done = 0; truthy(*dev_, c.at(0)); ++done) {
      if (Clock::now() > deadline) throw loop_timeout(step, done);
      auto out = run_region(step, "iteration", state, stats, deadline);
      c = {out.back()};
      out.pop_back();
      state = std::move(out);
    }
    return state;
  }

  // The host evaluates the condition and the followed entries on its copy of them, and
  // writes their new values for the device, while the body's iterations are recorded back
  // to back, several per submit: one iteration alone first, to measure, then as many as
  // iterations_per_submit allows.
  std::vector<BufferPtr> run_host_loop(const Step& step, std::vector<BufferPtr> state, std::vector<Pending>& batch,
                                       RunStats& stats, Clock::time_point deadline) {
    const HostLoop& loop = *step.host_loop;
    ExecutableImpl& body = *step.regions.at("body");
    const auto& indices = loop.followed();
    std::vector<ir::Literal> followed;
    for (size_t i : indices) followed.push_back(download_literal(*dev_, state.at(i)));
    size_t per_submit = 1, recorded = 0;
    uint64_t done = 0;
    auto start = Clock::now();
    while (loop.continues(followed)) {
      if (Clock::now() > deadline) throw loop_timeout(step, done);
      auto computed = record_region(step, "body", state, batch, stats, deadline);
      auto next = loop.next(followed);
      for (size_t i = 0, f = 0, c = 0; i < state.size(); ++i) {
        if (f == indices.size() || indices[f] != i) {
          state[i] = computed.at(c++);
          continue;
        }
        if (next[f].data != followed[f].data) {  // (a bound passed on keeps its buffer)
          state[i] = dev_->allocate(next[f].type);
          batch.push_back({nullptr, {state[i]}, next[f].data});
        }
        ++f;
      }
      followed = std::move(next);
      ++done;
      if (++recorded < per_submit) continue;
      submit_in_loop(step, done, batch, stats);
      const auto now = Clock::now();
      const double ms = ms_between(start, now);
      per_submit = iterations_per_submit(ms / double(recorded), body.bytes_per_run());
      recorded = 0;
      start = now;
    }
    return state;
  }

  // Iterations recorded ahead of knowing whether they run, several per submit, a gate
  // after each: the next one's kernels take their group counts from the gate, zero once
  // the loop has stopped, so the device never waits for the host between iterations.
  // After the submit the host reads one count, how many gates let the loop go on, which
  // says which iteration's state is the loop's. The first submit holds the kernels the
  // caller had pending (`batch`), the condition, whose gate decides the first iteration,
  // and one iteration; each later one twice as many as the one before, up to what
  // iterations_per_submit allows: a loop of few iterations records few that do not run,
  // and one inside another costs its enclosing iteration no submit of its own to start.
  std::vector<BufferPtr> run_speculative(const Step& step, std::vector<BufferPtr> state, std::vector<Pending>& batch,
                                         RunStats& stats, Clock::time_point deadline) {
    const uint64_t bytes = step.regions.at("iteration")->bytes_per_run() + step.regions.at("gate")->bytes_per_run();
    uint64_t done = 0;
    for (size_t per_submit = 1, condition_gates = 1;; condition_gates = 0) {
      if (Clock::now() > deadline) throw loop_timeout(step, done);
      const auto start = Clock::now();
      std::vector<std::vector<BufferPtr>> states{state};  // states[i]: after i iterations of this submit
      std::vector<BufferPtr> gate{step.gate_start[0], step.gate_start[1], nullptr};
      if (condition_gates) {
        const BufferPtr holds = record_region(step, "condition", state, batch, stats, deadline).at(0);
        gate = record_region(step, "gate", {gate[0], gate[1], holds}, batch, stats, deadline);
      }
      for (size_t i = 0; i < per_submit; ++i) {
        const size_t first = batch.size();
        auto out = record_region(step, "iteration", states.back(), batch, stats, deadline);
        for (size_t k = first; gate[2] && k < batch.size(); ++k) {
          batch[k].indirect = gate[2];
          batch[k].indirect_offset = 12 * (k - first);
        }
        const BufferPtr predicate = out.back();
        out.pop_back();
        states.push_back(std::move(out));
        gate = record_region(step, "gate", {gate[0], gate[1], predicate}, batch, stats, deadline);
      }
      submit_in_loop(step, done, batch, stats);
      int32_t passed = 0;
      dev_->download(*gate[1], &passed, 4);
      if (size_t(passed) < condition_gates) return state;  // the condition did not hold
      // Iteration i + 1 ran when the gate before it let the loop go on; without a
      // condition's gate, the first always ran.
      const size_t iterations_passed = size_t(passed) - condition_gates;
      const size_t ran = std::min<size_t>(iterations_passed + 1, per_submit);
      done += ran;
      state = std::move(states.at(ran));
      if (iterations_passed < per_submit) return state;
      const double ms = ms_between(start, Clock::now());
      per_submit = std::min(2 * per_submit, iterations_per_submit(ms / double(per_submit), bytes));
    }
  }

  // The branch taken is recorded into `batch`: its kernels share a submit with what follows.
  std::vector<BufferPtr> run_cond(const Step& step, const std::vector<BufferPtr>& args, std::vector<Pending>& batch,
                                  RunStats& stats, Clock::time_point deadline) {
    const size_t preds = step.regions.size() - 1;
    size_t taken = preds;
    for (size_t i = 0; i < preds && taken == preds; ++i)
      if (truthy(*dev_, args[i])) taken = i;
    std::vector<BufferPtr> captured(args.begin() + preds, args.end());
    return record_region(step, "branch" + std::to_string(taken), captured, batch, stats, deadline);
  }

  std::shared_ptr<DeviceImpl> dev_;
  ir::Graph source_, lowered_;
  std::vector<ir::TensorType> inputs_, outputs_;
  std::vector<codegen::KernelBinary> binaries_;
  std::vector<Step> steps_;
  std::map<ir::NodeId, BufferPtr> constants_;
  std::vector<uint64_t> slot_bytes_;  // per plan-buffers slot, the largest value it holds
  mutable std::atomic<double> last_submit_ms_{0};  // a hint for spin(), not state
  bool only_kernels_ = false;                       // records_only_kernels(), known once compiled
  // The last run's recording (submit_kept).
  struct Kept {
    std::vector<VkBuffer> allocations;  // the buffers the run allocated, in order
    std::vector<VkBuffer> bound;        // each dispatch's buffers in order
    uint64_t buffers_destroyed = 0;
    std::shared_ptr<SubmitContext> ctx;
  };
  mutable std::mutex kept_mutex_;
  mutable Kept kept_;
};

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
