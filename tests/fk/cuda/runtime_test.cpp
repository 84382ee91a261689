// The CUDA runtime's policies, observed from outside: the sync policy
// (ME_LAZY_SYNC), ops on the stream the caller set, and the stream-ordered
// pool's statistics, trimming and failed frees. The GPU tests skip themselves where no GPU is
// usable; a CPU-only build compiles none of them (they call the CUDA runtime).
//
// The sync policy is observed with host functions enqueued on a stream: one
// that sleeps (an op that synchronizes returns only after it), and a gate that
// holds back everything queued behind it until the test opens it (an op that
// does not synchronize returns while its work still waits). The gate opens by
// itself after 2 s, so a wrong policy fails these tests instead of hanging them.
#include <gtest/gtest.h>

#include <string>

#include "fk/cuda/runtime.h"

#ifdef FK_WITH_CUDA
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../test_util.h"
#include "fk/cuda/runtime.h"
#include "fk/profile.h"
#include "parity.h"

namespace fk {
namespace {

const Device kGpu = cuda_device(0);
const char* const kLazySync = "ME_LAZY_SYNC";

// A stream the test creates and makes device 0's current stream, as a host
// framework lending its own stream would; the previous one is restored after
// the stream has drained (tensors freed on it are stream-ordered frees).
class CallerStream {
 public:
  CallerStream() : previous_(cuda::current_stream(0)) {
    EXPECT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
    cuda::set_current_stream(0, stream_);
  }
  ~CallerStream() {
    cudaStreamSynchronize(stream_);
    cuda::set_current_stream(0, previous_);
    cudaStreamDestroy(stream_);
  }
  CallerStream(const CallerStream&) = delete;
  CallerStream& operator=(const CallerStream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  void* previous_;
  cudaStream_t stream_ = nullptr;
};

// Holds back the work queued on `stream` after it until open() (or 2 s).
class Gate {
 public:
  explicit Gate(cudaStream_t stream) : stream_(stream) {
    EXPECT_EQ(cudaLaunchHostFunc(stream_, &Gate::hold, this), cudaSuccess);
  }
  // Opens and waits for the stream, so the host function never outlives the gate.
  ~Gate() {
    open();
    cudaStreamSynchronize(stream_);
  }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  void open() { open_.store(true, std::memory_order_release); }

