// A dot's epilogue as the tiled kernels store it: the nodes after the dot in its kernel, each
// element of the product carried through elementwise ops and moves (transposes, reshapes) to
// one element of the kernel's result, so that a tile is stored where its elements land.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "ir/ir.h"

namespace nxv::ir {

// Moves each element of its one operand to one element of its result: transpose, reshape,
// squeeze.
bool moves_elements(const Node& n);

struct DotEpilogue {
  // The nodes after the dot, in order, each with its layout: 0 is the dot's own; each move
  // starts a layout of its own, whose `from` is its operand's.
  struct Step {
    NodeId id;
    size_t layout;
  };
  std::vector<Step> steps;
  std::vector<size_t> from{0};  // per layout
  size_t layout_of_result = 0;
};

// The epilogue of `dot` up to `result`, among the nodes of `g` that `member` holds; nullopt
// where a node after the dot reads it otherwise: not elementwise over its operand's shape,
// nor a move, or combining elements of two layouts.
std::optional<DotEpilogue> dot_epilogue(const Graph& g, NodeId dot, NodeId result,
                                        const std::function<bool(NodeId)>& member);

}  // namespace nxv::ir
