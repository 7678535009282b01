// The comparison of computed outputs with the reference interpreter's that `nxv run --check`
// and the differential fuzzer (fuzz/nxv_fuzz_diff.cpp) apply.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace nxv::ir {

// How far a computed float may lie from the interpreter's: |got - want| <= absolute +
// relative * |want|. 16-bit types take at least 1e-2 of each.
struct Tolerance {
  double relative = 1e-5, absolute = 1e-6;
};

// "" when every output of `got` matches `want`, else the first difference, naming the output,
// the element and the tolerance it exceeds. Floats agree within `tol`, in class (NaN,
// infinities) exactly; integers exactly.
std::string check_outputs(const std::vector<Literal>& want, const std::vector<Literal>& got, const Tolerance& tol = {});

}  // namespace nxv::ir
