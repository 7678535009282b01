// Reductions, argmax/argmin and dot: per output element, a loop over the
// reduced (contracted) index space. The loop is emitted at the level of the
// output index, so a reduction needed inside another loop is computed once per
// distinct index rather than once per iteration of the enclosing loop.
//
// Float accumulators stay in register precision and are rounded to f16/bf16
// only at the end, as Nx accumulates in double and rounds once; f32 sums, products and
// dots accumulate in f64 where that is cheap (computes_f32_in_f64).
#include <algorithm>
#include <cmath>

#include "codegen/emitter.h"
#include "codegen/soft_f64_sum.h"
#include "ir/ops.h"

namespace nxv::codegen {

using ir::DType;
using Values = spirv::Builder::Values;

namespace {

// Output dims → the operand's kept-axis dims (reduced axes left as 0 for the caller to fill).
std::vector<Id> kept_dims(Emitter& e, const ir::Node& node, const std::vector<Id>& out, const ir::Shape& in,
                          const std::vector<int64_t>& axes, bool keep) {
  std::vector<Id> d(in.size(), 0);
  size_t k = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    bool reduced = std::binary_search(axes.begin(), axes.end(), int64_t(i));
    if (reduced) {
      if (keep) ++k;
      continue;
    }
    if (k >= out.size()) throw ir::IrError(node, "result rank does not match the reduction");
    d[i] = out[k++];
  }
  if (k != out.size()) throw ir::IrError(node, "result rank does not match the reduction");
  return d;
}
}  // namespace

Id Emitter::reduce_identity(const std::string& op, DType t, DType at) {
  // A float sum starts at +0.0 (a sum of -0.0s is +0.0, as in Nx), hidden from the driver:
  // lavapipe (Mesa 22.3) folds 0.0 + x to x, which is -0.0 for x = -0.0.
  const bool fl = ir::is_float(t);
  if (op == "sum" && fl) return float_literal(at, 0.0);
  if (op == "sum" || op == "any") return constant(at, 0);
  if (op == "product" || op == "all") return constant(at, 1);
  if (fl) return b.const_float(register_bits(t), op == "reduce_max" ? -INFINITY : INFINITY);
  const int bits = ir::dtype_bits(t);
  uint64_t max = ir::is_signed_int(t) ? (uint64_t(1) << (bits - 1)) - 1 : (bits == 64 ? ~0ull : (1ull << bits) - 1);
  uint64_t min = ir::is_signed_int(t) ? ~max : 0;
  return constant_int(t, op == "reduce_max" ? min : max);
}

Id Emitter::reduce_step(const std::string& op, DType t, DType at, Id a, Id v) {
  const bool fl = ir::is_float(t);
  Id rt = reg_type(at);
  if (op == "all" || op == "any")
    return from_bool(b.op(op == "all" ? spv::OpLogicalAnd : spv::OpLogicalOr, boolean(), {to_bool(a, t), to_bool(v, t)}), t);
  if (op == "sum") return b.op(fl ? spv::OpFAdd : spv::OpIAdd, rt, {a, v});
  if (op == "product") return b.op(fl ? spv::OpFMul : spv::OpIMul, rt, {a, v});
  const bool mx = op == "reduce_max";
  if (!fl) {
    bool s = ir::is_signed_int(t);
    return b.ext(mx ? (s ? GLSLstd450SMax : GLSLstd450UMax) : (s ? GLSLstd450SMin : GLSLstd450UMin), rt, {a, v});
  }
  // NaN propagates: once the accumulator is NaN it stays NaN.
  Id better = b.op(mx ? spv::OpFOrdGreaterThan : spv::OpFOrdLessThan, boolean(), {v, a});
  Id take = b.op(spv::OpLogicalOr, boolean(), {better, b.op(spv::OpIsNan, boolean(), {v})});
  take = b.op(spv::OpLogicalAnd, boolean(), {take, b.op(spv::OpLogicalNot, boolean(), {b.op(spv::OpIsNan, boolean(), {a})})});
  return select(t, take, v, a);
}

