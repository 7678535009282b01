// gather, indexed_add and indexed_put. Nx.BinaryBackend raises on an index out of range;
// the IR defines those cases as XLA does (docs/ir.md): gather clamps each index into its
// axis, the indexed ops skip an update whose index is out of range.
#include <algorithm>

#include "ir/interpret_internal.h"
#include "ir/ops.h"

namespace nxv::ir::interp {
namespace {

// values[a] for each a in axes: the dims or strides of those axes.
std::vector<int64_t> pick(const std::vector<int64_t>& axes, const std::vector<int64_t>& values) {
  std::vector<int64_t> r;
  for (int64_t a : axes) r.push_back(values[a]);
  return r;
}

// The offset in x of index vector `row` of `indices` ({..., depth} row-major), or -1 when a
// component is out of range and `clamp` is false.
int64_t offset_of(const Literal& indices, int64_t row, const IndexedAxes& a, const Shape& x, const std::vector<int64_t>& st,
                  bool clamp) {
  const int64_t depth = int64_t(a.indexed.size());
  int64_t off = 0;
  for (int64_t j = 0; j < depth; ++j) {
    const int64_t dim = x[a.indexed[j]];
    int64_t i = index_at(indices, row * depth + j);
    if (i < 0 || i >= dim) {
      if (!clamp) return -1;
      i = std::clamp<int64_t>(i, 0, dim - 1);
    }
    off += i * st[a.indexed[j]];
  }
  return off;
}

// The rows a sorted indexed op (is_sorted_indexed) applies, in order: perm's, each checked
// against sorted_key (row perm[p]'s linear position on the indexed axes, or their count
// where an index is out of range; nondecreasing), so that a wrong sort is an error here.
std::vector<int64_t> sorted_rows(const Node& n, const Literal& indices, const Literal& key, const Literal& perm,
                                 const IndexedAxes& a, const Shape& ts) {
  const int64_t depth = int64_t(a.indexed.size()), count = indices.type.shape[0];
  const Shape positions = pick(a.indexed, ts);
  const int64_t past = num_elements(positions);
  const auto st = row_major_strides(positions);
  std::vector<int64_t> rows;
  for (int64_t p = 0; p < perm.type.num_elements(); ++p) {
    const int64_t row = index_at(perm, p);
    if (row < 0 || row >= count) throw IrError(n, "perm[" + std::to_string(p) + "] = " + std::to_string(row) + " is not an update row");
    int64_t want = 0;
    for (int64_t j = 0; j < depth && want < past; ++j) {
      const int64_t i = index_at(indices, row * depth + j);
      want = i < 0 || i >= positions[j] ? past : want + i * st[j];
    }
    const int64_t got = index_at(key, p);
    if (got != want || (p > 0 && got < index_at(key, p - 1)))
      throw IrError(n, "sorted_key[" + std::to_string(p) + "] = " + std::to_string(got) + " where row " + std::to_string(row) +
                           " sorts at " + std::to_string(want) + (p > 0 ? " after " + std::to_string(index_at(key, p - 1)) : ""));
    rows.push_back(row);
  }
  return rows;
}

}  // namespace

// out[b..., r...] = x at indices[b..., :] on the indexed axes and r on the others.
Literal eval_gather(const Node& n, const Args& args) {
  check_arity(n, args, 2);
  const Literal &x = *args[0], &indices = *args[1];
  const Shape& in = x.type.shape;
  const Shape& is = indices.type.shape;
  if (is.empty() || !is_integer(indices.type.dtype)) throw IrError(n, "indices must be integers of rank >= 1");
  const auto a = indexed_axes(n, in.size(), is.back());
  const Shape window = pick(a.rest, in);
  Shape out(is.begin(), is.end() - 1);
  out.insert(out.end(), window.begin(), window.end());
  if (n.type().shape != out || n.type().dtype != x.type.dtype)
    throw IrError(n, "the operands give " + to_string(TensorType{x.type.dtype, out}) + ", the node states " + to_string(n.type()));
  Literal r = make_literal(n.type());
  const auto in_st = row_major_strides(in);
  const int64_t rows = num_elements(Shape(is.begin(), is.end() - 1)), per_row = num_elements(window);
  // An empty x has no element to clamp to; the result is then empty too.
  if (num_elements(in) == 0) return r;
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t base = offset_of(indices, row, a, in, in_st, true);
    walk(window, {row_major_strides(window), pick(a.rest, in_st)},
         [&](const auto& o) { convert_element(x, base + o[1], r, row * per_row + o[0]); });
  }
  return r;
}

// Nx.BinaryBackend's order: indexed_put writes the updates in order (the last one aimed at an
// element wins); indexed_add adds to each element target + ((0 + u1) + u2 + ...), the updates
// aimed at it summed in order as Erlang numbers (floats in double) and rounded once. The
// sorted form applies the rows in perm's order instead.
Literal eval_indexed(const Node& n, const Args& args) {
  const bool sorted = is_sorted_indexed(n);
  check_arity(n, args, sorted ? 5 : 3);
  const Literal &target = *args[0], &indices = *args[1], &updates = *args[2];
  const Shape& ts = target.type.shape;
  const Shape& is = indices.type.shape;
  const Shape& us = updates.type.shape;
  if (is.size() != 2 || !is_integer(indices.type.dtype)) throw IrError(n, "indices must be integers of shape {count, depth}");
  const auto a = indexed_axes(n, ts.size(), is[1]);
  if (us.size() != a.rest.size() + 1 || us[0] != is[0]) throw IrError(n, "updates " + to_string(updates.type) + " do not match the indices");
  const Shape window(us.begin() + 1, us.end());
  for (size_t k = 0; k < window.size(); ++k)
    if (window[k] > ts[a.rest[k]]) throw IrError(n, "updates " + to_string(updates.type) + " do not fit the target");
  if (n.type().shape != ts) throw IrError(n, "the result must have the target's shape " + to_string(target.type));

  const DType t = n.type().dtype;
  Literal r = convert(target, t);
  const auto st = row_major_strides(ts);
  const std::vector<std::vector<int64_t>> walk_strides{row_major_strides(window), pick(a.rest, st)};
  const int64_t per_row = num_elements(window);
  const bool add = n.op == "indexed_add";
  std::vector<double> fsum(add ? r.type.num_elements() : 0, 0.0);
  std::vector<uint64_t> isum(fsum.size(), 0);  // wraps like the result type
  std::vector<bool> hit(fsum.size(), false);
  std::vector<int64_t> rows;
  if (sorted) rows = sorted_rows(n, indices, *args[3], *args[4], a, ts);
  for (int64_t k = 0; k < is[0] && !sorted; ++k) rows.push_back(k);
  for (int64_t row : rows) {
    const int64_t base = offset_of(indices, row, a, ts, st, false);
    if (base < 0) continue;
    walk(window, walk_strides, [&](const auto& o) {
      const int64_t u = row * per_row + o[0], p = base + o[1];
      if (!add) return convert_element(updates, u, r, p);
      hit[p] = true;
      if (is_float(t)) fsum[p] += get_f64(updates, u);
      else isum[p] += uint64_t(get_i64(updates, u));
    });
  }
  for (size_t p = 0; p < hit.size(); ++p) {
    if (!hit[p]) continue;
    if (is_float(t)) write_f(r, int64_t(p), get_f64(target, int64_t(p)) + fsum[p]);
    else write_i(r, int64_t(p), int64_t(uint64_t(get_i64(target, int64_t(p))) + isum[p]));
  }
  return r;
}

}  // namespace nxv::ir::interp
