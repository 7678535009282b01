// The `attention` op (docs/ir.md): its attrs, its result type, and the unfused graph it
// stands for, which is its meaning: the reference interpreter evaluates that graph.
#pragma once

#include <optional>
#include <vector>

#include "ir/ir.h"

namespace nxv::ir {

// An attention node's attrs, checked. Its operands are [q, k, v], then the mask where
// `mask`, then the bias where `bias`.
struct AttentionAttrs {
  bool mask = false, bias = false;
  std::optional<double> scale;  // the scores multiplied (divided where `divide`) by it
  bool divide = false;
  std::optional<int64_t> causal;  // key j is kept for query i iff j <= i + causal
  nlohmann::json masked = "-inf";  // a masked score: a constant's attrs.value
  size_t operands() const { return 3 + mask + bias; }
  size_t mask_operand() const { return 3; }
  size_t bias_operand() const { return 3 + mask; }
};
// Throws IrError naming the node for a malformed attr.
AttentionAttrs attention_attrs(const Node& n);

// The result type of attention node `n` whose operands have the types `operands`:
// T[B..., Sq, Dv] for q T[B..., Sq, D], k T[B..., Sk, D], v T[B..., Sk, Dv]. Throws IrError
// naming the node and what disagrees.
TensorType attention_type(const Node& n, const std::vector<TensorType>& operands);

// Appends to `out` (fresh ids from `next`) the unfused nodes equal to attention node `n`,
// its operand i read as `operands[i]` of type `types[i]`: dot, scale, bias, mask or causal
// select, the max-subtracted softmax over the keys (reduce_max, subtract, exp, sum,
// divide) and the dot with v, each in T as Nx rounds them. Returns the result's id.
NodeId append_unfused_attention(const Node& n, const std::vector<NodeId>& operands,
                                const std::vector<TensorType>& types, NodeId& next, std::vector<Node>& out);

// The same as a graph of its own whose parameter i is operand i.
Graph unfused_attention(const Node& n, const std::vector<TensorType>& types);

}  // namespace nxv::ir
