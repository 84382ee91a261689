// Stream capture through fk (fk/cuda/graph.h), observed from outside: fk ops
// captured on a stream of the caller's replay as a graph (their temporaries
// allocated and freed inside it, results read back through pinned memory by
// a captured copy) and give what the same ops give run eagerly, replay after
// replay; a host read inside a capture throws an fk::Error naming the capture
// instead of breaking it silently, and after abort_capture the stream runs
// eager work again; tensors of failed captures, of graphs not yet launched
// and of destroyed graphs are freed by CUDA's rules without a failed free; cuBLAS is used in a
// capture only once an eager GEMM bound it to the stream, and a grouped GEMM declines there; the
// default stream cannot be captured; an out-of-memory inside a capture is refused by name instead
// of a device-wide wait that would invalidate it; a relaunch of a graph that keeps blocks past its
// capture is refused by name; live_graphs counts running captures and instantiated graphs. The GPU
// tests skip themselves where no GPU is usable.
#include <gtest/gtest.h>

#ifdef FK_WITH_CUDA
#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "fk/cuda/blas.h"
#include "fk/cuda/fft.h"
#include "fk/cuda/graph.h"
#include "fk/cuda/runtime.h"
#include "fk/factory.h"
#include "fk/knobs.h"
#include "fk/ops/binary.h"
#include "fk/ops/fft.h"
#include "fk/ops/index.h"
#include "fk/ops/linalg.h"
#include "fk/test_util.h"
#include "parity.h"

namespace fk {
namespace {

const Device kGpu = cuda_device(0);

// A stream of fk's own as device 0's current stream for the scope.
class OwnStream {
 public:
  OwnStream() : previous_(cuda::current_stream(0)), stream_(cuda::create_stream(0)) {
    cuda::synchronize(0);
    cuda::set_current_stream(0, stream_);
  }
  ~OwnStream() {
    cuda::abort_capture(0);
    cuda::synchronize(0);
    cuda::set_current_stream(0, previous_);
    cuda::destroy_stream(0, stream_);
  }
  OwnStream(const OwnStream&) = delete;
  OwnStream& operator=(const OwnStream&) = delete;

 private:
  void* previous_;
  void* stream_;
};

// n values of T in page-locked host memory for the scope: where a captured
// copy reads a result back (the graph bakes the address in).
template <typename T>
class PinnedValues {
 public:
  explicit PinnedValues(size_t n)
      : n_(n), p_(static_cast<T*>(cuda::pinned_allocate(n * sizeof(T)))) {}
  ~PinnedValues() { cuda::pinned_free(p_); }
  PinnedValues(const PinnedValues&) = delete;
  PinnedValues& operator=(const PinnedValues&) = delete;

  // Enqueues a copy of t's first n values (contiguous, on device 0) here.
  void copy_from(const Tensor& t) {
    cuda::copy_to_pinned_async(p_, t.data_ptr(), 0, n_ * sizeof(T));
  }
  // Every value set to `poison`, for a replay to overwrite.
  void fill(T poison) { std::fill(p_, p_ + n_, poison); }
  std::vector<T> values() const { return std::vector<T>(p_, p_ + n_); }

