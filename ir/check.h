// The comparison of computed outputs with the reference interpreter's that `nxv run --check`
// and the differential fuzzer (fuzz/nxv_fuzz_diff.cpp) apply.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace nxv::ir {

// "" when every output of `got` matches `want`, else the first difference, naming the output
// and element. Floats agree within 1e-5 relative + 1e-6 absolute (1e-2 and 1e-2 for 16-bit
// types), in class (NaN, infinities) exactly; integers exactly.
std::string check_outputs(const std::vector<Literal>& want, const std::vector<Literal>& got);

}  // namespace nxv::ir
