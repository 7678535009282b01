// Reading fuzzed inputs as graphs, and the cost limits of fuzz_common.h.
#include "fuzz/fuzz_common.h"

#include <cstdio>
#include <cstdlib>
#include <limits>

#include "ir/json.h"
#include "ir/verify.h"

namespace nxv::fuzz {

std::optional<ir::Graph> read_verified(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  ir::Graph g;
  try {
    g = ir::parse_graph(text);
  } catch (const ir::IrError&) {
    return std::nullopt;
  } catch (const std::exception& e) {
    finding(std::string("parse_graph threw a non-IrError: ") + e.what());
  }
  try {
    ir::verify(g);
  } catch (const ir::IrError&) {
    return std::nullopt;
  } catch (const std::exception& e) {
    finding(std::string("verify threw a non-IrError: ") + e.what(), &g);
  }
  return g;
}

namespace {
int64_t saturating_add(int64_t a, int64_t b) {
  return a > std::numeric_limits<int64_t>::max() - b ? std::numeric_limits<int64_t>::max() : a + b;
}

int64_t elements(const ir::TensorType& t) {
  for (int64_t d : t.shape)
    if (d == 0) return 0;
  int64_t n = 1;
  for (int64_t d : t.shape)
    if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<int64_t>::max();
  return n;
}
}  // namespace

int64_t total_elements(const ir::Graph& g) {
  int64_t n = 0;
  for (const auto& node : g.nodes) {
    for (const auto& t : node.results) n = saturating_add(n, elements(t));
    for (const auto& [name, region] : node.regions)
      if (region) n = saturating_add(n, total_elements(*region));
  }
  return n;
}

bool contains_op(const ir::Graph& g, const std::string& op) {
  for (const auto& node : g.nodes) {
    if (node.op == op) return true;
    for (const auto& [name, region] : node.regions)
      if (region && contains_op(*region, op)) return true;
  }
  return false;
}

void finding(const std::string& what, const ir::Graph* graph) {
  std::fprintf(stderr, "nxv fuzz finding: %s\n", what.c_str());
  if (graph) std::fprintf(stderr, "graph: %s\n", ir::write_graph(*graph).c_str());
  std::abort();
}

}  // namespace nxv::fuzz