 private:
  size_t n_;
  T* p_;
};

// x <- x * 3 + 1 through a temporary, the temporary dropped before returning.
void step(Tensor& x) {
  Tensor t = add(mul(x, 3.0), 1.0);
  x.copy_(t);
}

TEST(CudaGraph, ReplaysCapturedOpsAndTheirPinnedReadback) {
  FK_SKIP_WITHOUT_GPU();
  OwnStream own;
  const std::vector<float> start{0.5f, -1.f, 2.f, 0.f};
  Tensor eager = from_vector(start, Dims{4}).to(kGpu);
  Tensor x = from_vector(start, Dims{4}).to(kGpu);
  PinnedValues<float> pinned(4);
  const int64_t before = cuda::pool_stats(0).allocated;
  cuda::begin_capture(0);
  EXPECT_TRUE(cuda::capturing(0));
  step(x);
  pinned.copy_from(x);
  // The temporary was freed inside the capture: nothing outlives the step.
  EXPECT_EQ(cuda::pool_stats(0).allocated, before);
  cuda::GraphExec g = cuda::end_capture(0);
  EXPECT_FALSE(cuda::capturing(0));
  EXPECT_GT(g.nodes, 2);
  for (int r = 0; r < 3; ++r) {
    cuda::launch_graph(g);
    cuda::synchronize(0);
    step(eager);
    EXPECT_EQ(pinned.values(), eager.to_vector<float>()) << "replay " << r;
  }
  EXPECT_EQ(x.to_vector<float>(), eager.to_vector<float>());
  cuda::destroy_graph(g);
  EXPECT_EQ(g.exec, nullptr);
}

// A tensor made before a capture and dropped inside it: a graph free node
// takes graph allocations only, so the pool holds the block back
// (capture_frees.h) and frees it once no capture runs; the capture ends, and
// no error is left for the next launch check to blame on its kernel.
TEST(CudaGraph, AFreeOfAnEarlierAllocationInsideACaptureIsHeldBack) {
  FK_SKIP_WITHOUT_GPU();
  OwnStream own;
  Tensor x = full(Dims{4}, 1.0, {DType::F32, kGpu});
  Tensor earlier = full(Dims{1024}, 2.0, {DType::F32, kGpu});
  cuda::synchronize(0);
  const int64_t before = cuda::pool_stats(0).allocated;
  cuda::begin_capture(0);
  earlier = Tensor();  // dropped inside the capture
  step(x);
  cuda::GraphExec g = cuda::end_capture(0);  // throws if the free broke the capture
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cuda::pool_stats(0).allocated, before - 1024 * 4);
  cuda::launch_graph(g);
  cuda::synchronize(0);
  EXPECT_EQ(x.to_vector<float>(), std::vector<float>(4, 4.f));  // 1 * 3 + 1
  cuda::destroy_graph(g);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// What the pool's free of a block did: no failed cudaFreeAsync counted and
// no error left for the next launch check.
void expect_clean_frees(int64_t failed_before) {
  EXPECT_EQ(cuda::pool_stats(0).failed_frees, failed_before);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// A tensor made inside a capture that is aborted (or that CUDA invalidated)
// and dropped after it: its allocation node was discarded with the capture,
// so the address never was memory; the pool drops its free (capture_frees.h)
// instead of a cudaFreeAsync that would fail and be blamed on the next kernel.
TEST(CudaGraph, ATensorOfAFailedCaptureIsDroppedWithoutACudaFree) {
  FK_SKIP_WITHOUT_GPU();
  OwnStream own;
  Tensor x = full(Dims{4}, 1.0, {DType::F32, kGpu});
  cuda::synchronize(0);
  const int64_t failed = cuda::pool_stats(0).failed_frees;
  cuda::begin_capture(0);
  Tensor aborted = mul(x, 2.0);
  cuda::abort_capture(0);
  aborted = Tensor();
  expect_clean_frees(failed);
  // A capture CUDA invalidates: a stream synchronization inside it.
  cuda::begin_capture(0);
  Tensor invalidated = mul(x, 2.0);
  EXPECT_NE(cudaStreamSynchronize(static_cast<cudaStream_t>(cuda::current_stream(0))), cudaSuccess);
  cudaGetLastError();
  EXPECT_NE(test::error_of([] { cuda::end_capture(0); }), "");
  invalidated = Tensor();
  expect_clean_frees(failed);
  EXPECT_EQ(add(x, 1.0).to_vector<float>(), std::vector<float>(4, 2.f));
}

// A tensor a graph allocates and keeps, dropped before the graph first runs:
// its block exists only from the first launch, so the pool frees it right
// after that launch, in stream order, and the replay reads right. A second
// launch would make the block live again with no tensor left to free it (and
// CUDA would refuse the third): fk refuses it by name before CUDA is asked,
// and the stream runs on (nefi's StepGraph captures no such step).
TEST(CudaGraph, ATensorDroppedBeforeItsGraphFirstRunsIsFreedAfterTheLaunch) {
  FK_SKIP_WITHOUT_GPU();
  OwnStream own;
  Tensor x = full(Dims{4}, 1.0, {DType::F32, kGpu});
  PinnedValues<float> pinned(4);
  cuda::synchronize(0);
  const int64_t failed = cuda::pool_stats(0).failed_frees;
  cuda::begin_capture(0);
  Tensor kept = add(mul(x, 3.0), 1.0);
  pinned.copy_from(kept);
  cuda::GraphExec g = cuda::end_capture(0);
  kept = Tensor();
  expect_clean_frees(failed);
  pinned.fill(-1.f);
  EXPECT_NO_THROW(cuda::launch_graph(g));
  cuda::synchronize(0);
  EXPECT_EQ(pinned.values(), std::vector<float>(4, 4.f));
  const std::string msg = test::error_of([&] { cuda::launch_graph(g); });
  EXPECT_NE(msg.find("keeping 1 block(s) past its capture, 0 of them still held"),
            std::string::npos)
      << msg;
  expect_clean_frees(failed);
  EXPECT_EQ(add(x, 1.0).to_vector<float>(), std::vector<float>(4, 2.f));
  cuda::destroy_graph(g);
  expect_clean_frees(failed);
}

// A relaunch while a tensor of the previous launch still holds its block:
// CUDA would refuse it with a bare invalid value (fk does not instantiate with
// cudaGraphInstantiateFlagAutoFreeOnLaunch, which would free the block under
// the tensor); fk refuses it by name, the tensor keeps the first launch's
// values, and dropping it frees the block cleanly.
TEST(CudaGraph, ARelaunchWhileATensorHoldsABlockOfThePreviousLaunchIsRefused) {
  FK_SKIP_WITHOUT_GPU();
  OwnStream own;
  Tensor x = full(Dims{4}, 1.0, {DType::F32, kGpu});
  cuda::synchronize(0);
  const int64_t failed = cuda::pool_stats(0).failed_frees;
  const int64_t before = cuda::pool_stats(0).allocated;
  cuda::begin_capture(0);
  Tensor kept = add(mul(x, 3.0), 1.0);
  cuda::GraphExec g = cuda::end_capture(0);
  cuda::launch_graph(g);
  cuda::synchronize(0);
  fill_(x, 2.0);  // a relaunch would write 7 into kept
  const std::string msg = test::error_of([&] { cuda::launch_graph(g); });
  EXPECT_NE(msg.find("CUDA graph launch on cuda:0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("keeping 1 block(s) past its capture, 1 of them still held"),
            std::string::npos)
      << msg;
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(kept.to_vector<float>(), std::vector<float>(4, 4.f));
  kept = Tensor();
  EXPECT_EQ(cuda::pool_stats(0).allocated, before);
  cuda::destroy_graph(g);
  expect_clean_frees(failed);
}

// Destroying a graph: blocks of a graph that never ran were never memory
// (their tensors' frees are dropped); blocks a launch made live stay live,
// readable, and are freed when their tensor is dropped.
TEST(CudaGraph, DestroyedGraphsLeaveLiveBlocksOnlyIfTheyRan) {
  FK_SKIP_WITHOUT_GPU();
  OwnStream own;
  Tensor x = full(Dims{4}, 1.0, {DType::F32, kGpu});
  cuda::synchronize(0);
  const int64_t failed = cuda::pool_stats(0).failed_frees;
  cuda::begin_capture(0);
  Tensor never_ran = mul(x, 2.0);
  cuda::GraphExec g = cuda::end_capture(0);
  cuda::destroy_graph(g);
  never_ran = Tensor();
  expect_clean_frees(failed);
  cuda::begin_capture(0);
  Tensor ran = mul(x, 2.0);
  cuda::GraphExec h = cuda::end_capture(0);
  cuda::launch_graph(h);
  cuda::destroy_graph(h);  // waits for the replay
  EXPECT_EQ(ran.to_vector<float>(), std::vector<float>(4, 2.f));
  ran = Tensor();
  expect_clean_frees(failed);
}

// An index op with a device index tensor checks it in its kernel (no host
// read: fk/cuda/index_errors.h), so it is captured; its replay gives the
// eager result, and after the index tensor is overwritten with a bad value
// the replay's kernel records it and the next synchronization throws by name.
TEST(CudaGraph, AnIndexOpIsCapturedAndABadIndexIsReportedAfterItsReplay) {
  FK_SKIP_WITHOUT_GPU();
  OwnStream own;
  const Tensor t = from_vector(std::vector<float>{10, 11, 12, 13}, Dims{4}).to(kGpu);
  Tensor idx = from_vector(std::vector<int64_t>{3, 0, 2}, Dims{3}).to(kGpu);
  Tensor out = empty(Dims{3}, {DType::F32, kGpu});
  cuda::synchronize(0);
  cuda::begin_capture(0);
  out.copy_(gather(t, 0, idx));
  cuda::GraphExec g = cuda::end_capture(0);  // throws if the op read back
  cuda::launch_graph(g);
  cuda::synchronize(0);
  EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{13, 10, 12}));
  idx.copy_(from_vector(std::vector<int64_t>{1, 9, 2}, Dims{3}).to(kGpu));
  cuda::launch_graph(g);
  const std::string msg = test::error_of([] { cuda::synchronize(0); });
  EXPECT_NE(msg.find("gather (device-side index check"), std::string::npos) << msg;
  EXPECT_NE(msg.find("index 9"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[0, 4)"), std::string::npos) << msg;
  EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{11, 0, 12}));  // the bad one skipped
  cuda::destroy_graph(g);
}

TEST(CudaGraph, AHostReadInsideACaptureIsAnErrorAndTheStreamRecovers) {
  FK_SKIP_WITHOUT_GPU();
  OwnStream own;
  Tensor x = full(Dims{8}, 2.0, {DType::F32, kGpu});
  cuda::begin_capture(0);
  const std::string msg = test::error_of([&] {
    Tensor y = mul(x, 2.0);
    (void)y.to_vector<float>();  // a host read
  });
  EXPECT_NE(msg.find("CUDA graph capture"), std::string::npos) << msg;
  EXPECT_NE(msg.find("host"), std::string::npos) << msg;
  cuda::abort_capture(0);
  EXPECT_FALSE(cuda::capturing(0));
  EXPECT_EQ(mul(x, 2.0).to_vector<float>(), std::vector<float>(8, 4.f));
}

// fk::empty_cache waits for the stream and trims the pool: inside a capture it
// is refused by name, and the capture can be aborted and the cache emptied.
TEST(CudaGraph, EmptyCacheInsideACaptureIsRefused) {
  FK_SKIP_WITHOUT_GPU();
  OwnStream own;
  Tensor x = full(Dims{8}, 2.0, {DType::F32, kGpu});
  cuda::begin_capture(0);
  const std::string msg = test::error_of([&] { empty_cache(kGpu); });
  EXPECT_NE(msg.find("fk::empty_cache"), std::string::npos) << msg;
  cuda::abort_capture(0);
  EXPECT_NO_THROW(empty_cache(kGpu));
  EXPECT_EQ(mul(x, 2.0).to_vector<float>(), std::vector<float>(8, 4.f));
}

// A graph of y <- rfft(x) and y's copy into pinned, captured on device 0's
// current stream.
cuda::GraphExec capture_rfft(const Tensor& x, Tensor& y, PinnedValues<c64>& pinned) {
  cuda::begin_capture(0);
  y.copy_(rfft(x));
  pinned.copy_from(y);
  return cuda::end_capture(0);
}

// Replays g (which copies its transform into pinned) over poisoned values,
// expects the eager bits, then frees the graph and the plans.
template <typename T>
void expect_fft_replay_gives(cuda::GraphExec& g, PinnedValues<T>& pinned,
                             const std::vector<T>& want, T poison) {
  pinned.fill(poison);
  cuda::launch_graph(g);
  cuda::synchronize(0);
  EXPECT_EQ(pinned.values(), want);
  cuda::destroy_graph(g);
  cuda::fft_plan_cache_clear();
}

// A cuFFT plan a graph recorded stays alive when more distinct transforms
// than the plan cache holds run after the capture: the replay still gives
// the eager result (an evicted plan would leave the graph its freed work area).
TEST(CudaGraph, AnFftPlanCapturedInAGraphSurvivesTheCacheFilling) {
  FK_SKIP_WITHOUT_GPU();
  OwnStream own;
  cuda::fft_plan_cache_clear();
  std::vector<float> start(96);
  for (size_t i = 0; i < start.size(); ++i) start[i] = static_cast<float>((i * 37) % 11) - 5.f;
  const Tensor x = from_vector(start, Dims{96}).to(kGpu);
  const std::vector<float> want =
      irfft(rfft(x), 96).to_vector<float>();  // eager: creates the plans
  PinnedValues<float> pinned(want.size());
  cuda::begin_capture(0);
  Tensor y = irfft(rfft(x), 96);
  pinned.copy_from(y);
  cuda::GraphExec g = cuda::end_capture(0);
  for (int64_t n = 2; n < 2 + 2 * cuda::kFftPlanCacheCapacity; ++n) {
    (void)rfft(full(Dims{n}, 1.0, {DType::F32, kGpu}));
  }
  cuda::synchronize(0);
  EXPECT_GT(cuda::fft_plan_cache_size(), 0);
  EXPECT_LE(cuda::fft_plan_cache_size(), cuda::kFftPlanCacheCapacity + 2);
  expect_fft_replay_gives(g, pinned, want, -1.f);
}

// The plans a capture ran stay pinned (never evicted) while any graph lives,
// and are evictable again once the last one is gone: otherwise every
// capture's transforms (a curriculum's stages) would keep their plans and
// work areas for good.
TEST(CudaGraph, PlansOfDestroyedGraphsAreEvictableAgain) {
  FK_SKIP_WITHOUT_GPU();
  OwnStream own;
  ASSERT_EQ(cuda::live_graphs(), 0);
  cuda::fft_plan_cache_clear();
  const int64_t cap = cuda::kFftPlanCacheCapacity;
  auto run = [](int64_t first, int64_t last) {
    for (int64_t n = first; n < last; ++n) (void)rfft(full(Dims{n}, 1.0, {DType::F32, kGpu}));
  };
  run(2, 6);  // eager: makes the plans
  cuda::synchronize(0);
  auto capture = [&](int64_t first, int64_t last) {
    cuda::begin_capture(0);
    run(first, last);
    return cuda::end_capture(0);
  };
  cuda::GraphExec a = capture(2, 4), b = capture(4, 6);
  EXPECT_EQ(cuda::fft_pinned_plans(), 4);
  cuda::destroy_graph(a);
  EXPECT_EQ(cuda::fft_pinned_plans(), 4) << "b lives: what a capture pinned stays pinned";
  run(6, 6 + 2 * cap);  // far more plans than the cache holds: none of the pinned is evicted
  cuda::synchronize(0);
  EXPECT_EQ(cuda::fft_plan_cache_size(), cap);
  EXPECT_EQ(cuda::fft_pinned_plans(), 4);
  cuda::destroy_graph(b);
  EXPECT_EQ(cuda::fft_pinned_plans(), 0);
  run(6 + 2 * cap, 6 + 3 * cap);  // now they go too
  cuda::synchronize(0);
  EXPECT_EQ(cuda::fft_plan_cache_size(), cap);
  EXPECT_EQ(cuda::fft_pinned_plans(), 0);
  cuda::fft_plan_cache_clear();
}

// A plan run in a capture fk did not begin (a host framework's, on the
// stream it lent) stays pinned when fk's last graph goes: fk never sees that
// graph end, and its replays use the plan.
TEST(CudaGraph, APlanRunInACaptureFkDidNotBeginStaysPinned) {
  FK_SKIP_WITHOUT_GPU();
  OwnStream own;
  ASSERT_EQ(cuda::live_graphs(), 0);
  cuda::fft_plan_cache_clear();
  const Tensor x = full(Dims{40}, 1.0, {DType::F32, kGpu});
  const Tensor y = full(Dims{24}, 1.0, {DType::F32, kGpu});
  (void)rfft(x);  // eager: makes both plans
  (void)rfft(y);
  cuda::synchronize(0);
  auto* stream = static_cast<cudaStream_t>(cuda::current_stream(0));
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  (void)rfft(x);
  cudaGraph_t foreign = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(stream, &foreign), cudaSuccess);
  cuda::begin_capture(0);
  (void)rfft(y);
  cuda::GraphExec g = cuda::end_capture(0);
  EXPECT_EQ(cuda::fft_pinned_plans(), 2);
  cuda::destroy_graph(g);
  EXPECT_EQ(cuda::fft_pinned_plans(), 1) << "the other capture's plan lost its pin";
  cudaGraphDestroy(foreign);
  cuda::fft_plan_cache_clear();
}

// A transform first met inside a capture is refused by name (its plan's work
// area would be a cudaMalloc there), even with the cache full (no eviction's
// cudaFree runs either); after the refusal the stream recovers and the same
// transform runs eagerly, then captured and replayed, to the eager bits.
TEST(CudaGraph, AnFftPlanFirstMetInsideACaptureIsRefused) {
  FK_SKIP_WITHOUT_GPU();
  OwnStream own;
  cuda::fft_plan_cache_clear();
  for (int64_t n = 2; n < 2 + cuda::kFftPlanCacheCapacity; ++n)
    (void)rfft(full(Dims{n}, 1.0, {DType::F32, kGpu}));  // fills the cache, unpinned
  cuda::synchronize(0);
  const int64_t plans = cuda::fft_plan_cache_size();
  std::vector<float> samples(707);  // a size met by no plan above
  for (size_t i = 0; i < samples.size(); ++i) samples[i] = static_cast<float>((i * 13) % 7) - 3.f;
  const Tensor x = from_vector(samples, Dims{707}).to(kGpu);
  cuda::begin_capture(0);
  const std::string msg = test::error_of([&] { (void)rfft(x); });
  EXPECT_NE(msg.find("cuda::fft_execute inside a CUDA graph capture"), std::string::npos) << msg;
  cuda::abort_capture(0);
  EXPECT_EQ(cuda::fft_plan_cache_size(), plans);           // nothing evicted, nothing made
  const std::vector<c64> want = rfft(x).to_vector<c64>();  // eager: makes the plan
  Tensor y = empty(Dims{354}, {DType::C64, kGpu});
  PinnedValues<c64> pinned(want.size());
  cuda::GraphExec g = capture_rfft(x, y, pinned);
  expect_fft_replay_gives(g, pinned, want, c64(-1.f, -1.f));
}

// cuBLAS inside a capture: a GEMM on a stream cuBLAS is not bound to yet is
// refused by name (binding would allocate or wait for the device, breaking
// the capture); after one eager GEMM on the stream the same GEMM is captured
// and its replay gives the eager result, which is the hand-computed product.
// Captures `inside` then c = a b (and its copy into page-locked memory),
// replays the graph and checks the copy holds `want`.
void expect_captured_matmul(const Tensor& a, const Tensor& b, Tensor& c,
                            const std::vector<float>& want, const std::function<void()>& inside) {
  PinnedValues<float> pinned(want.size());
  cuda::begin_capture(0);
  inside();
  c.copy_(matmul(a, b));
  pinned.copy_from(c);
  cuda::GraphExec g = cuda::end_capture(0);
  pinned.fill(-1.f);
  cuda::launch_graph(g);
  cuda::synchronize(0);
  EXPECT_EQ(pinned.values(), want);
  cuda::destroy_graph(g);
}

TEST(CudaGraph, CuBlasIsBoundBeforeACaptureOrRefused) {
  FK_SKIP_WITHOUT_GPU();
  OwnStream own;
  cuda::blas_release();  // no handle yet: the first GEMM would create one
  const Tensor a = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, Dims{2, 3}).to(kGpu);
  const Tensor b = from_vector(std::vector<float>{1, 0, -1, 2, 0.5f, 3}, Dims{3, 2}).to(kGpu);
  Tensor c = full(Dims{2, 2}, 0.0, {DType::F32, kGpu});
  cuda::begin_capture(0);
  const std::string msg = test::error_of([&] { c.copy_(matmul(a, b)); });
  EXPECT_NE(msg.find("cuda::gemm inside a CUDA graph capture"), std::string::npos) << msg;
  cuda::abort_capture(0);
  const std::vector<float> want = matmul(a, b).to_vector<float>();  // eager: binds cuBLAS
  EXPECT_EQ(want, (std::vector<float>{0.5f, 13.f, 2.f, 28.f}));
  expect_captured_matmul(a, b, c, want, [] {});
}

