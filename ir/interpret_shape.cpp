// Sources and the data-movement ops: each output element is read from one operand element
// (or is padding), so every op here is a walk over the output with operand strides.
#include <algorithm>

#include "ir/interpret_internal.h"

namespace nxv::ir::interp {
namespace {

// attrs.axis, which must be below `limit`.
int64_t axis_attr(const Node& n, size_t limit) {
  if (!n.attrs.contains("axis") || !n.attrs["axis"].is_number_integer()) throw IrError(n, "attrs.axis must be an integer");
  const int64_t a = n.attrs["axis"].get<int64_t>();
  if (a < 0 || size_t(a) >= limit) throw IrError(n, "axis " + std::to_string(a) + " out of range");
  return a;
}

void expect_shape(const Node& n, const Shape& s) {
  if (n.type().shape != s) throw IrError(n, "the operands give shape " + to_string(TensorType{n.type().dtype, s}) + ", the node states " + to_string(n.type()));
}

// Start k of a slice or put_slice, clamped as Nx clamps it to [0, dim - length].
int64_t start_at(const Node& n, const Args& args, size_t k, int64_t dim, int64_t length) {
  const auto& starts = n.attrs.contains("start") ? n.attrs["start"] : nlohmann::json();
  if (!starts.is_array() || k >= starts.size()) throw IrError(n, "attrs.start must have one entry per axis");
  const auto& s = starts[k];
  int64_t v;
  if (s.is_number_integer()) {
    v = s.get<int64_t>();
  } else if (s.is_object() && s.contains("arg") && s["arg"].is_number_integer()) {
    const int64_t a = s["arg"].get<int64_t>();
    const int64_t element = s.contains("element") && s["element"].is_number_integer() ? s["element"].get<int64_t>() : 0;
    if (a < 0 || size_t(a) >= args.size() || element < 0 || element >= args[a]->type.num_elements() ||
        !is_integer(args[a]->type.dtype))
      throw IrError(n, "start " + s.dump() + " does not name an integer argument's element");
    v = index_at(*args[a], element);
  } else {
    throw IrError(n, "a start must be an integer or {\"arg\": k}, got " + s.dump());
  }
  return std::clamp<int64_t>(v, 0, dim - length);
}

Literal slice(const Node& n, const Args& args) {
  if (args.empty()) throw IrError(n, "expects at least 1 argument");
  const Literal& x = *args[0];
  const Shape& in = x.type.shape;
  auto lengths = int_list(n, "lengths");
  auto steps = n.attrs.contains("strides") ? int_list(n, "strides") : std::vector<int64_t>(in.size(), 1);
  if (lengths.size() != in.size() || steps.size() != in.size()) throw IrError(n, "attrs.lengths and attrs.strides need one entry per axis");
  const auto in_st = row_major_strides(in);
  Shape out;
  std::vector<int64_t> st(in.size());
  int64_t base = 0;
  for (size_t d = 0; d < in.size(); ++d) {
    if (lengths[d] < 0 || lengths[d] > in[d] || steps[d] < 1) throw IrError(n, "bad length or stride on axis " + std::to_string(d));
    base += start_at(n, args, d, in[d], lengths[d]) * in_st[d];
    st[d] = in_st[d] * steps[d];
    out.push_back((lengths[d] + steps[d] - 1) / steps[d]);
  }
  expect_shape(n, out);
  Literal r = make_literal(n.type());
  walk(out, {row_major_strides(out), st}, [&](const auto& o) { convert_element(x, base + o[1], r, o[0]); });
  return r;
}

Literal put_slice(const Node& n, const Args& args) {
  if (args.size() < 2) throw IrError(n, "expects at least 2 arguments");
  const Shape& in = args[0]->type.shape;
  const Literal& upd = *args[1];
  expect_shape(n, in);
  if (upd.type.shape.size() != in.size()) throw IrError(n, "the update's rank differs from the tensor's");
  Literal r = convert(*args[0], n.type().dtype);
  const auto st = row_major_strides(in);
  int64_t base = 0;
  for (size_t d = 0; d < in.size(); ++d) {
    if (upd.type.shape[d] > in[d]) throw IrError(n, "update " + to_string(upd.type) + " does not fit");
    base += start_at(n, args, d, in[d], upd.type.shape[d]) * st[d];
  }
  walk(upd.type.shape, {row_major_strides(upd.type.shape), st}, [&](const auto& o) { convert_element(upd, o[0], r, base + o[1]); });
  return r;
}

Literal pad(const Node& n, const Args& args) {
  check_arity(n, args, 2);
  const Literal& x = *args[0];
  const Shape& in = x.type.shape;
  const auto& config = n.attrs.contains("config") ? n.attrs["config"] : nlohmann::json();
  if (!config.is_array() || config.size() != in.size() || args[1]->type.num_elements() != 1)
    throw IrError(n, "attrs.config needs one [low, high, interior] per axis and the value must be a scalar");
  std::vector<int64_t> lo, step;
  Shape out;
  for (size_t d = 0; d < in.size(); ++d) {
    const auto& c = config[d];
    if (!c.is_array() || c.size() != 3 || !std::all_of(c.begin(), c.end(), [](const auto& v) { return v.is_number_integer(); }) ||
        c[2].get<int64_t>() < 0) throw IrError(n, "bad attrs.config[" + std::to_string(d) + "]");
    lo.push_back(c[0].get<int64_t>());
    step.push_back(c[2].get<int64_t>() + 1);
    out.push_back(lo[d] + c[1].get<int64_t>() + in[d] + std::max<int64_t>(in[d] - 1, 0) * c[2].get<int64_t>());
  }
  expect_shape(n, out);
  Literal r = make_literal(n.type());
  const auto in_st = row_major_strides(in);
  walk(out, {row_major_strides(out)}, [&](const auto& o, const auto& idx) {
    int64_t src = 0;
    for (size_t d = 0; d < in.size(); ++d) {
      // p < 0: low padding; p off the step grid: interior padding; beyond: high padding.
      const int64_t p = idx[d] - lo[d];
      if (p < 0 || p % step[d] != 0 || p / step[d] >= in[d]) return convert_element(*args[1], 0, r, o[0]);
      src += p / step[d] * in_st[d];
    }
    convert_element(x, src, r, o[0]);
  });
  return r;
}

// concatenate, and stack as the concatenation of operands viewed with a new 1-sized axis.
Literal join(const Node& n, const Args& args) {
  if (args.empty()) throw IrError(n, "expects at least 1 argument");
  const bool stack = n.op == "stack";
  const Shape& first = args[0]->type.shape;
  const int64_t axis = axis_attr(n, stack ? first.size() + 1 : first.size());
  const Shape& out = n.type().shape;
  Literal r = make_literal(n.type());
  const auto out_st = row_major_strides(out);
  int64_t at = 0;
  for (const Literal* a : args) {
    Shape s = a->type.shape;
    auto st = row_major_strides(s);
    if (stack) {
      s.insert(s.begin() + axis, 1);
      st.insert(st.begin() + axis, 0);
    }
    if (s.size() != out.size()) throw IrError(n, "operand " + to_string(a->type) + " does not match the result " + to_string(n.type()));
    for (size_t d = 0; d < s.size(); ++d)
      if (int64_t(d) != axis && s[d] != out[d]) throw IrError(n, "operand " + to_string(a->type) + " does not match the result " + to_string(n.type()));
    if (at + s[axis] > out[axis]) throw IrError(n, "the operands do not fit in the result " + to_string(n.type()));
    const int64_t base = at * out_st[axis];
    walk(s, {st, out_st}, [&](const auto& o) { convert_element(*a, o[0], r, base + o[1]); });
    at += s[axis];
  }
  if (at != out[axis]) throw IrError(n, "the operands do not fill the result " + to_string(n.type()));
  return r;
}

}  // namespace

Literal eval_source(const Node& n) {
  if (n.op == "tensor") return literal_of(n);
  const TensorType& t = n.type();
  Literal r = make_literal(t);
  if (n.op == "constant") {
    // Written as every computed value is (a bf16 constant truncates, as Nx and the GPU do).
    Scalar v;
    try {
      v = parse_scalar(n.attrs.contains("value") ? n.attrs["value"] : nlohmann::json());
    } catch (const IrError& e) {
      throw IrError(n, e.what());
    }
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      if (is_float(t.dtype)) write_f(r, i, v.is_integer ? double(v.i) : v.f);
      else write_i(r, i, v.i);
    }
    return r;
  }
  const size_t rank = t.shape.size();
  if (n.op == "eye" && rank < 2) throw IrError(n, "eye needs a rank of at least 2");
  const bool flat = n.op == "iota" && (!n.attrs.contains("axis") || n.attrs["axis"].is_null());
  const int64_t axis = n.op == "iota" && !flat ? axis_attr(n, rank) : 0;
  walk(t.shape, {row_major_strides(t.shape)}, [&](const auto& o, const auto& idx) {
    int64_t v = n.op == "eye" ? idx[rank - 1] == idx[rank - 2] : flat ? o[0] : idx[axis];
    Scalar s;
    s.i = v;
    s.is_integer = true;
    set_element(r, o[0], s);
  });
  return r;
}