Id Emitter::emulated_f64_sum(const ir::Node& x, DType t, const std::vector<Id>& out, Fold f,
                              const std::function<Id(Id)>& operand) {
  // Emulated f64 sums add into a wide accumulator and round once (soft_f64_sum.h): each
  // addition errs by under 2^-12 of a last place, at half the software add's instructions.
  Soft64 s(b);
  // (Elements a buffer's, read through reshapes, transposes, pads with a constant and the
  // like.)
  const ir::Node* read = &x;
  while ((ir::reads_one_element(read->op) && read->args.size() == 1) ||
         (read->op == "pad" && read->args.size() == 2 && arg(*read, 1).op == "constant"))
    read = &arg(*read, 0);
  const bool from_buffer = read->op == "parameter";
  // 64-bit integer adds where the device has them, for elements read from a buffer: a
  // computed element's (softmax's exponentials) measured slower added so on NVIDIA, with
  // the same registers and shared memory (docs/portability.md, "Sums round once").
  const auto adds = b.native_int64() && from_buffer ? soft::SumAdds::int64 : soft::SumAdds::words;
  f.types.assign(soft::WideSum::kValues, u32());
  f.init = soft::wide_sum_zero(s, adds).values();
  auto element = [&](Id counter) { return b.op(spv::OpBitcast, s.uvec2, {convert(operand(counter), x.type().dtype, DType::F64)}); };
  auto elements = [&](const std::vector<Id>& counters) {
    std::vector<Id> xs;
    for (Id c : counters) xs.push_back(element(c));
    return xs;
  };
  f.step = [&](const Values& acc, Id counter) { return soft::wide_sum_add(s, soft::WideSum::of(acc, adds), element(counter)).values(); };
  // An invocation starts on its first four elements' largest exponent, so that they do
  // not all take the branch that moves it up. Elements read from a buffer are folded four
  // under one test where branches skip the side no invocation takes (not on lavapipe,
  // which would run four rare steps a group): the loop and the branch around each cost
  // about a sixth of their instructions. Computed ones (softmax's exponentials) one by
  // one: four at once measured slower (docs/portability.md, "Sums round once").
  f.group = 4;
  if (from_buffer && b.common_case_branches())
    f.step_many = [&](const Values& acc, const std::vector<Id>& counters) {
      return soft::wide_sum_add_many(s, soft::WideSum::of(acc, adds), elements(counters)).values();
    };
  f.start = [&](const std::vector<Id>& counters) { return soft::wide_sum_start(s, elements(counters), adds).values(); };
  f.settle = [&](Values& partial) {
    const soft::WideSum settled = soft::wide_sum_settled(s, soft::WideSum::of(partial, adds));
    partial = settled.values();
    return settled.exp;
  };
  f.rescale = [&](const Values& partial, Id top) { return soft::wide_sum_rescaled(s, soft::WideSum::of(partial, adds), top).values(); };
  f.combine = [&](const Values& a, const Values& c) {
    return soft::wide_sum_combine(s, soft::WideSum::of(a, adds), soft::WideSum::of(c, adds)).values();
  };
  Id r = b.op(spv::OpBitcast, reg_type(DType::F64), {soft::wide_sum_round(s, soft::WideSum::of(fold(out, f), adds))});
  return normalize(convert(r, DType::F64, t), t);
}