// A grouped GEMM copies its pointer lists from pageable memory, which a
// capture cannot hold: inside one it declines (the caller then loops over
// gemm) and leaves the capture intact.
TEST(CudaGraph, AGroupedGemmDeclinesInsideACapture) {
  FK_SKIP_WITHOUT_GPU();
  OwnStream own;
  const Tensor a = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, Dims{2, 3}).to(kGpu);
  const Tensor b = from_vector(std::vector<float>{1, 0, -1, 2, 0.5f, 3}, Dims{3, 2}).to(kGpu);
  Tensor c = full(Dims{2, 2}, 0.0, {DType::F32, kGpu});
  cuda::GemmList list;
  list.add({false, false, 2, 2, 3, 3, 2, 2}, a.data_ptr(), b.data_ptr(), c.data_ptr());
  auto grouped = [&] {
    return cuda::gemm_grouped(0, static_cast<int>(DType::F32), list, cuda::current_stream(0),
                              false);
  };
  EXPECT_TRUE(grouped());  // eager, binding cuBLAS to the stream
  const std::vector<float> want = {0.5f, 13.f, 2.f, 28.f};
  EXPECT_EQ(c.to_vector<float>(), want);
  expect_captured_matmul(a, b, c, want, [&] { EXPECT_FALSE(grouped()); });
}

