// The fusion cost model. It follows the elemental emitter (codegen/emitter.cpp): a node is
// computed once per distinct index it is read at (value(node, index) is memoised on the
// index ids), an elementwise user reads its operands at its own index, and every other
// user (an index map, a broadcast, a concatenate's branch, a gather) computes a new index
// per index it is itself evaluated at. So, as in XLA's fusion node indexing evaluation, a
// node's evaluations are the sum over the distinct indices it is read at, each counted as
// often as the user that computes it is evaluated.
#include "passes/fusion_cost.h"

#include <algorithm>
#include <cmath>

#include "ir/ops.h"

namespace nxv::passes {
namespace {

using ir::Graph;
using ir::Node;
using ir::NodeId;

// Instructions of one evaluation, roughly as the emitter writes them (index arithmetic
// included); loops count their body once per trip (see loop_trips).
double op_cost(const Node& n, const Graph& g) {
  const auto f = ir::op_family(n.op);
  const bool f64 = n.results.size() == 1 && ir::dtype_bytes(n.type().dtype) == 8;
  const size_t rank = n.results.size() == 1 ? n.type().shape.size() : 0;
  if (n.op == "constant" || n.op == "metadata" || n.op == "broadcast" || n.op == "transpose" || n.op == "squeeze")
    return 0;
  switch (f) {
    case ir::OpFamily::FloatUnary: {
      if (n.op == "sqrt" || n.op == "rsqrt") return 2;
      const bool trig = n.op == "sin" || n.op == "cos" || n.op == "tan";
      return (trig ? 60 : 30) * (f64 ? 2 : 1);
    }
    case ir::OpFamily::Binary:
      if (n.op == "divide" || n.op == "quotient") return 6;
      if (n.op == "pow" || n.op == "atan2" || n.op == "remainder") return f64 ? 120 : 60;
      return 1;
    case ir::OpFamily::Unary:
    case ir::OpFamily::Predicate:
    case ir::OpFamily::Compare:
    case ir::OpFamily::Select:
    case ir::OpFamily::Convert: return 2;
    case ir::OpFamily::Source: return n.op == "parameter" ? 1 + double(rank) : 1;
    case ir::OpFamily::IndexMap:
      if (n.op == "reshape") return 2 * double(rank);
      if (n.op == "reverse") return 1;
      if (n.op == "slice") return 2 * double(rank);
      if (n.op == "pad") return 5 * double(rank) + 2;
      return 4 * double(n.args.size()) + double(rank);  // concatenate, stack: a select per operand
    case ir::OpFamily::Gather: return 4 * double(g.node(n.args.at(1)).type().shape.back()) + 2;
    case ir::OpFamily::Reduction:
    case ir::OpFamily::ArgReduction: return 3;
    case ir::OpFamily::Dot: return 3;
    case ir::OpFamily::Scatter: return 8;
    default: return 1;
  }
}

// Trips of the loop a node runs per evaluation over operand k (reductions, dots, indexed
// updates), or 1.
double loop_trips(const Node& n, size_t k, const Graph& g) {
  const auto f = ir::op_family(n.op);
  if (f == ir::OpFamily::Reduction || f == ir::OpFamily::ArgReduction) {
    const double out = double(std::max<int64_t>(n.type().num_elements(), 1));
    return double(g.node(n.args.at(0)).type().num_elements()) / out;
  }
  if (f == ir::OpFamily::Dot) {
    const auto& shape = g.node(n.args.at(k)).type().shape;
    double trips = 1;
    for (const auto& a : n.attrs.value(k == 0 ? "contract_axes1" : "contract_axes2", nlohmann::json::array()))
      trips *= double(shape.at(a.get<size_t>()));
    return trips;
  }
  if (f == ir::OpFamily::Scatter && k > 0 && ir::is_sorted_indexed(n)) {
    // The search reads sorted_key about log2(M) times; the walk reads an average run, the M
    // sorted rows over the positions they address (the indices themselves are not read).
    const double m = double(g.node(n.args.at(3)).type().shape.at(0));
    double positions = 1;
    for (int64_t a : ir::indexed_axes(n, n.type().shape.size(), g.node(n.args.at(1)).type().shape.at(1)).indexed)
      positions *= double(n.type().shape[a]);
    const double run = std::max(1.0, m / std::max(positions, 1.0));
    return k == 1 ? 0 : k == 3 ? std::log2(m + 1) + run : run;
  }
  if (f == ir::OpFamily::Scatter && k > 0) return double(g.node(n.args.at(1)).type().shape.at(0));
  return 1;
}

// Loop steps of one evaluation in the math library (codegen/emit_math.cpp,
// emit_float_special.cpp): the exact remainder that sin, cos, tan and remainder take,
// one trip per exponent step of the type it is taken in (2^(exponent bits) + mantissa
// bits, and the last test), integer pow's square-and-multiply, one per bit, and f64
// erf_inv's Newton steps on log erfc. A sorted
// indexed op's search and walk too (the walk as long as its M rows at worst): unlike a
// reduction's fold, no workgroup can share them.
double loop_steps(const Node& n, const Graph& g) {
  if (n.results.size() != 1) return 0;
  if (ir::op_family(n.op) == ir::OpFamily::Scatter && ir::is_sorted_indexed(n) && n.args.size() == 5) {
    const double m = double(g.node(n.args[3]).type().num_elements());
    return m > 0 ? std::floor(std::log2(m)) + 2 + m + 1 : 0;
  }
  const ir::DType t = n.type().dtype;
  const bool f64 = ir::dtype_bytes(t) == 8;
  if (n.op == "sin" || n.op == "cos" || n.op == "tan" || (n.op == "remainder" && ir::is_float(t)))
    return f64 ? (1 << 11) + 52 + 1 : (1 << 8) + 23 + 1;
  if (n.op == "pow" && ir::is_integer(t)) return f64 ? 65 : 33;
  if (n.op == "erf_inv" && f64) return 4;
  return 0;
}

// Where an operand's value is read from the index of its user: the same index ids (an
// elementwise user of the operand's shape, a reshape or squeeze that keeps the ids), or
// a new index computed per evaluation of the user.
bool same_index(const Node& user, const Node& operand) {
  const auto f = ir::op_family(user.op);
  if (user.results.size() != 1 || operand.results.size() != 1) return false;
  if (f == ir::OpFamily::Metadata) return true;
  if (user.op == "squeeze") return true;
  if (user.op == "reshape") {
    auto drop_ones = [](const ir::Shape& s) {
      ir::Shape r;
      std::copy_if(s.begin(), s.end(), std::back_inserter(r), [](int64_t e) { return e != 1; });
      return r;
    };
    return drop_ones(user.type().shape) == drop_ones(operand.type().shape);
  }
  if (user.op == "put_slice" || f == ir::OpFamily::Scatter) return user.args.at(0) == operand.id;
  return ir::is_elementwise(f) && user.type().shape == operand.type().shape;
}

// The fraction of a user's positions where operand k's value is used: a concatenate's
// branch only along its part of the axis, a pad's operand only inside the padding.
double needed_fraction(const Node& user, size_t k, const Graph& g) {
  if (user.results.size() != 1) return 1;
  const double out = double(std::max<int64_t>(user.type().num_elements(), 1));
  if (user.op == "concatenate" || user.op == "stack" || (user.op == "pad" && k == 0))
    return std::min(1.0, double(g.node(user.args.at(k)).type().num_elements()) / out);
  return 1;
}

}  // namespace

bool cheap_prologue(const Node& n) {
  const auto f = ir::op_family(n.op);
  return n.op == "constant" || f == ir::OpFamily::IndexMap || f == ir::OpFamily::Convert || f == ir::OpFamily::Metadata;
}

// A concatenate's or stack's operands that are chains of one-read index maps of one value
// read that value once (Emitter::select_common_source): the value, or nullptr.
const Node* common_source(const Node& n, const Graph& g, const std::set<NodeId>& members) {
  if ((n.op != "concatenate" && n.op != "stack") || n.args.size() < 2) return nullptr;
  std::vector<std::vector<const Node*>> chains;
  for (NodeId a : n.args) {
    std::vector<const Node*> chain{&g.node(a)};
    while (members.count(chain.back()->id) && ir::reads_one_element(chain.back()->op)) chain.push_back(&g.node(chain.back()->args.at(0)));
    chains.push_back(std::move(chain));
  }
  for (const Node* s : chains[0])
    if (std::all_of(chains.begin(), chains.end(), [&](const auto& c) { return std::find(c.begin(), c.end(), s) != c.end(); }))
      return s;
  return nullptr;
}

namespace {

// One distinct index a node is read at, and what it costs: evaluations per output element,
// code copies, and evaluations where its value is used.
struct Use {
  double evaluations = 0, copies = 0, needed = 0;
};

// The members the roots reach and the values they read from outside, every user before
// its operands (a reversed post-order: the graph need not be walked whole).
std::vector<NodeId> users_first(const Graph& g, const std::set<NodeId>& members, const std::vector<NodeId>& roots) {
  std::vector<NodeId> order;
  std::set<NodeId> seen;
  std::vector<std::pair<NodeId, size_t>> stack;  // node, next operand to visit
  for (NodeId r : roots) {
    if (!seen.insert(r).second) continue;
    stack.push_back({r, 0});
    while (!stack.empty()) {
      auto& [v, k] = stack.back();
      const Node& n = g.node(v);
      if (members.count(v) && k < n.args.size()) {
        const NodeId a = n.args[k++];
        if (seen.insert(a).second) stack.push_back({a, 0});
        continue;
      }
      order.push_back(v);
      stack.pop_back();
    }
  }
  std::reverse(order.begin(), order.end());
  return order;
}

}  // namespace

Estimate estimate(const Graph& g, const std::set<NodeId>& members, const std::vector<NodeId>& roots) {
  // Index sources by (user, operand slot); the output index is (-1, 0), an index of
  // constants (a scalar's) (-2, 0): computed once, hoisted out of the element loop.
  using Source = std::pair<NodeId, size_t>;
  const Source kOutput{-1, 0}, kScalar{-2, 0};
  std::map<Source, Use> sources{{kOutput, {1, 1, 1}}, {kScalar, {0, 1, 0}}};
  std::map<NodeId, std::set<Source>> read_at;
  for (NodeId r : roots) read_at[r].insert(kOutput);
  const double out_elements = double(std::max<int64_t>(g.node(roots.at(0)).type().num_elements(), 1));

  Estimate e;
  // `fraction`: of the user's positions, where the value read is used (needed_fraction).
  auto add_read = [&](const Node& user, size_t k, const Use& u, const Node& a, double fraction) {
    if (a.results.size() == 1 && a.type().num_elements() == 1 && !same_index(user, a)) {
      read_at[a.id].insert(kScalar);
      return;
    }
    if (same_index(user, a)) {
      read_at[a.id].insert(read_at[user.id].begin(), read_at[user.id].end());
      return;
    }
    const double trips = loop_trips(user, k, g);
    sources[{user.id, k}] = {u.evaluations * trips, u.copies, u.needed * trips * fraction};
    read_at[a.id].insert({user.id, k});
  };
  // Users before their operands, so that every node's reads are known when it is visited.
  for (NodeId id : users_first(g, members, roots)) {
    const Node& n = g.node(id);
    const bool member = members.count(n.id) > 0;
    const auto& at = read_at[n.id];
    if (at.empty()) continue;
    Use u;
    double needed_sum = 0, needed_max = 0;
    for (const Source& s : at) {
      const Use& su = sources.at(s);
      u.evaluations += su.evaluations;
      u.copies += su.copies;
      needed_sum += su.needed;
      needed_max = std::max(needed_max, su.needed);
    }
    // Reads through different indices may ask for different elements (the two halves of a
    // concatenate of slices): the elements needed are the widest single read, or all of
    // them once, whichever is more.
    const double all_once = double(n.results.size() == 1 ? n.type().num_elements() : 1) / out_elements;
    u.needed = std::max(needed_max, std::min(needed_sum, std::max(all_once, needed_max)));
    double cost = member ? op_cost(n, g) : 1 + double(n.results.size() == 1 ? n.type().shape.size() : 0);
    double code = cost, steps = member ? loop_steps(n, g) : 0;
    if (member && n.op == "repeat") {  // a loop of attrs.count trips over its step region
      const Estimate step = estimate_body(*n.regions.at("step"));
      const double trips = double(n.attrs.value("count", int64_t(1)));
      cost = trips * step.work, code = step.code, steps = trips * (step.loop_steps + 1) + 1;
    }
    e.work += u.evaluations * cost;
    e.needed += u.needed * cost;
    e.code += u.copies * code;
    if (!member) continue;
    const ir::DType t = n.results.size() == 1 ? n.type().dtype : ir::DType::U8;
    if (t == ir::DType::F64) e.code_f64 += u.copies * code;
    if (t == ir::DType::S64 || t == ir::DType::U64) e.code_i64 += u.copies * code;
    e.evaluations[n.id] = u.evaluations;
    e.copies[n.id] = u.copies;
    e.loop_steps += u.copies * steps;
    if (const Node* s = common_source(n, g, members)) {
      add_read(n, 0, u, *s, 1);
      continue;
    }
    for (size_t k = 0; k < n.args.size(); ++k) add_read(n, k, u, g.node(n.args[k]), needed_fraction(n, k, g));
  }
  const Node& root = g.node(roots.at(0));
  if (members.count(root.id) && ir::op_family(root.op) == ir::OpFamily::Scan && root.results.size() == 1) {
    const int64_t axis = root.attrs.value("axis", int64_t(0));
    if (axis >= 0 && size_t(axis) < root.type().shape.size()) e.walk = double(std::max<int64_t>(root.type().shape[size_t(axis)], 1));
  }
  return e;
}

double invocation_loop_steps(const Estimate& e, const KernelBounds& bounds) {
  return e.loop_steps * std::min(e.walk, double(std::max<int64_t>(bounds.scan_block, 1)));
}

Estimate estimate_body(const Graph& body) {
  std::set<NodeId> members;
  for (const auto& n : body.nodes)
    if (n.op != "parameter") members.insert(n.id);
  return estimate(body, members, body.outputs);
}

Estimate estimate_kernel(const Node& kernel) { return estimate_body(*kernel.regions.at("body")); }

double excess(const Estimate& e, const KernelBounds& bounds) {
  double x = 0;
  if (e.work > bounds.min_split_work) x = std::max(x, e.duplication() / bounds.max_duplication);
  const double code = e.code + e.code_f64 * (bounds.emulated_f64_code - 1) + e.code_i64 * (bounds.emulated_i64_code - 1);
  if (bounds.max_code > 0) x = std::max(x, code / bounds.max_code);
  if (bounds.max_loop_steps > 0) x = std::max(x, invocation_loop_steps(e, bounds) / bounds.max_loop_steps);
  return x;
}

}  // namespace nxv::passes
