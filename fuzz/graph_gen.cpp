// The random graph and input generator of graph_gen.h. Each op is built with the type and
// shape rules of docs/ir.md so that the graph verifies; the verifier checks it anyway.
#include "fuzz/graph_gen.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "ir/literal.h"
#include "ir/verify.h"

namespace nxv::fuzz {

namespace {
using ir::DType;
using ir::Shape;
using ir::TensorType;
using nlohmann::json;

struct Value {
  ir::NodeId id;
  TensorType type;
};

int64_t int_max(DType t) {
  const int bits = ir::dtype_bits(t);
  if (ir::is_signed_int(t)) return bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t(1) << (bits - 1)) - 1;
  return bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t(1) << bits) - 1;
}
int64_t int_min(DType t) { return ir::is_signed_int(t) ? -int_max(t) - 1 : 0; }

Shape reduce_shape(const Shape& s, const std::vector<int64_t>& axes, bool keep) {
  Shape out;
  for (size_t k = 0; k < s.size(); ++k) {
    if (!std::count(axes.begin(), axes.end(), int64_t(k))) out.push_back(s[k]);
    else if (keep) out.push_back(1);
  }
  return out;
}

class Generator {
 public:
  Generator(uint64_t seed, const GenOptions& opts, int depth = 0) : rng_(seed), opts_(opts), depth_(depth) {}

  ir::Graph run() {
    g_.name = "gen";
    const int sources = 1 + int(below(3));
    for (int i = 0; i < sources; ++i) source(TensorType{dtype(), shape()});
    const int ops = 1 + int(below(uint64_t(opts_.max_ops)));
    for (int i = 0; i < ops; ++i) step();
    g_.outputs.push_back(pool_.back().id);
    for (int extra = int(below(3)); extra > 0; --extra) {
      ir::NodeId id = pick(pool_).id;
      if (std::find(g_.outputs.begin(), g_.outputs.end(), id) == g_.outputs.end()) g_.outputs.push_back(id);
    }
    g_.reindex();
    ir::verify(g_);
    return g_;
  }

 private:
  std::mt19937_64 rng_;
  const GenOptions& opts_;
  ir::Graph g_;
  std::vector<Value> pool_;
  int64_t params_ = 0;
  // Regions nested around this graph: a region's parameters are its op's operands, so its
  // sources are literals, and loops nest at most two deep.
  int depth_ = 0;

  uint64_t below(uint64_t n) { return n ? rng_() % n : 0; }
  bool chance(int percent) { return below(100) < uint64_t(percent); }
  template <class T>
  const T& pick(const std::vector<T>& v) { return v[below(v.size())]; }

  DType dtype() { return chance(40) ? DType::F32 : pick(opts_.dtypes); }
  DType float_dtype() {
    std::vector<DType> floats;
    for (DType t : opts_.dtypes)
      if (ir::is_float(t)) floats.push_back(t);
    return floats.empty() ? DType::F32 : pick(floats);
  }

  // Ranks 0-4 of short dimensions (0 now and then), or one long dimension.
  Shape shape() {
    if (chance(10)) {
      const int64_t n = std::min<int64_t>(opts_.max_elements, pick(std::vector<int64_t>{257, 4099, 65537, 1 << 20}));
      return chance(50) ? Shape{n} : Shape{1, n};
    }
    static const std::vector<int64_t> dims = {1, 1, 2, 3, 4, 5, 8, 17, 64};
    Shape s;
    for (int r = int(below(5)); r > 0; --r) s.push_back(chance(4) ? 0 : pick(dims));
    while (!fits(s)) s.pop_back();
    return s;
  }
  bool fits(const Shape& s) const {
    int64_t n = 1;
    for (int64_t d : s)
      if (__builtin_mul_overflow(n, d, &n)) return false;
    return n <= opts_.max_elements;
  }

  Value add(const std::string& op, std::vector<ir::NodeId> args, TensorType type, json attrs = json::object()) {
    ir::Node n;
    n.id = ir::NodeId(g_.nodes.size());
    n.op = op;
    n.args = std::move(args);
    n.results = {type};
    n.attrs = std::move(attrs);
    g_.nodes.push_back(std::move(n));
    pool_.push_back({g_.nodes.back().id, type});
    return pool_.back();
  }

  // A value recently made, more often than an old one: chains get deep.
  Value operand() { return chance(60) ? pool_.back() : pick(pool_); }