// A cuFFT plan's work area is shared by its runs, so a plan last run on
// another stream moves only after a wait for the device: inside a capture
// that move is refused by name (the wait would invalidate it); after one
// eager run on the captured stream the transform is captured and its replay
// gives the bits of the run on the first stream.
TEST(CudaGraph, AnFftPlanLastRunOnAnotherStreamIsRefusedInsideACapture) {
  FK_SKIP_WITHOUT_GPU();
  cuda::fft_plan_cache_clear();
  std::vector<float> samples(48);
  for (size_t i = 0; i < samples.size(); ++i) samples[i] = static_cast<float>((i * 5) % 9) - 4.f;
  const Tensor x = from_vector(samples, Dims{48}).to(kGpu);
  const std::vector<c64> want = rfft(x).to_vector<c64>();  // the plan, run on the previous stream
  OwnStream own;
  Tensor y = empty(Dims{25}, {DType::C64, kGpu});
  cuda::begin_capture(0);
  const std::string msg = test::error_of([&] { y.copy_(rfft(x)); });
  EXPECT_NE(msg.find("cuda::fft_execute inside a CUDA graph capture"), std::string::npos) << msg;
  EXPECT_NE(msg.find("another stream"), std::string::npos) << msg;
  cuda::abort_capture(0);
  EXPECT_EQ(cuda::fft_plan_cache_size(), 1);
  EXPECT_EQ(rfft(x).to_vector<c64>(), want);  // eager: moves the plan to this stream
  PinnedValues<c64> pinned(want.size());
  cuda::GraphExec g = capture_rfft(x, y, pinned);
  expect_fft_replay_gives(g, pinned, want, c64(-1.f, -1.f));
}

