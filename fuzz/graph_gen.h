// A structure-aware generator of valid but extreme graphs: random ops of every family the
// device runs, every type, shapes with 0, 1 and long dimensions, literals and inputs full
// of NaN, ±Inf, ±0 and subnormals. The same seed gives the same graph and inputs. Used by
// the differential fuzzer (nxv_fuzz_diff) and the soak test (bench/soak.cpp).
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include "codegen/target.h"
#include "ir/ir.h"

namespace nxv::fuzz {

struct GenOptions {
  int max_ops = 12;                // ops after the sources
  int64_t max_elements = 1 << 14;  // of any one value
  // Types the device computes in (a device without f64 or 64-bit integers leaves them out).
  std::vector<ir::DType> dtypes = {ir::DType::S8,  ir::DType::S16,  ir::DType::S32, ir::DType::S64,
                                   ir::DType::U8,  ir::DType::U16,  ir::DType::U32, ir::DType::U64,
                                   ir::DType::F16, ir::DType::BF16, ir::DType::F32, ir::DType::F64};
  // Float types whose subnormals the device flushes: left out of literals and inputs.
  std::set<ir::DType> flushes;
};

// Keeps the types the device computes in (no f64 or 64-bit integers where it lacks them)
// and marks the float widths whose subnormals it flushes.
void fit_to_device(GenOptions& opts, const codegen::DeviceCaps& caps);

// A graph that verifies (ir::verify), from `seed`.
ir::Graph generate_graph(uint64_t seed, const GenOptions& opts);

// Inputs for `g`'s parameters, from `seed`: edge values (±0, ±1, ±Inf, NaN, subnormals
// where kept, the integer extremes) mixed with seeded ones of every magnitude.
std::vector<ir::Literal> generate_inputs(const ir::Graph& g, uint64_t seed, const GenOptions& opts);

}  // namespace nxv::fuzz
