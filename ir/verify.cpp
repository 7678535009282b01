#include "ir/verify.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "ir/attention.h"
#include "ir/ops.h"

namespace nxv::ir {
namespace {

using nlohmann::json;

std::string list_str(const std::vector<DType>& ts) {
  std::string r;
  for (DType t : ts) r += (r.empty() ? "" : " or ") + std::string(dtype_name(t));
  return r;
}

class Verifier {
 public:
  explicit Verifier(const Graph& g) : g_(g) {}

  void run() {
    std::set<NodeId> seen;
    std::set<int64_t> param_indices;
    for (const auto& n : g_.nodes) {
      for (NodeId a : n.args)
        if (!seen.count(a))
          throw IrError(n, "argument " + std::to_string(a) + " is not defined before this node (dangling id or cycle)");
      if (!seen.insert(n.id).second) throw IrError(n, "duplicate node id");
      if (n.op == "parameter") {
        int64_t i = int_attr(n, "index");
        if (i < 0) throw IrError(n, "parameter index must be non-negative");
        if (!param_indices.insert(i).second) throw IrError(n, "parameter index " + std::to_string(i) + " is used twice");
      }
      node(n);
    }
    for (NodeId o : g_.outputs) {
      if (!seen.count(o)) throw IrError("output %" + std::to_string(o) + " is not a node of the graph");
      if (g_.node(o).is_tuple()) throw IrError(g_.node(o), "a graph output must be a single tensor (use elem)");
    }
  }

 private:
  const Graph& g_;

  const Node& arg(const Node& n, size_t i) { return g_.node(n.args.at(i)); }
  const TensorType& arg_type(const Node& n, size_t i) {
    const Node& a = arg(n, i);
    if (a.is_tuple())
      throw IrError(n, "argument " + std::to_string(i) + " (%" + std::to_string(a.id) + ", " + a.op +
                           ") is a tuple; read its parts with elem");
    return a.type();
  }

  static int64_t int_attr(const Node& n, const char* key) {
    if (!n.attrs.contains(key) || !n.attrs[key].is_number_integer())
      throw IrError(n, std::string("attrs.") + key + " must be an integer");
    return n.attrs[key].get<int64_t>();
  }
  static std::vector<int64_t> int_list(const Node& n, const char* key) {
    if (!n.attrs.contains(key) || !n.attrs[key].is_array())
      throw IrError(n, std::string("attrs.") + key + " must be a list of integers");
    std::vector<int64_t> r;
    for (const auto& v : n.attrs[key]) {
      if (!v.is_number_integer()) throw IrError(n, std::string("attrs.") + key + " must be a list of integers");
      r.push_back(v.get<int64_t>());
    }
    return r;
  }
  static bool bool_attr(const Node& n, const char* key) {
    if (!n.attrs.contains(key) || n.attrs[key].is_null()) return false;
    if (!n.attrs[key].is_boolean()) throw IrError(n, std::string("attrs.") + key + " must be true or false");
    return n.attrs[key].get<bool>();
  }
  static void axis_in_range(const Node& n, int64_t axis, const TensorType& of) {
    if (axis < 0 || axis >= int64_t(of.shape.size()))
      throw IrError(n, "axis " + std::to_string(axis) + " out of range for " + to_string(of));
  }
  static void unique_axes(const Node& n, const std::vector<int64_t>& axes, const TensorType& of) {
    std::set<int64_t> s;
    for (int64_t a : axes) {
      axis_in_range(n, a, of);
      if (!s.insert(a).second) throw IrError(n, "axis " + std::to_string(a) + " appears twice");
    }
  }

  static void arity(const Node& n, size_t want) {
    if (n.args.size() != want)
      throw IrError(n, "expects " + std::to_string(want) + " argument(s), got " + std::to_string(n.args.size()));
  }
  static void min_arity(const Node& n, size_t want) {
    if (n.args.size() < want)
      throw IrError(n, "expects at least " + std::to_string(want) + " argument(s), got " + std::to_string(n.args.size()));
  }
  static void single(const Node& n) {
    if (n.results.size() != 1)
      throw IrError(n, "must have exactly one result, has " + std::to_string(n.results.size()));
  }
  static void expect_shape(const Node& n, const Shape& s) {
    if (n.type().shape != s) throw IrError(n, "shape mismatch: stated " + shape_string(n.type().shape) + ", inferred " + shape_string(s));
  }
  static void expect_type(const Node& n, const std::vector<DType>& allowed) {
    if (std::find(allowed.begin(), allowed.end(), n.type().dtype) == allowed.end())
      throw IrError(n, std::string("type mismatch: stated ") + dtype_name(n.type().dtype) + ", inferred " + list_str(allowed));
  }

