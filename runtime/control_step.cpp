// Control flow driven from the host (control_step.h): compiling a `while`'s or `cond`'s
// regions, and the ways a loop runs.
#include "runtime/control_step.h"

#include <algorithm>
#include <atomic>
#include <tuple>

#include "codegen/serial_loop.h"
#include "ir/json.h"
#include "passes/pass.h"
#include "runtime/compile_log.h"
#include "runtime/executable_impl.h"

namespace nxv::runtime {

// A `while` compiled into one kernel with its nested control flow (codegen/serial_loop.h).
struct SerialStep {
  codegen::SerialLoopBinary binary;
  KernelStep kernel;
  std::vector<BufferPtr> constants;  // uploaded once, by binding index
  // Cleared once a dispatch completes no iteration (one iteration takes more loop steps than
  // the driver allows a dispatch): the loop's regions run it from then on.
  std::atomic<bool> usable{true};
};

namespace {

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

void add_stats(RunStats& into, const RunStats& s) {
  into.dispatches += s.dispatches;
  into.submits += s.submits;
  into.recorded += s.recorded;
  into.device_ms += s.device_ms;
  into.dispatch_ms.insert(into.dispatch_ms.end(), s.dispatch_ms.begin(), s.dispatch_ms.end());
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

}  // namespace

ControlStep::ControlStep(std::shared_ptr<DeviceImpl> dev, const ir::Node& n, const ir::Graph& graph,
                         const CompileOptions& opts, std::vector<codegen::KernelBinary>& kernels)
    : dev_(std::move(dev)), node_(n), graph_name_(graph.name) {
  std::vector<ir::TensorType> arg_types;
  for (ir::NodeId a : n.args) arg_types.push_back(graph.node(a).type());
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
    host_loop_ = HostLoop::of(condition, body);
    if (host_loop_) {
      runnable.emplace_back("body", "body", device_body(body, *host_loop_));
    } else {
      runnable.emplace_back("condition", "condition", condition);
      runnable.emplace_back("iteration", "body", body_then_condition(body, condition));
    }
  } else {
    for (const auto& [name, region] : n.regions) runnable.emplace_back(name, name, *region);
  }
  for (auto& [name, region_name, region] : runnable) {
    try {
      regions_[name] = std::make_shared<ExecutableImpl>(dev_, std::move(region), region_inputs, opts);
    } catch (const ir::IrError& e) {
      throw ir::IrError(n, "in region '" + region_name + "': " + e.what());
    } catch (const Error& e) {
      throw Error(e.kind(), "node " + std::to_string(n.id) + " (" + n.op + ") region '" + region_name + "': " + e.what());
    }
    const auto& sub = regions_[name]->kernels();
    kernels.insert(kernels.end(), sub.begin(), sub.end());
  }
  if (n.op == "while" && opts.serial_loops) serial_ = serial_step(opts, kernels);
  compile_gate(opts, kernels);
}

ControlStep::~ControlStep() = default;

// An iteration that is kernels alone can run speculatively behind a gate.
void ControlStep::compile_gate(const CompileOptions& opts, std::vector<codegen::KernelBinary>& kernels) {
  const auto it = regions_.find("iteration");
  if (it == regions_.end() || !it->second->records_only_kernels()) return;
  const auto groups = it->second->group_counts();
  const ir::TensorType& predicate = it->second->output_types().back();
  if (groups.empty() || predicate.num_elements() != 1) return;
  regions_["gate"] = std::make_shared<ExecutableImpl>(
      dev_, gate_graph(groups, predicate), std::vector<ir::TensorType>{{ir::DType::U8, {}}, {ir::DType::S32, {}}, predicate},
      opts);
  const auto& sub = regions_["gate"]->kernels();
  kernels.insert(kernels.end(), sub.begin(), sub.end());
  const uint8_t running = 1;
  const int32_t passed = 0;
  gate_start_ = {dev_->upload({ir::DType::U8, {}}, &running, 1), dev_->upload({ir::DType::S32, {}}, &passed, 4)};
}

// A loop whose regions hold control flow, as one kernel; null where it cannot be one (the
// loop is then driven from the host as before).
std::shared_ptr<SerialStep> ControlStep::serial_step(const CompileOptions& opts, std::vector<codegen::KernelBinary>& kernels) {
  const ir::Node& n = node_;
  const auto pipeline = opts.pipeline.empty() ? passes::default_pipeline() : opts.pipeline;
  const codegen::DeviceCaps caps = compile_caps(dev_->info(), opts);
  // The passes only take control flow away (and bring it up only from loops and conds
  // already there): a loop whose regions hold none is not lowered again here.
  if (!has_control_flow(*n.regions.at("condition")) && !has_control_flow(*n.regions.at("body"))) return nullptr;
  auto s = std::make_shared<SerialStep>();
  CompileTimer timer;
  try {
    const auto condition = lower_nest(*n.regions.at("condition"), pipeline, codegen::kernel_bounds(caps));
    const auto body = lower_nest(*n.regions.at("body"), pipeline, codegen::kernel_bounds(caps));
    if (!has_control_flow(condition->graph) && !has_control_flow(body->graph)) return nullptr;
    s->binary = codegen::compile_serial_loop(n, *condition, *body, caps);
  } catch (const ir::IrError&) {
    return nullptr;
  }
  timer.codegen_done();
  s->kernel = {&n, s->binary.kernel, dev_->pipeline(s->binary.kernel)};
  timer.log(graph_name_, s->binary.kernel.name);
  for (const auto& lit : s->binary.constants) s->constants.push_back(dev_->upload(lit.type, lit.data.data(), lit.data.size()));
  kernels.push_back(s->binary.kernel);
  return s;
}

std::vector<BufferPtr> ControlStep::run(std::vector<BufferPtr> args, std::vector<Pending>& batch, RunStats& stats,
                                        Clock::time_point deadline, BatchSubmitter& submitter) {
  if (serial_ && serial_->usable) {
    std::vector<BufferPtr> state;
    if (run_serial(args, state, batch, stats, deadline, submitter)) return state;
    args = std::move(state);  // the host drives the loop on from the state it reached
  }
  // The device decides: no values for the host yet.
  if (regions_.count("gate")) return run_speculative(std::move(args), batch, stats, deadline, submitter);
  // A host-followed loop reads only the entries it follows, often literals (a counter
  // from 0): no submit unless a pending kernel computes one.
  const bool reads_pending = !host_loop_ || std::any_of(host_loop_->followed().begin(), host_loop_->followed().end(),
                                                        [&](size_t i) { return written_by(batch, args.at(i).get()); });
  if (reads_pending) submitter.submit(batch, stats);
  return node_.op == "while" ? run_while(std::move(args), batch, stats, deadline, submitter)
                             : run_cond(args, batch, stats, deadline);
}

// Dispatches the serial loop until its condition is false, each dispatch from the state
// the last one committed, and returns true with `state` its results; false, with `state`
// the state reached, once a dispatch completes no iteration.
bool ControlStep::run_serial(const std::vector<BufferPtr>& args, std::vector<BufferPtr>& state, std::vector<Pending>& batch,
                             RunStats& stats, Clock::time_point deadline, BatchSubmitter& submitter) {
  SerialStep& s = *serial_;
  std::vector<BufferPtr> scratch;
  for (const auto& t : node_.results) state.push_back(dev_->allocate(t));
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
    if (Clock::now() > deadline) throw loop_timeout(done);
    batch.push_back({&s.kernel, buffers});
    submit_in_loop(done, batch, stats, submitter);
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

template <typename F>
auto ControlStep::in_region(const std::string& name, F&& f) {
  try {
    return f(*regions_.at(name));
  } catch (const Error& e) {
    const std::string shown = name == "iteration" ? "body" : name;
    throw Error(e.kind(), "node " + std::to_string(node_.id) + " (" + node_.op + ") region '" + shown + "': " + e.what());
  }
}

std::vector<BufferPtr> ControlStep::run_region(const std::string& name, const std::vector<BufferPtr>& inputs,
                                               RunStats& stats, Clock::time_point deadline) {
  return in_region(name, [&](ExecutableImpl& region) {
    RunStats s;
    auto out = region.run_until(inputs, &s, deadline);
    add_stats(stats, s);
    return out;
  });
}

std::vector<BufferPtr> ControlStep::record_region(const std::string& name, const std::vector<BufferPtr>& inputs,
                                                  std::vector<Pending>& batch, RunStats& stats, Clock::time_point deadline) {
  return in_region(name, [&](ExecutableImpl& region) { return region.record(inputs, batch, stats, deadline); });
}

Error ControlStep::loop_timeout(uint64_t done) const {
  return Error(Error::Kind::Timeout, "node " + std::to_string(node_.id) + " (while)" +
                                         (graph_name_.empty() ? "" : " of graph '" + graph_name_ + "'") +
                                         " was still looping after " + std::to_string(done) +
                                         " iterations when the run reached its limit of " +
                                         std::to_string(dev_->options().timeout_ms) + " ms");
}

void ControlStep::submit_in_loop(uint64_t done, std::vector<Pending>& batch, RunStats& stats,
                                 BatchSubmitter& submitter) const {
  try {
    submitter.submit(batch, stats);
  } catch (const Error& e) {
    if (e.kind() != Error::Kind::Timeout) throw;
    throw loop_timeout(done);
  }
}

std::vector<BufferPtr> ControlStep::run_while(std::vector<BufferPtr> state, std::vector<Pending>& batch, RunStats& stats,
                                              Clock::time_point deadline, BatchSubmitter& submitter) {
  if (host_loop_) return run_host_loop(std::move(state), batch, stats, deadline, submitter);
  auto c = run_region("condition", state, stats, deadline);
  for (uint64_t done = 0; truthy(*dev_, c.at(0)); ++done) {
    if (Clock::now() > deadline) throw loop_timeout(done);
    auto out = run_region("iteration", state, stats, deadline);
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
std::vector<BufferPtr> ControlStep::run_host_loop(std::vector<BufferPtr> state, std::vector<Pending>& batch,
                                                  RunStats& stats, Clock::time_point deadline, BatchSubmitter& submitter) {
  const HostLoop& loop = *host_loop_;
  ExecutableImpl& body = *regions_.at("body");
  const auto& indices = loop.followed();
  std::vector<ir::Literal> followed;
  for (size_t i : indices) followed.push_back(download_literal(*dev_, state.at(i)));
  size_t per_submit = 1, recorded = 0;
  uint64_t done = 0;
  auto start = Clock::now();
  while (loop.continues(followed)) {
    if (Clock::now() > deadline) throw loop_timeout(done);
    auto computed = record_region("body", state, batch, stats, deadline);
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
    submit_in_loop(done, batch, stats, submitter);
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
std::vector<BufferPtr> ControlStep::run_speculative(std::vector<BufferPtr> state, std::vector<Pending>& batch,
                                                    RunStats& stats, Clock::time_point deadline,
                                                    BatchSubmitter& submitter) {
  const uint64_t bytes = regions_.at("iteration")->bytes_per_run() + regions_.at("gate")->bytes_per_run();
  uint64_t done = 0;
  for (size_t per_submit = 1, condition_gates = 1;; condition_gates = 0) {
    if (Clock::now() > deadline) throw loop_timeout(done);
    const auto start = Clock::now();
    std::vector<std::vector<BufferPtr>> states{state};  // states[i]: after i iterations of this submit
    std::vector<BufferPtr> gate{gate_start_[0], gate_start_[1], nullptr};
    if (condition_gates) {
      const BufferPtr holds = record_region("condition", state, batch, stats, deadline).at(0);
      gate = record_region("gate", {gate[0], gate[1], holds}, batch, stats, deadline);
    }
    for (size_t i = 0; i < per_submit; ++i) {
      const size_t first = batch.size();
      auto out = record_region("iteration", states.back(), batch, stats, deadline);
      for (size_t k = first; gate[2] && k < batch.size(); ++k) {
        batch[k].indirect = gate[2];
        batch[k].indirect_offset = 12 * (k - first);
      }
      const BufferPtr predicate = out.back();
      out.pop_back();
      states.push_back(std::move(out));
      gate = record_region("gate", {gate[0], gate[1], predicate}, batch, stats, deadline);
    }
    submit_in_loop(done, batch, stats, submitter);
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
std::vector<BufferPtr> ControlStep::run_cond(const std::vector<BufferPtr>& args, std::vector<Pending>& batch,
                                             RunStats& stats, Clock::time_point deadline) {
  const size_t preds = regions_.size() - 1;
  size_t taken = preds;
  for (size_t i = 0; i < preds && taken == preds; ++i)
    if (truthy(*dev_, args[i])) taken = i;
  std::vector<BufferPtr> captured(args.begin() + preds, args.end());
  return record_region("branch" + std::to_string(taken), captured, batch, stats, deadline);
}

}  // namespace nxv::runtime
