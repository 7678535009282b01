// Index arithmetic and the index-mapping ops: each computes which operand
// element (if any) an output element comes from, and reads just that.
#include <algorithm>
#include <iterator>
#include <optional>

#include "codegen/emitter.h"
#include "ir/ops.h"

namespace nxv::codegen {

using ir::DType;

namespace {
std::vector<int64_t> strides_of(const ir::Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

// Shape contracts the verifier guarantees; checked again because a violation would read out of bounds.
void require_shapes(const ir::Node& node, const ir::Node& operand, bool ok, const std::string& what) {
  if (!ok) throw ir::IrError(node, what + " (" + ir::to_string(operand.type()) + " -> " + ir::to_string(node.type()) + ")");
}

// Where each axis of `in` is the product of a run of axes of `out` (axes split, as split-K
// splits a contraction K -> [S, K / S]; axes of 1 anywhere): those runs, [first, last) of
// out's axes per axis of in. nullopt where a reshape merges axes.
std::optional<std::vector<std::pair<size_t, size_t>>> split_runs(const ir::Shape& in, const ir::Shape& out) {
  std::vector<std::pair<size_t, size_t>> runs;
  size_t j = 0;
  for (int64_t extent : in) {
    const size_t first = j;
    int64_t product = 1;
    while (j < out.size() && product < extent) product *= out[j++];
    if (product != extent) return std::nullopt;
    runs.push_back({first, j});
  }
  for (; j < out.size(); ++j)
    if (out[j] != 1) return std::nullopt;
  return runs;
}

// values[0], or values[k] for the last k whose `here[k]` holds (a concatenate's operands in
// order): a select per change of value.
Id select_by_part(spirv::Builder& b, Id u32, const std::vector<Id>& values, const std::vector<Id>& here) {
  Id r = values[0];
  for (size_t k = 1; k < values.size(); ++k)
    if (values[k] != values[k - 1]) r = b.op(spv::OpSelect, u32, {here[k], values[k], r});
  return r;
}

std::vector<int64_t> int_list(const ir::Node& node, const char* key) {
  if (!node.attrs.contains(key) || !node.attrs[key].is_array())
    throw ir::IrError(node, std::string("attrs.") + key + " must be a list of integers");
  return node.attrs[key].get<std::vector<int64_t>>();
}
}  // namespace

Index Emitter::index_from_dims(const ir::Shape& shape, std::vector<Id> d) {
  Index idx;
  idx.shape = shape;
  idx.dims = std::move(d);
  if (shape.empty()) idx.linear = u32c(0);
  return idx;
}

Id Emitter::digit(Id source, int64_t stride, int64_t extent, bool leading) {
  if (extent == 1) return u32c(0);
  Id q = stride == 1 ? source : b.op(spv::OpUDiv, u32(), {source, u32c(uint64_t(stride))});
  if (leading) {
    if (stride != 1) digits_[q] = {source, stride, 0};
    return q;
  }
  Id d = b.op(spv::OpUMod, u32(), {q, u32c(uint64_t(extent))});
  digits_[d] = {source, stride, extent};
  return d;
}

std::vector<Id> Emitter::split(Id r, const std::vector<int64_t>& extents) {
  // An empty space (a reduction over an empty axis) has no position to split: its digits are
  // never read, and their strides would be 0, a division by zero here and in the module.
  if (std::count(extents.begin(), extents.end(), 0)) return std::vector<Id>(extents.size(), u32c(0));
  std::vector<Id> out(extents.size());
  int64_t stride = 1;
  for (size_t i = extents.size(); i-- > 0;) {
    out[i] = digit(r, stride, extents[i], i == 0);
    stride *= extents[i];
  }
  return out;
}

std::vector<Id> Emitter::dims(Index& idx) {
  if (!idx.has_dims()) idx.dims = split(idx.linear, idx.shape);
  return idx.dims;
}

// Consecutive terms that are consecutive digits of one source, weighted as that source's
// radix weighs them, add up to one digit of it: sum (s / w_k % e_k) * (w_k / w) * m =
// (s / w % (w_0 * e_0 / w)) * m, w and m the last term's stride and multiplier, and no
// modulo where the first is the leading digit. Exact in unsigned arithmetic, for any s.
Id Emitter::linear(Index& idx) {
  if (idx.linear) return idx.linear;
  auto st = strides_of(idx.shape);
  std::vector<std::pair<Id, int64_t>> terms;
  for (size_t i = 0; i < idx.shape.size(); ++i)
    if (idx.shape[i] != 1) terms.push_back({idx.dims[i], st[i]});
  Id acc = 0;
  for (size_t i = 0; i < terms.size();) {
    auto [v, multiplier] = terms[i];
    size_t j = i + 1;
    if (auto first = digits_.find(v); first != digits_.end()) {
      Digit run = first->second;
      for (; j < terms.size(); ++j) {
        auto next = digits_.find(terms[j].first);
        if (next == digits_.end()) break;
        const Digit& d = next->second;
        if (d.source != run.source || d.extent == 0 || run.stride != d.stride * d.extent ||
            multiplier != terms[j].second * d.extent)
          break;
        run.stride = d.stride;
        multiplier = terms[j].second;
      }
      if (j > i + 1) {
        const Digit& lead = first->second;
        v = digit(run.source, run.stride, lead.extent ? lead.stride * lead.extent / run.stride : 0, lead.extent == 0);
      }
    }
    Id term = multiplier == 1 ? v : b.op(spv::OpIMul, u32(), {v, u32c(uint64_t(multiplier))});
    acc = acc ? b.op(spv::OpIAdd, u32(), {acc, term}) : term;
    i = j;
  }
  idx.linear = acc ? acc : u32c(0);
  return idx.linear;
}

// In the register width of t (narrow integers are extended there, so the bound need not fit t).
Id Emitter::clamped_index(Id v, DType t, int64_t hi) {
  const int bits = register_bits(t);
  Id rt = reg_type(t), top = b.const_int(bits, uint64_t(hi));
  if (ir::is_signed_int(t)) v = b.ext(GLSLstd450SClamp, rt, {v, b.const_int(bits, 0), top});
  else v = b.ext(GLSLstd450UMin, rt, {v, top});
  return bits == 64 ? b.op(spv::OpUConvert, u32(), {v}) : v;
}

Id Emitter::all_true(const std::vector<Id>& conds) {
  Id acc = 0;
  for (Id x : conds) acc = acc ? b.op(spv::OpLogicalAnd, boolean(), {acc, x}) : x;
  return acc ? acc : b.const_bool(true);
}

namespace {
struct IndexOps {
  Emitter& e;
  const ir::Node& node;
  std::function<const ir::Node&(size_t)> arg;

