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

}  // namespace
}  // namespace nxv::runtime
