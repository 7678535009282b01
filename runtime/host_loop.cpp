#include "runtime/host_loop.h"

#include <algorithm>
#include <cstdint>
#include <set>

#include "ir/interpreter.h"

namespace nxv::runtime {
namespace {

using ir::Graph;
using ir::NodeId;

// What the host evaluates per iteration must stay negligible next to a dispatch: a
// counter, a bound, a flag, not a tensor computation.
constexpr int64_t kMaxElements = 16;  // per followed entry
constexpr size_t kMaxNodes = 64;      // per region's part

// A submit's own cost is tens of microseconds to a millisecond (lavapipe): 10 ms of work
// amortises it; more only delays the first results.
constexpr double kSubmitMs = 10;
constexpr uint64_t kSubmitBytes = uint64_t(64) << 20;
constexpr size_t kMaxIterationsPerSubmit = 256;
// What is measured per iteration includes the submit's own wait, which on a loaded machine
// makes short iterations look slow; a single submit per iteration then never measures its
// way out. Below kSlowIterationMs, at least kMinIterationsPerSubmit go together.
constexpr double kSlowIterationMs = 50;
constexpr size_t kMinIterationsPerSubmit = 4;

// The nodes `outputs` depend on; nullopt beyond kMaxNodes, through a node with regions of
// its own (a nested loop or branch is not a few host operations), or through a float: the
// host must take the device's decisions, and only integer arithmetic is sure to agree
// (a device's transcendentals and contractions may differ from the interpreter's in the
// last place, and a loop on a float could then stop one iteration apart).
std::optional<std::set<NodeId>> cone(const Graph& g, std::vector<NodeId> todo) {
  std::set<NodeId> seen;
  while (!todo.empty()) {
    const NodeId id = todo.back();
    todo.pop_back();
    if (!seen.insert(id).second) continue;
    const ir::Node& n = g.node(id);
    if (!n.regions.empty() || seen.size() > kMaxNodes || n.is_tuple() || !ir::is_integer(n.type().dtype))
      return std::nullopt;
    todo.insert(todo.end(), n.args.begin(), n.args.end());
  }
  return seen;
}

std::set<size_t> parameters_in(const Graph& g, const std::set<NodeId>& nodes) {
  std::set<size_t> indices;
  for (NodeId id : nodes)
    if (const ir::Node& n = g.node(id); n.op == "parameter") indices.insert(n.attrs.value("index", size_t(0)));
  return indices;
}

// The nodes of `g` in `keep` as a graph of their own whose parameter i is the followed
// entry followed[i].
Graph restrict(const Graph& g, const std::set<NodeId>& keep, const std::vector<size_t>& followed,
               std::vector<NodeId> outputs) {
  Graph r;
  r.name = g.name;
  for (const ir::Node& n : g.nodes) {
    if (!keep.count(n.id)) continue;
    ir::Node copy = n;
    if (n.op == "parameter") {
      auto at = std::find(followed.begin(), followed.end(), n.attrs.value("index", size_t(0)));
      copy.attrs["index"] = int64_t(at - followed.begin());
    }
    r.nodes.push_back(std::move(copy));
  }
  r.outputs = std::move(outputs);
  r.reindex();
  return r;
}

}  // namespace

std::optional<HostLoop> HostLoop::of(const Graph& condition, const Graph& body) {
  const auto condition_nodes = cone(condition, condition.outputs);
  if (!condition_nodes) return std::nullopt;
  // The followed entries: those the condition reads, and, until nothing is added, those
  // the body reads to compute the followed entries' next values.
  std::set<size_t> followed = parameters_in(condition, *condition_nodes);
  std::set<NodeId> step_nodes;
  std::vector<NodeId> step_outputs;
  for (size_t before = SIZE_MAX; before != followed.size();) {
    before = followed.size();
    step_outputs.clear();
    for (size_t i : followed) step_outputs.push_back(body.outputs.at(i));
    auto nodes = cone(body, step_outputs);
    if (!nodes) return std::nullopt;
    step_nodes = std::move(*nodes);
    const auto read = parameters_in(body, step_nodes);
    followed.insert(read.begin(), read.end());
  }
  for (size_t i : followed)
    if (body.node(body.outputs.at(i)).type().num_elements() > kMaxElements) return std::nullopt;

  HostLoop loop;
  loop.followed_.assign(followed.begin(), followed.end());
  loop.condition_ = restrict(condition, *condition_nodes, loop.followed_, condition.outputs);
  loop.step_ = restrict(body, step_nodes, loop.followed_, step_outputs);
  return loop;
}

bool HostLoop::continues(const std::vector<ir::Literal>& values) const {
  const ir::Literal predicate = ir::interpret(condition_, values).at(0);
  return std::any_of(predicate.data.begin(), predicate.data.end(), [](uint8_t b) { return b != 0; });
}

std::vector<ir::Literal> HostLoop::next(const std::vector<ir::Literal>& values) const {
  return ir::interpret(step_, values);
}

size_t iterations_per_submit(double ms_per_iteration, uint64_t bytes_per_iteration) {
  const uint64_t by_memory = kSubmitBytes / std::max<uint64_t>(bytes_per_iteration, 1);
  double by_time = kSubmitMs / std::max(ms_per_iteration, 1e-3);
  if (ms_per_iteration < kSlowIterationMs) by_time = std::max(by_time, double(kMinIterationsPerSubmit));
  return size_t(std::clamp<double>(std::min<double>(by_time, double(by_memory)), 1, double(kMaxIterationsPerSubmit)));
}

}  // namespace nxv::runtime
