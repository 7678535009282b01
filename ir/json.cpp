#include "ir/json.h"

#include <fstream>
#include <set>
#include <sstream>

#include "ir/literal.h"

namespace nxv::ir {
namespace {

using nlohmann::json;

TensorType parse_type(const json& j, NodeId id, const std::string& op) {
  try {
    return tensor_type_from_json(j);
  } catch (const IrError& e) {
    throw IrError(id, op, e.what());
  }
}

json type_json(const TensorType& t) { return {{"type", dtype_name(t.dtype)}, {"shape", t.shape}}; }

Graph graph_at_depth(const json& j, int depth);

void read_regions(Node& n, const json& regions, int depth) {
  if (!regions.is_object()) throw IrError(n, "'regions' must be an object of graphs");
  if (depth >= kMaxRegionDepth)
    throw IrError(n, "regions nested more than " + std::to_string(kMaxRegionDepth) + " deep");
  for (const auto& [name, rg] : regions.items()) {
    try {
      n.regions[name] = std::make_shared<Graph>(graph_at_depth(rg, depth + 1));
    } catch (const IrError& e) {
      throw IrError(n, "in region '" + name + "': " + e.what());
    }
  }
}

Graph graph_at_depth(const json& j, int depth) {
  if (!j.is_object()) throw IrError("a graph must be a JSON object");
  Graph g;
  if (j.contains("version")) {
    if (!j["version"].is_number_integer()) throw IrError("'version' must be the integer 1, got " + j["version"].dump());
    if (j["version"] != 1) throw IrError("unsupported IR version " + j["version"].dump() + " (this build reads 1)");
  }
  if (j.contains("name")) {
    if (!j["name"].is_string()) throw IrError("'name' must be a string, got " + j["name"].dump().substr(0, 80));
    g.name = j["name"];
  }
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
      // Checked once here, where text enters; the passes write only valid base64.
      if (n.attrs.contains("data_b64") && n.attrs["data_b64"].is_string()) {
        try {
          check_base64(n.attrs["data_b64"].get_ref<const std::string&>());
        } catch (const IrError& e) {
          throw IrError(n, std::string("data_b64: ") + e.what());
        }
      }
    }
    if (jn.contains("regions")) read_regions(n, jn["regions"], depth);
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

}  // namespace

TensorType tensor_type_from_json(const json& j) {
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) throw IrError("missing string 'type'");
  if (!j.contains("shape") || !j["shape"].is_array()) throw IrError("missing array 'shape'");
  TensorType t;
  t.dtype = parse_dtype(j["type"].get<std::string>());
  for (const auto& d : j["shape"]) {
    // Unsigned values above 2^63 read as negative.
    if (!d.is_number_integer() || d.get<int64_t>() < 0)
      throw IrError("shape entries must be non-negative integers, got " + j["shape"].dump().substr(0, 80));
    t.shape.push_back(d.get<int64_t>());
  }
  try {
    t.byte_size();
  } catch (const IrError& e) {
    throw IrError(std::string("bad shape: ") + e.what());
  }
  return t;
}

Graph graph_from_json(const json& j) { return graph_at_depth(j, 0); }

json parse_json(const std::string& text) {
  // The parser itself keeps its own stack, but copying, printing and destroying a document
  // recurse, as would the graph readers: bound the depth before anything else sees it.
  json::parser_callback_t bounded = [](int depth, json::parse_event_t, json&) {
    if (depth > kMaxJsonDepth)
      throw IrError("JSON nested more than " + std::to_string(kMaxJsonDepth) + " levels deep (regions may nest " +
                    std::to_string(kMaxRegionDepth) + " deep)");
    return true;
  };
  try {
    return json::parse(text, bounded);
  } catch (const json::exception& e) {  // a syntax error, or a number beyond a double (out_of_range 406)
    throw IrError(std::string("malformed JSON: ") + e.what());
  }
}

Graph parse_graph(const std::string& text) { return graph_from_json(parse_json(text)); }

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