  // Numbers in Nx (`x + 1`) are weakly typed: they become scalar constants that do not
  // widen the other operand (Nx.Type.merge_number), except that a float number makes an
  // integer operand float. Both readings are accepted, the strict merge and the weak one.
  // Where every operand is a scalar constant, a pass may have put one in place of a value
  // of its type (unroll: a loop's counter in each copy), so each can be the strong one.
  std::vector<DType> merged(const Node& n, const std::vector<size_t>& operands) {
    DType strict = arg_type(n, operands[0]).dtype;
    for (size_t i = 1; i < operands.size(); ++i) strict = merge_types(strict, arg_type(n, operands[i]).dtype);
    std::vector<DType> out{strict};
    std::optional<DType> strong;
    bool float_number = false;
    for (size_t i : operands) {
      const Node& a = arg(n, i);
      if (a.op == "constant" && a.type().shape.empty()) {
        float_number |= is_float(a.type().dtype);
      } else {
        strong = strong ? merge_types(*strong, a.type().dtype) : a.type().dtype;
      }
    }
    auto weak = [&](DType t) { return float_number ? to_floating(t) : t; };
    if (strong && weak(*strong) != strict) out.push_back(weak(*strong));
    if (!strong)
      for (size_t i : operands)
        if (std::find(out.begin(), out.end(), weak(arg_type(n, i).dtype)) == out.end()) out.push_back(weak(arg_type(n, i).dtype));
    return out;
  }

  Shape broadcast_shapes(const Node& n, const std::vector<size_t>& operands) {
    Shape out;
    for (size_t i : operands) {
      const Shape& s = arg_type(n, i).shape;
      if (s.size() > out.size()) out.insert(out.begin(), s.size() - out.size(), 1);
      for (size_t k = 0; k < s.size(); ++k) {
        int64_t& o = out[out.size() - s.size() + k];
        int64_t d = s[k];
        if (o == d || d == 1) continue;
        if (o == 1) {
          o = d;
          continue;
        }
        throw IrError(n, "cannot broadcast " + shape_string(arg_type(n, operands[0]).shape) + " with " + shape_string(s));
      }
    }
    return out;
  }

  void node(const Node& n) {
    const OpFamily f = op_family(n.op);
    if (f == OpFamily::Unknown) throw IrError(n, "unknown op");
    sizes(n);
    const bool regions = f == OpFamily::Control || f == OpFamily::Kernel || f == OpFamily::Repeat;
    if (!regions) single(n);
    if (!regions && !n.regions.empty())
      throw IrError(n, "this op takes no regions");
    switch (f) {
      case OpFamily::Source: return source(n);
      case OpFamily::FloatUnary:
        arity(n, 1);
        expect_shape(n, arg_type(n, 0).shape);
        return expect_type(n, {to_floating(arg_type(n, 0).dtype)});
      case OpFamily::Unary: return unary(n);
      case OpFamily::Predicate:
        arity(n, 1);
        expect_shape(n, arg_type(n, 0).shape);
        return expect_type(n, {DType::U8});
      case OpFamily::Binary: return binary(n);
      case OpFamily::Compare:
        arity(n, 2);
        expect_shape(n, broadcast_shapes(n, {0, 1}));
        return expect_type(n, {DType::U8});
      case OpFamily::Select: return select(n);
      case OpFamily::Convert:
        arity(n, 1);
        expect_shape(n, arg_type(n, 0).shape);
        if (n.op == "bitcast" && dtype_bits(n.type().dtype) != dtype_bits(arg_type(n, 0).dtype))
          throw IrError(n, "bitcast between types of different widths: " + to_string(arg_type(n, 0)) + " to " + to_string(n.type()));
        return;
      case OpFamily::IndexMap: return index_map(n);
      case OpFamily::PutSlice: return put_slice(n);
      case OpFamily::Gather: return gather(n);
      case OpFamily::Scatter: return indexed(n);
      case OpFamily::Reduction: return reduction(n);
      case OpFamily::ArgReduction: return arg_reduction(n);
      case OpFamily::Scan: return scan(n);
      case OpFamily::Sort: return sort(n);
      case OpFamily::Dot: return dot(n);
      case OpFamily::Attention: return attention(n);
      case OpFamily::Tuple: return tuple(n);
      case OpFamily::Control: return n.op == "while" ? while_loop(n) : cond(n);
      case OpFamily::Metadata:
        arity(n, 1);
        if (n.type() != arg_type(n, 0)) throw IrError(n, "metadata must have its argument's type " + to_string(arg_type(n, 0)));
        return;
      case OpFamily::Kernel: return kernel(n);
      case OpFamily::Repeat: return repeat(n);
      case OpFamily::Unknown: break;
    }
  }

  void unary(const Node& n) {
    arity(n, 1);
    expect_shape(n, arg_type(n, 0).shape);
    expect_type(n, {arg_type(n, 0).dtype});
    const bool int_only = n.op == "bitwise_not" || n.op == "population_count" || n.op == "count_leading_zeros";
    if (int_only && !is_integer(n.type().dtype)) throw IrError(n, "needs an integer operand, got " + to_string(arg_type(n, 0)));
  }

