// Helpers for codegen tests: build a kernel node (and its parent graph) by hand.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen/kernel.h"
#include "ir/ir.h"

namespace nxv::codegen::cgtest {

// A kernel body under construction. Parameters become kernel arguments, in order.
class KernelBuilder {
 public:
  ir::NodeId param(ir::DType t, ir::Shape s) {
    ir::NodeId id = add("parameter", {}, t, std::move(s), {{"index", params_.size()}});
    params_.push_back(id);
    return id;
  }
  ir::NodeId add(const std::string& op, std::vector<ir::NodeId> args, ir::DType t, ir::Shape s,
                 nlohmann::json attrs = nlohmann::json::object()) {
    ir::Node n;
    n.id = next_++;
    n.op = op;
    n.args = std::move(args);
    n.results = {{t, std::move(s)}};
    n.attrs = std::move(attrs);
    body_.nodes.push_back(n);
    body_.reindex();
    return n.id;
  }
  const ir::TensorType& type(ir::NodeId id) const { return body_.node(id).type(); }

  // The parent graph: one top-level parameter per body parameter, then the kernel node.
  ir::Graph finish(std::vector<ir::NodeId> outputs, const std::string& kind = "elementwise") {
    body_.outputs = outputs;
    ir::Graph g;
    g.name = "test";
    ir::Node k;
    k.op = "kernel";
    k.attrs = {{"kind", kind}};
    for (size_t i = 0; i < params_.size(); ++i) {
      ir::Node p;
      p.id = ir::NodeId(i);
      p.op = "parameter";
      p.results = {type(params_[i])};
      p.attrs = {{"index", i}};
      g.nodes.push_back(p);
      k.args.push_back(p.id);
    }
    k.id = ir::NodeId(params_.size());
    for (auto o : outputs) k.results.push_back(type(o));
    k.regions["body"] = std::make_shared<ir::Graph>(body_);
    k.regions["body"]->reindex();
    g.nodes.push_back(k);
    g.outputs = {k.id};
    g.reindex();
    return g;
  }

 private:
  ir::Graph body_;
  std::vector<ir::NodeId> params_;
  ir::NodeId next_ = 100;  // distinct from parent ids so mix-ups show
};

inline const ir::Node& kernel_of(const ir::Graph& g) { return g.nodes.back(); }

// Occurrences of `what` in `text` (instructions in a disassembly).
inline size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

inline KernelBinary compile(const ir::Graph& g, const DeviceCaps& caps = generic_caps()) {
  return compile_kernel(kernel_of(g), g, caps);
}

// Compiles the graph's kernel and checks the module passes SPIRV-Tools validation.
inline void expect_valid(const ir::Graph& g, const DeviceCaps& caps = generic_caps()) {
  auto kb = compile(g, caps);
  EXPECT_EQ(validate(kb.spirv, caps.api_version), "") << disassemble(kb.spirv);
}

}  // namespace nxv::codegen::cgtest