  json special(DType t) {
    if (ir::is_float(t)) {
      std::vector<json> v = {0.0, "-0.0", 1.0, -1.0, 0.5, -2.5, "nan", "inf", "-inf", 3.0e38, 65504.0, 1.0e-30};
      if (t == DType::F64) v.push_back(1.0e300);
      if (!opts_.flushes.count(t)) v.push_back(t == DType::F64 ? 1.0e-310 : t == DType::F16 ? 1.0e-6 : 1.0e-40);
      return pick(v);
    }
    const std::vector<int64_t> v = {0, 1, 2, 7, int_max(t), int_min(t), int_max(t) - 1};
    int64_t x = pick(v);
    if (ir::is_signed_int(t) && chance(30)) x = -std::min<int64_t>(int_max(t), 1 + int64_t(below(9)));
    return x;
  }

  Value constant(TensorType t) { return add("constant", {}, t, {{"value", special(t.dtype)}}); }

  Value source(TensorType t) {
    if (t.shape.size() >= 2 && chance(5)) return add("eye", {}, t);
    switch (below(6)) {
      case 0: return constant(t);
      case 1:
        return add("iota", {}, t, {{"axis", t.shape.empty() || chance(30) ? json(nullptr) : json(below(t.shape.size()))}});
      case 2:
        if (t.num_elements() <= 64) {
          json data = json::array();
          for (int64_t i = 0; i < t.num_elements(); ++i) data.push_back(special(t.dtype));
          return add("tensor", {}, t, {{"data", data}});
        }
        [[fallthrough]];
      default:
        if (depth_ > 0) return constant(t);
        return add("parameter", {}, t, {{"index", params_++}});
    }
  }

  // A value that broadcasts with `a`: one of its shape from the pool, a scalar, or a new
  // source with some of its axes 1.
  Value partner(const Value& a, DType t) {
    std::vector<Value> same;
    for (const auto& v : pool_)
      if (v.type.shape == a.type.shape && v.type.dtype == t) same.push_back(v);
    if (!same.empty() && chance(50)) return pick(same);
    if (chance(30)) return constant(TensorType{t, {}});
    Shape s = a.type.shape;
    for (auto& d : s)
      if (chance(30)) d = 1;
    if (!s.empty() && chance(20)) s.erase(s.begin());
    return source(TensorType{t, s});
  }

  DType integer_or(DType t) { return ir::is_integer(t) ? t : DType::S32; }

  Shape broadcast(const Shape& a, const Shape& b) {
    Shape out = a.size() >= b.size() ? a : b;
    const Shape& small = a.size() >= b.size() ? b : a;
    for (size_t k = 0; k < small.size(); ++k) {
      int64_t& o = out[out.size() - small.size() + k];
      if (o == 1) o = small[k];
    }
    return out;
  }

  void elementwise_unary(const Value& x) {
    static const std::vector<std::string> floats = {"exp", "expm1", "log", "log1p", "sigmoid", "cos", "sin", "tan",
                                                    "cosh", "sinh", "tanh", "acos", "asin", "atan", "acosh", "asinh",
                                                    "atanh", "sqrt", "rsqrt", "cbrt", "erf", "erfc", "erf_inv"};
    static const std::vector<std::string> same = {"negate", "abs", "sign", "floor", "ceil", "round"};
    static const std::vector<std::string> ints = {"bitwise_not", "population_count", "count_leading_zeros"};
    static const std::vector<std::string> preds = {"is_nan", "is_infinity", "logical_not"};
    switch (below(4)) {
      case 0: {
        const std::string op = pick(floats);
        Value arg = x;
        // sin, cos and tan are accurate only below 2^20·π/2 (docs/ir.md) and beyond it stay
        // in range: their argument is clipped there, NaN passing through.
        if (op == "sin" || op == "cos" || op == "tan") {
          const DType ft = ir::to_floating(x.type.dtype);
          if (!ir::is_float(x.type.dtype)) arg = add("as_type", {x.id}, {ft, x.type.shape});
          const Value lo = add("constant", {}, {ft, {}}, {{"value", -1.0e5}});
          const Value hi = add("constant", {}, {ft, {}}, {{"value", 1.0e5}});
          arg = add("clip", {arg.id, lo.id, hi.id}, arg.type);
        }
        add(op, {arg.id}, {ir::to_floating(x.type.dtype), x.type.shape});
        break;
      }
      case 1: add(pick(same), {x.id}, x.type); break;
      case 2:
        if (ir::is_integer(x.type.dtype)) {
          add(pick(ints), {x.id}, x.type);
          break;
        }
        [[fallthrough]];
      default: add(pick(preds), {x.id}, {DType::U8, x.type.shape});
    }
  }

