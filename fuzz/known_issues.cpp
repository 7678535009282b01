// The known-issue filters of known_issues.h.
#include "fuzz/known_issues.h"

#include <nlohmann/json.hpp>
#include <vector>

namespace nxv::fuzz::known {

namespace {
bool overflows(const nlohmann::json& shape) {
  unsigned __int128 n = 1;
  for (const auto& d : shape) {
    if (!d.is_number_integer()) return false;  // the reader rejects it
    const int64_t v = d.get<int64_t>();
    if (v <= 0) return false;
    n *= uint64_t(v);
    if (n > uint64_t(INT64_MAX)) return true;
  }
  return false;
}
}  // namespace

bool overflowing_shape(const uint8_t* data, size_t size) {
  nlohmann::json root = nlohmann::json::parse(data, data + size, nullptr, false);
  if (root.is_discarded()) return false;
  // Iterative: fuzzed inputs nest deeply.
  std::vector<const nlohmann::json*> todo{&root};
  while (!todo.empty()) {
    const nlohmann::json* j = todo.back();
    todo.pop_back();
    if (j->is_object()) {
      for (const auto& [key, value] : j->items()) {
        if ((key == "shape") && value.is_array() && overflows(value)) return true;
        todo.push_back(&value);
      }
    } else if (j->is_array()) {
      for (const auto& value : *j) todo.push_back(&value);
    }
  }
  return false;
}

namespace {
bool any_node(const ir::Graph& g, bool (*match)(const ir::Node&)) {
  for (const auto& n : g.nodes) {
    if (match(n)) return true;
    for (const auto& [name, region] : n.regions)
      if (region && any_node(*region, match)) return true;
  }
  return false;
}
}  // namespace

const char* explains_mismatch(const ir::Graph& g) {
  if (any_node(g, [](const ir::Node& n) { return n.op == "pow" && ir::is_float(n.type().dtype); }))
    return "bug 2: pow of a negative base with a huge even exponent";
  if (any_node(g, [](const ir::Node& n) {
        return (n.op == "sum" || n.op == "product") &&
               (n.type().dtype == ir::DType::F16 || n.type().dtype == ir::DType::BF16);
      }))
    return "bug 3: f16/bf16 sum/product accumulation";
  return nullptr;
}

}  // namespace nxv::fuzz::known