// A second stream of fk's own beside OwnStream's, made current by `use`; the
// scope ends with device 0's current stream as it found it.
class OtherStream {
 public:
  OtherStream() : previous_(cuda::current_stream(0)), stream_(cuda::create_stream(0)) {}
  ~OtherStream() {
    cudaDeviceSynchronize();  // both streams' work, whichever is current
    cuda::set_current_stream(0, previous_);
    cuda::destroy_stream(0, stream_);
  }
  OtherStream(const OtherStream&) = delete;
  OtherStream& operator=(const OtherStream&) = delete;

  void* get() const { return stream_; }

 private:
  void* previous_;
  void* stream_;
};

// True when nothing is queued on `stream` any more: CUDA answers the first
// query of a stream with queued work "not ready" (the emulator always does,
// a GPU while the work runs), so a true answer right after a call means that
// call waited for the device.
bool drained(void* stream) {
  return cudaStreamQuery(static_cast<cudaStream_t>(stream)) == cudaSuccess;
}

// A graph's GEMMs use cuBLAS's one workspace, as eager GEMMs on every stream
// do. A replay on one stream and a GEMM on another, eager or another graph's
// replay, must never run at once: whichever comes second waits for the
// device (ME_LAZY_SYNC=1, so nothing else waits). The replays still give the
// eager product.
TEST(CudaGraph, AReplayAndAGemmOnAnotherStreamNeverShareTheWorkspace) {
  FK_SKIP_WITHOUT_GPU();
  KnobOverride lazy("ME_LAZY_SYNC", "1");
  OwnStream own;  // stream A, current
  void* const a_stream = cuda::current_stream(0);
  OtherStream b;
  const Tensor a = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, Dims{2, 3}).to(kGpu);
  const Tensor m = from_vector(std::vector<float>{1, 0, -1, 2, 0.5f, 3}, Dims{3, 2}).to(kGpu);
  const std::vector<float> want = matmul(a, m).to_vector<float>();  // eager: binds cuBLAS to A
  Tensor c = full(Dims{2, 2}, 0.0, {DType::F32, kGpu});
  PinnedValues<float> pinned(4);
  cuda::begin_capture(0);
  c.copy_(matmul(a, m));
  pinned.copy_from(c);
  cuda::GraphExec g = cuda::end_capture(0);
  EXPECT_TRUE(g.library_work);

  // An eager GEMM on B, then the replay on A: the launch waits for B.
  cuda::set_current_stream(0, b.get());
  Tensor on_b = matmul(a, m);
  cuda::set_current_stream(0, a_stream);
  pinned.fill(-1.f);
  cuda::launch_graph(g);
  EXPECT_TRUE(drained(b.get())) << "a replay started beside B's queued GEMM";
  // The replay on A, then an eager GEMM on B: the GEMM waits for A.
  cuda::set_current_stream(0, b.get());
  on_b = matmul(a, m);
  EXPECT_TRUE(drained(a_stream)) << "an eager GEMM started beside A's replay";
  EXPECT_EQ(on_b.to_vector<float>(), want);
  cuda::set_current_stream(0, a_stream);
  cuda::synchronize(0);
  EXPECT_EQ(pinned.values(), want);
  cuda::set_current_stream(0, b.get());

  // Two graphs, one captured on each stream: the second launch waits for the first.
  Tensor d = full(Dims{2, 2}, 0.0, {DType::F32, kGpu});
  PinnedValues<float> pinned_b(4);
  cuda::begin_capture(0);  // on B, where the eager GEMM above bound cuBLAS
  d.copy_(mul(matmul(a, m), 2.0));
  pinned_b.copy_from(d);
  cuda::GraphExec g_b = cuda::end_capture(0);
  const std::vector<float> want_b = mul(matmul(a, m), 2.0).to_vector<float>();
  cuda::set_current_stream(0, a_stream);
  pinned.fill(-1.f);
  pinned_b.fill(-1.f);
  cuda::launch_graph(g);
  cuda::set_current_stream(0, b.get());
  cuda::launch_graph(g_b);
  EXPECT_TRUE(drained(a_stream)) << "two replays shared the workspace at once";
  cuda::synchronize(0);
  EXPECT_EQ(pinned_b.values(), want_b);
  cuda::set_current_stream(0, a_stream);
  cuda::synchronize(0);
  EXPECT_EQ(pinned.values(), want);
  cuda::destroy_graph(g);
  cuda::set_current_stream(0, b.get());
  cuda::destroy_graph(g_b);

  // A graph with no library work holds no workspace: it is not marked.
  cuda::set_current_stream(0, a_stream);
  Tensor x = full(Dims{4}, 1.0, {DType::F32, kGpu});
  cuda::begin_capture(0);
  step(x);
  cuda::GraphExec plain = cuda::end_capture(0);
  EXPECT_FALSE(plain.library_work);
  cuda::destroy_graph(plain);
}