  void elementwise_binary(const Value& a) {
    static const std::vector<std::string> arith = {"add", "subtract", "multiply", "divide", "pow", "remainder",
                                                   "atan2", "max", "min"};
    static const std::vector<std::string> ints = {"quotient", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
                                                  "right_shift"};
    static const std::vector<std::string> compares = {"equal", "not_equal", "greater", "less", "less_equal",
                                                      "greater_equal", "logical_and", "logical_or", "logical_xor"};
    const int kind = int(below(3));
    const DType bt = kind == 1 ? integer_or(a.type.dtype) : chance(70) ? a.type.dtype : dtype();
    const Value x = kind == 1 && !ir::is_integer(a.type.dtype) ? add("as_type", {a.id}, {bt, a.type.shape}) : a;
    const Value b = partner(x, bt);
    const Shape s = broadcast(x.type.shape, b.type.shape);
    const std::vector<ir::NodeId> args = chance(50) ? std::vector<ir::NodeId>{x.id, b.id} : std::vector<ir::NodeId>{b.id, x.id};
    const DType merged = ir::merge_types(x.type.dtype, b.type.dtype);
    if (kind == 2) {
      add(pick(compares), args, {DType::U8, s});
      return;
    }
    const std::string op = kind == 1 ? pick(ints) : pick(arith);
    add(op, args, {op == "divide" || op == "atan2" ? ir::to_floating(merged) : merged, s});
  }

  void select_or_clip(const Value& a) {
    if (chance(50)) {
      const Value lo = constant({a.type.dtype, {}}), hi = constant({a.type.dtype, {}});
      add("clip", {a.id, lo.id, hi.id}, a.type);
      return;
    }
    const Value b = partner(a, chance(70) ? a.type.dtype : dtype());
    const Value pred = partner(a, DType::U8);
    const Shape s = broadcast(broadcast(a.type.shape, b.type.shape), pred.type.shape);
    add("select", {pred.id, a.id, b.id}, {ir::merge_types(a.type.dtype, b.type.dtype), s});
  }

  void convert(const Value& x) {
    if (chance(70)) {
      add("as_type", {x.id}, {dtype(), x.type.shape});
      return;
    }
    // A float's bits are reinterpreted as nothing else: the bits of a NaN (its sign, its
    // payload) are no operation's defined result (x86's fmod(0, 0) is -NaN, a GPU's +NaN).
    // Nor are integers reinterpreted as a float type the device flushes: their bits are
    // often subnormals, which such a device may read as zeros in any operation.
    std::vector<DType> same_width;
    for (DType t : opts_.dtypes)
      if (ir::dtype_bits(t) == ir::dtype_bits(x.type.dtype) && (!ir::is_float(x.type.dtype) || t == x.type.dtype) &&
          (t == x.type.dtype || !opts_.flushes.count(t)))
        same_width.push_back(t);
    add("bitcast", {x.id}, {pick(same_width), x.type.shape});
  }

  std::vector<int64_t> some_axes(size_t rank) {
    std::vector<int64_t> axes;
    for (size_t k = 0; k < rank; ++k)
      if (chance(50)) axes.push_back(int64_t(k));
    return axes;
  }

  void movement(const Value& x) {
    switch (below(8)) {
      case 0: {
        Shape out{x.type.num_elements()};
        if (chance(50)) out.insert(out.begin(), 1);
        add("reshape", {x.id}, {x.type.dtype, out});
        return;
      }
      case 1: return transpose_of(x);
      case 2: add("reverse", {x.id}, x.type, {{"axes", some_axes(x.type.shape.size())}}); return;
      case 3: return slice_of(x);
      case 4: return broadcast_of(x);
      case 5: return concatenate_of(x);
      case 6: return pad_of(x);
      default: return squeeze_of(x);
    }
  }

  void transpose_of(const Value& x) {
    const Shape& s = x.type.shape;
    const size_t r = s.size();
    std::vector<int64_t> perm(r);
    for (size_t k = 0; k < r; ++k) perm[k] = int64_t(k);
    std::shuffle(perm.begin(), perm.end(), rng_);
    Shape out;
    for (int64_t p : perm) out.push_back(s[size_t(p)]);
    add("transpose", {x.id}, {x.type.dtype, out}, {{"axes", perm}});
  }

