// A `while` whose body holds control flow of its own, compiled into one kernel that a
// single workgroup of one subgroup runs: each kernel of its lowered regions becomes a stage
// (its elements spread over the group, a barrier after it), and the nested loops and conds
// become structured control flow around the stages. Driven from the host instead, such a loop
// costs a submit per inner iteration; this way the whole nest is one dispatch, or a few
// where the driver bounds a dispatch's loop steps (lavapipe).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codegen/kernel.h"

namespace nxv::codegen {

// A lowered region (parameter, constant, tensor, kernel, elem, while and cond nodes) with
// the lowered regions of its while and cond nodes.
struct SerialRegion {
  ir::Graph graph;
  std::map<ir::NodeId, std::map<std::string, std::shared_ptr<SerialRegion>>> nested;
};

// The words of the control buffer (u32) that each dispatch writes.
enum SerialControl : uint32_t {
  kSerialDone = 0,       // 1 once the loop's condition was false
  kSerialCommitted = 1,  // iterations the dispatch completed
  kSerialControlWords = 2,
};

struct SerialLoopBinary {
  // Bindings: Output (the loop's state, which the runtime initialises from its arguments
  // and which ends as its results), Scratch (index: scratch_bytes), Constant (index:
  // constants, the literals of one type each), Control.
  KernelBinary kernel;
  std::vector<uint64_t> scratch_bytes;
  std::vector<ir::Literal> constants;
};

// Throws ir::IrError naming the node when the loop cannot run this way: an op outside the
// lowered set, a type the device lacks, more buffers than it binds, or an iteration longer
// than the driver's loop-step bound allows.
SerialLoopBinary compile_serial_loop(const ir::Node& loop, const SerialRegion& condition, const SerialRegion& body,
                                     const DeviceCaps& caps);

}  // namespace nxv::codegen