 private:
  static void CUDART_CB hold(void* self) {
    auto* gate = static_cast<Gate*>(self);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!gate->open_.load(std::memory_order_acquire) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
  cudaStream_t stream_;
  std::atomic<bool> open_{false};
};

void CUDART_CB sleep_50ms(void*) {
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

// gpu (on the device) within tol relative to 1 + |cpu|.
void expect_near(const Tensor& gpu, const Tensor& cpu, double tol, const std::string& what) {
  ASSERT_TRUE(gpu.device().is_cuda()) << what;
  cuda_parity::expect_close(gpu, cpu, cuda_parity::near(tol), what);
}

// Registered as a latched boolean, off by default: synchronizing after every
// op is the default policy. Runs without a GPU.
TEST(CudaRuntime, LazySyncKnobIsLatchedAndOffByDefault) {
  const Knob& k = knob(kLazySync);
  EXPECT_EQ(k.type(), KnobType::Bool);
  EXPECT_EQ(k.read(), KnobRead::Latched);
  EXPECT_EQ(std::string(k.default_value()), "0");
  // Latched: once read, a change of the environment is not seen.
  const char* env = std::getenv(kLazySync);
  const std::optional<std::string> saved = env ? std::optional<std::string>(env) : std::nullopt;
  const bool first = k.as_bool();
  setenv(kLazySync, first ? "0" : "1", 1);
  EXPECT_EQ(k.as_bool(), first);
  if (saved) {
    setenv(kLazySync, saved->c_str(), 1);
  } else {
    unsetenv(kLazySync);
  }
}

// Default policy: each op returns only once its stream has drained, here
// including a 50 ms host function queued just before it.
TEST(CudaRuntime, EveryOpSynchronizesByDefault) {
  FK_SKIP_WITHOUT_GPU();
  KnobOverride eager(kLazySync, "0");
  CallerStream s;
  Tensor x = test::random_tensor({48, 64}, DType::F32, -1, 1, 51).to(kGpu);
  Tensor w = test::random_tensor({64, 32}, DType::F32, -1, 1, 52).to(kGpu);
  const std::vector<std::pair<std::string, std::function<Tensor()>>> ops = {
      {"add", [&] { return add(x, x); }},
      {"sum", [&] { return sum(x, {1}); }},
      {"matmul", [&] { return matmul(x, w); }},
      {"rfftn", [&] { return rfftn(x); }},
      {"host-to-device copy", [&] { return test::random_tensor({16}, DType::F32).to(kGpu); }},
  };
  for (const auto& [what, op] : ops) {
    ASSERT_EQ(cudaLaunchHostFunc(s.get(), sleep_50ms, nullptr), cudaSuccess);
    Tensor y = op();
    EXPECT_EQ(cudaStreamQuery(s.get()), cudaSuccess)
        << what << " returned before its stream drained";
  }
}

// ME_LAZY_SYNC=1: ops return with their work still queued (behind a closed
// gate); a host read synchronizes and sees the finished values.
TEST(CudaRuntime, LazySyncQueuesOpsUntilAHostRead) {
  FK_SKIP_WITHOUT_GPU();
  KnobOverride lazy(kLazySync, "1");
  CallerStream s;
  Tensor x = test::random_tensor({8, 512}, DType::F32, -1, 1, 53);
  Tensor gx = x.to(kGpu);
  cuda::synchronize(0);
  Gate gate(s.get());
  Tensor y = mul(add(gx, gx), 0.25);
  Tensor total = sum(y, {1});
  EXPECT_EQ(cudaStreamQuery(s.get()), cudaErrorNotReady)
      << "an op synchronized under ME_LAZY_SYNC=1";
  gate.open();
  expect_near(total, sum(mul(add(x, x), 0.25), {1}), 1e-4, "sum after a host read");
  expect_near(y, mul(x, 0.5), 1e-6, "add then mul");
}

// Every host wait for the stream is counted (fk::profile::Counters::syncs):
// after each op by default, only for host reads and fk::synchronize under
// ME_LAZY_SYNC=1. fk::synchronize returns once the stream has drained.
TEST(CudaRuntime, HostWaitsAreCounted) {
  FK_SKIP_WITHOUT_GPU();
  Tensor x = test::random_tensor({8, 64}, DType::F32, -1, 1, 57).to(kGpu);
  cuda::synchronize(0);
  const auto syncs_of = [](const std::function<void()>& f) {
    const int64_t before = profile::counters().syncs;
    f();
    return profile::counters().syncs - before;
  };
  {
    KnobOverride eager(kLazySync, "0");
    EXPECT_EQ(syncs_of([&] { Tensor y = add(x, x); }), 1);
  }
  KnobOverride lazy(kLazySync, "1");
  CallerStream s;
  Tensor y;
  EXPECT_EQ(syncs_of([&] { y = mul(add(x, x), 2.0); }), 0);
  EXPECT_EQ(syncs_of([&] { Tensor h = y.to(kCPU); }), 1);
  ASSERT_EQ(cudaLaunchHostFunc(s.get(), sleep_50ms, nullptr), cudaSuccess);
  EXPECT_EQ(syncs_of([&] { synchronize(kGpu); }), 1);
  EXPECT_EQ(cudaStreamQuery(s.get()), cudaSuccess)
      << "fk::synchronize returned before the stream drained";
  EXPECT_EQ(syncs_of([&] { synchronize(kCPU); }), 0);
}

// set_current_stream: ops run on the caller's stream. Behind a gate on that
// stream, a raw copy on it fills the ops' inputs: an op on any stream not
// ordered after the gate would read them before the copy (zeros) and give a
// wrong result. Nothing is read while the gate holds: on an H200 (driver
// 580) a device-to-host copy on another stream, pinned or not, waited behind
// the gate's host function, so a read could not tell when the ops ran.
TEST(CudaRuntime, OpsRunOnTheCallersStream) {
  FK_SKIP_WITHOUT_GPU();
  KnobOverride lazy(kLazySync, "1");  // with eager syncs an op would wait for the gate
  CallerStream s;
  EXPECT_EQ(cuda::current_stream(0), static_cast<void*>(s.get()));
  Tensor a = test::random_tensor({64, 32}, DType::F32, -1, 1, 54);
  Tensor b = test::random_tensor({32, 16}, DType::F32, -1, 1, 55);
  Tensor x = test::random_tensor({16, 24}, DType::F64, -1, 1, 56);
  Tensor src_a = a.to(kGpu), gb = b.to(kGpu), src_x = x.to(kGpu);
  Tensor ga = zeros({64, 32}, {DType::F32, kGpu}), gx = zeros({16, 24}, {DType::F64, kGpu});
  Tensor acc = zeros({64, 32}, {DType::F32, kGpu});
  // Warm up: the cuBLAS handle and the cuFFT plan allocate when first made.
  Tensor warm_blas = matmul(src_a, gb), warm_fft = rfftn(src_x);
  cuda::synchronize(0);
  {
    Gate gate(s.get());
    const auto fill_behind_the_gate = [&](Tensor& dst, const Tensor& src) {
      EXPECT_EQ(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), static_cast<size_t>(src.nbytes()),
                                cudaMemcpyDeviceToDevice, s.get()),
                cudaSuccess);
    };
    fill_behind_the_gate(ga, src_a);
    fill_behind_the_gate(gx, src_x);
    add_(acc, ga);
    Tensor y = matmul(mul(ga, 2.0), gb);
    Tensor fx = rfftn(mul(gx, -1.5));
    EXPECT_EQ(cudaStreamQuery(s.get()), cudaErrorNotReady) << "the gate did not hold";
    gate.open();
    expect_near(acc, a, 0, "in-place add of an input made behind the gate");
    expect_near(y, matmul(mul(a, 2.0), b), 1e-4, "matmul of an input made behind the gate");
    Tensor fx_cpu = rfftn(mul(x, -1.5));
    expect_near(fx.real(), fx_cpu.real(), 1e-11, "rfftn (real part)");
    expect_near(fx.imag(), fx_cpu.imag(), 1e-11, "rfftn (imaginary part)");
  }
}

// The current stream is per thread (torch's rule): another thread starts on
// the default stream, and its ops and host reads run there, not behind a gate
// on this thread's stream; the stream it sets is its own.
TEST(CudaRuntime, TheCurrentStreamIsPerThread) {
  FK_SKIP_WITHOUT_GPU();
  KnobOverride lazy(kLazySync, "1");  // with eager syncs an op would wait for the gate
  CallerStream s;
  Tensor x = test::random_tensor({4, 32}, DType::F32, -1, 1, 57);
  Tensor gx = x.to(kGpu);
  cuda::synchronize(0);
  Gate gate(s.get());
  void* seen = &gate;
  std::vector<float> sums;
  void* own = nullptr;
  std::thread([&] {
    seen = cuda::current_stream(0);
    sums = sum(add(gx, gx), {1}).to_vector<float>();  // waits for its own stream only
    cudaStream_t t = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking), cudaSuccess);
    cuda::set_current_stream(0, t);
    own = cuda::current_stream(0);
    cuda::set_current_stream(0, nullptr);
    cudaStreamDestroy(t);
  }).join();
  EXPECT_EQ(seen, nullptr) << "a new thread did not start on the default stream";
  EXPECT_EQ(cudaStreamQuery(s.get()), cudaErrorNotReady)
      << "the other thread's read waited for this thread's stream";
  EXPECT_NE(own, nullptr);
  EXPECT_EQ(cuda::current_stream(0), static_cast<void*>(s.get()))
      << "the other thread's stream replaced this thread's";
  gate.open();
  cuda_parity::expect_close(from_vector(sums, Dims{4}), sum(add(x, x), {1}),
                            cuda_parity::near(1e-5), "the other thread's sums");
}

// A host framework's capture on the stream it lent (torch.cuda.graph), which
// fk did not begin: under the default policy fk's ops are recorded rather
// than followed by a wait (which CUDA refuses on a capturing stream), and
// the framework's replay computes them.
TEST(CudaRuntime, OpsInACaptureFkDidNotBeginAreRecorded) {
  FK_SKIP_WITHOUT_GPU();
  KnobOverride eager(kLazySync, "0");
  CallerStream s;
  Tensor x = from_vector(std::vector<float>{1.f, -2.f, 3.f}, Dims{3}).to(kGpu);
  Tensor y = zeros({3}, {DType::F32, kGpu});
  cuda::synchronize(0);
  ASSERT_EQ(cudaStreamBeginCapture(s.get(), cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const std::string error = test::error_of([&] { y.copy_(mul(add(x, x), 0.5)); });
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s.get(), &graph), cudaSuccess);
  EXPECT_EQ(error, "");
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0.f, 0.f, 0.f}));  // not run yet
  ASSERT_EQ(cudaGraphLaunch(exec, s.get()), cudaSuccess);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1.f, -2.f, 3.f}));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

