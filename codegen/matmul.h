// The tiled matrix multiplication: a kernel whose body is one dot, with per-element work on
// its operands before it (casts, transposes, scaling: the prologue) and on its result after
// it (bias, activation: the epilogue), computed as output tiles per workgroup and register
// tiles per invocation instead of one output element per invocation.
#pragma once

#include <cstdint>
#include <vector>

#include "codegen/emitter.h"
#include "codegen/targets/launch.h"

namespace nxv::codegen {

// The product `dot` (a body node) computes, for the device's tile choice.
MatmulShape matmul_shape(const ir::Graph& body, const ir::Node& dot, const DeviceCaps& caps);

// The graph inputs among the dot's operands that a kernel with `tiles` reads as vectors of
// tiles.vector elements (a run of columns, or of a lane's contracted elements): 32-bit
// parameters whose innermost axis is the one read that way and a multiple of it long.
std::vector<const ir::Node*> matmul_vector_operands(const ir::Graph& body, const ir::Node& dot, const MatmulTiles& tiles);

// The graph inputs among the dot's operands, or behind their transposes, that a kernel with
// tiles.texels reads through texel views (Binding::texels), a run of a texel's elements
// (MatmulShape::texel_run).
std::vector<const ir::Node*> matmul_texel_operands(const ir::Graph& body, const ir::Node& dot, const MatmulTiles& tiles);

// Emits main's body for launch.matmul: workgroup g takes output tiles g, g + groups, ...;
// each invocation accumulates its register tile over the contraction in the order the
// per-element dot adds its terms (the same bits), then computes the body's output from it
// and stores. Adds the shared memory it declares to *shared_bytes.
void emit_matmul(const ir::Graph& body, const ir::Node& dot, Emitter& e, const BufferRef& output,
                 const LaunchConfig& launch, uint64_t* shared_bytes);

// Emits main's body for cooperative tiles (launch.matmul.fragment.m > 0): the operands'
// k-slices staged through shared memory as 16-bit values (f16 or bf16, zero past their
// ends), multiplied by subgroups in cooperative matrices with f32 accumulators; each
// output is the accumulator rounded once to the dot's type, then the body's epilogue.
// `inputs` are the kernel's input bindings (binding i is argument i).
void emit_cooperative_matmul(const ir::Graph& body, const ir::Node& dot, Emitter& e, const std::vector<BufferRef>& inputs,
                             const BufferRef& output, const LaunchConfig& launch, uint64_t* shared_bytes);

}  // namespace nxv::codegen
