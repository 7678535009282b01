// Shared pieces of the reference interpreter (ir/interpret*.cpp), one file per op family.
//
// Numbers live in two computing domains (read with get_f64 / get_i64): floats as double (what Nx.BinaryBackend computes in,
// Erlang floats being doubles), rounded once into the result's type when written; integers as
// their 64-bit two's complement pattern, sign- or zero-extended from the type's width, and
// wrapped back to that width when written.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "ir/ir.h"
#include "ir/literal.h"

namespace nxv::ir::interp {

using Args = std::vector<const Literal*>;

Literal make_literal(const TensorType& t);

// Rounds v to the literal's float type: to nearest even (f16 directly, without rounding
// through f32 first), except bf16, which Nx truncates from the nearest f32. Into an
// integer literal, converts as as_type does (below).
void write_f(Literal& lit, int64_t i, double v);
// Keeps the low bits of v for the literal's integer width (into a float literal: its value).
void write_i(Literal& lit, int64_t i, int64_t v);
// The pattern of v wrapped to t's width and re-extended (sign for s*, zero for u*).
int64_t wrap(int64_t v, DType t);
// Element si of src stored into dst[di] converted as Nx's as_type does: float to integer
// truncates toward zero and saturates, NaN gives 0; integers wrap.
void convert_element(const Literal& src, int64_t si, Literal& dst, int64_t di);
Literal convert(const Literal& src, DType to);
bool truthy(const Literal& lit, int64_t i);  // nonzero; NaN counts as true
// Element i of an integer literal as a position: a u64 above INT64_MAX reads as INT64_MAX
// (not as a negative number), so that it is out of range at the top like any large index.
int64_t index_at(const Literal& lit, int64_t i);

std::vector<int64_t> row_major_strides(const Shape& shape);

// The lines along a node's attrs.axis through a tensor of shape `s` (the scans and sorts):
// outer * inner lines of len elements, inner apart; element k of line `line` is at(line, k).
// Throws IrError naming the node for an axis out of range.
struct AxisLines {
  int64_t len, inner, outer;
  AxisLines(const Node& n, const Shape& s);
  int64_t at(int64_t line, int64_t k) const { return (line / inner * len + k) * inner + line % inner; }
};

// Walks every index of `shape` in row-major order, calling f(offsets) or f(offsets, index)
// where offsets[k] = sum over d of index[d] * strides[k][d]. Every index computation of the
// interpreter (broadcasting, transposes, reductions, dot) is a set of strides over a walk.
template <class F>
void walk(const Shape& shape, const std::vector<std::vector<int64_t>>& strides, F&& f) {
  if (num_elements(shape) == 0) return;
  const size_t rank = shape.size(), n = strides.size();
  std::vector<int64_t> idx(rank, 0), off(n, 0);
  for (;;) {
    if constexpr (std::is_invocable_v<F&, const std::vector<int64_t>&, const std::vector<int64_t>&>) f(off, idx);
    else f(off);
    size_t d = rank;
    while (d > 0) {
      --d;
      if (++idx[d] < shape[d]) {
        for (size_t k = 0; k < n; ++k) off[k] += strides[k][d];
        break;
      }
      for (size_t k = 0; k < n; ++k) off[k] -= strides[k][d] * (shape[d] - 1);
      idx[d] = 0;
      if (d == 0) return;
    }
    if (rank == 0) return;
  }
}

void check_arity(const Node& n, const Args& args, size_t want);
// attrs[key] as a list of integers; absent: empty.
std::vector<int64_t> int_list(const Node& n, const char* key);

// The op families; each expects the arity and types the verifier guarantees and checks
// what it needs to stay in bounds.
Literal eval_source(const Node& n);
Literal eval_elementwise(const Node& n, const Args& args);
Literal eval_shape(const Node& n, const Args& args);
Literal eval_reduce(const Node& n, const Args& args);
Literal eval_scan(const Node& n, const Args& args);
Literal eval_sort(const Node& n, const Args& args);
Literal eval_dot(const Node& n, const Args& args);
Literal eval_gather(const Node& n, const Args& args);
Literal eval_indexed(const Node& n, const Args& args);

}  // namespace nxv::ir::interp
