#include <map>
#include <stdexcept>

#include "ir/verify.h"
#include "passes/pass.h"

namespace nxv::passes {
namespace {
std::map<std::string, std::function<std::unique_ptr<Pass>()>>& registry() {
  static std::map<std::string, std::function<std::unique_ptr<Pass>()>> r;
  return r;
}
}  // namespace

detail::Registrar::Registrar(const std::string& name, std::function<std::unique_ptr<Pass>()> factory) {
  registry()[name] = std::move(factory);
}

std::unique_ptr<Pass> create_pass(const std::string& name) {
  auto it = registry().find(name);
  if (it == registry().end()) {
    std::string known;
    for (const auto& [n, f] : registry()) known += (known.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown pass '" + name + "' (known: " + known + ")");
  }
  return it->second();
}

std::vector<std::string> registered_passes() {
  std::vector<std::string> names;
  for (const auto& [n, f] : registry()) names.push_back(n);
  return names;
}

// Control flow is decided first where literals decide it (propagate-invariants, then
// constant-fold for fold-conds and unroll to see literal predicates and bounds); the rest
// of the pipeline then runs over the branches and copies that remain. sort-indexed comes
// before split-sort, which splits the argsorts it adds. fuse-attention sees the graph
// simplified and its masks folded, before split-reduction and split-dot split the dots it
// matches.
std::vector<std::string> default_pipeline() {
  return {"propagate-invariants", "constant-fold",   "fold-conds",   "unroll",          "if-convert",
          "canonicalize",         "simplify",        "cse",          "constant-fold",   "dce",
          "fuse-attention",       "split-reduction", "split-dot",    "split-scan",      "sort-indexed",
          "split-sort",           "stack-starts",    "narrow-operands", "fuse",         "detect-chains",
          "lower-to-kernels",     "plan-buffers"};
}

PassManager::PassManager(std::vector<std::string> pass_names, const KernelBounds& bounds) {
  for (const auto& n : pass_names) {
    passes_.push_back(create_pass(n));
    passes_.back()->set_bounds(bounds);
  }
}

void PassManager::run(ir::Graph& graph) {
  graph.reindex();
  ir::verify(graph);
  for (auto& p : passes_) {
    p->run(graph);
    try {
      ir::verify(graph);
    } catch (const ir::IrError& e) {
      throw ir::IrError("pass '" + p->name() + "' produced an invalid graph: " + e.what());
    }
    if (observer_) observer_(p->name(), graph);
  }
}

}  // namespace nxv::passes
