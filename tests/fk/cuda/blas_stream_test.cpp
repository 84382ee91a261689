// blas_stream_step (fk/cuda/blas_stream.h): when cuBLAS's handle stays on its
// stream, is created, moves after a device wait, or is refused because a
// CUDA graph capture runs. Pure logic, on every machine: stand-in stream
// pointers and ids, compared only. The refusal on a real capture is
// tests/fk/cuda/graph_test.cpp's CudaGraph.CuBlasIsBoundBeforeACaptureOrRefused.
#include "fk/cuda/blas_stream.h"

#include <gtest/gtest.h>

#include <iterator>

namespace fk::cuda {
namespace {

int g_stream_a = 0, g_stream_b = 0;
// Streams as stream_key gives them outside a capture (ids known)...
const StreamKey kA{&g_stream_a, 11, true};
const StreamKey kB{&g_stream_b, 12, true};
const StreamKey kDefault{nullptr, 0, false};  // CUDA's default stream is not asked
// ...a stream created at A's address after A was destroyed...
const StreamKey kAReused{&g_stream_a, 13, true};
// ...and A inside a capture, where its id may not be asked.
const StreamKey kACaptured{&g_stream_a, 0, false};

using S = BlasStreamStep;

struct Row {
  bool bound;
  StreamKey bound_stream;
  StreamKey stream;
  bool capture_running;
  S want;
};

// Outside a capture the handle is bound on the first call, kept, and moved
// after a device wait. Inside one the warm-up step bound it to the captured
// stream, so the captured calls change nothing; anything else would wait for
// the device (a move) or allocate (a first call) there: refused, never synced.
const Row kRows[] = {
    {false, {}, kA, false, S::kBind},
    {false, {}, kDefault, false, S::kBind},
    {true, kA, kA, false, S::kKeep},
    {true, kDefault, kDefault, false, S::kKeep},
    {true, kA, kB, false, S::kSyncThenBind},
    {true, kDefault, kA, false, S::kSyncThenBind},
    {true, kA, kDefault, false, S::kSyncThenBind},
    // Inside a capture the address decides (the id is not asked there).
    {true, kA, kACaptured, true, S::kKeep},
    {true, kDefault, kACaptured, true, S::kRefuse},
    {true, kA, {&g_stream_b, 0, false}, true, S::kRefuse},
    {true, kA, kDefault, true, S::kRefuse},
    {false, {}, kACaptured, true, S::kRefuse},
    // A new stream at a destroyed one's address is another stream: the old
    // one's GEMMs may still use the workspace.
    {true, kA, kAReused, false, S::kSyncThenBind},
};

TEST(BlasStreamStep, BindsKeepsMovesAfterAWaitAndRefusesInsideACapture) {
  for (size_t i = 0; i < std::size(kRows); ++i) {
    const Row& r = kRows[i];
    EXPECT_EQ(blas_stream_step(r.bound, r.bound_stream, r.stream, r.capture_running), r.want)
        << "row " << i;
  }
}

TEST(BlasStreamStep, SameStreamNeedsEqualAddressesAndEqualIdsWhereBothAreKnown) {
  EXPECT_TRUE(same_stream(kA, kA));
  EXPECT_TRUE(same_stream(kA, kACaptured));
  EXPECT_TRUE(same_stream(kACaptured, kA));
  EXPECT_TRUE(same_stream(kDefault, kDefault));
  EXPECT_FALSE(same_stream(kA, kAReused));
  EXPECT_FALSE(same_stream(kA, kB));
  EXPECT_FALSE(same_stream(kACaptured, {&g_stream_b, 0, false}));
  EXPECT_FALSE(same_stream(kDefault, kA));
}

}  // namespace
}  // namespace fk::cuda