  void binary(const Node& n) {
    arity(n, 2);
    expect_shape(n, broadcast_shapes(n, {0, 1}));
    auto types = merged(n, {0, 1});
    if (n.op == "divide" || n.op == "atan2")
      for (auto& t : types) t = to_floating(t);
    expect_type(n, types);
    const bool int_only = n.op == "quotient" || n.op.rfind("bitwise_", 0) == 0 || n.op.find("_shift") != std::string::npos;
    if (int_only && !is_integer(n.type().dtype)) throw IrError(n, "needs integer operands, result is " + to_string(n.type()));
  }

  void put_slice(const Node& n) {
    min_arity(n, 2);
    const auto &x = arg_type(n, 0), &u = arg_type(n, 1);
    if (u.shape.size() != x.shape.size()) throw IrError(n, "update " + to_string(u) + " has a different rank than " + to_string(x));
    for (size_t k = 0; k < x.shape.size(); ++k)
      if (u.shape[k] > x.shape[k]) throw IrError(n, "update " + to_string(u) + " does not fit in " + to_string(x));
    starts(n, x, 2);
    expect_shape(n, x.shape);
    expect_type(n, merged(n, {0, 1}));
  }

  void attention(const Node& n) {
    std::vector<TensorType> types;
    for (size_t i = 0; i < n.args.size(); ++i) types.push_back(arg_type(n, i));
    const TensorType t = attention_type(n, types);
    expect_shape(n, t.shape);
    expect_type(n, {t.dtype});
  }

  void tuple(const Node& n) {
    arity(n, 1);
    const Node& t = arg(n, 0);
    int64_t i = int_attr(n, "index");
    if (i < 0 || size_t(i) >= t.results.size())
      throw IrError(n, "index " + std::to_string(i) + " out of range for %" + std::to_string(t.id) + " (" + t.op +
                           ") with " + std::to_string(t.results.size()) + " result(s)");
    if (n.type() != t.results[i])
      throw IrError(n, "type mismatch: stated " + to_string(n.type()) + ", element is " + to_string(t.results[i]));
  }

  void kernel(const Node& n) {
    const Graph& body = region(n, "body");
    region_params(n, body, "body", 0);
    region_outputs(n, body, "body", n.results);
  }

  void repeat(const Node& n) {
    if (int_attr(n, "count") < 1) throw IrError(n, "attrs.count must be positive");
    const Graph& step = region(n, "step");
    region_params(n, step, "step", 0);
    region_outputs(n, step, "step", n.results);
    for (size_t i = 0; i < n.results.size(); ++i)
      if (n.results[i] != arg_type(n, i))
        throw IrError(n, "carried value " + std::to_string(i) + " starts as " + to_string(arg_type(n, i)) + " but is " + to_string(n.results[i]));
  }

  // select broadcasts its three operands; clip takes scalar bounds.
  void select(const Node& n) {
    arity(n, 3);
    if (n.op == "select") {
      expect_shape(n, broadcast_shapes(n, {0, 1, 2}));
      return expect_type(n, merged(n, {1, 2}));
    }
    for (size_t i : {1, 2})
      if (!arg_type(n, i).shape.empty()) throw IrError(n, "clip bounds must be scalars, got " + to_string(arg_type(n, i)));
    expect_shape(n, arg_type(n, 0).shape);
    return expect_type(n, merged(n, {0, 1, 2}));
  }

  // Every later size computation (buffers, strides, loops) multiplies extents unchecked.
  static void sizes(const Node& n) {
    for (const auto& r : n.results) {
      try {
        r.byte_size();
      } catch (const IrError& e) {
        throw IrError(n, e.what());
      }
    }
  }

  // A graph built in C++ may hold a non-finite double where its JSON text would hold a
  // string; its dump (the executable cache's key, CSE's) writes null for every one of them.
  static void spelled_finite(const Node& n, const char* what, const json& v) {
    if (v.is_number_float() && !std::isfinite(v.get<double>()))
      throw IrError(n, std::string(what) + " holds a non-finite number, which JSON cannot: write \"nan\", \"inf\" or \"-inf\" (ir::float_json)");
  }