// The same for a cuFFT plan's work area: a plan a graph ran follows each
// replay to its stream, so an eager transform on another stream waits for
// the replay, and the replay for it.
TEST(CudaGraph, AReplayAndAnFftOnAnotherStreamNeverShareAWorkArea) {
  FK_SKIP_WITHOUT_GPU();
  KnobOverride lazy("ME_LAZY_SYNC", "1");
  cuda::fft_plan_cache_clear();
  OwnStream own;
  void* const a_stream = cuda::current_stream(0);
  OtherStream b;
  std::vector<float> samples(40);
  for (size_t i = 0; i < samples.size(); ++i) samples[i] = static_cast<float>((i * 7) % 11) - 5.f;
  const Tensor x = from_vector(samples, Dims{40}).to(kGpu);
  const std::vector<c64> want = rfft(x).to_vector<c64>();  // eager on A: makes the plan
  Tensor y = empty(Dims{21}, {DType::C64, kGpu});
  PinnedValues<c64> pinned(want.size());
  cuda::GraphExec g = capture_rfft(x, y, pinned);
  EXPECT_TRUE(g.library_work);

  cuda::set_current_stream(0, b.get());
  Tensor on_b = rfft(x);  // the plan moves to B
  cuda::set_current_stream(0, a_stream);
  pinned.fill(c64(-1.f, -1.f));
  cuda::launch_graph(g);
  EXPECT_TRUE(drained(b.get())) << "a replay started beside B's queued transform";
  cuda::set_current_stream(0, b.get());
  on_b = rfft(x);
  EXPECT_TRUE(drained(a_stream)) << "an eager transform started beside A's replay";
  EXPECT_EQ(on_b.to_vector<c64>(), want);
  cuda::set_current_stream(0, a_stream);
  cuda::synchronize(0);
  EXPECT_EQ(pinned.values(), want);
  cuda::destroy_graph(g);
  cuda::fft_plan_cache_clear();
}

