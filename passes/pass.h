// Pass infrastructure: small named passes over an ir::Graph, run in order.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "passes/fusion_cost.h"

namespace nxv::passes {

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string name() const = 0;  // the name used on the command line and in lit tests
  virtual void run(ir::Graph& graph) = 0;
  // The target's kernel size bounds, for the passes that form kernels.
  void set_bounds(const KernelBounds& bounds) { bounds_ = bounds; }

 protected:
  KernelBounds bounds_;
};

// Every pass registers itself here (see NXV_REGISTER_PASS) so that the CLI
// and lit tests can run any of them by name.
std::unique_ptr<Pass> create_pass(const std::string& name);  // throws std::invalid_argument
std::vector<std::string> registered_passes();

// The pipeline that compiles a graph for the runtime: canonicalisation,
// simplification, fusion, lowering to `kernel` nodes, buffer planning.
std::vector<std::string> default_pipeline();

class PassManager {
 public:
  explicit PassManager(std::vector<std::string> pass_names, const KernelBounds& bounds = {});
  // Called after each pass with the pass name and the graph it produced.
  using Observer = std::function<void(const std::string& pass, const ir::Graph&)>;
  void set_observer(Observer obs) { observer_ = std::move(obs); }
  // Runs each pass, then the verifier; a verifier failure names the pass that broke the graph.
  void run(ir::Graph& graph);

 private:
  std::vector<std::unique_ptr<Pass>> passes_;
  Observer observer_;
};

namespace detail {
struct Registrar {
  Registrar(const std::string& name, std::function<std::unique_ptr<Pass>()> factory);
};
}  // namespace detail

#define NXV_REGISTER_PASS(Class, Name) \
  static ::nxv::passes::detail::Registrar nxv_registrar_##Class(Name, [] { return std::make_unique<Class>(); })

}  // namespace nxv::passes