  void source(const Node& n) {
    arity(n, 0);
    const TensorType& t = n.type();
    if (n.op == "constant") {
      if (!n.attrs.contains("value")) throw IrError(n, "constant without attrs.value");
      const json& v = n.attrs["value"];
      static const std::set<std::string> specials = {"nan", "inf", "-inf", "-0.0"};
      if (!(v.is_number() || v.is_boolean() || (v.is_string() && specials.count(v.get<std::string>()))))
        throw IrError(n, "attrs.value must be a number or one of \"nan\", \"inf\", \"-inf\", \"-0.0\"");
      spelled_finite(n, "attrs.value", v);
    } else if (n.op == "tensor") {
      if (n.attrs.contains("data")) {
        if (!n.attrs["data"].is_array() || int64_t(n.attrs["data"].size()) != t.num_elements())
          throw IrError(n, "attrs.data must list " + std::to_string(t.num_elements()) + " values for " + to_string(t));
        for (const json& v : n.attrs["data"]) spelled_finite(n, "attrs.data", v);
      } else if (n.attrs.contains("data_b64") && n.attrs["data_b64"].is_string()) {
        const int64_t chars = (t.byte_size() + 2) / 3 * 4;
        if (int64_t(n.attrs["data_b64"].get_ref<const std::string&>().size()) != chars)
          throw IrError(n, "attrs.data_b64 must encode " + std::to_string(t.byte_size()) + " bytes for " + to_string(t));
      } else {
        throw IrError(n, "tensor needs attrs.data or attrs.data_b64");
      }
    } else if (n.op == "iota") {
      if (n.attrs.contains("axis") && !n.attrs["axis"].is_null()) axis_in_range(n, int_attr(n, "axis"), t);
    } else if (n.op == "eye") {
      if (t.shape.size() < 2) throw IrError(n, "eye needs a rank of at least 2, got " + to_string(t));
    }
  }

  // Slice starts: per axis an integer, {"arg": k} naming a scalar integer argument, or
  // {"arg": k, "element": i}: element i of a one-dimensional integer argument.
  void starts(const Node& n, const TensorType& x, size_t first_dynamic) {
    if (!n.attrs.contains("start") || !n.attrs["start"].is_array() || n.attrs["start"].size() != x.shape.size())
      throw IrError(n, "attrs.start must have one entry per axis of " + to_string(x));
    for (const auto& s : n.attrs["start"]) {
      if (s.is_number_integer()) {
        if (s.get<int64_t>() < 0) throw IrError(n, "negative start " + s.dump());
        continue;
      }
      if (!s.is_object() || !s.contains("arg") || !s["arg"].is_number_integer())
        throw IrError(n, "a start must be an integer, {\"arg\": k} or {\"arg\": k, \"element\": i}, got " + s.dump());
      int64_t k = s["arg"];
      if (k < int64_t(first_dynamic) || size_t(k) >= n.args.size())
        throw IrError(n, "start {\"arg\": " + std::to_string(k) + "} does not name a start argument");
      const auto& st = arg_type(n, k);
      if (!s.contains("element")) {
        if (!st.shape.empty() || !is_integer(st.dtype))
          throw IrError(n, "a dynamic start must be a scalar integer, got " + to_string(st));
        continue;
      }
      const auto& e = s["element"];
      if (st.shape.size() != 1 || !is_integer(st.dtype) || !e.is_number_integer() || e.get<int64_t>() < 0 ||
          e.get<int64_t>() >= st.shape[0])
        throw IrError(n, "start " + s.dump() + " needs an element of a one-dimensional integer argument, got " +
                             to_string(st));
    }
  }

  void index_map(const Node& n) {
    if (n.op == "concatenate" || n.op == "stack") return joined(n);
    if (n.op == "pad") return pad(n);
    if (n.op == "slice") return slice(n);
    const std::string& op = n.op;
    arity(n, 1);
    const TensorType& x = arg_type(n, 0);
    expect_type(n, {x.dtype});
    if (op == "reshape") {
      if (n.type().num_elements() != x.num_elements())
        throw IrError(n, "cannot reshape " + to_string(x) + " to " + shape_string(n.type().shape));
    } else if (op == "squeeze") {
      auto axes = int_list(n, "axes");
      unique_axes(n, axes, x);
      Shape out;
      for (size_t k = 0; k < x.shape.size(); ++k) {
        bool squeezed = std::count(axes.begin(), axes.end(), int64_t(k)) > 0;
        if (squeezed && x.shape[k] != 1) throw IrError(n, "cannot squeeze axis " + std::to_string(k) + " of " + to_string(x));
        if (!squeezed) out.push_back(x.shape[k]);
      }
      expect_shape(n, out);
    } else if (op == "broadcast") {
      auto shape = int_list(n, "shape");
      auto axes = int_list(n, "axes");
      expect_shape(n, shape);
      if (axes.size() != x.shape.size()) throw IrError(n, "attrs.axes needs one entry per axis of " + to_string(x));
      for (size_t k = 0; k < axes.size(); ++k) {
        if (axes[k] < 0 || axes[k] >= int64_t(shape.size()) || (k && axes[k] <= axes[k - 1]))
          throw IrError(n, "attrs.axes must be increasing axes of " + shape_string(shape));
        if (x.shape[k] != 1 && x.shape[k] != shape[axes[k]])
          throw IrError(n, "cannot broadcast " + to_string(x) + " to " + shape_string(shape) + " on axes " + n.attrs["axes"].dump());
      }
    } else if (op == "transpose") {
      auto axes = int_list(n, "axes");
      if (axes.size() != x.shape.size()) throw IrError(n, "attrs.axes must be a permutation of the axes of " + to_string(x));
      unique_axes(n, axes, x);
      Shape out;
      for (int64_t a : axes) out.push_back(x.shape[a]);
      expect_shape(n, out);
    } else if (op == "reverse") {
      unique_axes(n, int_list(n, "axes"), x);
      expect_shape(n, x.shape);
    }
  }

