// blas_stream_step (fk/cuda/blas_stream.h): when cuBLAS's handle stays on its
// stream, is created, moves after a device wait, or is refused because a
// CUDA graph capture runs. Pure logic, on every machine: stand-in stream
// pointers, compared only. The refusal on a real capture is
// tests/fk/cuda/graph_test.cpp's CudaGraph.CuBlasIsBoundBeforeACaptureOrRefused.
#include "fk/cuda/blas_stream.h"

#include <gtest/gtest.h>

namespace fk::cuda {
namespace {

int g_stream_a = 0, g_stream_b = 0;
const void* const kA = &g_stream_a;
const void* const kB = &g_stream_b;
const void* const kDefault = nullptr;

using S = BlasStreamStep;

TEST(BlasStreamStep, OutsideACaptureTheHandleBindsThenMovesAfterADeviceWait) {
  EXPECT_EQ(blas_stream_step(false, nullptr, kA, false), S::kBind);
  EXPECT_EQ(blas_stream_step(false, nullptr, kDefault, false), S::kBind);
  EXPECT_EQ(blas_stream_step(true, kA, kA, false), S::kKeep);
  EXPECT_EQ(blas_stream_step(true, kDefault, kDefault, false), S::kKeep);
  EXPECT_EQ(blas_stream_step(true, kA, kB, false), S::kSyncThenBind);
  EXPECT_EQ(blas_stream_step(true, kDefault, kA, false), S::kSyncThenBind);
  EXPECT_EQ(blas_stream_step(true, kA, kDefault, false), S::kSyncThenBind);
}

// The warm-up step bound the handle to the captured stream: the captured
// calls change nothing. Anything else would wait for the device (a move) or
// allocate (a first call) inside the capture: refused, never synchronized.
TEST(BlasStreamStep, InsideACaptureOnlyTheBoundStreamIsUsed) {
  EXPECT_EQ(blas_stream_step(true, kA, kA, true), S::kKeep);
  EXPECT_EQ(blas_stream_step(true, kDefault, kA, true), S::kRefuse);
  EXPECT_EQ(blas_stream_step(true, kA, kB, true), S::kRefuse);
  EXPECT_EQ(blas_stream_step(true, kA, kDefault, true), S::kRefuse);
  EXPECT_EQ(blas_stream_step(false, nullptr, kA, true), S::kRefuse);
}

}  // namespace
}  // namespace fk::cuda
