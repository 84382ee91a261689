// The device pool's bookkeeping of frees around stream captures
// (fk/cuda/capture_frees.h), with no GPU, one CUDA rule per test: a block
// allocated before a capture and dropped inside it is held back until its
// capture fails or its graph is destroyed; a graph allocation is freed inside its capture (a free
// node) or after its graph ran; a block of a failed or aborted capture, or of a graph destroyed
// before it ran, never existed and its free makes no call; a block dropped before its graph's first
// launch is freed right after that launch; a free node that a failed capture took of an earlier
// graph's block is put back. The runtime's use of it in real captures: graph_test.cpp's
// CudaGraph.AFreeOfAnEarlierAllocationInsideACaptureIsHeldBack and the
// CudaGraph.*Aborted*, *NotYetLaunched* and *Destroyed* tests. A graph
// whose capture kept blocks launches once: its relaunch is refused by name
// (graph_test.cpp's CudaGraph.*Relaunch* tests on a GPU).
#include "fk/cuda/capture_frees.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "fk/test_util.h"

namespace fk::cuda {
namespace {

using Free = CaptureFrees::Free;

// Distinct addresses standing for device blocks (never dereferenced).
void* block(int i) {
  static char bytes[16];
  return bytes + i;
}

// A capture that allocates `blocks` and keeps them (no free node of them in
// it), made into a graph that has not run yet; its id.
int64_t unlaunched_graph_keeping(CaptureFrees& f, std::initializer_list<void*> blocks) {
  const int64_t id = f.capture_began();
  for (void* p : blocks) f.allocated(p, true);
  f.capture_ended(true);
  return id;
}

// The same, its graph launched once.
int64_t launched_graph_keeping(CaptureFrees& f, std::initializer_list<void*> blocks) {
  const int64_t id = unlaunched_graph_keeping(f, blocks);
  f.launched(id);
  return id;
}

TEST(CaptureFrees, OutsideACaptureEveryFreeIsImmediate) {
  CaptureFrees f;
  f.allocated(block(0), false);
  EXPECT_EQ(f.free_action(block(0), false), Free::kNow);
  EXPECT_EQ(f.free_action(block(1), false), Free::kNow);  // not seen allocated: freed all the same
  EXPECT_EQ(f.held_back(), 0);
  EXPECT_TRUE(f.take_held_back().empty());
}

TEST(CaptureFrees, AnEarlierAllocationDroppedInACaptureIsHeldBackUntilItsGraphGoes) {
  CaptureFrees f;
  f.allocated(block(0), false);  // an eager warm-up's gradient
  f.allocated(block(1), false);
  const int64_t a = f.capture_began();
  f.allocated(block(2), true);                                // the captured step's own temporary
  EXPECT_EQ(f.free_action(block(2), true), Free::kNow);       // a free node of its own graph
  EXPECT_EQ(f.free_action(block(1), true), Free::kHeldBack);  // would fail the capture
  EXPECT_EQ(f.free_action(block(0), true), Free::kHeldBack);
  f.capture_ended(true);
  EXPECT_EQ(f.held_back(), 0);  // the graph's work may still read them
  f.destroyed(a);
  EXPECT_EQ(f.held_back(), 2);
  EXPECT_EQ(f.take_held_back(), (std::vector<void*>{block(1), block(0)}));
  EXPECT_EQ(f.held_back(), 0);
  EXPECT_TRUE(f.take_held_back().empty());  // handed out once
  // Freed when the capture fails: its work never runs.
  f.allocated(block(3), false);
  f.capture_began();
  EXPECT_EQ(f.free_action(block(3), true), Free::kHeldBack);
  f.capture_ended(false);
  EXPECT_EQ(f.take_held_back(), std::vector<void*>{block(3)});
}

// Another thread (on a stream of its own, not capturing) dropping the last
// reference to a block from before the capture: the captured work may read
// it at every launch, so it is held back as the capturing thread's free is.
TEST(CaptureFrees, AnEarlierBlockDroppedByAnotherThreadDuringACaptureIsHeldBack) {
  CaptureFrees f;
  f.allocated(block(0), false);
  const int64_t a = f.capture_began();
  EXPECT_EQ(f.free_action(block(0), false), Free::kHeldBack);
  f.allocated(block(1), false);                                // that thread's own block
  EXPECT_EQ(f.free_action(block(1), false), Free::kHeldBack);  // held too: no telling it apart
  f.capture_ended(true);
  EXPECT_EQ(f.take_held_back(), std::vector<void*>{});
  EXPECT_EQ(f.free_action(block(2), false), Free::kNow);  // no capture runs now
  f.destroyed(a);
  EXPECT_EQ(f.take_held_back(), (std::vector<void*>{block(0), block(1)}));
}

// The captured step `held = held + 1` reads the eager `held` it drops: every
// launch of its graph reads that address, so the block outlives the first
// launch and any relaunch, and is freed only once the graph is destroyed
// (nefi's StepGraph read it freed before the graph's launch, in stream order).
TEST(CaptureFrees, ABlockDroppedInACaptureOutlivesEveryLaunchOfItsGraph) {
  CaptureFrees f;
  f.allocated(block(0), false);  // held, from the eager warm-up
  const int64_t a = f.capture_began();
  f.allocated(block(1), true);                                // held + 1, kept by the graph
  EXPECT_EQ(f.free_action(block(0), true), Free::kHeldBack);  // the old held, read by the add
  f.capture_ended(true);
  EXPECT_EQ(f.take_held_back(), std::vector<void*>{});  // not before the launch
  EXPECT_TRUE(f.launched(a).empty());
  EXPECT_EQ(f.take_held_back(), std::vector<void*>{});  // nor after it: it may be relaunched
  f.destroyed(a);
  EXPECT_EQ(f.take_held_back(), std::vector<void*>{block(0)});
  EXPECT_EQ(f.free_action(block(1), false), Free::kNow);  // the graph's block, as before
  // The same for a graph destroyed before it ran.
  f.allocated(block(2), false);
  const int64_t b = f.capture_began();
  EXPECT_EQ(f.free_action(block(2), true), Free::kHeldBack);
  f.capture_ended(true);
  EXPECT_EQ(f.held_back(), 0);
  f.destroyed(b);
  EXPECT_EQ(f.take_held_back(), std::vector<void*>{block(2)});
}

TEST(CaptureFrees, AGraphAllocationKeptPastItsCaptureIsFreedWhenAskedOnceItRan) {
  CaptureFrees f;
  const int64_t a = f.capture_began();
  f.allocated(block(3), true);  // a buffer the captured step keeps (a warm start)
  EXPECT_EQ(f.capture_ended(true), a);
  EXPECT_TRUE(f.launched(a).empty());
  EXPECT_EQ(f.free_action(block(3), false), Free::kNow);  // after the graph ran
  // A later capture drops a block of an earlier graph that ran: a graph
  // allocation still, which a free node of the later graph takes.
  launched_graph_keeping(f, {block(4)});
  f.capture_began();
  EXPECT_EQ(f.free_action(block(4), true), Free::kNow);
  f.capture_ended(true);
  // Once freed, the address is not remembered as a graph allocation: reused
  // by an eager allocation and dropped in a capture, it is held back.
  f.allocated(block(4), false);
  const int64_t c = f.capture_began();
  EXPECT_EQ(f.free_action(block(4), true), Free::kHeldBack);
  f.capture_ended(true);
  f.destroyed(c);
  EXPECT_EQ(f.take_held_back(), std::vector<void*>{block(4)});
}

TEST(CaptureFrees, ABlockOfAFailedOrAbortedCaptureIsDroppedWithoutACall) {
  CaptureFrees f;
  f.capture_began();
  f.allocated(block(0), true);
  f.allocated(block(1), true);
  f.allocated(block(2), true);
  EXPECT_EQ(f.free_action(block(2), true), Free::kNow);  // a free node of the doomed graph
  f.capture_ended(false);
  EXPECT_EQ(f.free_action(block(0), false), Free::kDropped);
  // Dropped as well inside a later capture, where a free node of it would
  // fail that capture.
  f.capture_began();
  EXPECT_EQ(f.free_action(block(1), true), Free::kDropped);
  f.capture_ended(true);
  EXPECT_EQ(f.held_back(), 0);
  EXPECT_EQ(f.waiting_for_launch(), 0);
}

TEST(CaptureFrees, ABlockDroppedBeforeItsGraphFirstRunsIsFreedAfterThatLaunch) {
  CaptureFrees f;
  const int64_t a = unlaunched_graph_keeping(f, {block(0), block(1)});
  EXPECT_EQ(f.free_action(block(1), false), Free::kAfterLaunch);
  EXPECT_EQ(f.free_action(block(0), false), Free::kAfterLaunch);
  EXPECT_EQ(f.waiting_for_launch(), 2);
  EXPECT_EQ(f.launched(a), (std::vector<void*>{block(1), block(0)}));
  EXPECT_EQ(f.waiting_for_launch(), 0);
  EXPECT_TRUE(f.launched(a).empty());  // freed once, after the first launch only
  f.destroyed(a);
}

TEST(CaptureFrees, AGraphDestroyedBeforeItRanTakesItsBlocksWithIt) {
  CaptureFrees f;
  const int64_t a = unlaunched_graph_keeping(f, {block(0), block(1)});
  EXPECT_EQ(f.free_action(block(0), false), Free::kAfterLaunch);
  f.destroyed(a);
  EXPECT_EQ(f.waiting_for_launch(), 0);  // the waiting free is dropped
  EXPECT_EQ(f.free_action(block(1), false), Free::kDropped);
  EXPECT_TRUE(f.launched(a).empty());
}

TEST(CaptureFrees, AGraphDestroyedAfterItRanLeavesItsBlocksToBeFreed) {
  CaptureFrees f;
  const int64_t a = launched_graph_keeping(f, {block(0)});
  f.destroyed(a);  // CUDA does not free live graph allocations with the graph
  EXPECT_EQ(f.free_action(block(0), false), Free::kNow);
}

// A long run captures and destroys graphs again and again: what is kept of
// each goes once its graph is destroyed and no block of it is left, and a
// block a pending free node names keeps its graph's entry until that node
// runs or is put back.
TEST(CaptureFrees, ADestroyedGraphIsForgottenWithItsLastBlock) {
  CaptureFrees f;
  EXPECT_EQ(f.captures_kept(), 0);
  for (int i = 0; i < 3; ++i) {
    const int64_t a = launched_graph_keeping(f, {block(0)});
    f.destroyed(a);
    EXPECT_EQ(f.captures_kept(), 1);  // block 0 outlives its graph
    EXPECT_EQ(f.free_action(block(0), false), Free::kNow);
    EXPECT_EQ(f.captures_kept(), 0);
  }
  const int64_t b = launched_graph_keeping(f, {});
  EXPECT_EQ(f.captures_kept(), 1);  // it may run again
  f.destroyed(b);
  EXPECT_EQ(f.captures_kept(), 0);
  // Block 1 of destroyed graph c, taken by a free node of a capture that
  // fails: put back, it is still freed.
  const int64_t c = launched_graph_keeping(f, {block(1)});
  f.destroyed(c);
  f.capture_began();
  EXPECT_EQ(f.free_action(block(1), true), Free::kNow);
  EXPECT_EQ(f.captures_kept(), 2);
  f.capture_ended(false);
  EXPECT_EQ(f.take_held_back(), std::vector<void*>{block(1)});
  EXPECT_EQ(f.captures_kept(), 0);
  // Block 2 of graph d, which runs and is destroyed while the free node of
  // an unlaunched graph e names it: destroyed before it runs, e puts it back.
  const int64_t d = unlaunched_graph_keeping(f, {block(2)});
  const int64_t e = f.capture_began();
  EXPECT_EQ(f.free_action(block(2), true), Free::kNow);
  f.capture_ended(true);
  f.launched(d);
  f.destroyed(d);
  EXPECT_EQ(f.captures_kept(), 2);
  f.destroyed(e);
  EXPECT_EQ(f.take_held_back(), std::vector<void*>{block(2)});
  EXPECT_EQ(f.captures_kept(), 0);
  // The same, e launched: its free node freed block 2.
  const int64_t g = unlaunched_graph_keeping(f, {block(2)});
  const int64_t h = f.capture_began();
  EXPECT_EQ(f.free_action(block(2), true), Free::kNow);
  f.capture_ended(true);
  f.launched(g);
  f.destroyed(g);
  EXPECT_TRUE(f.launched(h).empty());
  EXPECT_EQ(f.captures_kept(), 1);  // h may run again
  f.destroyed(h);
  EXPECT_EQ(f.held_back(), 0);
  EXPECT_EQ(f.captures_kept(), 0);
}

TEST(CaptureFrees, AFreeNodeOfAnEarlierGraphsBlockThatNeverRunsIsPutBack) {
  CaptureFrees f;
  // block 0's graph ran; block 1's graph b was instantiated and not launched.
  launched_graph_keeping(f, {block(0)});
  const int64_t b = unlaunched_graph_keeping(f, {block(1)});
  // A capture frees both by free nodes, then fails: block 0 is live and
  // freed once no capture runs; block 1 waits for b's first launch.
  f.capture_began();
  EXPECT_EQ(f.free_action(block(0), true), Free::kNow);
  EXPECT_EQ(f.free_action(block(1), true), Free::kNow);
  f.capture_ended(false);
  EXPECT_EQ(f.take_held_back(), std::vector<void*>{block(0)});
  EXPECT_EQ(f.launched(b), std::vector<void*>{block(1)});
  // The same with a graph d that is made but destroyed before it runs.
  launched_graph_keeping(f, {block(3)});
  const int64_t d = f.capture_began();
  EXPECT_EQ(f.free_action(block(3), true), Free::kNow);
  f.capture_ended(true);
  f.destroyed(d);
  EXPECT_EQ(f.take_held_back(), std::vector<void*>{block(3)});
  // Where that graph (g) runs, its free node frees block 5: nothing put back.
  launched_graph_keeping(f, {block(5)});
  const int64_t g = f.capture_began();
  EXPECT_EQ(f.free_action(block(5), true), Free::kNow);
  f.capture_ended(true);
  f.launched(g);
  f.destroyed(g);
  EXPECT_EQ(f.held_back(), 0);
}

TEST(CaptureFrees, AnAddressHandedOutAgainIsTheNewBlocks) {
  CaptureFrees f;
  f.capture_began();
  f.allocated(block(0), true);
  f.capture_ended(false);
  f.allocated(block(0), false);  // the same address, now eager memory
  EXPECT_EQ(f.free_action(block(0), false), Free::kNow);
}

TEST(CaptureFrees, ACaptureBegunOutsideTheHooksKeepsItsBlocksMaterialised) {
  CaptureFrees f;
  f.allocated(block(0), true);  // no capture_began: a host framework's capture
  EXPECT_EQ(f.capture_ended(false), 0);
  EXPECT_EQ(f.free_action(block(0), false), Free::kNow);
}

TEST(CaptureFrees, NullAllocationsAreNotNoted) {
  CaptureFrees f;
  f.capture_began();
  f.allocated(nullptr, true);  // a zero-byte allocation
  f.capture_ended(false);
  EXPECT_EQ(f.free_action(block(5), false), Free::kNow);
  EXPECT_EQ(f.held_back(), 0);
}

// The blocks a graph keeps past its capture, as a launch of it finds them:
// written out by hand for each step of the capture's life.
TEST(CaptureFrees, TheBlocksAGraphKeepsAreCountedAndThoseStillHeld) {
  CaptureFrees f;
  const int64_t a = f.capture_began();
  f.allocated(block(0), true);
  f.allocated(block(1), true);
  f.allocated(block(2), true);
  f.allocated(block(3), true);
  EXPECT_EQ(f.free_action(block(3), true), Free::kNow);  // a free node: not kept
  f.capture_ended(true);
  // Dropped before the first launch: no free node in the graph either.
  EXPECT_EQ(f.free_action(block(2), false), Free::kAfterLaunch);
  CaptureFrees::Outliving o = f.outliving(a);
  EXPECT_EQ(o.kept, 3);
  EXPECT_EQ(o.held, 2);
  EXPECT_FALSE(o.launched);
  f.launched(a);
  o = f.outliving(a);
  EXPECT_EQ(o.kept, 3);
  EXPECT_EQ(o.held, 2);
  EXPECT_TRUE(o.launched);
  EXPECT_EQ(f.free_action(block(0), false), Free::kNow);
  EXPECT_EQ(f.outliving(a).held, 1);
  // A graph that frees all it allocates keeps none.
  const int64_t b = f.capture_began();
  f.allocated(block(5), true);
  EXPECT_EQ(f.free_action(block(5), true), Free::kNow);
  f.capture_ended(true);
  f.launched(b);
  o = f.outliving(b);
  EXPECT_EQ(o.kept, 0);
  EXPECT_TRUE(o.launched);
  // Unknown ids (a failed capture forgotten, or none) keep nothing.
  EXPECT_EQ(f.outliving(0).kept, 0);
  EXPECT_EQ(f.outliving(99).kept, 0);
}

TEST(CaptureFrees, ARelaunchOfAGraphKeepingBlocksIsRefusedByName) {
  // A first launch, and any launch of a graph keeping nothing, pass.
  EXPECT_NO_THROW(check_relaunch({3, 3, false}, 0));
  EXPECT_NO_THROW(check_relaunch({0, 0, true}, 0));
  std::string msg = test::error_of([] { check_relaunch({3, 2, true}, 1); });
  EXPECT_NE(msg.find("CUDA graph launch on cuda:1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("keeping 3 block(s) past its capture, 2 of them still held"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("drop those tensors inside the captured step"), std::string::npos) << msg;
  // Refused as well once every tensor is gone: the relaunch would re-create
  // the blocks with nothing left to free them.
  msg = test::error_of([] { check_relaunch({1, 0, true}, 0); });
  EXPECT_NE(msg.find("keeping 1 block(s) past its capture, 0 of them still held"),
            std::string::npos)
      << msg;
}

}  // namespace
}  // namespace fk::cuda