  void slice_of(const Value& x) {
    const Shape& s = x.type.shape;
    std::vector<int64_t> start, lengths, strides;
    Shape out;
    for (int64_t d : s) {
      start.push_back(int64_t(below(uint64_t(d) + 1)));
      lengths.push_back(int64_t(below(uint64_t(d - start.back()) + 1)));
      strides.push_back(1 + int64_t(below(3)));
      out.push_back((lengths.back() + strides.back() - 1) / strides.back());
    }
    add("slice", {x.id}, {x.type.dtype, out}, {{"start", start}, {"lengths", lengths}, {"strides", strides}});
  }

  void broadcast_of(const Value& x) {
    const Shape& s = x.type.shape;
    const size_t r = s.size();
    Shape out = s;
    std::vector<int64_t> axes;
    for (size_t k = 0; k < r; ++k) {
      axes.push_back(int64_t(k) + 1);
      if (out[k] == 1 && chance(50)) out[k] = 1 + int64_t(below(4));
    }
    out.insert(out.begin(), 1 + int64_t(below(3)));
    if (!fits(out)) return;
    add("broadcast", {x.id}, {x.type.dtype, out}, {{"shape", out}, {"axes", axes}});
  }

  void concatenate_of(const Value& x) {
    const Shape& s = x.type.shape;
    const size_t r = s.size();
    if (r == 0) return;
    const size_t axis = below(r);
    Shape out = s;
    out[axis] *= 2;
    if (!fits(out)) return;
    add("concatenate", {x.id, x.id}, {x.type.dtype, out}, {{"axis", axis}});
  }

  void pad_of(const Value& x) {
    const Shape& s = x.type.shape;
    json config = json::array();
    Shape out;
    for (int64_t d : s) {
      int64_t lo = int64_t(below(4)) - 1, hi = int64_t(below(4)) - 1, interior = int64_t(below(2));
      const int64_t size = lo + hi + d + std::max<int64_t>(d - 1, 0) * interior;
      if (size < 0) lo = hi = 0;
      config.push_back({lo, hi, interior});
      out.push_back(lo + hi + d + std::max<int64_t>(d - 1, 0) * interior);
    }
    if (!fits(out)) return;
    const Value value = constant({x.type.dtype, {}});
    add("pad", {x.id, value.id}, {x.type.dtype, out}, {{"config", config}});
  }

  void squeeze_of(const Value& x) {
    const Shape& s = x.type.shape;
    const size_t r = s.size();
    std::vector<int64_t> axes;
    Shape out;
    for (size_t k = 0; k < r; ++k) {
      if (s[k] == 1 && chance(70)) axes.push_back(int64_t(k));
      else out.push_back(s[k]);
    }
    add("squeeze", {x.id}, {x.type.dtype, out}, {{"axes", axes}});
  }

  void reduction(const Value& x) {
    static const std::vector<std::string> ops = {"sum", "product", "reduce_max", "reduce_min", "all", "any"};
    const size_t r = x.type.shape.size();
    if (chance(25)) {
      const bool all = r == 0 || chance(30);
      const bool keep = chance(50);
      std::vector<int64_t> axes;
      if (all) for (size_t k = 0; k < r; ++k) axes.push_back(int64_t(k));
      else axes.push_back(int64_t(below(r)));
      // The device rejects argmax/argmin over nothing (an IrError naming the node), where the
      // interpreter answers 0: not generated.
      for (int64_t k : axes)
        if (x.type.shape[size_t(k)] == 0) return;
      json attrs = {{"axis", all ? json(nullptr) : json(axes[0])}, {"keep_axis", keep},
                    {"tie_break", chance(50) ? "low" : "high"}};
      add(chance(50) ? "argmax" : "argmin", {x.id}, {chance(70) ? DType::S64 : DType::S32, reduce_shape(x.type.shape, axes, keep)},
          attrs);
      return;
    }
    const std::string op = pick(ops);
    const bool all = chance(30);
    const bool keep = chance(40);
    std::vector<int64_t> axes = some_axes(r);
    if (all) {
      axes.clear();
      for (size_t k = 0; k < r; ++k) axes.push_back(int64_t(k));
    }
    DType t = x.type.dtype;
    if (op == "all" || op == "any") t = DType::U8;
    else if (op == "sum" || op == "product")
      t = ir::is_signed_int(t) ? DType::S64 : ir::is_unsigned_int(t) ? DType::U64 : t;
    add(op, {x.id}, {t, reduce_shape(x.type.shape, axes, keep)},
        {{"axes", all ? json(nullptr) : json(axes)}, {"keep_axes", keep}});
  }

