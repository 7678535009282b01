// unroll: a `while` that runs a constant number of times, and few, becomes its body inlined
// that many times. The runtime drives a loop from the host (runtime/executable.cpp), at
// best several iterations per submit, or runs a loop nest as one serial kernel, but never
// fuses a loop's iterations with each other: Nx.Random derives each key with
// threefry, a 5-step loop around a 4-step one, which driven from the host costs a
// random-walk Metropolis step 72 submits. Inlined, the steps fuse into a kernel or two,
// and the counter, a constant in each copy, folds into the slices it indexes.
//
// The trip count is constant when the condition compares one state entry with a constant,
// the entry starts as a constant and the body adds a constant to it. Loops this exposes
// (a body's inner loops, now at the top) are unrolled in turn; a loop around one that would
// stay a loop stays too.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/literal.h"
#include "ir/ops.h"
#include "passes/pass.h"
#include "passes/rewrite.h"

namespace nxv::passes {
namespace {

using ir::Graph;
using ir::Node;
using ir::NodeId;

// Beyond these the loop stays: its copies would cost more to compile than the submits
// they save, and a long unrolled chain is what detect-chains exists to fold back.
constexpr int64_t kMaxTrips = 16;
constexpr size_t kMaxUnrolledNodes = 4096;

std::optional<int64_t> integer_constant(const Node& n) {
  if (n.op != "constant" || n.is_tuple() || !n.type().shape.empty() || !ir::is_integer(n.type().dtype))
    return std::nullopt;
  return ir::get_i64(ir::literal_of(n), 0);
}

// Which state entry `n` reads, if it is a parameter.
std::optional<size_t> parameter_index(const Node& n) {
  if (n.op != "parameter") return std::nullopt;
  return n.attrs.value("index", size_t(0));
}

// Nodes of a graph and of every region inside it: what one more copy of it costs.
size_t size_of(const Graph& g) {
  size_t total = 0;
  for (const auto& n : g.nodes) {
    ++total;
    for (const auto& [name, region] : n.regions) total += size_of(*region);
  }
  return total;
}

bool holds(const std::string& op, int64_t a, int64_t b) {
  if (op == "less") return a < b;
  if (op == "less_equal") return a <= b;
  if (op == "greater") return a > b;
  if (op == "greater_equal") return a >= b;
  return a != b;  // not_equal
}

// How many times the loop `w` of graph `g` runs, when that is a constant of at most kMaxTrips.
std::optional<int64_t> trip_count(const Graph& g, const Node& w) {
  const Graph& condition = *w.regions.at("condition");
  const Graph& body = *w.regions.at("body");
  const Node& test = condition.node(condition.outputs.at(0));
  static const std::set<std::string> comparisons{"less", "less_equal", "greater", "greater_equal", "not_equal"};
  if (!comparisons.count(test.op) || test.args.size() != 2) return std::nullopt;
  // counter <op> bound, or bound <op> counter
  const Node &lhs = condition.node(test.args[0]), &rhs = condition.node(test.args[1]);
  const bool counter_left = parameter_index(lhs).has_value();
  const auto entry = parameter_index(counter_left ? lhs : rhs);
  const auto bound = integer_constant(counter_left ? rhs : lhs);
  if (!entry || !bound || *entry >= w.args.size()) return std::nullopt;
  const auto start = integer_constant(g.node(w.args[*entry]));
  if (!start) return std::nullopt;
  const Node& next = body.node(body.outputs.at(*entry));
  if (next.op != "add" || next.args.size() != 2) return std::nullopt;
  const Node &a = body.node(next.args[0]), &b = body.node(next.args[1]);
  const auto step = parameter_index(a) == entry ? integer_constant(b) : parameter_index(b) == entry ? integer_constant(a)
                                                                                                   : std::nullopt;
  if (!step || *step == 0) return std::nullopt;
  // Values stay far from the counter type's limits (|start|, |bound| and the steps taken
  // are small), so int64 arithmetic decides as the device would.
  if (ir::is_unsigned_int(test.type().dtype) && (*start < 0 || *bound < 0)) return std::nullopt;
  int64_t trips = 0;
  for (int64_t v = *start; counter_left ? holds(test.op, v, *bound) : holds(test.op, *bound, v); v += *step)
    if (++trips > kMaxTrips) return std::nullopt;
  return trips;
}

// Whether `g` holds, at any depth, a loop that stays a loop. Unrolled around it, the copies
// fuse nothing across it and only multiply the code: a serial loop (codegen/serial_loop.h)
// holding the ten copies of Scholar's NNDescent heap insertion grew past what lavapipe
// compiles in reasonable time.
bool holds_lasting_loop(const Graph& g) {
  for (const auto& n : g.nodes) {
    if (n.op == "while" && !trip_count(g, n)) return true;
    for (const auto& [name, region] : n.regions)
      if (holds_lasting_loop(*region)) return true;
  }
  return false;
}

class Unroll : public Pass {
 public:
  std::string name() const override { return "unroll"; }

  void run(Graph& g) override {
    while (unroll_once(g)) {
    }
  }

 private:
  static bool unroll_once(Graph& g) {
    std::map<NodeId, int64_t> trips;  // (decided before nodes move)
    for (const auto& n : g.nodes)
      if (n.op == "while")
        if (auto t = trip_count(g, n);
            t && size_t(*t) * size_of(*n.regions.at("body")) <= kMaxUnrolledNodes && !holds_lasting_loop(*n.regions.at("body")))
          trips[n.id] = *t;
    if (trips.empty()) return false;
    expand_nodes(g, [&](Node& n, NodeId& next, std::vector<Node>& out) -> std::optional<std::vector<NodeId>> {
      auto it = trips.find(n.id);
      if (it == trips.end()) return std::nullopt;
      std::vector<NodeId> state = n.args;
      for (int64_t t = 0; t < it->second; ++t) state = inline_region(*n.regions.at("body"), state, next, out);
      return state;
    });
    return true;
  }
};

NXV_REGISTER_PASS(Unroll, "unroll");

}  // namespace
}  // namespace nxv::passes
