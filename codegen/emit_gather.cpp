// gather, indexed_add and indexed_put (docs/ir.md).
//
// gather is elementwise in its output: an element reads its index vector, clamps each
// component into its axis (as XLA does; Nx.BinaryBackend raises instead) and reads that one
// source element, so no read is ever out of bounds and each element costs O(1).
//
// indexed_add/put are elemental too: an output element folds, in the updates' order, the
// updates aimed at it (O(updates) per element, no atomics, deterministic); in the sorted
// form (passes/sort-indexed) it finds them by binary search instead (O(log updates + its
// own)). indexed_put keeps the last one, as Nx.BinaryBackend applies them in order. An
// update whose index is out of range equals no position and is skipped, as XLA's scatter
// skips it.
#include <bit>

#include "codegen/emitter.h"
#include "ir/ops.h"

namespace nxv::codegen {

using ir::DType;
using Values = spirv::Builder::Values;

Id Emitter::emit_gather(const ir::Node& node, Index& index) {
  const ir::Node& x = arg(node, 0);
  const ir::Node& indices = arg(node, 1);
  const ir::Shape& in = x.type().shape;
  const ir::Shape& is = indices.type().shape;
  if (is.empty() || !ir::is_integer(indices.type().dtype))
    throw ir::IrError(node, "indices must be integers of rank >= 1, got " + ir::to_string(indices.type()));
  const auto axes = ir::indexed_axes(node, in.size(), is.back());
  const size_t batch = is.size() - 1;
  if (node.type().shape.size() != batch + axes.rest.size() || node.type().dtype != x.type().dtype)
    throw ir::IrError(node, "result " + ir::to_string(node.type()) + " does not match gathering " + ir::to_string(x.type()) + " at " +
                                ir::to_string(indices.type()));
  // An empty result has no element, so no invocation reads it (a reduction over it runs its
  // loop zero times): any value stands in, where x may be empty on an indexed axis too (the
  // verifier rejects that into a non-empty result).
  if (ir::num_elements(node.type().shape) == 0) return constant(x.type().dtype, 0);
  auto d = dims(index);
  std::vector<Id> src(in.size(), 0);
  std::vector<Id> component(d.begin(), d.begin() + long(batch));
  component.push_back(0);
  for (size_t j = 0; j < axes.indexed.size(); ++j) {
    const int64_t extent = in[axes.indexed[j]];
    if (extent == 0) throw ir::IrError(node, "gathers from the empty axis " + std::to_string(axes.indexed[j]) + " of " + ir::to_string(x.type()));
    component.back() = u32c(j);
    src[axes.indexed[j]] = clamped_index(value(indices, index_from_dims(is, component)), indices.type().dtype, extent - 1);
  }
  for (size_t k = 0; k < axes.rest.size(); ++k) src[axes.rest[k]] = d[batch + k];
  return value(x, index_from_dims(in, src));
}

// What both forms of indexed_add/put need at one target element: its old value, where it
// lies in an update's window (clamped, so that the read stays in bounds where it lies
// outside a window narrower than the target), whether it lies inside it, and the axes.
struct Emitter::IndexedElement {
  ir::IndexedAxes axes;
  std::vector<Id> d, inside, window;
  Id base = 0;
};

Emitter::IndexedElement Emitter::indexed_element(const ir::Node& node, Index& index) {
  const ir::Node& target = arg(node, 0);
  const ir::Node& indices = arg(node, 1);
  const ir::Shape& ts = target.type().shape;
  const ir::Shape& is = indices.type().shape;
  const ir::Shape& us = arg(node, 2).type().shape;
  if (is.size() != 2 || !ir::is_integer(indices.type().dtype))
    throw ir::IrError(node, "indices must be integers of shape {count, depth}, got " + ir::to_string(indices.type()));
  const auto axes = ir::indexed_axes(node, ts.size(), is[1]);
  bool fits = node.type().shape == ts && us.size() == axes.rest.size() + 1 && us[0] == is[0];
  for (size_t k = 0; fits && k < axes.rest.size(); ++k) fits = us[k + 1] <= ts[axes.rest[k]];
  if (!fits)
    throw ir::IrError(node, "updates " + ir::to_string(arg(node, 2).type()) + " and indices " + ir::to_string(indices.type()) +
                                " do not fit " + ir::to_string(target.type()));
  IndexedElement e;
  e.axes = axes;
  e.d = dims(index);
  e.base = convert(value(target, index), target.type().dtype, node.type().dtype);
  e.window.assign(us.size(), 0);
  for (size_t k = 0; k < axes.rest.size(); ++k) {
    const Id p = e.d[axes.rest[k]];
    const int64_t w = us[k + 1];
    const bool narrower = w < ts[axes.rest[k]];
    if (narrower) e.inside.push_back(b.op(spv::OpULessThan, boolean(), {p, u32c(w)}));
    e.window[k + 1] = narrower ? b.ext(GLSLstd450UMin, u32(), {p, u32c(w - 1)}) : p;
  }
  return e;
}

Id Emitter::emit_indexed(const ir::Node& node, Index& index) {
  if (ir::is_sorted_indexed(node)) return emit_indexed_sorted(node, index);
  const DType t = node.type().dtype;
  const ir::Node& indices = arg(node, 1);
  const ir::Node& updates = arg(node, 2);
  const ir::Shape& is = indices.type().shape;
  const ir::Shape& us = updates.type().shape;
  const DType it = indices.type().dtype;
  IndexedElement e = indexed_element(node, index);
  if (ir::num_elements(us) == 0) return e.base;
  // This element's position on the indexed axes, in the indices' register width: a negative
  // or too large index then equals no position (a narrow type is extended to 32 bits).
  const bool wide = register_bits(it) == 64;
  std::vector<Id> position;
  for (int64_t a : e.axes.indexed) position.push_back(wide ? b.op(spv::OpUConvert, reg_type(it), {e.d[a]}) : e.d[a]);

  const bool add = node.op == "indexed_add";
  const bool fl = ir::is_float(t);
  const Id rt = reg_type(t);
  // State: for indexed_add the sum of the matching updates (from +0, as Nx adds them to an
  // Erlang 0) and whether any matched; for indexed_put the last matching update and its row + 1.
  Fold f;
  f.types = {rt, u32()};
  f.init = {constant(t, 0), u32c(0)};
  f.count = is[0];
  f.step = [&](const Values& acc, Id row) {
    std::vector<Id> match = e.inside;
    for (size_t j = 0; j < position.size(); ++j)
      match.push_back(b.op(spv::OpIEqual, boolean(), {value(indices, index_from_dims(is, {row, u32c(j)})), position[j]}));
    Id hit = all_true(match);
    e.window[0] = row;
    Id u = convert(value(updates, index_from_dims(us, e.window)), updates.type().dtype, t);
    if (add)
      return Values{select(t, hit, b.op(fl ? spv::OpFAdd : spv::OpIAdd, rt, {acc[0], u}), acc[0]),
                    b_select(u32(), hit, u32c(1), acc[1])};
    return Values{select(t, hit, u, acc[0]), b_select(u32(), hit, b.op(spv::OpIAdd, u32(), {row, u32c(1)}), acc[1])};
  };
  // Partial results over interleaved rows: sums add; the later of two last matches wins.
  f.combine = [&](const Values& a, const Values& c) {
    if (add) return Values{b.op(fl ? spv::OpFAdd : spv::OpIAdd, rt, {a[0], c[0]}), b.op(spv::OpBitwiseOr, u32(), {a[1], c[1]})};
    Id later = b.op(spv::OpUGreaterThan, boolean(), {c[1], a[1]});
    return Values{select(t, later, c[0], a[0]), b.ext(GLSLstd450UMax, u32(), {a[1], c[1]})};
  };
  auto r = fold(e.d, f);
  Id any = b.op(spv::OpINotEqual, boolean(), {r[1], u32c(0)});
  Id updated = add ? normalize(b.op(fl ? spv::OpFAdd : spv::OpIAdd, rt, {e.base, r[0]}), t) : r[0];
  return select(t, any, updated, e.base);
}

// The sorted form: this element's key (its linear position on the indexed axes) is found in
// sorted_key by binary search (lower bound, bit_width(M) trips at most), and the run of
// equal keys from there lists, in perm, the rows aimed at it in their order. O(log M +
// run) per element, against O(count) for the fold over every row.
Id Emitter::emit_indexed_sorted(const ir::Node& node, Index& index) {
  const DType t = node.type().dtype;
  const ir::Node& updates = arg(node, 2);
  const ir::Node& sorted_key = arg(node, 3);
  const ir::Node& perm = arg(node, 4);
  const ir::Shape& us = updates.type().shape;
  IndexedElement e = indexed_element(node, index);
  const int64_t m = sorted_key.type().shape.at(0);
  if (ir::num_elements(us) == 0 || m == 0) return e.base;
  const ir::Shape& ts = node.type().shape;
  Id key = u32c(0);
  for (int64_t a : e.axes.indexed)
    key = b.op(spv::OpIAdd, u32(), {b.op(spv::OpIMul, u32(), {key, u32c(ts[a])}), e.d[a]});
  // The key at p, clamped into the line: a loop's condition reads it before p is tested.
  auto key_at = [&](Id p) {
    Id q = b.ext(GLSLstd450UMin, u32(), {p, u32c(m - 1)});
    return convert(value(sorted_key, index_from_dims({m}, {q})), sorted_key.type().dtype, DType::U32);
  };
  const bool add = node.op == "indexed_add";
  const bool fl = ir::is_float(t);
  const Id rt = reg_type(t);
  const Values run = b.at_level(b.level_of(e.d), [&] {
    Values range = b.loop(
        {u32(), u32()}, {u32c(0), u32c(m)}, [&](const Values& s) { return b.op(spv::OpULessThan, boolean(), {s[0], s[1]}); },
        [&](const Values& s) {
          Id mid = b.op(spv::OpShiftRightLogical, u32(), {b.op(spv::OpIAdd, u32(), {s[0], s[1]}), u32c(1)});
          Id below = b.op(spv::OpULessThan, boolean(), {key_at(mid), key});
          return Values{b_select(u32(), below, b.op(spv::OpIAdd, u32(), {mid, u32c(1)}), s[0]), b_select(u32(), below, s[1], mid)};
        },
        uint64_t(std::bit_width(uint64_t(m))));
    // From +0 for indexed_add, as Nx adds the updates to an Erlang 0; the last row for put.
    Values walked = b.loop(
        {rt, u32()}, {constant(t, 0), range[0]},
        [&](const Values& s) {
          return all_true({b.op(spv::OpULessThan, boolean(), {s[1], u32c(m)}), b.op(spv::OpIEqual, boolean(), {key_at(s[1]), key})});
        },
        [&](const Values& s) {
          Id row = convert(value(perm, index_from_dims({m}, {s[1]})), perm.type().dtype, DType::U32);
          e.window[0] = b.ext(GLSLstd450UMin, u32(), {row, u32c(us[0] - 1)});
          Id u = convert(value(updates, index_from_dims(us, e.window)), updates.type().dtype, t);
          return Values{add ? b.op(fl ? spv::OpFAdd : spv::OpIAdd, rt, {s[0], u}) : u, b.op(spv::OpIAdd, u32(), {s[1], u32c(1)})};
        },
        uint64_t(m));
    walked.push_back(range[0]);
    return walked;
  });
  std::vector<Id> any = e.inside;
  any.push_back(b.op(spv::OpUGreaterThan, boolean(), {run[1], run[2]}));
  Id updated = add ? normalize(b.op(fl ? spv::OpFAdd : spv::OpIAdd, rt, {e.base, run[0]}), t) : run[0];
  return select(t, all_true(any), updated, e.base);
}

}  // namespace nxv::codegen