// Releasing cuBLAS or clearing the plan cache frees what a graph's replays
// use: refused by name while a graph holding library work lives, with
// nothing freed (the graph still replays right), and allowed once it is gone.
TEST(CudaGraph, LibraryReleaseIsRefusedWhileAGraphUsesIt) {
  FK_SKIP_WITHOUT_GPU();
  OwnStream own;
  const Tensor a = from_vector(std::vector<float>{1, 2, 3, 4}, Dims{2, 2}).to(kGpu);
  const std::vector<float> want = matmul(a, a).to_vector<float>();  // binds cuBLAS
  Tensor c = full(Dims{2, 2}, 0.0, {DType::F32, kGpu});
  PinnedValues<float> pinned(4);
  const int64_t before = cuda::live_library_graphs();
  cuda::begin_capture(0);
  c.copy_(matmul(a, a));
  pinned.copy_from(c);
  cuda::GraphExec g = cuda::end_capture(0);
  EXPECT_EQ(cuda::live_library_graphs(), before + 1);
  const std::string blas = test::error_of([] { cuda::blas_release(); });
  EXPECT_NE(blas.find("cuda::blas_release"), std::string::npos) << blas;
  EXPECT_NE(blas.find("1 such graph"), std::string::npos) << blas;
  const std::string fft = test::error_of([] { cuda::fft_plan_cache_clear(); });
  EXPECT_NE(fft.find("cuda::fft_plan_cache_clear"), std::string::npos) << fft;
  pinned.fill(-1.f);
  cuda::launch_graph(g);
  cuda::synchronize(0);
  EXPECT_EQ(pinned.values(), want);
  cuda::destroy_graph(g);
  EXPECT_EQ(cuda::live_library_graphs(), before);
  EXPECT_NO_THROW(cuda::blas_release());
  EXPECT_NO_THROW(cuda::fft_plan_cache_clear());
}

// The pool answers an out-of-memory by waiting for the device and trimming
// its cache (eagerly), but inside a capture it throws by name instead: the
// wait would invalidate the capture. The check is reached directly (an
// allocation inside a capture may only reserve addresses, so a huge request
// need not fail there); after the refusal the capture goes on and replays.
TEST(CudaGraph, AnOutOfMemoryRetryIsRefusedInsideACaptureThatGoesOn) {
  FK_SKIP_WITHOUT_GPU();
  OwnStream own;
  const size_t request = size_t{5} << 30;
  cuda::check_out_of_memory_retry(0, request);  // eager: allowed
  // Far beyond any device's memory: eagerly the retry runs and CUDA's own error is reported.
  const std::string eager = test::error_of([] { cuda::pool_allocate(0, size_t{1} << 50); });
  EXPECT_NE(eager.find("cudaMallocAsync"), std::string::npos) << eager;
  EXPECT_EQ(eager.find("stream capture"), std::string::npos) << eager;
  Tensor x = full(Dims{4}, 0.5, {DType::F32, kGpu});
  Tensor eager_x = x.clone();
  cuda::begin_capture(0);
  const std::string msg = test::error_of([&] { cuda::check_out_of_memory_retry(0, request); });
  EXPECT_NE(msg.find("stream capture"), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::to_string(request) + " bytes"), std::string::npos) << msg;
  // Another thread allocating on the device meets the same refusal.
  std::string other;
  std::thread([&] {
    other = test::error_of([&] { cuda::check_out_of_memory_retry(0, 8); });
  }).join();
  EXPECT_NE(other.find("stream capture"), std::string::npos) << other;
  step(x);
  cuda::GraphExec g = cuda::end_capture(0);  // throws if the capture was invalidated
  cuda::launch_graph(g);
  cuda::synchronize(0);
  step(eager_x);
  EXPECT_EQ(x.to_vector<float>(), eager_x.to_vector<float>());
  cuda::destroy_graph(g);
}

