#include "ir/printer.h"

namespace nxv::ir {

std::string print_graph(const Graph& g, int indent) {
  std::string pad(indent, ' ');
  std::string out = pad + "graph @" + (g.name.empty() ? "main" : g.name) + " -> (";
  for (size_t i = 0; i < g.outputs.size(); ++i) out += (i ? ", %" : "%") + std::to_string(g.outputs[i]);
  out += ")\n";
  for (const auto& n : g.nodes) {
    out += pad + "  %" + std::to_string(n.id) + " = " + n.op + "(";
    for (size_t i = 0; i < n.args.size(); ++i) out += (i ? ", %" : "%") + std::to_string(n.args[i]);
    out += ") : ";
    for (size_t i = 0; i < n.results.size(); ++i) out += (i ? ", " : "") + to_string(n.results[i]);
    if (!n.attrs.empty()) out += " " + n.attrs.dump();  // nlohmann sorts object keys
    out += "\n";
    for (const auto& [name, rg] : n.regions) out += pad + "    region " + name + ":\n" + print_graph(*rg, indent + 6);
  }
  return out;
}

}  // namespace nxv::ir