  Id c(int64_t v) { return e.u32c(uint64_t(v)); }
  // A dynamic start (a scalar integer argument, or an element of a vector of them) clamped
  // to [0, hi], as u32.
  Id dynamic_start(const nlohmann::json& spec, int64_t hi) {
    if (spec.is_number_integer()) return c(std::clamp<int64_t>(spec.get<int64_t>(), 0, hi));
    if (!spec.is_object() || !spec.contains("arg")) throw ir::IrError(node, "bad start entry " + spec.dump());
    const ir::Node& s = arg(spec["arg"].get<size_t>());
    DType t = s.type().dtype;
    const bool element = spec.contains("element");
    if (!ir::is_integer(t) || s.type().shape.size() != (element ? 1u : 0u))
      throw ir::IrError(node, "dynamic start " + spec.dump() + " must name " +
                                  (element ? "a one-dimensional" : "a scalar") + " integer, got " + ir::to_string(s.type()));
    Index at = element ? e.index_from_dims(s.type().shape, {c(spec["element"].get<int64_t>())}) : e.index_from_dims({}, {});
    return e.clamped_index(e.value(s, std::move(at)), t, hi);
  }
};
}  // namespace

// A reshape's operand position: the element's dims carried over where only axes of 1 come
// and go, each operand dim combined from its run where axes are only split, else the
// linear index.
Index Emitter::reshape_position(const ir::Node& node, const ir::Node& x, Index& index) {
  const ir::Shape& out = node.type().shape;
  const ir::Shape& in = x.type().shape;
  if (ir::num_elements(in) != ir::num_elements(out))
    throw ir::IrError(node, "reshape changes the element count (" + ir::to_string(x.type()) + " -> " +
                                ir::to_string(node.type()) + ")");
  // Only axes of size 1 inserted or removed (a complex value's part views): the other
  // dims carry over, so the element keeps its index ids, and a value read through
  // several such reshapes is computed once, not once per path as after a linearisation.
  std::vector<int64_t> in_extents, out_extents;
  std::copy_if(in.begin(), in.end(), std::back_inserter(in_extents), [](int64_t e) { return e != 1; });
  std::copy_if(out.begin(), out.end(), std::back_inserter(out_extents), [](int64_t e) { return e != 1; });
  if (index.has_dims() && in_extents == out_extents) {
    std::vector<Id> id;
    for (size_t i = 0, j = 0; i < in.size(); ++i) {
      if (in[i] == 1) {
        id.push_back(u32c(0));
        continue;
      }
      while (out[j] == 1) ++j;
      id.push_back(index.dims[j++]);
    }
    return index_from_dims(in, id);
  }
  // Axes only split, the position known by its dims alone: each operand dim combines its
  // run's dims, where computing the linear index would take as many multiply-adds and the
  // operand may need it divided into dims again (a dot's split operand read through its
  // gather: a convolution's patches). A known linear index is used as it is.
  const auto runs = index.has_dims() && !index.linear ? split_runs(in, out) : std::nullopt;
  if (runs) {
    std::vector<Id> id;
    for (auto [first, last] : *runs) {
      Id acc = 0;
      for (size_t j = first; j < last; ++j)
        if (out[j] != 1)
          acc = acc ? b.op(spv::OpIAdd, u32(), {b.op(spv::OpIMul, u32(), {acc, u32c(out[j])}), index.dims[j]}) : index.dims[j];
      id.push_back(acc ? acc : u32c(0));
    }
    return index_from_dims(in, id);
  }
  Index idx;
  idx.shape = in;
  idx.linear = linear(index);
  return idx;
}

Index Emitter::squeeze_position(const ir::Node& node, const ir::Node& x, Index& index) {
  const ir::Shape& in = x.type().shape;
  Index idx;
  idx.shape = in;
  idx.linear = index.linear;
  if (!idx.linear) {
    // Only the listed axes go: Nx keeps an unlisted axis of size 1.
    auto d = dims(index);
    auto axes = int_list(node, "axes");
    size_t k = 0;
    for (size_t a = 0; a < in.size(); ++a)
      idx.dims.push_back(std::ranges::count(axes, int64_t(a)) ? u32c(0) : d.at(k++));
    if (k != d.size()) throw ir::IrError(node, "squeeze: result rank does not match the squeezed operand");
  }
  return idx;
}

std::optional<Index> Emitter::operand_position(const ir::Node& node, Index& index) {
  const std::string& op = node.op;
  if (!ir::reads_one_element(op)) return std::nullopt;
  const ir::Shape& out = node.type().shape;
  IndexOps ix{*this, node, [&](size_t k) -> const ir::Node& { return arg(node, k); }};
  const ir::Node& x = arg(node, 0);
  const ir::Shape& in = x.type().shape;

  if (op == "reshape") return reshape_position(node, x, index);
  if (op == "squeeze") return squeeze_position(node, x, index);
  auto d = dims(index);
  auto require = [&](bool ok, const std::string& what) { require_shapes(node, x, ok, what); };
  if (op == "broadcast") {
    auto axes = int_list(node, "axes");
    if (axes.size() != in.size()) throw ir::IrError(node, "broadcast axes must name one result axis per operand axis");
    std::vector<Id> id;
    for (size_t j = 0; j < in.size(); ++j) {
      require(axes[j] >= 0 && size_t(axes[j]) < out.size() && (in[j] == 1 || in[j] == out[axes[j]]),
              "broadcast axis " + std::to_string(j) + " does not fit the result");
      id.push_back(in[j] == 1 ? u32c(0) : d[axes[j]]);
    }
    return index_from_dims(in, id);
  }
  if (op == "transpose") {
    auto axes = int_list(node, "axes");
    require(axes.size() == in.size() && out.size() == in.size(), "transpose needs a full permutation");
    std::vector<Id> id(in.size(), 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      require(axes[i] >= 0 && size_t(axes[i]) < in.size() && !id[axes[i]] && in[axes[i]] == out[i],
              "transpose axes are not a permutation matching the shapes");
      id[axes[i]] = d[i];
    }
    return index_from_dims(in, id);
  }
  if (op == "reverse") {
    require(in == out, "reverse keeps the shape");
    std::vector<Id> id = d;
    for (int64_t a : int_list(node, "axes")) id.at(a) = b.op(spv::OpISub, u32(), {u32c(in.at(a) - 1), d.at(a)});
    return index_from_dims(in, id);
  }
  if (op == "slice") {
    auto lengths = int_list(node, "lengths");
    auto strides = node.attrs.contains("strides") ? int_list(node, "strides") : std::vector<int64_t>(in.size(), 1);
    const auto& start = node.attrs.at("start");
    require(lengths.size() == in.size() && strides.size() == in.size() && start.size() == in.size() &&
                out.size() == in.size(),
            "slice needs start, lengths and strides for every axis");
    std::vector<Id> id;
    for (size_t i = 0; i < in.size(); ++i) {
      require(lengths[i] >= 0 && lengths[i] <= in[i] && strides[i] > 0 &&
                  out[i] == (lengths[i] + strides[i] - 1) / strides[i] &&
                  (!start[i].is_number_integer() || start[i].get<int64_t>() + lengths[i] <= in[i]),
              "slice window out of bounds on axis " + std::to_string(i));
      Id s = ix.dynamic_start(start.at(i), in[i] - lengths.at(i));
      Id off = strides.at(i) == 1 ? d[i] : b.op(spv::OpIMul, u32(), {d[i], u32c(strides[i])});
      id.push_back(b.op(spv::OpIAdd, u32(), {s, off}));
    }
    return index_from_dims(in, id);
  }
  return std::nullopt;
}

// Where the operands' positions along axis i of their common source differ only by constants
// (slices at successive starts: a convolution's taps), the position as one base plus an offset
// chosen by the position along the concatenation's axis `along`: arithmetic in it where the
// offsets step evenly over operands of one position each, else a select of constants. Only
// the base then lives across a dot's k-loop, not one position per operand. 0 where they do not.
Id Emitter::offset_candidates(const std::vector<std::vector<Id>>& candidates, size_t i, const std::vector<Id>& here,
                              Id along, bool unit_parts) {
  const Id first = candidates[0][i];
  if (std::all_of(candidates.begin(), candidates.end(), [&](const auto& c) { return c[i] == first; })) return 0;
  const auto [base, offset0] = b.split_offset(first);
  if (b.int_constant(base)) return 0;
  std::vector<uint32_t> offsets;
  for (const auto& c : candidates) {
    const auto [base_k, offset_k] = b.split_offset(c[i]);
    if (base_k != base) return 0;
    offsets.push_back(offset_k);
  }
  const uint32_t step = offsets[1] - offsets[0];
  bool even = unit_parts;
  for (size_t k = 1; even && k < offsets.size(); ++k) even = offsets[k] - offsets[k - 1] == step;
  Id offset;
  if (even) {
    // Past the last operand the select chain would take the last: so does the clamp.
    offset = b.ext(GLSLstd450UMin, u32(), {along, u32c(offsets.size() - 1)});
    if (step != 1) offset = b.op(spv::OpIMul, u32(), {offset, u32c(step)});
    if (offset0 != 0) offset = b.op(spv::OpIAdd, u32(), {offset, u32c(offset0)});
  } else {
    std::vector<Id> constants;
    for (uint32_t o : offsets) constants.push_back(u32c(o));
    offset = select_by_part(b, u32(), constants, here);
  }
  return b.op(spv::OpIAdd, u32(), {base, offset});
}

// Operands that are index maps of one value (a convolution's or a window's shifted slices
// of one padded input) read that value once, at the position the selected operand maps
// to: selecting among the operands' values would read every one of them, and evaluate all
// their cones, for each element.
Id Emitter::select_common_source(const ir::Node& node, const std::vector<Id>& d) {
  const int64_t axis = node.attrs.at("axis").get<int64_t>();
  const bool stack = node.op == "stack";
  // Each operand's chain of index maps: the values it reads through, and where.
  std::vector<std::vector<std::pair<const ir::Node*, Index>>> paths;
  std::vector<Id> here;  // whether the position along the axis is at or past the operand's first
  int64_t offset = 0;
  bool unit_parts = true;  // each operand one position along the axis: operand k at position k
  for (size_t k = 0; k < node.args.size(); ++k) {
    const ir::Node* a = &arg(node, k);
    const int64_t extent = stack ? 1 : a->type().shape.at(axis);
    unit_parts = unit_parts && extent == 1;
    if (extent == 0) continue;
    std::vector<Id> id;
    for (size_t i = 0; i < d.size(); ++i) {
      if (int64_t(i) != axis) id.push_back(d[i]);
      else if (!stack) id.push_back(b.op(spv::OpISub, u32(), {d[i], u32c(offset)}));
    }
    std::vector<std::pair<const ir::Node*, Index>> path{{a, index_from_dims(a->type().shape, id)}};
    while (auto next = operand_position(*path.back().first, path.back().second))
      path.emplace_back(&arg(*path.back().first, 0), std::move(*next));
    paths.push_back(std::move(path));
    here.push_back(b.op(spv::OpUGreaterThanEqual, boolean(), {d[axis], u32c(offset)}));
    offset += extent;
  }
  if (paths.size() < 2) return 0;
  // The first value on the first operand's chain that every chain reaches.
  auto reached = [&](std::vector<std::pair<const ir::Node*, Index>>& p, const ir::Node* n) {
    return std::find_if(p.begin(), p.end(), [&](const auto& step) { return step.first == n; });
  };
  for (const auto& step : paths[0]) {
    const ir::Node* source = step.first;
    if (!std::all_of(paths.begin(), paths.end(), [&](auto& p) { return reached(p, source) != p.end(); })) continue;
    std::vector<std::vector<Id>> candidates;
    for (auto& p : paths) candidates.push_back(dims(reached(p, source)->second));
    std::vector<Id> at = candidates[0];
    for (size_t i = 0; i < at.size(); ++i) {
      if (Id v = offset_candidates(candidates, i, here, d[axis], unit_parts)) {
        at[i] = v;
        continue;
      }
      std::vector<Id> positions;
      for (const auto& c : candidates) positions.push_back(c[i]);
      at[i] = select_by_part(b, u32(), positions, here);
    }
    return convert(value(*source, index_from_dims(source->type().shape, at)), source->type().dtype, node.type().dtype);
  }
  return 0;
}

// Element `idx` of an index map's operand, in the map's type.
Id Emitter::map_operand(const ir::Node& node, Index idx) {
  const ir::Node& x = arg(node, 0);
  return convert(value(x, std::move(idx)), x.type().dtype, node.type().dtype);
}

// put_slice: the update's element inside its window, the operand's elsewhere.
Id Emitter::emit_put_slice(const ir::Node& node, Index& index) {
  const DType t = node.type().dtype;
  const ir::Node& x = arg(node, 0);
  const ir::Shape& in = x.type().shape;
  const ir::Shape& out = node.type().shape;
  auto d = dims(index);
  IndexOps ix{*this, node, [&](size_t k) -> const ir::Node& { return arg(node, k); }};
  auto require = [&](bool ok, const std::string& what) { require_shapes(node, x, ok, what); };
  const ir::Node& upd = arg(node, 1);
  const ir::Shape& us = upd.type().shape;
  const auto& start = node.attrs.at("start");
  require(in == out && us.size() == in.size() && start.size() == in.size(), "put_slice shapes do not match");
  for (size_t i = 0; i < in.size(); ++i) require(us[i] <= in[i], "put_slice update larger than the tensor");
  std::vector<Id> inside, ud;
  for (size_t i = 0; i < in.size(); ++i) {
    Id s = ix.dynamic_start(start.at(i), in[i] - us.at(i));
    Id rel = b.op(spv::OpISub, u32(), {d[i], s});  // wraps when d < s: then it is >= us[i] as unsigned
    inside.push_back(b.op(spv::OpULessThan, boolean(), {rel, u32c(us[i])}));
    ud.push_back(b.ext(GLSLstd450UMin, u32(), {rel, u32c(us[i] - 1)}));
  }
  Id from_update = convert(value(upd, index_from_dims(us, ud)), upd.type().dtype, t);
  return select(t, all_true(inside), from_update, map_operand(node, index));
}

// pad: the operand's element where the position maps inside it, else the pad value.
Id Emitter::emit_pad(const ir::Node& node, Index& index) {
  const DType t = node.type().dtype;
  const ir::Shape& in = arg(node, 0).type().shape;
  auto d = dims(index);
  const auto& config = node.attrs.at("config");
  const ir::Node& pv = arg(node, 1);
  std::vector<Id> valid, id;
  for (size_t i = 0; i < in.size(); ++i) {
    int64_t lo = config.at(i).at(0).get<int64_t>(), interior = config.at(i).at(2).get<int64_t>();
    // p = d - lo in two's complement; a negative p is a huge unsigned value and fails the bound test.
    Id p = b.op(spv::OpISub, u32(), {d[i], u32c(uint64_t(lo))});
    Id q = p;
    if (interior > 0) {
      q = b.op(spv::OpUDiv, u32(), {p, u32c(interior + 1)});
      valid.push_back(b.op(spv::OpIEqual, boolean(), {b.op(spv::OpUMod, u32(), {p, u32c(interior + 1)}), u32c(0)}));
    }
    valid.push_back(b.op(spv::OpULessThan, boolean(), {q, u32c(in[i])}));
    id.push_back(in[i] == 0 ? u32c(0) : b.ext(GLSLstd450UMin, u32(), {q, u32c(in[i] - 1)}));
  }
  Id pad_value = convert(value(pv, index_from_dims({}, {})), pv.type().dtype, t);
  if (ir::num_elements(in) == 0) return pad_value;
  return select(t, all_true(valid), map_operand(node, index_from_dims(in, id)), pad_value);
}

// concatenate and stack: the operand whose part holds the position.
Id Emitter::emit_concatenate(const ir::Node& node, Index& index) {
  const DType t = node.type().dtype;
  const ir::Shape& out = node.type().shape;
  auto d = dims(index);
  const int64_t axis = node.attrs.at("axis").get<int64_t>();
  if (axis < 0 || size_t(axis) >= out.size()) throw ir::IrError(node, "axis out of range");
  // Where the position along the axis is a constant (a complex value's part), only the
  // operand holding it is read: reading every operand and selecting would evaluate all
  // their cones, and a chain of such reads grows exponentially.
  const std::optional<uint64_t> at = b.int_constant(d[axis]);
  const bool stack = node.op == "stack";
  for (size_t k = 0; k < node.args.size(); ++k) {
    const ir::Node& a = arg(node, k);
    const ir::Shape& as = a.type().shape;
    bool fits = as.size() + (stack ? 1 : 0) == out.size();
    for (size_t i = 0, j = 0; fits && i < out.size(); ++i) {
      if (int64_t(i) == axis && stack) continue;
      fits = int64_t(i) == axis || as[j] == out[i];
      ++j;
    }
    if (!fits) throw ir::IrError(node, "operand " + std::to_string(k) + " " + ir::to_string(a.type()) +
                                           " does not fit the result " + ir::to_string(node.type()));
  }
  if (!at)
    if (Id v = select_common_source(node, d)) return v;
  // Later operands take precedence in the select chain, so walk from the first.
  Id result = 0;
  int64_t offset = 0;
  for (size_t k = 0; k < node.args.size(); ++k) {
    const ir::Node& a = arg(node, k);
    const ir::Shape& as = a.type().shape;
    std::vector<Id> id;
    int64_t extent = stack ? 1 : as[axis];
    if (extent == 0 || (at && (int64_t(*at) < offset || int64_t(*at) >= offset + extent))) {
      offset += extent;
      continue;
    }
    for (size_t i = 0; i < out.size(); ++i) {
      if (int64_t(i) != axis) id.push_back(d[i]);
      else if (!stack)
        id.push_back(b.ext(GLSLstd450UMin, u32(), {b.op(spv::OpISub, u32(), {d[i], u32c(offset)}), u32c(extent - 1)}));
    }
    Id v = convert(value(a, index_from_dims(as, id)), a.type().dtype, t);
    Id here = b.op(spv::OpUGreaterThanEqual, boolean(), {d[axis], u32c(offset)});
    result = result ? select(t, here, v, result) : v;
    offset += extent;
  }
  // Every operand empty: the result has no elements, so no invocation reads it (a dot
  // contracting over it, say, runs its loop zero times); any value stands in.
  return result ? result : constant(t, 0);
}

Id Emitter::emit_index_op(const ir::Node& node, Index& index) {
  const std::string& op = node.op;
  const DType t = node.type().dtype;
  const ir::Shape& out = node.type().shape;

  if (op == "iota") {
    Id v;
    if (node.attrs.contains("axis") && !node.attrs["axis"].is_null()) {
      int64_t axis = node.attrs["axis"].get<int64_t>();
      if (axis < 0 || size_t(axis) >= out.size()) throw ir::IrError(node, "iota axis out of range");
      v = dims(index)[axis];
    } else {
      v = linear(index);
    }
    return convert(v, DType::U32, t);
  }
  if (op == "eye") {
    auto d = dims(index);
    if (d.size() < 2) throw ir::IrError(node, "eye needs rank >= 2");
    return from_bool(b.op(spv::OpIEqual, boolean(), {d[d.size() - 2], d[d.size() - 1]}), t);
  }

  if (auto at = operand_position(node, index)) return map_operand(node, std::move(*at));
  if (op == "put_slice") return emit_put_slice(node, index);
  if (op == "pad") return emit_pad(node, index);
  if (op == "concatenate" || op == "stack") return emit_concatenate(node, index);
  throw ir::IrError(node, "op not supported inside a kernel body");
}

}  // namespace nxv::codegen
