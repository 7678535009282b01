// What the libFuzzer targets share: reading a fuzzed input as a graph the way the NIF does,
// and the limits that keep one input's cost bounded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "ir/ir.h"

namespace nxv::fuzz {

// The input as a graph that passed the verifier, or nullopt when the reader or the verifier
// rejected it as they should (an ir::IrError). Any other outcome aborts: a finding.
std::optional<ir::Graph> read_verified(const uint8_t* data, size_t size);

// Elements of every node's results, regions included, saturating at INT64_MAX.
int64_t total_elements(const ir::Graph& g);

// Whether a node of `g` or of its regions has op `op`.
bool contains_op(const ir::Graph& g, const std::string& op);

// Reports a finding on stderr and aborts, so that libFuzzer saves the input.
[[noreturn]] void finding(const std::string& what, const ir::Graph* graph = nullptr);

}  // namespace nxv::fuzz
