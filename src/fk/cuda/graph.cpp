// Stream capture, pinned buffers and non-synchronizing copies (see graph.h),
// over the CUDA runtime. Host code only.
#include "fk/cuda/graph.h"

#include <cuda_runtime.h>

#include <atomic>
#include <string>

#include "fk/cuda/blas.h"
#include "fk/cuda/capture_marks.h"
#include "fk/cuda/device_guard.h"
#include "fk/cuda/fft.h"
#include "fk/cuda/pool_graphs.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"

namespace fk::cuda {
namespace {

using detail::check_cuda;
using detail::DeviceGuard;

cudaStream_t stream_of(int device) {
  return static_cast<cudaStream_t>(current_stream(device));
}

// live_graphs(): +1 when a capture begins, -1 when it ends without a graph
// (failed, aborted) or when its instantiated graph is destroyed.
std::atomic<int64_t> g_live_graphs{0};
std::atomic<int64_t> g_live_library_graphs{0};

// One capture or graph fewer. With none left no graph holds a cuFFT plan,
// so the plans captures pinned become evictable again (a curriculum that
// captures each stage's transforms would otherwise keep every stage's plans
// and work areas).
void graph_gone() {
  if (--g_live_graphs == 0) fft_unpin_plans();
}

}  // namespace

void* create_stream(int device) {
  DeviceGuard g(device);
  cudaStream_t s = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  return s;
}

void destroy_stream(int device, void* stream) {
  if (!stream) return;
  DeviceGuard g(device);
  cudaStreamDestroy(static_cast<cudaStream_t>(stream));
}

void* pinned_allocate(size_t nbytes) {
  void* p = nullptr;
  check_cuda(cudaMallocHost(&p, nbytes == 0 ? 1 : nbytes), "cudaMallocHost");
  return p;
}

void pinned_free(void* p) {
  if (p) cudaFreeHost(p);
}

void copy_to_pinned_async(void* pinned_dst, const void* src, int src_device, size_t nbytes) {
  if (nbytes == 0) return;
  DeviceGuard g(src_device);
  check_cuda(
      cudaMemcpyAsync(pinned_dst, src, nbytes, cudaMemcpyDeviceToHost, stream_of(src_device)),
      "cudaMemcpyAsync (to pinned host memory)");
}

void copy_from_pinned_async(void* dst, int dst_device, const void* pinned_src, size_t nbytes) {
  if (nbytes == 0) return;
  DeviceGuard g(dst_device);
  check_cuda(
      cudaMemcpyAsync(dst, pinned_src, nbytes, cudaMemcpyHostToDevice, stream_of(dst_device)),
      "cudaMemcpyAsync (from pinned host memory)");
}

bool capturing(int device) {
  // Asked after every op: the current stream is looked up only while a
  // capture runs (and never for a device index out of range).
  void* const captured = capture_marks().captured_stream(device);
  return captured != nullptr && captured == current_stream(device);
}

void begin_capture(int device) {
  // Marked first: a second begin_capture, or the default stream, is refused
  // before CUDA is asked.
  cudaStream_t s = stream_of(device);
  capture_marks().begin(device, s);
  DeviceGuard g(device);
  const cudaError_t e = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) {
    capture_marks().end(device);
    check_cuda(e, "cudaStreamBeginCapture");
  }
  pool_capture_began(device);
  ++g_live_graphs;
}

GraphExec end_capture(int device) {
  // The stream begun, even if the current stream changed since.
  const bool library_work = capture_marks().library_work(device);
  cudaStream_t s = static_cast<cudaStream_t>(capture_marks().end(device));
  DeviceGuard g(device);
  cudaGraph_t graph = nullptr;
  const cudaError_t e = cudaStreamEndCapture(s, &graph);
  if (e != cudaSuccess) {
    if (graph) cudaGraphDestroy(graph);
    pool_capture_ended(device, false);  // its allocations never materialise
    graph_gone();
    check_cuda(e, "cudaStreamEndCapture");
  }
  GraphExec out;
  out.device = device;
  out.library_work = library_work;
  size_t nodes = 0;
  cudaGraphGetNodes(graph, nullptr, &nodes);
  out.nodes = static_cast<int64_t>(nodes);
  cudaGraphExec_t exec = nullptr;
  const cudaError_t ei = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  out.capture = pool_capture_ended(device, ei == cudaSuccess);
  if (ei != cudaSuccess) graph_gone();
  check_cuda(ei, "cudaGraphInstantiate");
  out.exec = exec;
  if (library_work) ++g_live_library_graphs;
  return out;
}

void abort_capture(int device) {
  // Only the thread that began a capture can end it (thread-local mode).
  if (!capture_marks().begun_on_this_thread(device)) return;
  DeviceGuard g(device);
  cudaGraph_t graph = nullptr;
  cudaStreamEndCapture(static_cast<cudaStream_t>(capture_marks().captured_stream(device)), &graph);
  if (graph) cudaGraphDestroy(graph);
  capture_marks().end(device);
  cudaGetLastError();                 // the invalidated capture's error is not the next call's
  pool_capture_ended(device, false);  // its allocations never materialise
  graph_gone();
}

void launch_graph(GraphExec& g) {
  FK_CHECK(g.exec != nullptr, "CUDA graph launch", "an instantiated graph", "none");
  pool_graph_check_launch(g.device, g.capture);
  DeviceGuard guard(g.device);
  const cudaStream_t stream = stream_of(g.device);
  auto launch = [&] {
    check_cuda(cudaGraphLaunch(static_cast<cudaGraphExec_t>(g.exec), stream), "cudaGraphLaunch");
  };
  if (g.library_work) {
    // The moves and the launch under both libraries' locks (cuBLAS's first):
    // another thread's GEMM or FFT on its own stream comes before the move
    // or waits for the replay, never between the two.
    blas_follow_replay(g.device, stream, [&] { fft_follow_replay(g.device, stream, launch); });
  } else {
    launch();
  }
  pool_graph_launched(g.device, g.capture);
  g.launched_on = stream;
}

int64_t kept_blocks(const GraphExec& g) {
  return g.exec ? pool_graph_kept(g.device, g.capture) : 0;
}

void destroy_graph(GraphExec& g) {
  if (!g.exec) return;
  DeviceGuard guard(g.device);
  // A replay still in flight finishes first (its memory nodes belong to it),
  // on the stream it was launched on, whichever thread destroys the graph.
  if (g.launched_on != nullptr) cudaStreamSynchronize(static_cast<cudaStream_t>(g.launched_on));
  cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(g.exec));
  pool_graph_destroyed(g.device, g.capture);
  if (g.library_work) --g_live_library_graphs;
  g = GraphExec{};
  graph_gone();
}

int64_t live_graphs() {
  return g_live_graphs.load();
}

int64_t live_library_graphs() {
  return g_live_library_graphs.load();
}

}  // namespace fk::cuda