  // a's axis c contracted with a new b's, and now and then another axis of a batched with b's
  // leading one.
  void dot(const Value& a) {
    const size_t r = a.type.shape.size();
    if (r == 0) return;
    const size_t c = below(r);
    const int64_t n = pick(std::vector<int64_t>{1, 2, 3, 5, 16});
    std::vector<int64_t> batch;
    if (r >= 2 && chance(30)) batch.push_back(int64_t((c + 1 + below(r - 1)) % r));
    Shape bshape{a.type.shape[c], n};
    Shape out;
    if (!batch.empty()) {
      bshape.insert(bshape.begin(), a.type.shape[size_t(batch[0])]);
      out.push_back(bshape[0]);
    }
    for (size_t k = 0; k < r; ++k)
      if (k != c && (batch.empty() || int64_t(k) != batch[0])) out.push_back(a.type.shape[k]);
    out.push_back(n);
    if (!fits(out) || !fits(bshape)) return;
    const Value b = source({chance(70) ? a.type.dtype : dtype(), bshape});
    const json batch2 = batch.empty() ? json::array() : json::array({0});
    add("dot", {a.id, b.id}, {ir::merge_types(a.type.dtype, b.type.dtype), out},
        {{"contract_axes1", {c}}, {"batch_axes1", batch}, {"contract_axes2", {batch.empty() ? 0 : 1}}, {"batch_axes2", batch2}});
  }

  // An integer type the device computes in, for indices and dynamic starts.
  DType index_dtype() {
    std::vector<DType> ints;
    for (DType t : opts_.dtypes)
      if (ir::is_integer(t)) ints.push_back(t);
    return ints.empty() ? DType::S32 : pick(ints);
  }

  // Index values of type t aimed at axes of `extents` (one per component, the last axis of
  // `shape`): mostly in range, now and then one past either end or an extreme, which gather
  // clamps and the indexed updates skip.
  Value indices(const Shape& shape, const std::vector<int64_t>& extents, DType t) {
    const TensorType type{t, shape};
    if (type.num_elements() > 256) return source(type);
    json data = json::array();
    for (int64_t i = 0; i < type.num_elements(); ++i) {
      const int64_t extent = extents[size_t(i) % extents.size()];
      int64_t v = chance(85) ? int64_t(below(uint64_t(std::max<int64_t>(extent, 1))))
                  : pick(std::vector<int64_t>{-1, extent, int_max(t), int_min(t)});
      data.push_back(std::clamp(v, int_min(t), int_max(t)));
    }
    return add("tensor", {}, type, {{"data", data}});
  }

  // `depth` distinct axes of a rank-r operand, increasing.
  std::vector<int64_t> indexed_axes_of(size_t r, size_t depth) {
    std::vector<int64_t> axes(r);
    for (size_t k = 0; k < r; ++k) axes[k] = int64_t(k);
    if (chance(60)) std::shuffle(axes.begin(), axes.end(), rng_);
    axes.resize(depth);
    std::sort(axes.begin(), axes.end());
    return axes;
  }

  // The attrs naming `axes`; now and then none where they are the leading ones (the default).
  json axes_attrs(const std::vector<int64_t>& axes) {
    const bool leading = axes.back() == int64_t(axes.size()) - 1;
    return leading && chance(50) ? json::object() : json{{"axes", axes}};
  }

  // softmax(q·kᵀ [scaled] [+ bias] [masked or causal])·v as one node, q a float x of rank 2
  // or more (its last two axes the queries and the head dim), the rest new sources.
  void attention_of(const Value& q) {
    const Shape& s = q.type.shape;
    if (!ir::is_float(q.type.dtype) || s.size() < 2) return;
    const DType t = q.type.dtype;
    const Shape batch(s.begin(), s.end() - 2);
    const int64_t sq = s[s.size() - 2], d = s.back();
    const int64_t sk = pick(std::vector<int64_t>{1, 2, 3, 5, 17, 64}), dv = pick(std::vector<int64_t>{1, 3, 8, 16});
    auto with = [&](std::initializer_list<int64_t> tail) {
      Shape r = batch;
      r.insert(r.end(), tail);
      return r;
    };
    const Shape ks = with({sk, d}), vs = with({sk, dv}), out = with({sq, dv});
    if (!fits(ks) || !fits(vs) || !fits(out) || !fits(with({sq, sk}))) return;
    std::vector<ir::NodeId> args = {q.id, source({t, ks}).id, source({t, vs}).id};
    json attrs = json::object();
    if (chance(60)) {
      attrs["scale"] = pick(std::vector<double>{8.0, 0.125, 1.0, 11.3137});
      attrs["scale_op"] = chance(50) ? "multiply" : "divide";
    }
    // A mask or bias of the scores' shape, or of their last axis alone (broadcast).
    auto scores_like = [&](DType mt) { return source({mt, chance(50) ? with({sq, sk}) : Shape{1, sk}}); };
    if (chance(30)) attrs["causal"] = int64_t(below(5)) - 2;
    else if (chance(40)) attrs["mask"] = true, args.push_back(scores_like(DType::U8).id);
    if (chance(30)) attrs["bias"] = true, args.push_back(scores_like(t).id);
    if (attrs.contains("causal") || attrs.contains("mask"))
      attrs["masked"] = pick(std::vector<json>{"-inf", "-inf", -1.0e4, "nan", "-0.0"});
    add("attention", args, {t, out}, attrs);
  }

