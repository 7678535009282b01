// Where a device keeps a fragment's elements among a subgroup's invocations: the module that
// measures it (runtime/fragment_probe.cpp runs it), reading its result, and the plan a kernel
// follows to work on an accumulator's rows in registers where the layout allows it.
#pragma once

#include <optional>
#include <vector>

#include "codegen/target.h"

namespace nxv::codegen {

// Whether the runtime measures f's layouts on subgroups of subgroup_size: KHR fragments of
// f16 or bf16 with f32 accumulators whose n == k (a multiple of 8) and whose m x n the
// subgroup divides, the only ones a register plan takes.
bool probes_layout(const CooperativeMatrixShape& f, uint32_t subgroup_size);

// A module of one subgroup (subgroup_size invocations) writing four buffers, bindings 0-3:
// the accumulator (m x n f32, row-major) whose element i of invocation l holds
// l * elements + i; the A operand (m x k of the operands' type, row-major) holding l, then
// holding i; and uvec4 (accumulator length, A length, 0, 0). Where a length is not m x n (or
// m x k) over the subgroup size, the module writes only the lengths.
std::vector<uint32_t> fragment_layout_probe(const CooperativeMatrixShape& f, uint32_t subgroup_size);

// The layouts the probe's buffers show (accumulator words, A's two 16-bit tables, the lengths
// word), set in f; false, leaving f as it was, where they are not a layout: a length other
// than the expected, an element held twice or by no invocation.
bool read_fragment_layouts(const std::vector<uint32_t>& accumulator, const std::vector<uint16_t>& a_invocation,
                           const std::vector<uint16_t>& a_element, const std::vector<uint32_t>& lengths,
                           uint32_t subgroup_size, CooperativeMatrixShape& f);

// An accumulator's rows worked on in registers: element i of invocation l sits at row
// lane_row[l] + row[i], column lane_col[l] + col[i]; a row's elements are those of one class
// (the same row[i]) on invocations l ^ s for s spanned by `xor_basis`; and A's element j is
// the accumulator's element a_from_accumulator[j] at the same row and column (n == k), so
// that the accumulator's values become an A operand without leaving registers.
struct RegisterLayout {
  uint32_t elements = 0;
  std::vector<uint32_t> lane_row, lane_col, row, col;
  std::vector<uint32_t> class_of;  // per element: its index among the distinct rows
  uint32_t classes = 0;
  std::vector<uint32_t> xor_basis;
  std::vector<uint32_t> a_from_accumulator;
};

// The plan for fragments f on subgroups of subgroup_size, where f's measured layouts have
// that form; nullopt otherwise (the kernel then goes through shared memory).
std::optional<RegisterLayout> register_layout(const CooperativeMatrixShape& f, uint32_t subgroup_size);

}  // namespace nxv::codegen