Id Emitter::emit_reduction(const ir::Node& node, Index& index) {
  const std::string& op = node.op;
  const DType t = node.type().dtype;
  const ir::Node& x = arg(node, 0);
  const DType xt = x.type().dtype;
  const ir::Shape& in = x.type().shape;
  auto axes = ir::reduced_axes(node, "axes", x.type());
  const bool keep = node.attrs.value("keep_axes", false);
  auto out = dims(index);
  auto base = kept_dims(*this, node, out, in, axes, keep);
  std::vector<int64_t> extents;
  for (auto a : axes) extents.push_back(in[a]);
  const DType at = op == "sum" || op == "product" ? compute_type(t) : t;
  Id rt = reg_type(at);
  // The operand at position `counter` of the reduced index space.
  auto operand = [&](Id counter) {
    auto rd = split(counter, extents);
    std::vector<Id> d = base;
    for (size_t j = 0; j < axes.size(); ++j) d[axes[j]] = rd[j];
    return value(x, index_from_dims(in, d));
  };
  Fold f;
  f.count = ir::num_elements(extents);
  if (op == "sum" && at == DType::F64 && b.emulated(rt)) return emulated_f64_sum(x, t, out, f, operand);
  auto merge = [&](Id a, Id v) { return reduce_step(op, t, at, a, v); };
  f.types = {rt};
  f.init = {reduce_identity(op, t, at)};
  f.step = [&](const Values& acc, Id counter) {
    Id v = operand(counter);
    // all/any test the operand itself; the others fold it converted to the result type.
    return Values{merge(acc[0], op == "all" || op == "any" ? from_bool(to_bool(v, xt), t) : convert(v, xt, at))};
  };
  f.combine = [&](const Values& a, const Values& c) { return Values{merge(a[0], c[0])}; };
  auto r = fold(out, f);
  return normalize(convert(r[0], at, t), t);
}

Id Emitter::emit_argreduce(const ir::Node& node, Index& index) {
  const DType t = node.type().dtype;
  const ir::Node& x = arg(node, 0);
  const DType xt = x.type().dtype;
  const ir::Shape& in = x.type().shape;
  const bool all_axes = !node.attrs.contains("axis") || node.attrs["axis"].is_null();
  auto axes = ir::reduced_axes(node, "axis", x.type());
  const bool keep = node.attrs.value("keep_axis", false);
  const bool high = node.attrs.value("tie_break", std::string("low")) == "high";
  const bool is_max = node.op == "argmax";
  if (!ir::is_integer(t)) throw ir::IrError(node, "argmax/argmin result must be an integer type");
  auto out = dims(index);
  // Nx gives a scalar for axis: nil whatever keep_axis says; accept the all-ones shape too.
  const bool keep_dims = all_axes ? !in.empty() && out.size() == in.size() : keep;
  auto base = kept_dims(*this, node, out, in, axes, keep_dims);
  std::vector<int64_t> extents;
  for (auto a : axes) extents.push_back(in[a]);
  const int64_t n = ir::num_elements(extents);
  if (n == 0) throw ir::IrError(node, "argmax/argmin of an empty axis");

  auto at = [&](Id counter) {
    auto rd = split(counter, extents);
    std::vector<Id> d = base;
    for (size_t j = 0; j < axes.size(); ++j) d[axes[j]] = rd[j];
    return value(x, index_from_dims(in, d));
  };
  const bool fl = ir::is_float(xt), s = ir::is_signed_int(xt);
  // Does candidate (v, i) beat the current best (bv, bi)? The first NaN wins and is never
  // replaced (Nx); ties go to the lower or higher index by tie_break.
  auto beats = [&](Id v, Id i, Id bv, Id bi) {
    spv::Op gt = fl ? (is_max ? spv::OpFOrdGreaterThan : spv::OpFOrdLessThan)
                    : is_max ? (s ? spv::OpSGreaterThan : spv::OpUGreaterThan)
                             : (s ? spv::OpSLessThan : spv::OpULessThan);
    Id tie_index = b.op(high ? spv::OpUGreaterThan : spv::OpULessThan, boolean(), {i, bi});
    Id equal = b.op(fl ? spv::OpFOrdEqual : spv::OpIEqual, boolean(), {v, bv});
    Id take = b.op(spv::OpLogicalOr, boolean(), {b.op(gt, boolean(), {v, bv}),
                                                 b.op(spv::OpLogicalAnd, boolean(), {equal, tie_index})});
    if (!fl) return take;
    Id v_nan = b.op(spv::OpIsNan, boolean(), {v}), b_nan = b.op(spv::OpIsNan, boolean(), {bv});
    Id both = b.op(spv::OpLogicalAnd, boolean(), {v_nan, b_nan});
    Id lower = b.op(spv::OpULessThan, boolean(), {i, bi});
    take = b.op(spv::OpLogicalAnd, boolean(), {b.op(spv::OpLogicalOr, boolean(), {take, v_nan}),
                                               b.op(spv::OpLogicalNot, boolean(), {b_nan})});
    return b_select(boolean(), both, lower, take);
  };
  auto pick = [&](const Values& cand, const Values& best) {
    Id take = beats(cand[0], cand[1], best[0], best[1]);
    return Values{select(xt, take, cand[0], best[0]), b_select(u32(), take, cand[1], best[1])};
  };
  Fold f;
  f.types = {reg_type(xt), u32()};
  f.init = {at(u32c(0)), u32c(0)};
  f.begin = 1;
  f.count = n;
  f.step = [&](const Values& acc, Id counter) { return pick({at(counter), counter}, acc); };
  f.combine = [&](const Values& a, const Values& c) { return pick(c, a); };
  auto r = fold(out, f);
  return convert(r[1], DType::U32, t);
}