  // The families whose kernels are neither elementwise nor reductions.
  void structured(const Value& x) {
    if (chance(15)) return attention_of(x);
    switch (below(6)) {
      case 0: return scan_of(x);
      case 1: return sort_of(x);
      case 2: return gather_of(x);
      case 3: return indexed_of(x);
      case 4: return put_slice_of(x);
      default: return stack_of(x);
    }
  }

  void scan_of(const Value& x) {
    if (x.type.shape.empty()) return;
    static const std::vector<std::string> ops = {"cumulative_sum", "cumulative_product", "cumulative_min",
                                                 "cumulative_max"};
    add(pick(ops), {x.id}, x.type, {{"axis", below(x.type.shape.size())}, {"reverse", chance(50)}});
  }

  void sort_of(const Value& x) {
    if (x.type.shape.empty()) return;
    add("argsort", {x.id}, {chance(70) ? DType::S64 : DType::S32, x.type.shape},
        {{"axis", below(x.type.shape.size())}, {"direction", chance(50) ? "asc" : "desc"}});
  }

  void gather_of(const Value& x) {
    const Shape& s = x.type.shape;
    if (s.empty()) return;
    const auto axes = indexed_axes_of(s.size(), 1 + below(s.size()));
    Shape ishape;
    for (int r = int(below(3)); r > 0; --r) ishape.push_back(pick(std::vector<int64_t>{1, 2, 3, 7, 16}));
    ishape.push_back(int64_t(axes.size()));
    Shape out(ishape.begin(), ishape.end() - 1);
    std::vector<int64_t> extents;
    for (size_t k = 0; k < s.size(); ++k) {
      if (std::count(axes.begin(), axes.end(), int64_t(k))) extents.push_back(s[k]);
      else out.push_back(s[k]);
    }
    if (!fits(out) || !fits(ishape)) return;
    // The verifier rejects a gather from an empty axis (there is nothing to clamp to).
    for (int64_t k : axes)
      if (s[size_t(k)] == 0 && TensorType{x.type.dtype, out}.num_elements() > 0) return;
    const Value idx = indices(ishape, extents, index_dtype());
    add("gather", {x.id, idx.id}, {x.type.dtype, out}, axes_attrs(axes));
  }

  void indexed_of(const Value& target) {
    const Shape& s = target.type.shape;
    if (s.empty()) return;
    const auto axes = indexed_axes_of(s.size(), 1 + below(s.size()));
    const int64_t count = pick(std::vector<int64_t>{0, 1, 2, 5, 17});
    Shape ushape{count};
    std::vector<int64_t> extents;
    for (size_t k = 0; k < s.size(); ++k) {
      if (std::count(axes.begin(), axes.end(), int64_t(k))) extents.push_back(s[k]);
      else ushape.push_back(chance(60) ? s[k] : int64_t(below(uint64_t(s[k]) + 1)));
    }
    if (!fits(ushape)) return;
    const Value idx = indices({count, int64_t(axes.size())}, extents, index_dtype());
    const Value updates = source({chance(70) ? target.type.dtype : dtype(), ushape});
    add(chance(50) ? "indexed_add" : "indexed_put", {target.id, idx.id, updates.id},
        {ir::merge_types(target.type.dtype, updates.type.dtype), s}, axes_attrs(axes));
  }

  void put_slice_of(const Value& x) {
    const Shape& s = x.type.shape;
    Shape us;
    for (int64_t d : s) us.push_back(chance(40) ? d : int64_t(below(uint64_t(d) + 1)));
    const Value update = source({chance(70) ? x.type.dtype : dtype(), us});
    std::vector<ir::NodeId> args = {x.id, update.id};
    json start = json::array();
    for (size_t k = 0; k < s.size(); ++k) {
      if (chance(40)) {  // dynamic, clamped to [0, dim - length] like Nx
        const DType t = index_dtype();
        json v = special(t);
        if (chance(60)) v = std::min<int64_t>(int64_t(below(uint64_t(s[k]) + 2)), int_max(t));
        args.push_back(add("constant", {}, {t, {}}, {{"value", v}}).id);
        start.push_back({{"arg", args.size() - 1}});
      } else {
        start.push_back(below(uint64_t(s[k] - us[k]) + 1));
      }
    }
    add("put_slice", args, {ir::merge_types(x.type.dtype, update.type.dtype), s}, {{"start", start}});
  }

