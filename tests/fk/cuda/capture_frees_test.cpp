// The device pool's bookkeeping of frees during a stream capture
// (fk/cuda/capture_frees.h), with no GPU: a graph allocation is freed when
// asked, inside the capture or after it; an allocation made before the capture
// and dropped inside it is held back (a graph free node would refuse it) and
// handed out once, in the order dropped, when no capture runs; outside a
// capture everything is freed at once. The runtime's use of it in a real
// capture: CudaGraph.AFreeOfAnEarlierAllocationInsideACaptureIsHeldBack.
#include "fk/cuda/capture_frees.h"

#include <gtest/gtest.h>

#include <vector>

namespace fk::cuda {
namespace {

// Distinct addresses standing for device blocks (never dereferenced).
void* block(int i) {
  static char bytes[16];
  return bytes + i;
}

TEST(CaptureFrees, OutsideACaptureEveryFreeIsImmediate) {
  CaptureFrees f;
  f.allocated(block(0), false);
  EXPECT_TRUE(f.free_now(block(0), false));
  EXPECT_TRUE(f.free_now(block(1), false));  // not seen allocated: freed all the same
  EXPECT_EQ(f.held_back(), 0);
  EXPECT_TRUE(f.take_held_back().empty());
}

TEST(CaptureFrees, AnEarlierAllocationDroppedInACaptureIsHeldBackUntilItEnds) {
  CaptureFrees f;
  f.allocated(block(0), false);  // an eager warm-up's gradient
  f.allocated(block(1), false);
  f.allocated(block(2), true);               // the captured step's own temporary
  EXPECT_TRUE(f.free_now(block(2), true));   // a free node of its own graph
  EXPECT_FALSE(f.free_now(block(1), true));  // would fail the capture
  EXPECT_FALSE(f.free_now(block(0), true));
  EXPECT_EQ(f.held_back(), 2);
  EXPECT_EQ(f.take_held_back(), (std::vector<void*>{block(1), block(0)}));
  EXPECT_EQ(f.held_back(), 0);
  EXPECT_TRUE(f.take_held_back().empty());  // handed out once
}

TEST(CaptureFrees, AGraphAllocationKeptPastItsCaptureIsFreedWhenAsked) {
  CaptureFrees f;
  f.allocated(block(3), true);               // a buffer the captured step keeps (a warm start)
  EXPECT_TRUE(f.free_now(block(3), false));  // after the graph ran
  // A later capture drops a block allocated by an earlier one: a graph
  // allocation still, which a free node takes.
  f.allocated(block(4), true);
  EXPECT_TRUE(f.free_now(block(4), true));
  // Once freed, the address is not remembered as a graph allocation: reused
  // by an eager allocation and dropped in a capture, it is held back.
  f.allocated(block(4), false);
  EXPECT_FALSE(f.free_now(block(4), true));
  EXPECT_EQ(f.take_held_back(), std::vector<void*>{block(4)});
}

TEST(CaptureFrees, NullAllocationsAreNotNoted) {
  CaptureFrees f;
  f.allocated(nullptr, true);  // a zero-byte allocation
  EXPECT_TRUE(f.free_now(block(5), false));
  EXPECT_EQ(f.held_back(), 0);
}

}  // namespace
}  // namespace fk::cuda