  // concatenate and stack: operands alike but on the joined axis.
  void joined(const Node& n) {
    min_arity(n, 1);
    const TensorType& first = arg_type(n, 0);
    std::vector<size_t> all;
    for (size_t i = 0; i < n.args.size(); ++i) all.push_back(i);
    int64_t axis = int_attr(n, "axis");
    Shape out = first.shape;
    if (n.op == "stack") {
      if (axis < 0 || axis > int64_t(first.shape.size())) throw IrError(n, "axis " + std::to_string(axis) + " out of range for stacking " + to_string(first));
      for (size_t i : all)
        if (arg_type(n, i).shape != first.shape) throw IrError(n, "stacked tensors differ in shape: " + to_string(first) + " and " + to_string(arg_type(n, i)));
      out.insert(out.begin() + axis, int64_t(n.args.size()));
    } else {
      axis_in_range(n, axis, first);
      out[axis] = 0;
      for (size_t i : all) {
        const Shape& s = arg_type(n, i).shape;
        bool ok = s.size() == first.shape.size();
        for (size_t k = 0; ok && k < s.size(); ++k) ok = int64_t(k) == axis || s[k] == first.shape[k];
        if (!ok) throw IrError(n, "cannot concatenate " + to_string(first) + " and " + to_string(arg_type(n, i)) + " along axis " + std::to_string(axis));
        out[axis] += s[axis];
      }
    }
    expect_shape(n, out);
    expect_type(n, merged(n, all));
  }

  void pad(const Node& n) {
    arity(n, 2);
    const TensorType& x = arg_type(n, 0);
    if (!arg_type(n, 1).shape.empty()) throw IrError(n, "the pad value must be a scalar, got " + to_string(arg_type(n, 1)));
    const json& config = n.attrs.contains("config") ? n.attrs["config"] : json();
    if (!config.is_array() || config.size() != x.shape.size())
      throw IrError(n, "attrs.config must have one [low, high, interior] per axis of " + to_string(x));
    Shape out;
    for (size_t k = 0; k < x.shape.size(); ++k) {
      const json& c = config[k];
      if (!c.is_array() || c.size() != 3 || !c[0].is_number_integer() || !c[1].is_number_integer() || !c[2].is_number_integer() || c[2].get<int64_t>() < 0)
        throw IrError(n, "attrs.config[" + std::to_string(k) + "] must be [low, high, interior] with interior >= 0");
      int64_t d = x.shape[k], size = 0;
      if (__builtin_mul_overflow(std::max<int64_t>(d - 1, 0), c[2].get<int64_t>(), &size) || __builtin_add_overflow(size, d, &size) ||
          __builtin_add_overflow(size, c[0].get<int64_t>(), &size) || __builtin_add_overflow(size, c[1].get<int64_t>(), &size))
        throw IrError(n, "padding config " + c.dump() + " overflows axis " + std::to_string(k));
      if (size < 0) throw IrError(n, "padding config " + c.dump() + " removes more than axis " + std::to_string(k) + " holds");
      out.push_back(size);
    }
    expect_shape(n, out);
    expect_type(n, merged(n, {0, 1}));
  }

  void slice(const Node& n) {
    min_arity(n, 1);
    const TensorType& x = arg_type(n, 0);
    starts(n, x, 1);
    auto lengths = int_list(n, "lengths");
    auto strides = n.attrs.contains("strides") ? int_list(n, "strides") : std::vector<int64_t>(x.shape.size(), 1);
    if (lengths.size() != x.shape.size() || strides.size() != x.shape.size())
      throw IrError(n, "attrs.lengths and attrs.strides need one entry per axis of " + to_string(x));
    Shape out;
    for (size_t k = 0; k < x.shape.size(); ++k) {
      if (lengths[k] < 0 || lengths[k] > x.shape[k]) throw IrError(n, "length " + std::to_string(lengths[k]) + " out of range for axis " + std::to_string(k) + " of " + to_string(x));
      if (strides[k] < 1) throw IrError(n, "strides must be positive");
      const json& s = n.attrs["start"][k];
      if (s.is_number_integer() && s.get<int64_t>() > x.shape[k] - lengths[k])
        throw IrError(n, "slice start " + s.dump() + " + length " + std::to_string(lengths[k]) + " exceeds axis " + std::to_string(k) + " of " + to_string(x));
      out.push_back(lengths[k] == 0 ? 0 : (lengths[k] - 1) / strides[k] + 1);
    }
    expect_shape(n, out);
    expect_type(n, {x.dtype});
  }