  void stack_of(const Value& x) {
    std::vector<ir::NodeId> args = {x.id};
    for (const auto& v : pool_)
      if (v.id != x.id && v.type == x.type && chance(50) && args.size() < 4) args.push_back(v.id);
    if (chance(30)) args.push_back(x.id);
    Shape out = x.type.shape;
    const size_t axis = below(out.size() + 1);
    out.insert(out.begin() + int64_t(axis), int64_t(args.size()));
    if (!fits(out)) return;
    add("stack", args, {x.type.dtype, out}, {{"axis", axis}});
  }

  // A region over `types`: its parameters, `steps` random ops, and as outputs, for each
  // of `outputs`, a value of that type (a parameter where no op made one).
  ir::Graph region(const std::vector<TensorType>& types, int steps, const std::vector<TensorType>& outputs) {
    g_.name = "region";
    for (size_t i = 0; i < types.size(); ++i) add("parameter", {}, types[i], {{"index", i}});
    for (int i = 0; i < steps; ++i) step();
    for (const auto& t : outputs) g_.outputs.push_back(of_type(t).id);
    g_.reindex();
    return g_;
  }

  // A value of type t, recent ones first; the parameter of that type, or a literal.
  Value of_type(const TensorType& t) {
    for (auto it = pool_.rbegin(); it != pool_.rend(); ++it)
      if (it->type == t && chance(70)) return *it;
    for (const auto& v : pool_)
      if (v.type == t) return v;
    return constant(t);
  }

  std::shared_ptr<ir::Graph> nested(const std::vector<TensorType>& types, int steps, const std::vector<TensorType>& outputs) {
    return std::make_shared<ir::Graph>(Generator(rng_(), opts_, depth_ + 1).region(types, steps, outputs));
  }

  // A while loop over a counter and x (and now and then another value), running 0-3 times:
  // its body is random ops that give the state back in its own types.
  void while_of(const Value& x) {
    if (depth_ >= 2) return;
    const TensorType counter{DType::S32, {}};
    const Value start = add("constant", {}, counter, {{"value", int64_t(below(3))}});
    std::vector<ir::NodeId> args = {start.id, x.id};
    std::vector<TensorType> state = {counter, x.type};
    if (chance(40)) {
      const Value y = pick(pool_);
      args.push_back(y.id);
      state.push_back(y.type);
    }
    const int64_t trips = int64_t(below(4));
    ir::Node n;
    n.id = ir::NodeId(g_.nodes.size());
    n.op = "while";
    n.args = args;
    n.results = state;
    {
      Generator c(rng_(), opts_, depth_ + 1);
      c.g_.name = "condition";
      for (size_t i = 0; i < state.size(); ++i) c.add("parameter", {}, state[i], {{"index", i}});
      const Value limit = c.add("constant", {}, counter, {{"value", trips}});
      c.g_.outputs.push_back(c.add("less", {0, limit.id}, {DType::U8, {}}).id);
      c.g_.reindex();
      n.regions["condition"] = std::make_shared<ir::Graph>(c.g_);
    }
    {
      Generator b(rng_(), opts_, depth_ + 1);
      std::vector<TensorType> rest(state.begin() + 1, state.end());
      ir::Graph body = b.region(state, 1 + int(below(5)), rest);
      // The counter steps by one, ahead of the rest of the outputs.
      ir::NodeId next = body.next_id();
      const ir::NodeId one = ir::append_node(body.nodes, next, "constant", {}, counter.dtype, {}, {{"value", 1}});
      body.outputs.insert(body.outputs.begin(), ir::append_node(body.nodes, next, "add", {0, one}, counter.dtype, {}));
      body.reindex();
      n.regions["body"] = std::make_shared<ir::Graph>(std::move(body));
    }
    g_.nodes.push_back(std::move(n));
    const ir::NodeId loop = g_.nodes.back().id;
    for (size_t i = 1; i < state.size(); ++i) add("elem", {loop}, state[i], {{"index", i}});
  }

