// The fragment-layout probe, reading what it wrote, and the register plan derived from it
// (fragment_layout.h).
#include "codegen/fragment_layout.h"

#include <algorithm>
#include <bit>
#include <map>

#include "codegen/matmul_product.h"
#include "codegen/spirv_builder.h"
#include "ir/literal.h"

namespace nxv::codegen {

namespace {

using spirv::Id;

inline constexpr auto OpCooperativeMatrixLengthKHR = spv::Op(4460);

// A 16-bit value of the operands' type from a small whole number, through the word whose
// low half it is.
Id small_whole(spirv::Builder& b, const CooperativeMatrixShape& f, Id component, Id value) {
  const Id u32 = b.type_int(32), f32 = b.type_float(32);
  const Id x = b.op(spv::OpConvertUToF, f32, {value});
  Id word;
  if (f.operands == MatrixComponent::F16)
    word = b.ext(GLSLstd450PackHalf2x16, u32, {b.op(spv::OpCompositeConstruct, b.type_vector(f32, 2), {x, b.const_f32(0.0f)})});
  else
    word = b.op(spv::OpShiftRightLogical, u32, {b.op(spv::OpBitcast, u32, {x}), b.const_int(32, 16)});
  return b.op(spv::OpCompositeExtract, component, {b.op(spv::OpBitcast, b.type_vector(component, 2), {word})}, {0});
}

}  // namespace

bool probes_layout(const CooperativeMatrixShape& f, uint32_t sg) {
  return f.khr && f.accumulator == MatrixComponent::F32 && f.n == f.k && f.n % 8 == 0 && sg && (f.m * f.n) % sg == 0 &&
         (f.operands == MatrixComponent::F16 || f.operands == MatrixComponent::BF16);
}

std::vector<uint32_t> fragment_layout_probe(const CooperativeMatrixShape& f, uint32_t subgroup_size) {
  spirv::Builder b;
  const Id u32 = b.type_int(32), f32 = b.type_float(32), vec = b.type_vector(u32, 4);
  const Id component = matmul::operand_component(b, f.operands);
  const Id acc = b.type_cooperative_matrix(false, f32, f.m, f.n, spirv::kMatrixAccumulator);
  const Id a = b.type_cooperative_matrix(false, component, f.m, f.k, spirv::kMatrixA);
  Id buffers[4];
  for (uint32_t i = 0; i < 4; ++i) buffers[i] = b.storage_buffer(vec, 16, i, false);
  b.capability(spv::CapabilityGroupNonUniform);
  b.begin_main();
  const Id lane = b.builtin_u32(spv::BuiltInSubgroupLocalInvocationId);
  const Id ptr = b.type_pointer(spv::StorageClassStorageBuffer, vec);
  auto at = [&](int i) { return b.op(spv::OpAccessChain, ptr, {buffers[i], b.const_int(32, 0), b.const_int(32, 0)}); };
  const Id acc_length = b.op(OpCooperativeMatrixLengthKHR, u32, {acc});
  const Id a_length = b.op(OpCooperativeMatrixLengthKHR, u32, {a});
  const Id zero = b.const_int(32, 0);
  b.op_void(spv::OpStore, {at(3), b.op(spv::OpCompositeConstruct, vec, {acc_length, a_length, zero, zero})});
  const uint32_t acc_elements = f.m * f.n / subgroup_size, a_elements = f.m * f.k / subgroup_size;
  const Id expected = b.op(spv::OpLogicalAnd, b.type_bool(),
                           {b.op(spv::OpIEqual, b.type_bool(), {acc_length, b.const_int(32, acc_elements)}),
                            b.op(spv::OpIEqual, b.type_bool(), {a_length, b.const_int(32, a_elements)})});
  b.if_then(expected, [&] {
    Id m = b.op(spv::OpCompositeConstruct, acc, {b.const_f32(0.0f)});
    const Id base = b.op(spv::OpIMul, u32, {lane, b.const_int(32, acc_elements)});
    for (uint32_t i = 0; i < acc_elements; ++i) {
      const Id x = b.op(spv::OpConvertUToF, f32, {b.op(spv::OpIAdd, u32, {base, b.const_int(32, i)})});
      m = b.op(spv::OpCompositeInsert, acc, {x, m}, {i});
    }
    b.op_void(spirv::OpCooperativeMatrixStoreKHR, {at(0), m, b.const_int(32, spirv::kRowMajor), b.const_int(32, f.n / 4)});
    const Id held = small_whole(b, f, component, lane);
    Id by_lane = b.op(spv::OpCompositeConstruct, a, {held}), by_element = by_lane;
    for (uint32_t j = 0; j < a_elements; ++j)
      by_element = b.op(spv::OpCompositeInsert, a, {small_whole(b, f, component, b.const_int(32, j)), by_element}, {j});
    b.op_void(spirv::OpCooperativeMatrixStoreKHR, {at(1), by_lane, b.const_int(32, spirv::kRowMajor), b.const_int(32, f.k / 8)});
    b.op_void(spirv::OpCooperativeMatrixStoreKHR, {at(2), by_element, b.const_int(32, spirv::kRowMajor), b.const_int(32, f.k / 8)});
  });
  b.end_main(subgroup_size);
  return b.finish();
}

bool read_fragment_layouts(const std::vector<uint32_t>& accumulator, const std::vector<uint16_t>& a_invocation,
                           const std::vector<uint16_t>& a_element, const std::vector<uint32_t>& lengths,
                           uint32_t subgroup_size, CooperativeMatrixShape& f) {
  const uint32_t acc_elements = f.m * f.n / subgroup_size, a_elements = f.m * f.k / subgroup_size;
  if (lengths.size() < 2 || lengths[0] != acc_elements || lengths[1] != a_elements || !acc_elements || !a_elements ||
      accumulator.size() != f.m * f.n || a_invocation.size() != f.m * f.k || a_element.size() != f.m * f.k)
    return false;
  // Each (invocation, element) at exactly one place of the matrix.
  auto fill = [](FragmentLayout& out, uint32_t rows, uint32_t cols, auto&& slot_of) {
    const int64_t count = int64_t(rows) * cols;
    out.row.assign(count, UINT16_MAX), out.col.assign(count, UINT16_MAX);
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t c = 0; c < cols; ++c) {
        const int64_t s = slot_of(r * cols + c);
        if (s < 0 || s >= count || out.row[s] != UINT16_MAX) return false;
        out.row[s] = uint16_t(r), out.col[s] = uint16_t(c);
      }
    return true;
  };
  auto whole = [](float x) { return x >= 0 && x < 65536 && x == float(int64_t(x)) ? int64_t(x) : int64_t(-1); };
  auto half = [&](uint16_t h) { return whole(f.operands == MatrixComponent::F16 ? ir::f16_to_f32(h) : ir::bf16_to_f32(h)); };
  FragmentLayout acc, a;
  const bool ok = fill(acc, f.m, f.n, [&](uint32_t p) { return whole(std::bit_cast<float>(accumulator[p])); }) &&
                  fill(a, f.m, f.k, [&](uint32_t p) {
                    const int64_t l = half(a_invocation[p]), j = half(a_element[p]);
                    return l < 0 || j < 0 || j >= a_elements ? int64_t(-1) : l * a_elements + j;
                  });
  if (!ok) return false;
  f.accumulator_layout = std::move(acc), f.a_layout = std::move(a);
  return true;
}

