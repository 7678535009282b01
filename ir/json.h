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
// Any JSON text the tools read (graphs, inputs files): IrError for malformed or too deeply
// nested text.
nlohmann::json parse_json(const std::string& text);
// {"type": "f32", "shape": [2, 3]}: IrError for a bad type, negative extents or a size
// beyond int64 (not naming a node: callers add that).
TensorType tensor_type_from_json(const nlohmann::json& j);

// The readers recurse once per region level; deeper graphs are rejected with an error rather
// than risking the stack (a NIF runs on a dirty scheduler's small stack). A region level is
// four JSON levels (node, regions, graph, nodes).
constexpr int kMaxRegionDepth = 32;
constexpr int kMaxJsonDepth = 4 * kMaxRegionDepth + 64;

}  // namespace nxv::ir