DotAxes DotAxes::of(const ir::Node& node, const ir::Shape& as, const ir::Shape& bs) {
  auto list = [&](const char* k) {
    return node.attrs.contains(k) ? node.attrs[k].get<std::vector<int64_t>>() : std::vector<int64_t>{};
  };
  DotAxes d{list("contract_axes1"), list("contract_axes2"), list("batch_axes1"), list("batch_axes2"), {}, {}};
  if (d.c1.size() != d.c2.size() || d.b1.size() != d.b2.size()) throw ir::IrError(node, "dot axes lists do not pair up");
  auto in_list = [](const std::vector<int64_t>& l, int64_t a) { return std::find(l.begin(), l.end(), a) != l.end(); };
  for (size_t i = 0; i < as.size(); ++i)
    if (!in_list(d.c1, int64_t(i)) && !in_list(d.b1, int64_t(i))) d.free1.push_back(int64_t(i));
  for (size_t i = 0; i < bs.size(); ++i)
    if (!in_list(d.c2, int64_t(i)) && !in_list(d.b2, int64_t(i))) d.free2.push_back(int64_t(i));
  if (d.b1.size() + d.free1.size() + d.free2.size() != node.type().shape.size())
    throw ir::IrError(node, "result rank does not match the dot's free and batch axes");
  for (size_t j = 0; j < d.c1.size(); ++j)
    if (as.at(d.c1[j]) != bs.at(d.c2[j])) throw ir::IrError(node, "contracted axes differ in size");
  return d;
}

Index Emitter::operand_index(const ir::Shape& shape, const std::vector<int64_t>& batch_axes,
                             const std::vector<int64_t>& free_axes, const std::vector<int64_t>& contract_axes,
                             const std::vector<Id>& batch, const std::vector<Id>& free, const std::vector<Id>& contract) {
  Index idx;
  idx.shape = shape;
  idx.dims.assign(shape.size(), 0);
  // (An axis of -1 is one of 1 the operand lacks: matmul::operand_of.)
  auto place = [&](const std::vector<int64_t>& axes, const std::vector<Id>& ids) {
    for (size_t i = 0; i < axes.size(); ++i)
      if (axes[i] >= 0) idx.dims.at(size_t(axes[i])) = ids.at(i);
  };
  place(batch_axes, batch);
  place(free_axes, free);
  place(contract_axes, contract);
  return idx;
}

DType Emitter::dot_accumulator_type(const ir::Node& dot) { return compute_type(dot.type().dtype); }

