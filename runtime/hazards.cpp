#include "runtime/hazards.h"

#include <algorithm>

namespace nxv::runtime {

bool Hazards::barrier_before(const std::vector<const void*>& reads, const std::vector<const void*>& writes) {
  const bool hazard =
      std::any_of(reads.begin(), reads.end(), [&](const void* b) { return written_.count(b) > 0; }) ||
      std::any_of(writes.begin(), writes.end(), [&](const void* b) { return written_.count(b) > 0 || read_.count(b) > 0; });
  if (hazard) {
    read_.clear();
    written_.clear();
  }
  read_.insert(reads.begin(), reads.end());
  written_.insert(writes.begin(), writes.end());
  return hazard;
}

BarrierMasks barrier_masks(CommandKinds before, CommandKinds after) {
  BarrierMasks m;
  if (before.dispatches) m.src |= VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, m.src_access |= VK_ACCESS_SHADER_WRITE_BIT;
  if (before.transfers) m.src |= VK_PIPELINE_STAGE_TRANSFER_BIT, m.src_access |= VK_ACCESS_TRANSFER_WRITE_BIT;
  if (before.indirect) m.src |= VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT;  // a count buffer rewritten after its read
  if (after.dispatches)
    m.dst |= VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, m.dst_access |= VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  if (after.transfers)
    m.dst |= VK_PIPELINE_STAGE_TRANSFER_BIT, m.dst_access |= VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  if (after.indirect) m.dst |= VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT, m.dst_access |= VK_ACCESS_INDIRECT_COMMAND_READ_BIT;
  return m;
}

std::vector<std::optional<BarrierMasks>> plan_barriers(const std::vector<Command>& commands) {
  Hazards hazards;
  std::vector<size_t> starts;  // the commands that open a stage after a barrier
  std::vector<CommandKinds> stages(1);
  for (size_t i = 0; i < commands.size(); ++i) {
    const Command& c = commands[i];
    if (hazards.barrier_before(c.reads, c.writes)) starts.push_back(i), stages.emplace_back();
    CommandKinds& k = stages.back();
    k.dispatches |= c.kind.dispatches, k.transfers |= c.kind.transfers, k.indirect |= c.kind.indirect;
  }
  std::vector<std::optional<BarrierMasks>> plan(commands.size());
  for (size_t s = 0; s < starts.size(); ++s) plan[starts[s]] = barrier_masks(stages[s], stages[s + 1]);
  return plan;
}

}  // namespace nxv::runtime