Literal eval_shape(const Node& n, const Args& args) {
  const std::string& op = n.op;
  if (op == "slice") return slice(n, args);
  if (op == "put_slice") return put_slice(n, args);
  if (op == "pad") return pad(n, args);
  if (op == "concatenate" || op == "stack") return join(n, args);
  check_arity(n, args, 1);
  const Literal& x = *args[0];
  if (x.type.dtype != n.type().dtype) throw IrError(n, "operand " + to_string(x.type) + " does not have the result's type");
  const Shape& in = x.type.shape;
  const Shape& out = n.type().shape;
  if (op == "reshape" || op == "squeeze") {
    if (num_elements(in) != num_elements(out)) throw IrError(n, "cannot reshape " + to_string(x.type) + " to " + to_string(n.type()));
    return Literal{n.type(), x.data};
  }
  const auto in_st = row_major_strides(in);
  std::vector<int64_t> st(out.size(), 0);
  int64_t base = 0;
  if (op == "broadcast") {
    auto axes = int_list(n, "axes");
    if (axes.size() != in.size()) throw IrError(n, "attrs.axes needs one entry per axis of the operand");
    for (size_t k = 0; k < axes.size(); ++k) {
      if (axes[k] < 0 || size_t(axes[k]) >= out.size() || (in[k] != 1 && in[k] != out[axes[k]]))
        throw IrError(n, "cannot broadcast " + to_string(x.type) + " to " + to_string(n.type()));
      if (in[k] != 1) st[axes[k]] = in_st[k];
    }
  } else if (op == "transpose") {
    auto axes = int_list(n, "axes");
    if (axes.size() != in.size()) throw IrError(n, "attrs.axes must be a permutation of the operand's axes");
    Shape perm;
    for (size_t j = 0; j < axes.size(); ++j) {
      if (axes[j] < 0 || size_t(axes[j]) >= in.size() || std::count(axes.begin(), axes.end(), axes[j]) != 1)
        throw IrError(n, "attrs.axes must be a permutation of the operand's axes");
      perm.push_back(in[axes[j]]);
      st[j] = in_st[axes[j]];
    }
    expect_shape(n, perm);
  } else if (op == "reverse") {
    expect_shape(n, in);
    st = in_st;
    for (int64_t a : int_list(n, "axes")) {
      if (a < 0 || size_t(a) >= in.size() || st[a] < 0) throw IrError(n, "axis " + std::to_string(a) + " out of range or repeated");
      base += (in[a] - 1) * in_st[a];
      st[a] = -in_st[a];
    }
  } else {
    throw IrError(n, "not a data-movement op");
  }
  Literal r = make_literal(n.type());
  walk(out, {row_major_strides(out), st}, [&](const auto& o) { convert_element(x, base + o[1], r, o[0]); });
  return r;
}

}  // namespace nxv::ir::interp