  static void integer_indices(const Node& n, const TensorType& indices) {
    if (!is_integer(indices.dtype)) throw IrError(n, "indices must be integers, got " + to_string(indices));
  }

  // Nx.gather: the result is the indices' shape without its last axis, then the axes of x
  // that are not indexed.
  void gather(const Node& n) {
    arity(n, 2);
    const TensorType &x = arg_type(n, 0), &indices = arg_type(n, 1);
    integer_indices(n, indices);
    if (indices.shape.empty()) throw IrError(n, "indices must have a rank of at least 1, got " + to_string(indices));
    const auto axes = indexed_axes(n, x.shape.size(), indices.shape.back());
    Shape out(indices.shape.begin(), indices.shape.end() - 1);
    for (int64_t k : axes.rest) out.push_back(x.shape[k]);
    expect_shape(n, out);
    expect_type(n, {x.dtype});
    for (int64_t k : axes.indexed)
      if (x.shape[k] == 0 && num_elements(out) > 0) throw IrError(n, "gathers from the empty axis " + std::to_string(k) + " of " + to_string(x));
  }

  // Nx.indexed_add / indexed_put: indices {count, depth}; updates {count, window...} with
  // one window axis per axis of the target that is not indexed, each at most that long.
  void indexed(const Node& n) {
    if (n.attrs.contains("sorted") && !n.attrs["sorted"].is_boolean())
      throw IrError(n, "attrs.sorted must be a boolean, got " + n.attrs["sorted"].dump());
    arity(n, is_sorted_indexed(n) ? 5 : 3);
    if (is_sorted_indexed(n)) sorted_rows(n);
    const TensorType &target = arg_type(n, 0), &indices = arg_type(n, 1), &updates = arg_type(n, 2);
    integer_indices(n, indices);
    if (indices.shape.size() != 2) throw IrError(n, "indices must have rank 2 ({count, depth}), got " + to_string(indices));
    auto rest = indexed_axes(n, target.shape.size(), indices.shape[1]).rest;
    if (updates.shape.size() != rest.size() + 1 || updates.shape[0] != indices.shape[0])
      throw IrError(n, "updates " + to_string(updates) + " must have shape {" + std::to_string(indices.shape[0]) + ", ...} with one axis per axis of " +
                           to_string(target) + " that indices " + to_string(indices) + " do not address");
    for (size_t k = 0; k < rest.size(); ++k)
      if (updates.shape[k + 1] > target.shape[rest[k]])
        throw IrError(n, "axis " + std::to_string(k + 1) + " of updates " + to_string(updates) + " is longer than axis " + std::to_string(rest[k]) + " of " + to_string(target));
    expect_shape(n, target.shape);
    expect_type(n, merged(n, {0, 2}));
  }

  // The sorted form's sorted_key and perm: integer lines of one length, at most the count.
  void sorted_rows(const Node& n) {
    const TensorType &key = arg_type(n, 3), &perm = arg_type(n, 4);
    const int64_t count = arg_type(n, 1).shape.empty() ? 0 : arg_type(n, 1).shape[0];
    const int64_t length = perm.shape.size() == 1 ? perm.shape[0] : -1;
    for (const TensorType* t : {&key, &perm})
      if (!is_integer(t->dtype) || t->shape.size() != 1 || t->shape[0] != length || length > count)
        throw IrError(n, "sorted_key " + to_string(key) + " and perm " + to_string(perm) +
                             " must be integer lines of one length, at most the " + std::to_string(count) + " updates");
  }

  static Shape reduce_shape(const Shape& in, const std::vector<int64_t>& axes, bool keep) {
    Shape out;
    for (size_t k = 0; k < in.size(); ++k) {
      bool r = std::count(axes.begin(), axes.end(), int64_t(k)) > 0;
      if (!r) out.push_back(in[k]);
      else if (keep) out.push_back(1);
    }
    return out;
  }

  void reduction(const Node& n) {
    arity(n, 1);
    const TensorType& x = arg_type(n, 0);
    auto axes = reduced_axes(n, "axes", x);
    expect_shape(n, reduce_shape(x.shape, axes, bool_attr(n, "keep_axes")));
    if (n.op == "all" || n.op == "any") return expect_type(n, {DType::U8});
    if (n.op == "sum" || n.op == "product") {
      // Nx's aggregate type: integers accumulate in 64 bits. Or x's own type, which wraps
      // (split-scan's block totals: a device may lack 64-bit integers).
      DType agg = is_signed_int(x.dtype) ? DType::S64 : is_unsigned_int(x.dtype) ? DType::U64 : x.dtype;
      return expect_type(n, {agg, x.dtype});
    }
    expect_type(n, {x.dtype});
  }