// memory_stats counts the bytes tensors request: a known allocation moves
// `allocated` and `peak` by exactly its size, and reset_peak_memory lowers the
// peak to what is live.
TEST(CudaRuntime, MemoryStatsCountAKnownAllocation) {
  FK_SKIP_WITHOUT_GPU();
  const int64_t n = int64_t{3} << 20;  // f32 elements: 12 MiB
  const int64_t nbytes = 4 * n;
  const MemoryStats before = memory_stats(kGpu);
  {
    Tensor t = empty({n}, {DType::F32, kGpu});
    const MemoryStats live = memory_stats(kGpu);
    EXPECT_EQ(live.allocated, before.allocated + nbytes);
    EXPECT_EQ(live.num_allocs, before.num_allocs + 1);
    EXPECT_GE(live.peak, before.allocated + nbytes);
    EXPECT_GE(live.reserved, live.allocated);
  }
  const MemoryStats after = memory_stats(kGpu);
  EXPECT_EQ(after.allocated, before.allocated);
  EXPECT_GE(after.peak, before.allocated + nbytes);
  reset_peak_memory(kGpu);
  EXPECT_EQ(memory_stats(kGpu).peak, after.allocated);
}

// A freed block stays reserved by the pool (its release threshold is raised,
// so even a synchronization keeps it); empty_cache returns it to the driver.
// A free cannot throw (tensors free from destructors): a cudaFreeAsync that
// fails (here of an address the pool never handed out) is counted with its
// code, and its error is cleared, not left for the next kernel's launch check.
TEST(CudaRuntime, AFailedFreeIsCountedAndNotLeftForTheNextLaunchCheck) {
  FK_SKIP_WITHOUT_GPU();
  cuda::synchronize(0);
  const int64_t failed = cuda::pool_stats(0).failed_frees;
  static int64_t not_device_memory = 0;
  cuda::pool_deallocate(0, &not_device_memory, 0);
  EXPECT_EQ(cuda::pool_stats(0).failed_frees, failed + 1);
  EXPECT_NE(cuda::pool_stats(0).last_free_error, 0);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  Tensor x = full(Dims{4}, 1.5, {DType::F32, kGpu});
  EXPECT_EQ(add(x, 1.0).to_vector<float>(), std::vector<float>(4, 2.5f));
}

