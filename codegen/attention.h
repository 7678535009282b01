// Fused attention, softmax(q·kᵀ·scale [+ bias] [masked]) · v as one kernel in the
// flash-attention style (emit_attention.cpp): tiles of k and v through shared memory, an
// online softmax per query row, no sequence-squared tensor in memory.
#pragma once

#include <cstdint>

#include "codegen/emitter.h"
#include "codegen/targets/launch.h"
#include "passes/fusion_cost.h"

namespace nxv::codegen {

// The tiles of one attention kernel: each workgroup takes `rows` query rows of one batch
// element and walks the keys `keys` at a time; its invocations form rows / row_step rows
// of `lanes`, each holding row_step query rows of the scores and of the output.
struct AttentionTiles {
  uint32_t rows = 0, keys = 0, lanes = 0, row_step = 0;
  uint32_t invocations() const { return rows / row_step * lanes; }
};

// The largest tiles whose shared memory (q's rows, k's or v's slice, the probabilities and
// the rows' partial maxima, in elements of `bytes`) fits the device, for head dims d (q, k)
// and dv (v); rows == 0 where none does.
AttentionTiles choose_attention_tiles(const DeviceCaps& caps, int64_t d, int64_t dv, int bytes);

// Bytes of shared memory `t` takes.
uint64_t attention_shared_bytes(const AttentionTiles& t, int64_t d, int64_t dv, int bytes);

// KernelBounds::attention_row_bytes for the device.
void set_attention_bounds(const DeviceCaps& caps, passes::KernelBounds& bounds);

}  // namespace nxv::codegen