Id Emitter::dot_zero(const ir::Node& dot) {
  const DType at = dot_accumulator_type(dot);
  return ir::is_float(at) ? float_literal(at, 0.0) : constant(at, 0);  // +0.0 hidden from the driver, as a sum's
}

Id Emitter::dot_term(const ir::Node& dot, Id acc, Id x, Id y) {
  const DType at = dot_accumulator_type(dot);
  const bool fl = ir::is_float(at);
  Id rt = reg_type(at);
  // (f32 operands: their product is exact in f64)
  x = convert(x, arg(dot, 0).type().dtype, at);
  y = convert(y, arg(dot, 1).type().dtype, at);
  Id p = b.op(fl ? spv::OpFMul : spv::OpIMul, rt, {x, y});
  Id sum = b.op(fl ? spv::OpFAdd : spv::OpIAdd, rt, {acc, p});
  if (at != DType::BF16) return sum;
  // A bf16 product has f32's significand but not its range: f32 makes one beyond it an
  // infinity that the exact product added to acc need not give (acc = inf, x y = -7.9e38
  // gave NaN; Nx gives inf). Halved, a product up to 2^129 fits, and one beyond it leaves
  // the range with any finite acc added: 2 ((x / 2) y + acc / 2) is acc + x y rounded once.
  // An infinite acc stays.
  auto inf = [&](Id v) { return b.op(spv::OpIsInf, boolean(), {v}); };
  auto no = [&](Id c) { return b.op(spv::OpLogicalNot, boolean(), {c}); };
  Id half = constant(at, 0.5);
  Id halved = b.op(spv::OpFAdd, rt, {b.op(spv::OpFMul, rt, {b.op(spv::OpFMul, rt, {x, half}), y}), b.op(spv::OpFMul, rt, {acc, half})});
  Id rescued = select(at, inf(acc), acc, b.op(spv::OpFAdd, rt, {halved, halved}));
  Id overflow = b.op(spv::OpLogicalAnd, boolean(), {inf(p), no(b.op(spv::OpLogicalOr, boolean(), {inf(x), inf(y)}))});
  return select(at, overflow, rescued, sum);
}

Id Emitter::dot_result(const ir::Node& dot, Id acc) {
  const DType t = dot.type().dtype;
  return normalize(convert(acc, dot_accumulator_type(dot), t), t);
}

Id Emitter::emit_dot(const ir::Node& node, Index& index) {
  const ir::Node& an = arg(node, 0);
  const ir::Node& bn = arg(node, 1);
  const ir::Shape& as = an.type().shape;
  const ir::Shape& bs = bn.type().shape;
  const DotAxes d = DotAxes::of(node, as, bs);
  auto out = dims(index);
  const size_t nb = d.b1.size(), n1 = d.free1.size();
  const std::vector<Id> batch(out.begin(), out.begin() + nb), free1(out.begin() + nb, out.begin() + nb + n1),
      free2(out.begin() + nb + n1, out.end());
  std::vector<int64_t> extents;
  for (int64_t a : d.c1) extents.push_back(as[a]);
  const DType at = dot_accumulator_type(node);
  Fold f;
  f.types = {reg_type(at)};
  f.init = {dot_zero(node)};
  f.count = ir::num_elements(extents);
  f.step = [&](const Values& acc, Id c) {
    auto rd = split(c, extents);
    Id x = value(an, operand_index(as, d.b1, d.free1, d.c1, batch, free1, rd));
    Id y = value(bn, operand_index(bs, d.b2, d.free2, d.c2, batch, free2, rd));
    return Values{dot_term(node, acc[0], x, y)};
  };
  const bool fl = ir::is_float(at);
  f.combine = [&](const Values& a, const Values& c) {
    return Values{b.op(fl ? spv::OpFAdd : spv::OpIAdd, reg_type(at), {a[0], c[0]})};
  };
  auto r = fold(out, f);
  return dot_result(node, r[0]);
}

}  // namespace nxv::codegen