std::optional<RegisterLayout> register_layout(const CooperativeMatrixShape& f, uint32_t sg) {
  const FragmentLayout &acc = f.accumulator_layout, &a = f.a_layout;
  if (f.n != f.k || !sg || acc.row.size() != f.m * f.n || a.row.size() != acc.row.size() || acc.row.size() % sg)
    return std::nullopt;
  RegisterLayout p;
  const uint32_t E = p.elements = uint32_t(acc.row.size()) / sg;
  auto slot = [&](uint32_t l, uint32_t i) { return l * E + i; };
  // Positions split into a part of the invocation and a part of the element (both >= 0).
  auto split = [&](const std::vector<uint16_t>& pos, std::vector<uint32_t>& lane_part, std::vector<uint32_t>& element_part) {
    uint32_t least = UINT32_MAX;
    for (uint32_t i = 0; i < E; ++i) least = std::min<uint32_t>(least, pos[slot(0, i)]);
    for (uint32_t i = 0; i < E; ++i) element_part.push_back(pos[slot(0, i)] - least);
    for (uint32_t l = 0; l < sg; ++l) {
      if (pos[slot(l, 0)] < element_part[0]) return false;
      lane_part.push_back(pos[slot(l, 0)] - element_part[0]);
      for (uint32_t i = 0; i < E; ++i)
        if (pos[slot(l, i)] != lane_part[l] + element_part[i]) return false;
    }
    return true;
  };
  if (!split(acc.row, p.lane_row, p.row) || !split(acc.col, p.lane_col, p.col)) return std::nullopt;
  std::map<uint32_t, uint32_t> classes;
  for (uint32_t i = 0; i < E; ++i) p.class_of.push_back(classes.emplace(p.row[i], uint32_t(classes.size())).first->second);
  p.classes = uint32_t(classes.size());
  // The invocations sharing invocation 0's rows, as a space under xor: a row's elements are
  // those of one class on the invocations of one coset.
  std::vector<uint32_t> span{0};
  for (uint32_t s = 1; s < sg; ++s)
    if (p.lane_row[s] == p.lane_row[0] && std::find(span.begin(), span.end(), s) == span.end()) {
      p.xor_basis.push_back(s);
      for (size_t i = 0, n = span.size(); i < n; ++i) span.push_back(span[i] ^ s);
    }
  for (uint32_t l = 0; l < sg; ++l) {
    uint32_t same = 0;
    for (uint32_t l2 = 0; l2 < sg; ++l2) same += p.lane_row[l2] == p.lane_row[l];
    if (same != span.size()) return std::nullopt;
    for (uint32_t s : span)
      if ((l ^ s) >= sg || p.lane_row[l ^ s] != p.lane_row[l]) return std::nullopt;
  }
  // No other invocation or class reaches a row: each row has n elements, and a coset's class
  // holds span.size() times its elements per invocation.
  std::vector<uint32_t> per_class(p.classes);
  for (uint32_t i = 0; i < E; ++i) ++per_class[p.class_of[i]];
  for (uint32_t c : per_class)
    if (c * span.size() != f.n) return std::nullopt;
  // A's elements at the accumulator's places, by one permutation for every invocation.
  for (uint32_t j = 0; j < E; ++j) {
    uint32_t from = E;
    for (uint32_t i = 0; i < E; ++i)
      if (acc.row[slot(0, i)] == a.row[slot(0, j)] && acc.col[slot(0, i)] == a.col[slot(0, j)]) from = i;
    if (from == E) return std::nullopt;
    for (uint32_t l = 1; l < sg; ++l)
      if (acc.row[slot(l, from)] != a.row[slot(l, j)] || acc.col[slot(l, from)] != a.col[slot(l, j)]) return std::nullopt;
    p.a_from_accumulator.push_back(from);
  }
  return p;
}

}  // namespace nxv::codegen
