// JSON reading and writing of graphs (docs/ir.md).
#pragma once

#include <string>

#include "ir/ir.h"

namespace nxv::ir {

// Throws IrError naming the node for malformed input (missing keys, wrong kinds, unknown
// types, duplicate or dangling ids, forward references).
Graph parse_graph(const std::string& json);
Graph read_graph_file(const std::string& path);
std::string write_graph(const Graph& g);
nlohmann::json graph_to_json(const Graph& g);
Graph graph_from_json(const nlohmann::json& j);

}  // namespace nxv::ir
