// Helpers the rewriting passes share.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "ir/ir.h"

namespace nxv::passes {

// Redirects every argument and output through `replaced` (old id → new id, applied
// transitively), then drops nodes nothing needs any more.
void apply_replacements(ir::Graph& g, const std::map<ir::NodeId, ir::NodeId>& replaced);

// The replacements for nodes whose results are now computed by other nodes (`values`: the
// node's id -> the value of each of its results): a one-result node is its value, the
// `elem`s reading a tuple's parts are those parts.
std::map<ir::NodeId, ir::NodeId> result_replacements(const ir::Graph& g,
                                                     const std::map<ir::NodeId, std::vector<ir::NodeId>>& values);

// Rebuilds g's node list in order, letting `expand` replace a node: given the node, the
// next free id and the list being built, it may append nodes that compute the node's
// results and return those values; the node is then dropped and its uses (its elems'
// too) read them. It returns nullopt, appending nothing, to keep the node. Nodes before
// it have moved into the list: decide from the node itself, or beforehand.
using Expansion =
    std::function<std::optional<std::vector<ir::NodeId>>(ir::Node& n, ir::NodeId& next, std::vector<ir::Node>& out)>;
void expand_nodes(ir::Graph& g, const Expansion& expand);

// Appends the nodes of `region` to `out` with fresh ids from `next`, its parameter i read
// as `arguments[i]`; returns the ids of its outputs. The region is not changed (its nodes'
// own regions are shared, not copied).
std::vector<ir::NodeId> inline_region(const ir::Graph& region, const std::vector<ir::NodeId>& arguments,
                                      ir::NodeId& next, std::vector<ir::Node>& out);

// Restores an order in which every value is defined before its first use, keeping the
// existing order wherever it already is valid. Throws IrError on a cycle.
void sort_topologically(ir::Graph& g);

// A one-result node appended with a fresh id (ir/ir.h), for the passes here and the IR's own
// expansions (ir/attention.cpp).
using ir::append_node;

// append_node for a pass that appends several nodes in a row: the list and id counter once.
struct NodeAppender {
  ir::NodeId& next;
  std::vector<ir::Node>& out;
  ir::NodeId add(const std::string& op, std::vector<ir::NodeId> args, ir::DType t, ir::Shape shape,
                 nlohmann::json attrs = nlohmann::json::object()) {
    return append_node(out, next, op, std::move(args), t, std::move(shape), std::move(attrs));
  }
};

// The identity of a reduction (sum product reduce_max reduce_min all any) of type t, as a
// constant's attrs.value: padding with it leaves the reduction (or scan) unchanged.
nlohmann::json reduction_identity(const std::string& op, ir::DType t);

// Removes nodes no output depends on. Parameters stay: they define the graph's inputs.
void remove_dead(ir::Graph& g);

}  // namespace nxv::passes