  // cond on a scalar test of x: two branches over x (and maybe another value), each giving
  // a value of x's type.
  void cond_of(const Value& x) {
    if (depth_ >= 2) return;
    Value pred = x;
    if (!x.type.shape.empty()) pred = add(chance(50) ? "any" : "all", {x.id}, {DType::U8, {}}, {{"axes", nullptr}, {"keep_axes", false}});
    else if (x.type.dtype != DType::U8) pred = add("greater", {x.id, constant({x.type.dtype, {}}).id}, {DType::U8, {}});
    std::vector<ir::NodeId> args = {pred.id, x.id};
    std::vector<TensorType> captured = {x.type};
    if (chance(50)) {
      const Value y = pick(pool_);
      args.push_back(y.id);
      captured.push_back(y.type);
    }
    ir::Node n;
    n.id = ir::NodeId(g_.nodes.size());
    n.op = "cond";
    n.args = args;
    n.results = {x.type};
    for (const char* branch : {"branch0", "branch1"}) n.regions[branch] = nested(captured, int(below(5)), {x.type});
    g_.nodes.push_back(std::move(n));
    add("elem", {g_.nodes.back().id}, x.type, {{"index", 0}});
  }

  void step() {
    const Value x = operand();
    if (chance(depth_ ? 2 : 4)) return chance(60) ? while_of(x) : cond_of(x);
    switch (below(11)) {
      case 0: case 1: elementwise_unary(x); break;
      case 2: case 3: case 4: elementwise_binary(x); break;
      case 5: select_or_clip(x); break;
      case 6: convert(x); break;
      case 7: movement(x); break;
      case 8: reduction(x); break;
      case 9: structured(x); break;
      default: dot(x);
    }
  }
};

ir::Scalar edge_or_random(DType t, std::mt19937_64& rng, const GenOptions& opts, int64_t k) {
  ir::Scalar v;
  if (ir::is_float(t)) {
    std::vector<double> edges = {0.0, -0.0, 1.0, -1.0, 0.5, -2.5, INFINITY, -INFINITY, NAN, 3.0e38, 65504.0, -7.75};
    if (!opts.flushes.count(t)) edges.push_back(t == DType::F64 ? 1e-310 : t == DType::F16 ? 1e-6 : 1e-40);
    if (k < int64_t(edges.size()) * 2 && rng() % 2) {
      v.f = edges[rng() % edges.size()];
    } else {
      // Mostly moderate magnitudes, now and then very large or very small ones.
      const int exponent = rng() % 8 ? int(rng() % 7) - 3 : int(rng() % 80) - 40;
      v.f = std::ldexp(double(int64_t(rng() % 2001) - 1000) / 1000.0, exponent * 3);
      if (opts.flushes.count(t) && v.f != 0 && std::fabs(v.f) < ir::smallest_normal(t)) v.f = 0;
    }
    return v;
  }
  v.is_integer = true;
  const std::vector<int64_t> edges = {0, 1, -1, int_max(t), int_min(t), 2, -7, int_max(t) - 1, int_min(t) + 1, 3};
  if (k < int64_t(edges.size()) * 2 && rng() % 2) v.i = edges[rng() % edges.size()];
  else v.i = rng() % 4 ? int64_t(rng() % 201) - 100 : int64_t(rng());
  return v;
}

}  // namespace

void fit_to_device(GenOptions& opts, const codegen::DeviceCaps& caps) {
  std::vector<DType> kept;
  for (DType t : opts.dtypes) {
    if (t == DType::F64 && !caps.float64) continue;
    if ((t == DType::S64 || t == DType::U64) && !caps.int64) continue;
    kept.push_back(t);
  }
  opts.dtypes = kept;
  if (!caps.preserve_denorms_f32) opts.flushes.insert({DType::F32, DType::BF16});
  if (!caps.preserve_denorms_f64) opts.flushes.insert(DType::F64);
}

ir::Graph generate_graph(uint64_t seed, const GenOptions& opts) { return Generator(seed, opts).run(); }

std::vector<ir::Literal> generate_inputs(const ir::Graph& g, uint64_t seed, const GenOptions& opts) {
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
  std::vector<ir::Literal> inputs;
  for (const ir::Node* p : g.parameters()) {
    const TensorType& t = p->type();
    ir::Literal lit{t, std::vector<uint8_t>(size_t(t.byte_size()))};
    for (int64_t k = 0; k < t.num_elements(); ++k) ir::set_element(lit, k, edge_or_random(t.dtype, rng, opts, k));
    inputs.push_back(std::move(lit));
  }
  return inputs;
}

}  // namespace nxv::fuzz