  void arg_reduction(const Node& n) {
    arity(n, 1);
    const TensorType& x = arg_type(n, 0);
    const bool all = !n.attrs.contains("axis") || n.attrs["axis"].is_null();
    auto axes = reduced_axes(n, "axis", x);
    const bool keep = bool_attr(n, "keep_axis");
    if (n.attrs.contains("tie_break") && n.attrs["tie_break"] != "low" && n.attrs["tie_break"] != "high")
      throw IrError(n, "attrs.tie_break must be \"low\" or \"high\"");
    Shape out = reduce_shape(x.shape, axes, keep);
    if (all && keep && n.type().shape.empty()) out.clear();
    expect_shape(n, out);
    if (!is_integer(n.type().dtype)) throw IrError(n, "the result type must be an integer, got " + to_string(n.type()));
  }

  // Nx's cumulative_* (Nx.Shared.optional's output is the operand's type): the shape and
  // type of x, scanned along attrs.axis; reverse scans from the end. With a second operand
  // (split-scan's carries) the lines are cut in segments of attrs.segment elements, each
  // scanned from its carry: x's type with the axis as long as the segments are many.
  void scan(const Node& n) {
    min_arity(n, 1);
    if (n.args.size() > 2) throw IrError(n, "expects 1 or 2 argument(s), got " + std::to_string(n.args.size()));
    const TensorType& x = arg_type(n, 0);
    if (x.shape.empty()) throw IrError(n, "needs an operand of rank 1 or more, got " + to_string(x));
    const int64_t axis = int_attr(n, "axis");
    axis_in_range(n, axis, x);
    bool_attr(n, "reverse");
    expect_shape(n, x.shape);
    expect_type(n, {x.dtype});
    if (bool_attr(n, "carry_totals") && n.args.size() != 2)
      throw IrError(n, "attrs.carry_totals needs the segments' totals as argument 1");
    if (n.args.size() == 2) {
      const int64_t segment = int_attr(n, "segment");
      if (segment < 1) throw IrError(n, "attrs.segment must be at least 1, got " + std::to_string(segment));
      TensorType carries = x;
      carries.shape[axis] = (x.shape[axis] + segment - 1) / segment;
      if (arg_type(n, 1) != carries)
        throw IrError(n, "the carries (argument 1) must be " + to_string(carries) + ", got " + to_string(arg_type(n, 1)));
    }
  }

  // argsort: the stable order of each line of x along attrs.axis (attrs.direction "asc" or
  // "desc"), as positions along the axis in the node's integer type. split-sort's stages:
  // argsort with attrs.block (each aligned block of that many elements sorted on its own),
  // then argsort_merge(x, order) running comparators of a bitonic network (attrs merge,
  // stride, last_stride: powers of two, last_stride <= stride < merge).
  void sort(const Node& n) {
    arity(n, n.op == "argsort" ? 1 : 2);
    const TensorType& x = arg_type(n, 0);
    if (x.shape.empty()) throw IrError(n, "needs an operand of rank 1 or more, got " + to_string(x));
    axis_in_range(n, int_attr(n, "axis"), x);
    const auto& d = n.attrs.contains("direction") ? n.attrs["direction"] : nlohmann::json();
    if (d != "asc" && d != "desc") throw IrError(n, "attrs.direction must be \"asc\" or \"desc\", got " + d.dump());
    expect_shape(n, x.shape);
    if (!is_integer(n.type().dtype)) throw IrError(n, "the result type must be an integer, got " + to_string(n.type()));
    auto power_of_two = [&](const char* key) {
      const int64_t v = int_attr(n, key);
      if (v < 1 || (v & (v - 1))) throw IrError(n, std::string("attrs.") + key + " must be a power of two, got " + std::to_string(v));
      return v;
    };
    if (n.op == "argsort") {
      if (n.attrs.contains("block")) power_of_two("block");
      return;
    }
    const TensorType& order = arg_type(n, 1);
    if (order.shape != x.shape || !is_integer(order.dtype))
      throw IrError(n, "the order (argument 1) must be integers of shape " + shape_string(x.shape) + ", got " + to_string(order));
    const int64_t merge = power_of_two("merge"), stride = power_of_two("stride"), last = power_of_two("last_stride");
    if (merge < 2 || stride >= merge || last > stride)
      throw IrError(n, "needs last_stride <= stride < merge, got " + std::to_string(last) + ", " + std::to_string(stride) +
                           ", " + std::to_string(merge));
  }