TEST(CudaRuntime, EmptyCacheTrimsThePool) {
  FK_SKIP_WITHOUT_GPU();
  const int64_t nbytes = int64_t{256} << 20;
  { Tensor t = empty({nbytes / 4}, {DType::F32, kGpu}); }
  cuda::synchronize(0);  // the free is stream-ordered
  const int64_t cached = memory_stats(kGpu).reserved;
  EXPECT_GE(cached, nbytes);
  empty_cache(kGpu);
  const int64_t trimmed = memory_stats(kGpu).reserved;
  EXPECT_LE(trimmed + nbytes, cached) << "reserved " << cached << " -> " << trimmed;
}

}  // namespace
}  // namespace fk
#endif  // FK_WITH_CUDA

// Without a usable device the reason names what the runtime said, with the
// driver's and the runtime's CUDA versions (a too-old driver is the usual
// cause on a GPU machine); with one it is empty. A CPU-only build says so.
TEST(CudaRuntime, NoDeviceReasonSaysWhy) {
  const std::string reason = fk::cuda::no_device_reason();
  if (!fk::cuda::built_with_cuda()) {
    EXPECT_EQ(reason, "fieldkit was built without the CUDA backend");
  } else if (fk::cuda::device_count() > 0) {
    EXPECT_EQ(reason, "");
  } else {
    EXPECT_EQ(reason.rfind("cudaGetDeviceCount", 0), 0u) << reason;
    EXPECT_NE(reason.find("; driver supports CUDA "), std::string::npos) << reason;
    EXPECT_NE(reason.find(", runtime is 13."), std::string::npos) << reason;
  }
}