// Another thread runs on its own current stream (the default one here), so
// it is not capturing: its ops and host reads run eagerly, outside the graph,
// and leave the capture valid.
TEST(CudaGraph, AnotherThreadsWorkStaysOutOfTheCapture) {
  FK_SKIP_WITHOUT_GPU();
  OwnStream own;
  const std::vector<float> start{1.f, -2.f, 0.5f};
  Tensor x = from_vector(start, Dims{3}).to(kGpu), eager = from_vector(start, Dims{3}).to(kGpu);
  Tensor other_input = from_vector(std::vector<float>{4.f, 5.f}, Dims{2}).to(kGpu);
  cuda::synchronize(0);
  cuda::begin_capture(0);
  step(x);
  bool other_capturing = true;
  std::string other_error;
  std::vector<float> other_values;
  std::thread([&] {
    other_capturing = cuda::capturing(0);
    other_error = test::error_of([&] { other_values = mul(other_input, 2.0).to_vector<float>(); });
  }).join();
  cuda::GraphExec g = cuda::end_capture(0);  // throws if the capture was invalidated
  EXPECT_FALSE(other_capturing);
  EXPECT_EQ(other_error, "");
  EXPECT_EQ(other_values, (std::vector<float>{8.f, 10.f}));
  for (int r = 0; r < 2; ++r) {
    cuda::launch_graph(g);
    step(eager);
  }
  cuda::synchronize(0);
  EXPECT_EQ(x.to_vector<float>(), eager.to_vector<float>());
  cuda::destroy_graph(g);
}

// destroy_graph waits for the stream the graph was last launched on, not
// the destroying thread's current stream (another thread's is the default
// stream here, which does not wait for a non-blocking one): a replay still
// queued finishes before its memory nodes go.
TEST(CudaGraph, DestroyingAGraphWaitsForTheStreamItRanOn) {
  FK_SKIP_WITHOUT_GPU();
  KnobOverride lazy("ME_LAZY_SYNC", "1");  // the launch returns with its replay queued
  OwnStream own;
  Tensor x = from_vector(std::vector<float>{1.f, 2.f}, Dims{2}).to(kGpu);
  cuda::synchronize(0);
  cuda::begin_capture(0);
  step(x);
  cuda::GraphExec g = cuda::end_capture(0);
  cuda::launch_graph(g);
  auto* launched = static_cast<cudaStream_t>(cuda::current_stream(0));
  EXPECT_EQ(g.launched_on, static_cast<void*>(launched));
  std::thread([&] { cuda::destroy_graph(g); }).join();
  EXPECT_EQ(cudaStreamQuery(launched), cudaSuccess) << "the replay was still queued";
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{4.f, 7.f}));
}

// A capture begun outside fk (a host framework's, on a stream it lent) has
// no fk mark; CUDA's own report of the stream capturing refuses the retry.
TEST(CudaGraph, AnOutOfMemoryRetryIsRefusedInACaptureFkDidNotBegin) {
  FK_SKIP_WITHOUT_GPU();
  OwnStream own;
  auto* stream = static_cast<cudaStream_t>(cuda::current_stream(0));
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_FALSE(cuda::capturing(0));  // not fk's
  const std::string msg = test::error_of([] { cuda::check_out_of_memory_retry(0, 64); });
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);  // still valid
  if (graph) cudaGraphDestroy(graph);
  EXPECT_NE(msg.find("stream capture"), std::string::npos) << msg;
  EXPECT_NE(msg.find("64 bytes"), std::string::npos) << msg;
}

TEST(CudaGraph, TheDefaultStreamIsNotCaptured) {
  FK_SKIP_WITHOUT_GPU();
  ASSERT_EQ(cuda::current_stream(0), nullptr);
  const std::string msg = test::error_of([&] { cuda::begin_capture(0); });
  EXPECT_NE(msg.find("non-default"), std::string::npos) << msg;
  EXPECT_FALSE(cuda::capturing(0));
  EXPECT_EQ(cuda::live_graphs(), 0);  // a refused begin counts nothing
}

// live_graphs() counts what may hold raw pointers into tensors (nefi's
// constant caches keep every entry while it is non-zero): a running capture,
// then its instantiated graph until destroyed; an aborted capture is gone.
TEST(CudaGraph, LiveGraphsCountRunningCapturesAndInstantiatedGraphs) {
  FK_SKIP_WITHOUT_GPU();
  OwnStream own;
  const int64_t before = cuda::live_graphs();
  Tensor x = full(Dims{4}, 1.0, {DType::F32, kGpu});
  cuda::begin_capture(0);
  EXPECT_EQ(cuda::live_graphs(), before + 1);
  cuda::abort_capture(0);
  EXPECT_EQ(cuda::live_graphs(), before);
  cuda::begin_capture(0);
  step(x);
  cuda::GraphExec g = cuda::end_capture(0);
  EXPECT_EQ(cuda::live_graphs(), before + 1);
  cuda::destroy_graph(g);
  EXPECT_EQ(cuda::live_graphs(), before);
  cuda::destroy_graph(g);  // already destroyed: nothing to count
  EXPECT_EQ(cuda::live_graphs(), before);
}

}  // namespace
}  // namespace fk
#endif  // FK_WITH_CUDA
