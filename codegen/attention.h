// Fused attention, softmax(q·kᵀ·scale [+ bias] [masked]) · v as one kernel in the
// flash-attention style (emit_attention.cpp): tiles of k and v through shared memory, an
// online softmax per query row, no sequence-squared tensor in memory.
#pragma once

#include <cstdint>

#include "codegen/emitter.h"
#include "codegen/targets/launch.h"
#include "passes/fusion_cost.h"

namespace nxv::codegen {

// The largest tiles whose shared memory (q's rows, k's or v's slice, the probabilities and
// the rows' partial maxima, in elements of `bytes`) fits the device, for head dims d (q, k)
// and dv (v); rows == 0 where none does.
AttentionTiles choose_attention_tiles(const DeviceCaps& caps, int64_t d, int64_t dv, int bytes);

// The cooperative kernel's tiles (emit_attention_cooperative.cpp) for attention of type
// `type` at head dims d and dv: where `type` is f16 or bf16, the device lists fragments of
// it with f32 accumulators whose n and k are multiples of 8 and which its subgroups divide,
// and has subgroup shuffles; the largest that fit its workgroups and shared memory. Else
// rows == 0 (the SIMT kernel runs it).
AttentionTiles choose_cooperative_attention_tiles(const DeviceCaps& caps, ir::DType type, int64_t d, int64_t dv);

// Bytes of shared memory `t` takes.
uint64_t attention_shared_bytes(const AttentionTiles& t, int64_t d, int64_t dv, int bytes);

// KernelBounds::attention_row_bytes for the device.
void set_attention_bounds(const DeviceCaps& caps, passes::KernelBounds& bounds);

// The type the kernel computes attention of type t in: f32 for f16, bf16 and f32 (each
// result rounded once), f64 for f64.
ir::DType attention_compute_type(ir::DType t);

// The body's `attention` node, or nullptr.
const ir::Node* attention_of(const ir::Graph& body);

// The launch of a kernel whose body is `attn` (with index maps before it): its tiles and one
// workgroup per tile of rows up to the device's group limit. Throws IrError naming the node
// where no tiles fit the device (passes/fuse-attention forms none such).
LaunchConfig launch_attention(const ir::Graph& body, const ir::Node& attn, const DeviceCaps& caps);

// Emits main's body for launch.attention: workgroup g takes tiles of rows g, g + groups, ...
// (emit_cooperative_attention where launch.attention.fragment.m > 0, its softmax in
// registers where launch.attention.registers; `inputs`, the kernel's input bindings, are
// read a chunk at a time where q, k or v is one).
void emit_cooperative_attention(const ir::Graph& body, const ir::Node& attn, Emitter& e, const std::vector<BufferRef>& inputs,
                                const BufferRef& output, const LaunchConfig& launch, uint64_t* shared_bytes);
void emit_attention(const ir::Graph& body, const ir::Node& attn, Emitter& e, const BufferRef& output,
                    const LaunchConfig& launch, uint64_t* shared_bytes);

}  // namespace nxv::codegen
