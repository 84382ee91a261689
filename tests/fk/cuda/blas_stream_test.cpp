// blas_stream_step (fk/cuda/blas_stream.h): when cuBLAS's handle stays on its
// stream, is created, moves after a device wait, or is refused because a
// CUDA graph capture runs. Pure logic, on every machine: stand-in stream
// pointers, compared only. The refusal on a real capture is
// tests/fk/cuda/graph_test.cpp's CudaGraph.CuBlasIsBoundBeforeACaptureOrRefused.
#include "fk/cuda/blas_stream.h"

#include <gtest/gtest.h>

#include <iterator>

namespace fk::cuda {
namespace {

int g_stream_a = 0, g_stream_b = 0;
const void* const kA = &g_stream_a;
const void* const kB = &g_stream_b;
const void* const kDefault = nullptr;

using S = BlasStreamStep;

struct Row {
  bool bound;
  const void* bound_stream;
  const void* stream;
  bool capture_running;
  S want;
};

// Outside a capture the handle is bound on the first call, kept, and moved
// after a device wait. Inside one the warm-up step bound it to the captured
// stream, so the captured calls change nothing; anything else would wait for
// the device (a move) or allocate (a first call) there: refused, never synced.
const Row kRows[] = {
    {false, nullptr, kA, false, S::kBind},
    {false, nullptr, kDefault, false, S::kBind},
    {true, kA, kA, false, S::kKeep},
    {true, kDefault, kDefault, false, S::kKeep},
    {true, kA, kB, false, S::kSyncThenBind},
    {true, kDefault, kA, false, S::kSyncThenBind},
    {true, kA, kDefault, false, S::kSyncThenBind},
    {true, kA, kA, true, S::kKeep},
    {true, kDefault, kA, true, S::kRefuse},
    {true, kA, kB, true, S::kRefuse},
    {true, kA, kDefault, true, S::kRefuse},
    {false, nullptr, kA, true, S::kRefuse},
};

TEST(BlasStreamStep, BindsKeepsMovesAfterAWaitAndRefusesInsideACapture) {
  for (size_t i = 0; i < std::size(kRows); ++i) {
    const Row& r = kRows[i];
    EXPECT_EQ(blas_stream_step(r.bound, r.bound_stream, r.stream, r.capture_running), r.want)
        << "row " << i;
  }
}

}  // namespace
}  // namespace fk::cuda
