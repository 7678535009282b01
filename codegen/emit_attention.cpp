// Fused attention (attention.h): the tiles a device's shared memory holds, and the kernel.
#include <algorithm>

#include "codegen/attention.h"

namespace nxv::codegen {

namespace {
// Invocations across a tile's keys (and v's columns), and query rows each invocation holds.
constexpr uint32_t kLanes = 16, kRowStep = 4;
}  // namespace

uint64_t attention_shared_bytes(const AttentionTiles& t, int64_t d, int64_t dv, int bytes) {
  // q's rows; k's slice transposed ([d][keys + 1], padded against bank conflicts) then v's
  // ([keys][dv]) in the same array; the probabilities [rows][keys + 1]; the rows' partial
  // maxima [rows][lanes].
  const uint64_t pitch = t.keys + 1;
  const uint64_t elements = uint64_t(t.rows) * d + std::max<uint64_t>(d * pitch, uint64_t(t.keys) * dv) +
                            t.rows * pitch + uint64_t(t.rows) * t.lanes;
  return elements * bytes;
}

AttentionTiles choose_attention_tiles(const DeviceCaps& caps, int64_t d, int64_t dv, int bytes) {
  for (auto [rows, keys] : {std::pair{64u, 64u}, {32u, 64u}, {32u, 32u}, {16u, 32u}, {16u, 16u}}) {
    const AttentionTiles t{rows, keys, kLanes, kRowStep};
    if (t.invocations() <= caps.max_workgroup_invocations &&
        attention_shared_bytes(t, d, dv, bytes) <= caps.max_shared_memory_bytes)
      return t;
  }
  return {};
}

void set_attention_bounds(const DeviceCaps& caps, passes::KernelBounds& bounds) {
  // Lavapipe builds a shader with workgroup barriers as a coroutine (targets/launch.h,
  // scans_in_workgroups), and the kernel takes four per tile of keys: it runs attention as
  // separate products and softmax.
  if (caps.vendor() == Vendor::Lavapipe) return;
  // The widest head dim whose smallest tiles fit in f64, as row bytes: f32 rows of twice
  // that dim fit too (the tiles' fixed part is the same number of elements).
  const AttentionTiles smallest{16, 16, kLanes, kRowStep};
  int64_t d = 0;
  while (attention_shared_bytes(smallest, d + 1, d + 1, 8) <= caps.max_shared_memory_bytes) ++d;
  bounds.attention_row_bytes = d * 8;
}

}  // namespace nxv::codegen
