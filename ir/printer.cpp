// The IR printer (the text lit tests check); see printer.h for the format.
#include "ir/printer.h"

namespace nxv::ir {
namespace {
// Appends to one string: each line is written once, whatever the nesting depth.
void print_into(std::string& out, const Graph& g, int indent) {
  const std::string pad(indent, ' ');
  out += pad + "graph @" + (g.name.empty() ? "main" : g.name) + " -> (";
  for (size_t i = 0; i < g.outputs.size(); ++i) out += (i ? ", %" : "%") + std::to_string(g.outputs[i]);
  out += ")\n";
  for (const auto& n : g.nodes) {
    out += pad + "  %" + std::to_string(n.id) + " = " + n.op + "(";
    for (size_t i = 0; i < n.args.size(); ++i) out += (i ? ", %" : "%") + std::to_string(n.args[i]);
    out += ") : ";
    for (size_t i = 0; i < n.results.size(); ++i) out += (i ? ", " : "") + to_string(n.results[i]);
    if (!n.attrs.empty()) out += " " + n.attrs.dump();  // nlohmann sorts object keys
    out += "\n";
    for (const auto& [name, rg] : n.regions) {
      out += pad + "    region " + name + ":\n";
      print_into(out, *rg, indent + 6);
    }
  }
}
}  // namespace

std::string print_graph(const Graph& g, int indent) {
  std::string out;
  print_into(out, g, indent);
  return out;
}

}  // namespace nxv::ir
