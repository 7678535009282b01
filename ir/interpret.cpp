// The reference interpreter: graph walking, tuples, control flow and kernels, plus the
// element access shared by the op families (ir/interpret_*.cpp).
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "ir/attention.h"
#include "ir/interpret_internal.h"
#include "ir/interpreter.h"
#include "ir/ops.h"
#include "ir/verify.h"

namespace nxv::ir {
namespace interp {

Literal make_literal(const TensorType& t) { return Literal{t, std::vector<uint8_t>(t.byte_size())}; }

namespace {
// d rounded to float toward zero with the last bit set when inexact ("round to odd"), so
// that rounding the float again to f16 is the same as rounding d directly.
float round_to_odd(double d) {
  float f = float(d);
  if (!std::isfinite(f) || double(f) == d) return f;
  if (std::fabs(double(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits |= 1;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Nx's float to integer conversion: truncation toward zero, saturating, NaN to 0 (as XLA).
int64_t saturate(double d, DType t) {
  if (std::isnan(d)) return 0;
  d = std::trunc(d);
  const int bits = dtype_bits(t);
  if (is_unsigned_int(t)) {
    if (d <= 0) return 0;
    const double limit = std::ldexp(1.0, bits);  // first value out of range
    if (d >= limit) return bits == 64 ? -1 : int64_t((uint64_t(1) << bits) - 1);
    return int64_t(uint64_t(d));
  }
  const double limit = std::ldexp(1.0, bits - 1);
  if (d >= limit) return bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t(1) << (bits - 1)) - 1;
  if (d < -limit) return bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t(1) << (bits - 1));
  return int64_t(d);
}
}  // namespace

void write_f(Literal& lit, int64_t i, double v) {
  uint8_t* p = lit.data.data() + i * dtype_bytes(lit.type.dtype);
  switch (lit.type.dtype) {
    case DType::F64: std::memcpy(p, &v, 8); return;
    case DType::F32: { float f = float(v); std::memcpy(p, &f, 4); return; }
    case DType::F16: { uint16_t h = f32_to_f16(round_to_odd(v)); std::memcpy(p, &h, 2); return; }
    case DType::BF16: {
      // Nx writes bf16 as the high half of the f32 value (truncation), NaN as 0x7FC0.
      const float f = float(v);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      const uint16_t h = std::isnan(f) ? 0x7FC0 : uint16_t(bits >> 16);
      std::memcpy(p, &h, 2);
      return;
    }
    default: write_i(lit, i, saturate(v, lit.type.dtype)); return;
  }
}

void write_i(Literal& lit, int64_t i, int64_t v) {
  const DType t = lit.type.dtype;
  if (is_float(t)) {
    write_f(lit, i, double(v));
    return;
  }
  // Little-endian: the low bytes are the wrapped value.
  std::memcpy(lit.data.data() + i * dtype_bytes(t), &v, dtype_bytes(t));
}

int64_t wrap(int64_t v, DType t) {
  const int bits = dtype_bits(t);
  if (bits == 64) return v;
  const uint64_t mask = (uint64_t(1) << bits) - 1, low = uint64_t(v) & mask;
  if (is_signed_int(t) && (low >> (bits - 1))) return int64_t(low | ~mask);
  return int64_t(low);
}

void convert_element(const Literal& src, int64_t si, Literal& dst, int64_t di) {
  const DType from = src.type.dtype, to = dst.type.dtype;
  if (from == to) {
    const int w = dtype_bytes(to);
    std::memcpy(dst.data.data() + di * w, src.data.data() + si * w, w);
  } else if (is_integer(from) && (to == DType::F32 || to == DType::BF16)) {
    // Rounded to f32 once, as the device's OpConvertSToF and XLA round: through a double, a
    // 64-bit integer beyond 2^53 would be rounded twice (Nx.BinaryBackend does, via Erlang's
    // float), an f32 ulp off where the first rounding makes a tie (docs/numerics.md).
    const int64_t v = get_i64(src, si);
    write_f(dst, di, is_unsigned_int(from) ? float(uint64_t(v)) : float(v));
  } else if (is_float(to) || is_float(from)) {
    write_f(dst, di, get_f64(src, si));
  } else {
    write_i(dst, di, get_i64(src, si));
  }
}

Literal convert(const Literal& src, DType to) {
  if (src.type.dtype == to) return src;
  Literal out = make_literal({to, src.type.shape});
  for (int64_t i = 0; i < src.type.num_elements(); ++i) convert_element(src, i, out, i);
  return out;
}

bool truthy(const Literal& lit, int64_t i) {
  return is_float(lit.type.dtype) ? get_f64(lit, i) != 0.0 : get_i64(lit, i) != 0;
}

int64_t index_at(const Literal& lit, int64_t i) {
  const int64_t v = get_i64(lit, i);
  return is_unsigned_int(lit.type.dtype) && v < 0 ? std::numeric_limits<int64_t>::max() : v;
}

std::vector<int64_t> row_major_strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    s[d] = acc;
    acc *= shape[d];
  }
  return s;
}

AxisLines::AxisLines(const Node& n, const Shape& s) {
  const int64_t axis = n.attrs.value("axis", int64_t(-1));
  if (axis < 0 || axis >= int64_t(s.size())) throw IrError(n, "attrs.axis out of range for " + shape_string(s));
  len = s[axis];
  inner = row_major_strides(s)[axis];
  // An empty tensor has no lines, whichever axis is empty (a zero extent also zeroes the
  // strides of the axes before it).
  outer = num_elements(s) == 0 ? 0 : num_elements(s) / (len * inner);
}

std::vector<int64_t> int_list(const Node& n, const char* key) {
  std::vector<int64_t> r;
  if (!n.attrs.contains(key)) return r;
  if (!n.attrs[key].is_array()) throw IrError(n, std::string("attrs.") + key + " must be a list of integers");
  for (const auto& v : n.attrs[key]) {
    if (!v.is_number_integer()) throw IrError(n, std::string("attrs.") + key + " must be a list of integers");
    r.push_back(v.get<int64_t>());
  }
  return r;
}

void check_arity(const Node& n, const Args& args, size_t want) {
  if (args.size() != want)
    throw IrError(n, "expects " + std::to_string(want) + " argument(s), got " + std::to_string(args.size()));
}

}  // namespace interp

namespace {
using interp::Args;

std::vector<Literal> run_graph(const Graph& g, const Args& inputs, const InterpretOptions& o);
std::vector<Literal> evaluate_checked(const Node& node, const Args& args, const InterpretOptions& o);

// A region's parameter i receives values[i].
std::vector<Literal> run_region(const Node& n, const std::string& name, const Args& values, const InterpretOptions& o) {
  auto it = n.regions.find(name);
  if (it == n.regions.end() || !it->second) throw IrError(n, "missing region '" + name + "'");
  try {
    return run_graph(*it->second, values, o);
  } catch (const IrError& e) {
    throw IrError(n, "in region '" + name + "': " + e.what());
  }
}

Args pointers(const std::vector<Literal>& values) {
  Args r;
  for (const auto& v : values) r.push_back(&v);
  return r;
}

std::vector<Literal> run_while(const Node& n, const Args& args, const InterpretOptions& o) {
  std::vector<Literal> state;
  for (const Literal* a : args) state.push_back(*a);
  for (;;) {
    auto c = run_region(n, "condition", pointers(state), o);
    if (c.size() != 1 || c[0].type.num_elements() != 1) throw IrError(n, "region 'condition' must return one scalar");
    if (!interp::truthy(c[0], 0)) return state;
    auto next = run_region(n, "body", pointers(state), o);
    if (next.size() != state.size()) throw IrError(n, "region 'body' must return the whole state");
    state = std::move(next);
  }
}

std::vector<Literal> run_cond(const Node& n, const Args& args, const InterpretOptions& o) {
  const size_t branches = n.regions.size();
  if (branches < 2) throw IrError(n, "cond needs regions branch0..branchN (N >= 1)");
  const size_t preds = branches - 1;
  if (args.size() < preds) throw IrError(n, "expects at least " + std::to_string(preds) + " predicate(s)");
  size_t taken = preds;
  for (size_t i = 0; i < preds && taken == preds; ++i) {
    if (args[i]->type.num_elements() != 1) throw IrError(n, "predicate " + std::to_string(i) + " must be a scalar");
    if (interp::truthy(*args[i], 0)) taken = i;
  }
  return run_region(n, "branch" + std::to_string(taken), Args(args.begin() + preds, args.end()), o);
}

// `repeat`: the step region run attrs.count times; its first results.size() parameters are
// the carried values, the rest stay as passed in.
std::vector<Literal> run_repeat(const Node& n, const Args& args, const InterpretOptions& o) {
  const size_t carried = n.results.size();
  if (args.size() < carried) throw IrError(n, "fewer arguments than carried values");
  const int64_t count = n.attrs.value("count", int64_t(0));
  std::vector<Literal> state;
  for (size_t i = 0; i < carried; ++i) state.push_back(*args[i]);
  for (int64_t k = 0; k < count; ++k) {
    Args in = pointers(state);
    in.insert(in.end(), args.begin() + carried, args.end());
    auto next = run_region(n, "step", in, o);
    if (next.size() != carried) throw IrError(n, "region 'step' must return the carried values");
    state = std::move(next);
  }
  return state;
}

// Attention is defined as its unfused graph (ir/attention.h): that graph is what runs.
std::vector<Literal> run_attention(const Node& n, const Args& args, const InterpretOptions& o) {
  std::vector<TensorType> types;
  for (const Literal* a : args) types.push_back(a->type);
  const Graph unfused = unfused_attention(n, types);
  try {
    return run_graph(unfused, args, o);
  } catch (const IrError& e) {
    throw IrError(n, std::string("in its unfused form: ") + e.what());
  }
}

std::vector<Literal> run_graph(const Graph& g, const Args& inputs, const InterpretOptions& o) {
  // Every node's results, by pointer so that parameters are not copied.
  std::unordered_map<NodeId, Args> values;
  std::unordered_map<NodeId, std::vector<Literal>> computed;
  for (const Node& n : g.nodes) {
    if (n.op == "parameter") {
      const int64_t i = n.attrs.value("index", int64_t(-1));
      if (i < 0 || size_t(i) >= inputs.size())
        throw IrError(n, "parameter " + std::to_string(i) + " has no input (" + std::to_string(inputs.size()) + " given)");
      if (inputs[i]->type != n.type())
        throw IrError(n, "input " + std::to_string(i) + " is " + to_string(inputs[i]->type) + ", expected " + to_string(n.type()));
      values[n.id] = {inputs[i]};
      continue;
    }
    Args args;
    for (NodeId a : n.args) {
      auto it = values.find(a);
      if (it == values.end()) throw IrError(n, "argument %" + std::to_string(a) + " is not defined before this node");
      if (n.op == "elem") {
        args.insert(args.end(), it->second.begin(), it->second.end());
      } else {
        if (it->second.size() != 1) throw IrError(n, "argument %" + std::to_string(a) + " is a tuple; read its parts with elem");
        args.push_back(it->second[0]);
      }
    }
    auto& result = computed[n.id] = evaluate_checked(n, args, o);
    for (Literal& r : result)
      if (o.flush_subnormals.count(r.type.dtype)) flush_subnormals(r);
    values[n.id] = pointers(result);
  }
  std::vector<Literal> out;
  for (NodeId o : g.outputs) {
    auto it = values.find(o);
    if (it == values.end() || it->second.size() != 1)
      throw IrError("output %" + std::to_string(o) + " is not a single-tensor node of the graph");
    out.push_back(*it->second[0]);
  }
  return out;
}
}  // namespace

std::vector<Literal> interpret(const Graph& graph, const std::vector<Literal>& inputs, const InterpretOptions& options) {
  verify(graph);  // the op families rely on the shapes it guarantees to stay in bounds
  return run_graph(graph, pointers(inputs), options);
}

namespace {
std::vector<Literal> evaluate(const Node& node, const Args& args, const InterpretOptions& o) {
  using namespace interp;
  std::vector<Literal> out;
  switch (op_family(node.op)) {
    case OpFamily::Source:
      if (node.op == "parameter") throw IrError(node, "a parameter has no value outside a graph");
      check_arity(node, args, 0);
      out.push_back(eval_source(node));
      break;
    case OpFamily::FloatUnary:
    case OpFamily::Unary:
    case OpFamily::Predicate:
    case OpFamily::Binary:
    case OpFamily::Compare:
    case OpFamily::Select:
    case OpFamily::Convert:
      out.push_back(eval_elementwise(node, args));
      break;
    case OpFamily::IndexMap:
    case OpFamily::PutSlice:
      out.push_back(eval_shape(node, args));
      break;
    case OpFamily::Gather:
      out.push_back(eval_gather(node, args));
      break;
    case OpFamily::Scatter:
      out.push_back(eval_indexed(node, args));
      break;
    case OpFamily::Reduction:
    case OpFamily::ArgReduction:
      out.push_back(eval_reduce(node, args));
      break;
    case OpFamily::Scan:
      out.push_back(eval_scan(node, args));
      break;
    case OpFamily::Sort:
      out.push_back(eval_sort(node, args));
      break;
    case OpFamily::Dot:
      out.push_back(eval_dot(node, args));
      break;
    case OpFamily::Attention:
      out = run_attention(node, args, o);
      break;
    case OpFamily::Tuple: {
      const int64_t i = node.attrs.value("index", int64_t(-1));
      if (i < 0 || size_t(i) >= args.size())
        throw IrError(node, "index " + std::to_string(i) + " out of range for a tuple of " + std::to_string(args.size()));
      out.push_back(*args[i]);
      break;
    }
    case OpFamily::Control:
      out = node.op == "while" ? run_while(node, args, o) : run_cond(node, args, o);
      break;
    case OpFamily::Metadata:
      check_arity(node, args, 1);
      out.push_back(*args[0]);
      break;
    case OpFamily::Kernel:
      out = run_region(node, "body", args, o);
      break;
    case OpFamily::Repeat:
      out = run_repeat(node, args, o);
      break;
    case OpFamily::Unknown:
      throw IrError(node, "unknown op");
  }
  return out;
}

std::string results_string(const Node& n) {
  std::string s;
  for (const auto& r : n.results) s += (s.empty() ? "" : ", ") + to_string(r) + " (" + std::to_string(r.byte_size()) + " bytes)";
  return s;
}

// For `elem`, `args` are the parts of the tuple it reads.
std::vector<Literal> evaluate_checked(const Node& node, const Args& args, const InterpretOptions& o) {
  std::vector<Literal> out;
  try {
    out = evaluate(node, args, o);
  } catch (const nlohmann::json::exception& e) {  // an attribute of the wrong kind
    throw IrError(node, std::string("bad attrs: ") + e.what());
  } catch (const std::bad_alloc&) {
    throw IrError(node, "out of host memory for its result(s) " + results_string(node));
  } catch (const std::length_error&) {
    throw IrError(node, "its result(s) " + results_string(node) + " exceed the host's largest allocation");
  }
  if (out.size() != node.results.size())
    throw IrError(node, "produced " + std::to_string(out.size()) + " value(s), the node states " + std::to_string(node.results.size()));
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i].type != node.results[i])
      throw IrError(node, "result " + std::to_string(i) + " is " + to_string(out[i].type) + ", the node states " + to_string(node.results[i]));
  return out;
}
}  // namespace

std::vector<Literal> interpret_node(const Node& node, const std::vector<const Literal*>& args) {
  return evaluate_checked(node, args, {});
}

}  // namespace nxv::ir
