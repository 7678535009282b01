// Inputs the fuzz targets skip because they hit a bug already known and being fixed on its
// own branch (issue #30's list). Each filter names its bug; remove a filter once its fix is
// merged, so that the fuzzers guard the fix from then on.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ir/ir.h"

namespace nxv::fuzz::known {

// Bug 1 (shape element-count overflow): a `shape` whose element count overflows int64
// (`s32[4611686018427387905,4]` iota segfaults, `[2^32,2^32]` runs as 0 elements). True when
// the raw input names such a shape anywhere (regions and `results` included).
bool overflowing_shape(const uint8_t* data, size_t size);

// Bug 5 (JSON type errors naming no field): the reader lets nlohmann's type errors through
// as plain std::exception rather than an IrError naming the node. While true, the targets
// accept any std::exception from parse_graph; once false, only ir::IrError.
constexpr bool kUntypedJsonErrors = true;

// The known bug that may explain a difference between the device and the interpreter on
// `g` (nxv_fuzz_diff), or null:
//   bug 2 (pow of a negative base with a huge even exponent): `g` has a float `pow`;
//   bug 3 (f16/bf16 sum/product accumulate differently on the device): `g` has a `sum` or
//   `product` of f16 or bf16.
const char* explains_mismatch(const ir::Graph& g);

}  // namespace nxv::fuzz::known