  void dot(const Node& n) {
    arity(n, 2);
    const TensorType &a = arg_type(n, 0), &b = arg_type(n, 1);
    auto c1 = int_list(n, "contract_axes1"), c2 = int_list(n, "contract_axes2");
    auto b1 = n.attrs.contains("batch_axes1") ? int_list(n, "batch_axes1") : std::vector<int64_t>{};
    auto b2 = n.attrs.contains("batch_axes2") ? int_list(n, "batch_axes2") : std::vector<int64_t>{};
    if (c1.size() != c2.size() || b1.size() != b2.size())
      throw IrError(n, "contraction/batch axes of the two operands differ in number");
    std::vector<int64_t> used1 = c1, used2 = c2;
    used1.insert(used1.end(), b1.begin(), b1.end());
    used2.insert(used2.end(), b2.begin(), b2.end());
    unique_axes(n, used1, a);
    unique_axes(n, used2, b);
    for (size_t k = 0; k < c1.size(); ++k)
      if (a.shape[c1[k]] != b.shape[c2[k]])
        throw IrError(n, "contracted axes " + std::to_string(c1[k]) + " of " + to_string(a) + " and " + std::to_string(c2[k]) + " of " + to_string(b) + " differ in size");
    Shape out;
    for (size_t k = 0; k < b1.size(); ++k) {
      if (a.shape[b1[k]] != b.shape[b2[k]])
        throw IrError(n, "batch axes " + std::to_string(b1[k]) + " of " + to_string(a) + " and " + std::to_string(b2[k]) + " of " + to_string(b) + " differ in size");
      out.push_back(a.shape[b1[k]]);
    }
    auto free = [&](const TensorType& t, const std::vector<int64_t>& used) {
      for (size_t k = 0; k < t.shape.size(); ++k)
        if (!std::count(used.begin(), used.end(), int64_t(k))) out.push_back(t.shape[k]);
    };
    free(a, used1);
    free(b, used2);
    expect_shape(n, out);
    expect_type(n, merged(n, {0, 1}));
  }

  const Graph& region(const Node& n, const std::string& name) {
    auto it = n.regions.find(name);
    if (it == n.regions.end() || !it->second) throw IrError(n, "missing region '" + name + "'");
    try {
      Verifier(*it->second).run();
    } catch (const IrError& e) {
      throw IrError(n, "in region '" + name + "': " + e.what());
    }
    return *it->second;
  }
  // A region's parameter i is the node's argument offset + i.
  void region_params(const Node& n, const Graph& r, const std::string& name, size_t offset) {
    for (const Node* p : r.parameters()) {
      int64_t i = p->attrs.value("index", int64_t(-1));
      if (i < 0 || offset + size_t(i) >= n.args.size())
        throw IrError(n, "region '" + name + "' parameter %" + std::to_string(p->id) + " has index " + std::to_string(i) + " beyond the " + std::to_string(n.args.size() - offset) + " value(s) passed in");
      if (p->type() != arg_type(n, offset + i))
        throw IrError(n, "region '" + name + "' parameter " + std::to_string(i) + " is " + to_string(p->type()) + " but receives " + to_string(arg_type(n, offset + i)));
    }
  }
  void region_outputs(const Node& n, const Graph& r, const std::string& name, const std::vector<TensorType>& want) {
    if (r.outputs.size() != want.size())
      throw IrError(n, "region '" + name + "' returns " + std::to_string(r.outputs.size()) + " value(s), expected " + std::to_string(want.size()));
    for (size_t i = 0; i < want.size(); ++i)
      if (r.node(r.outputs[i]).type() != want[i])
        throw IrError(n, "region '" + name + "' output " + std::to_string(i) + " is " + to_string(r.node(r.outputs[i]).type()) + ", expected " + to_string(want[i]));
  }

  void while_loop(const Node& n) {
    std::vector<TensorType> state;
    for (size_t i = 0; i < n.args.size(); ++i) state.push_back(arg_type(n, i));
    if (n.results != state) throw IrError(n, "the results must have the types of the initial state");
    const Graph& c = region(n, "condition");
    region_params(n, c, "condition", 0);
    if (c.outputs.size() != 1) throw IrError(n, "region 'condition' must return one value");
    const TensorType& ct = c.node(c.outputs[0]).type();
    if (!ct.shape.empty() || !is_integer(ct.dtype)) throw IrError(n, "region 'condition' must return a scalar integer (u8), got " + to_string(ct));
    const Graph& body = region(n, "body");
    region_params(n, body, "body", 0);
    region_outputs(n, body, "body", state);
  }

  void cond(const Node& n) {
    size_t branches = 0;
    while (n.regions.count("branch" + std::to_string(branches))) ++branches;
    if (branches < 2 || branches != n.regions.size())
      throw IrError(n, "cond needs regions branch0..branchN (N >= 1) and no others");
    const size_t preds = branches - 1;
    min_arity(n, preds);
    for (size_t i = 0; i < preds; ++i) {
      const TensorType& p = arg_type(n, i);
      if (!p.shape.empty() || !is_integer(p.dtype)) throw IrError(n, "predicate " + std::to_string(i) + " must be a scalar integer (u8), got " + to_string(p));
    }
    for (size_t b = 0; b < branches; ++b) {
      const std::string name = "branch" + std::to_string(b);
      const Graph& r = region(n, name);
      region_params(n, r, name, preds);
      region_outputs(n, r, name, n.results);
    }
  }
};

}  // namespace

void verify(const Graph& graph) { Verifier(graph).run(); }

}  // namespace nxv::ir
