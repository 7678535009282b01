// The op table and the helpers that read the attrs every pass reads alike (reduced and
// indexed axes).
#include "ir/ops.h"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace nxv::ir {

OpFamily op_family(const std::string& op) {
  using F = OpFamily;
  static const std::unordered_map<std::string, OpFamily> table = [] {
    std::unordered_map<std::string, OpFamily> t;
    auto add = [&](OpFamily f, std::initializer_list<const char*> ops) {
      for (const char* o : ops) t.emplace(o, f);
    };
    add(F::Source, {"parameter", "constant", "tensor", "iota", "eye"});
    add(F::FloatUnary, {"exp", "expm1", "log", "log1p", "sigmoid", "cos", "sin", "tan", "cosh", "sinh", "tanh",
                        "acos", "asin", "atan", "acosh", "asinh", "atanh", "sqrt", "rsqrt", "cbrt", "erf", "erfc",
                        "erf_inv"});
    add(F::Unary, {"negate", "abs", "sign", "floor", "ceil", "round", "bitwise_not", "population_count",
                   "count_leading_zeros"});
    add(F::Predicate, {"is_nan", "is_infinity", "logical_not"});
    add(F::Binary, {"add", "subtract", "multiply", "divide", "pow", "remainder", "atan2", "max", "min", "quotient",
                    "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"});
    add(F::Compare, {"equal", "not_equal", "greater", "less", "less_equal", "greater_equal", "logical_and",
                     "logical_or", "logical_xor"});
    add(F::Select, {"select", "clip"});
    add(F::Convert, {"as_type", "bitcast"});
    add(F::IndexMap, {"reshape", "squeeze", "broadcast", "transpose", "reverse", "slice", "pad", "concatenate",
                      "stack"});
    add(F::PutSlice, {"put_slice"});
    add(F::Gather, {"gather"});
    add(F::Scatter, {"indexed_add", "indexed_put"});
    add(F::Reduction, {"sum", "product", "reduce_max", "reduce_min", "all", "any"});
    add(F::ArgReduction, {"argmax", "argmin"});
    add(F::Scan, {"cumulative_sum", "cumulative_product", "cumulative_min", "cumulative_max"});
    add(F::Sort, {"argsort", "argsort_merge"});
    add(F::Dot, {"dot"});
    add(F::Attention, {"attention"});
    add(F::Tuple, {"elem"});
    add(F::Control, {"while", "cond"});
    add(F::Metadata, {"metadata"});
    add(F::Kernel, {"kernel"});
    add(F::Repeat, {"repeat"});
    return t;
  }();
  auto it = table.find(op);
  return it == table.end() ? F::Unknown : it->second;
}

bool reads_one_element(const std::string& op) {
  static const std::set<std::string> maps = {"reshape", "squeeze", "broadcast", "transpose", "reverse", "slice"};
  return maps.count(op) > 0;
}

bool is_elementwise(OpFamily f) {
  switch (f) {
    case OpFamily::FloatUnary:
    case OpFamily::Unary:
    case OpFamily::Predicate:
    case OpFamily::Binary:
    case OpFamily::Compare:
    case OpFamily::Select:
    case OpFamily::Convert:
      return true;
    default:
      return false;
  }
}

std::vector<int64_t> reduced_axes(const Node& n, const char* key, const TensorType& x) {
  std::vector<int64_t> axes;
  if (!n.attrs.contains(key) || n.attrs[key].is_null()) {
    for (size_t k = 0; k < x.shape.size(); ++k) axes.push_back(int64_t(k));
    return axes;
  }
  const auto& v = n.attrs[key];
  for (const auto& a : v.is_array() ? v : nlohmann::json::array({v})) {
    if (!a.is_number_integer())
      throw IrError(n, std::string("attrs.") + key + " must be an axis or a list of axes, got " + v.dump());
    axes.push_back(a.get<int64_t>());
  }
  std::sort(axes.begin(), axes.end());
  for (size_t k = 0; k < axes.size(); ++k) {
    if (axes[k] < 0 || axes[k] >= int64_t(x.shape.size()))
      throw IrError(n, "axis " + std::to_string(axes[k]) + " out of range for " + to_string(x));
    if (k > 0 && axes[k] == axes[k - 1]) throw IrError(n, "axis " + std::to_string(axes[k]) + " appears twice");
  }
  return axes;
}

IndexedAxes indexed_axes(const Node& n, size_t rank, int64_t depth) {
  if (depth < 0 || depth > int64_t(rank))
    throw IrError(n, "an index has " + std::to_string(depth) + " components, more than the operand's rank " + std::to_string(rank));
  IndexedAxes a;
  const bool given = n.attrs.contains("axes") && !n.attrs["axes"].is_null();
  if (!given) {
    for (int64_t k = 0; k < depth; ++k) a.indexed.push_back(k);
  } else {
    const auto& axes = n.attrs["axes"];
    if (!axes.is_array() || int64_t(axes.size()) != depth)
      throw IrError(n, "attrs.axes must list " + std::to_string(depth) + " axes, one per index component, got " + axes.dump());
    for (const auto& v : axes) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= int64_t(rank) ||
          (!a.indexed.empty() && v.get<int64_t>() <= a.indexed.back()))
        throw IrError(n, "attrs.axes must be increasing axes of a rank-" + std::to_string(rank) + " operand, got " + axes.dump());
      a.indexed.push_back(v.get<int64_t>());
    }
  }
  for (size_t k = 0; k < rank; ++k)
    if (!std::count(a.indexed.begin(), a.indexed.end(), int64_t(k))) a.rest.push_back(int64_t(k));
  return a;
}

}  // namespace nxv::ir
