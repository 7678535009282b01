// Where a submission needs barriers: commands recorded without one between them may run at
// the same time on the GPU, so only a command that depends on one of those gets a barrier.
#pragma once

#include <vulkan/vulkan.h>

#include <optional>
#include <set>
#include <vector>

namespace nxv::runtime {

class Hazards {
 public:
  // Whether a command that reads `reads` and writes `writes` must wait for the commands
  // recorded since the last barrier: it reads or writes what they write (read after write,
  // write after write), or writes what they read (write after read). Records its accesses
  // either way; on true the caller records a barrier before the command.
  bool barrier_before(const std::vector<const void*>& reads, const std::vector<const void*>& writes);

 private:
  std::set<const void*> read_, written_;
};

// The kinds of command in a stage (the commands between two barriers).
struct CommandKinds {
  bool dispatches = false, transfers = false, indirect = false;  // indirect: dispatches reading their counts
};

struct BarrierMasks {
  VkPipelineStageFlags src = 0, dst = 0;
  VkAccessFlags src_access = 0, dst_access = 0;
};

// A barrier between a stage of `before`'s kinds and one of `after`'s: it names only their
// stages and accesses. One that named transfers and indirect reads around dispatches alone
// held each dependent dispatch on NVIDIA's driver 1.3-2.3 us longer (docs/tuning.md,
// "Barriers name only the stages they order").
BarrierMasks barrier_masks(CommandKinds before, CommandKinds after);

// A command of a submission: what it reads and writes, and its kind.
struct Command {
  std::vector<const void*> reads, writes;
  CommandKinds kind;
};

// For each command, the barrier recorded before it, if any (where Hazards places them),
// between the stage it ends and the stage it starts: a barrier orders every command after it
// up to the next one, so its masks name the kinds of all of them.
std::vector<std::optional<BarrierMasks>> plan_barriers(const std::vector<Command>& commands);

}  // namespace nxv::runtime
