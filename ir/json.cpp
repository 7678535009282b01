#include "ir/json.h"

#include <fstream>
#include <set>
#include <sstream>

namespace nxv::ir {
namespace {

using nlohmann::json;

TensorType parse_type(const json& j, NodeId id, const std::string& op) {
  if (!j.contains("type") || !j["type"].is_string()) throw IrError(id, op, "missing string 'type'");
  if (!j.contains("shape") || !j["shape"].is_array()) throw IrError(id, op, "missing array 'shape'");
  TensorType t;
  try {
    t.dtype = parse_dtype(j["type"].get<std::string>());
  } catch (const IrError& e) {
    throw IrError(id, op, e.what());
  }
  for (const auto& d : j["shape"]) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) throw IrError(id, op, "shape entries must be non-negative integers");
    t.shape.push_back(d.get<int64_t>());
  }
  return t;
}

json type_json(const TensorType& t) { return {{"type", dtype_name(t.dtype)}, {"shape", t.shape}}; }

}  // namespace

Graph graph_from_json(const json& j) {
  if (!j.is_object()) throw IrError("a graph must be a JSON object");
  Graph g;
  g.version = j.value("version", 1);
  if (g.version != 1) throw IrError("unsupported IR version " + std::to_string(g.version) + " (this build reads 1)");
  if (j.contains("name") && j["name"].is_string()) g.name = j["name"];
  if (!j.contains("nodes") || !j["nodes"].is_array()) throw IrError("graph has no 'nodes' array");
  std::set<NodeId> defined;
  for (const auto& jn : j["nodes"]) {
    if (!jn.is_object() || !jn.contains("id") || !jn["id"].is_number_integer())
      throw IrError("every node needs an integer 'id': " + jn.dump().substr(0, 80));
    Node n;
    n.id = jn["id"];
    if (!jn.contains("op") || !jn["op"].is_string()) throw IrError(n.id, "?", "missing string 'op'");
    n.op = jn["op"];
    if (defined.count(n.id)) throw IrError(n, "duplicate node id");
    if (jn.contains("args")) {
      if (!jn["args"].is_array()) throw IrError(n, "'args' must be an array of node ids");
      for (const auto& a : jn["args"]) {
        if (!a.is_number_integer()) throw IrError(n, "'args' must be an array of node ids");
        NodeId id = a;
        if (!defined.count(id))
          throw IrError(n, "argument " + std::to_string(id) + " is not defined before this node (dangling id or cycle)");
        n.args.push_back(id);
      }
    }
    if (jn.contains("results")) {
      if (!jn["results"].is_array()) throw IrError(n, "'results' must be an array");
      for (const auto& r : jn["results"]) n.results.push_back(parse_type(r, n.id, n.op));
    } else {
      n.results.push_back(parse_type(jn, n.id, n.op));
    }
    if (jn.contains("attrs")) {
      if (!jn["attrs"].is_object()) throw IrError(n, "'attrs' must be an object");
      n.attrs = jn["attrs"];
    }
    if (jn.contains("regions")) {
      if (!jn["regions"].is_object()) throw IrError(n, "'regions' must be an object of graphs");
      for (const auto& [name, rg] : jn["regions"].items()) {
        try {
          n.regions[name] = std::make_shared<Graph>(graph_from_json(rg));
        } catch (const IrError& e) {
          throw IrError(n, "in region '" + name + "': " + e.what());
        }
      }
    }
    defined.insert(n.id);
    g.nodes.push_back(std::move(n));
  }
  if (!j.contains("outputs") || !j["outputs"].is_array()) throw IrError("graph has no 'outputs' array");
  for (const auto& o : j["outputs"]) {
    if (!o.is_number_integer() || !defined.count(o.get<NodeId>()))
      throw IrError("output " + o.dump() + " is not a node of the graph");
    g.outputs.push_back(o);
  }
  g.reindex();
  return g;
}

Graph parse_graph(const std::string& text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw IrError(std::string("malformed JSON: ") + e.what());
  }
  return graph_from_json(j);
}

Graph read_graph_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw IrError("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_graph(ss.str());
}

json graph_to_json(const Graph& g) {
  json nodes = json::array();
  for (const auto& n : g.nodes) {
    json jn = {{"id", n.id}, {"op", n.op}};
    if (!n.args.empty()) jn["args"] = n.args;
    if (n.results.size() == 1) {
      jn.update(type_json(n.results[0]));
    } else {
      jn["results"] = json::array();
      for (const auto& r : n.results) jn["results"].push_back(type_json(r));
    }
    if (!n.attrs.empty()) jn["attrs"] = n.attrs;
    for (const auto& [name, rg] : n.regions) jn["regions"][name] = graph_to_json(*rg);
    nodes.push_back(std::move(jn));
  }
  json j = {{"version", g.version}, {"nodes", nodes}, {"outputs", g.outputs}};
  if (!g.name.empty()) j["name"] = g.name;
  return j;
}

std::string write_graph(const Graph& g) { return graph_to_json(g).dump(); }

}  // namespace nxv::ir
