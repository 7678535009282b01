// Barrier placement within a submission (runtime/hazards.h), on stand-in buffer addresses.
#include <gtest/gtest.h>

#include "runtime/hazards.h"

namespace nxv::runtime {
namespace {

int a, b, c, d, e;  // their addresses stand for five buffers

TEST(Hazards, IndependentCommandsShareAStage) {
  Hazards h;
  EXPECT_FALSE(h.barrier_before({&a}, {&b}));
  EXPECT_FALSE(h.barrier_before({&a}, {&c}));  // reads the same input, writes elsewhere
  EXPECT_FALSE(h.barrier_before({&d}, {&e}));
}

TEST(Hazards, ReadAfterWriteWaits) {
  Hazards h;
  EXPECT_FALSE(h.barrier_before({&a}, {&b}));
  EXPECT_TRUE(h.barrier_before({&b}, {&c}));
}

TEST(Hazards, WriteAfterWriteWaits) {
  Hazards h;
  EXPECT_FALSE(h.barrier_before({&a}, {&b}));
  EXPECT_TRUE(h.barrier_before({&c}, {&b}));
}

// A buffer that buffer planning gives to a later value is rewritten only once the
// kernels reading its earlier value are done.
TEST(Hazards, WriteAfterReadWaits) {
  Hazards h;
  EXPECT_FALSE(h.barrier_before({&a}, {&b}));
  EXPECT_TRUE(h.barrier_before({&c}, {&a}));
}

// After a barrier only the commands since it count: what came before is complete.
TEST(Hazards, ABarrierStartsAFreshStage) {
  Hazards h;
  EXPECT_FALSE(h.barrier_before({&a}, {&b}));
  EXPECT_TRUE(h.barrier_before({&b}, {&c}));   // waits for the write of b
  EXPECT_FALSE(h.barrier_before({&b}, {&d}));  // b was complete before the barrier
  EXPECT_TRUE(h.barrier_before({&c}, {&e}));   // c was written in this stage
}

// A command that reads and writes the same buffer (a loop's scratch) is ordered against
// another such command.
TEST(Hazards, ReadWriteBuffersOrderEachOther) {
  Hazards h;
  EXPECT_FALSE(h.barrier_before({&a}, {&a}));
  EXPECT_TRUE(h.barrier_before({&a}, {&a}));
}

constexpr CommandKinds kDispatch{true, false, false}, kTransfer{false, true, false}, kIndirect{true, false, true};

// Between dispatches alone a barrier names the compute stage and shader accesses only.
TEST(BarrierMasks, DispatchesNameOnlyTheComputeStage) {
  const BarrierMasks m = barrier_masks(kDispatch, kDispatch);
  EXPECT_EQ(m.src, VkPipelineStageFlags(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT));
  EXPECT_EQ(m.dst, VkPipelineStageFlags(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT));
  EXPECT_EQ(m.src_access, VkAccessFlags(VK_ACCESS_SHADER_WRITE_BIT));
  EXPECT_EQ(m.dst_access, VkAccessFlags(VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT));
}

TEST(BarrierMasks, TransfersAndIndirectReadsAddTheirStages) {
  const BarrierMasks up = barrier_masks(kTransfer, kIndirect);
  EXPECT_EQ(up.src, VkPipelineStageFlags(VK_PIPELINE_STAGE_TRANSFER_BIT));
  EXPECT_EQ(up.src_access, VkAccessFlags(VK_ACCESS_TRANSFER_WRITE_BIT));
  EXPECT_EQ(up.dst, VkPipelineStageFlags(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT));
  EXPECT_TRUE(up.dst_access & VK_ACCESS_INDIRECT_COMMAND_READ_BIT);
  // A count buffer rewritten after an indirect dispatch read it waits for that read's stage.
  const BarrierMasks down = barrier_masks(kIndirect, kTransfer);
  EXPECT_EQ(down.src, VkPipelineStageFlags(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT));
  EXPECT_EQ(down.dst, VkPipelineStageFlags(VK_PIPELINE_STAGE_TRANSFER_BIT));
  EXPECT_EQ(down.dst_access, VkAccessFlags(VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT));
}

// A barrier orders every command up to the next one, not only the command that needed it:
// a transfer that reads an upload after a dispatch that caused the barrier is ordered by
// it too, so its masks name both kinds; and the next barrier's source names the stage
// between them.
TEST(PlanBarriers, MasksNameEveryCommandOfTheStagesTheyJoin) {
  const std::vector<Command> commands{
      {{}, {&a}, kTransfer},    // upload a
      {{&a}, {&b}, kDispatch},  // reads a: barrier
      {{&a}, {&c}, kTransfer},  // copies a: ordered by the same barrier
      {{&b}, {&d}, kDispatch},  // reads b: barrier
      {{&e}, {&e}, kDispatch},
  };
  const auto plan = plan_barriers(commands);
  ASSERT_EQ(plan.size(), commands.size());
  EXPECT_FALSE(plan[0]);
  ASSERT_TRUE(plan[1]);
  EXPECT_EQ(plan[1]->src, VkPipelineStageFlags(VK_PIPELINE_STAGE_TRANSFER_BIT));
  EXPECT_EQ(plan[1]->dst, VkPipelineStageFlags(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT));
  EXPECT_FALSE(plan[2]);
  ASSERT_TRUE(plan[3]);
  EXPECT_EQ(plan[3]->src, VkPipelineStageFlags(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT));
  EXPECT_EQ(plan[3]->dst, VkPipelineStageFlags(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT));
  EXPECT_FALSE(plan[4]);
}

}  // namespace
}  // namespace nxv::runtime
