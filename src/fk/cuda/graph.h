#pragma once
// Stream capture into CUDA graphs, pinned host buffers and stream-ordered
// copies that do not synchronize: what a caller needs to record a whole
// training step once and replay it (nefi's StepGraph). Plain C++ over opaque
// pointers, like runtime.h; runtime_stub.cpp refuses all of it in CPU-only
// builds.
//
// While a device's current stream is being captured, fk's sync policy changes:
// after_op does not synchronize, and anything that must wait for the device or
// touch pageable host memory (synchronize, a copy to or from the host) throws
// fk::Error instead of silently breaking the capture. Memory fk allocates
// inside the capture becomes the graph's own (stream-ordered pool); a step
// that frees everything it allocated replays with no allocation at all.
#include <cstddef>
#include <cstdint>

namespace fk::cuda {

// A non-blocking stream on `device` (capture needs one: the legacy default
// stream cannot be captured), and its destruction.
void* create_stream(int device);
void destroy_stream(int device, void* stream);

// Page-locked host memory: the only host memory a captured copy may use
// (its address is baked into the graph and read or written at every replay).
void* pinned_allocate(size_t nbytes);
void pinned_free(void* p);

// cudaMemcpyAsync on the device's current stream between device memory and
// pinned host memory, without any synchronization (capturable).
void copy_to_pinned_async(void* pinned_dst, const void* src, int src_device, size_t nbytes);
void copy_from_pinned_async(void* dst, int dst_device, const void* pinned_src, size_t nbytes);

// True while a capture runs on this thread's current stream of the device,
// begun by any thread: no thread may synchronize that stream or copy through
// it to pageable host memory (capture_marks.h tells which thread began it).
// A thread whose current stream is another one is not capturing.
bool capturing(int device);

// Starts capturing the device's current stream (thread-local mode) and marks
// it begun by this thread; throws when that stream is the default stream or a
// capture is already running on the device.
void begin_capture(int device);

// An instantiated graph ready to launch.
struct GraphExec {
  void* exec = nullptr;
  int device = -1;
  int64_t nodes = 0;    // nodes of the captured graph (kernels, copies, memory)
  int64_t capture = 0;  // the pool's id of its capture (capture_frees.h)
  // It holds cuBLAS GEMMs or cuFFT transforms: their workspace and work areas
  // are shared with eager calls, which launch_graph orders it against.
  bool library_work = false;
  // The stream of its last launch (launches of one graph run in order), which
  // destroy_graph waits for: current streams are per thread.
  void* launched_on = nullptr;
};

// Ends the capture and instantiates it; throws fk::Error naming why when the
// capture was invalidated (an unsupported call inside it) or instantiation
// failed. The stream is no longer capturing either way. Only the thread that
// began the capture may end it (thread-local mode): elsewhere it throws and
// the capture runs on.
GraphExec end_capture(int device);

// Ends a capture that this thread began and that failed part-way (after an
// exception inside it), discarding what was recorded and clearing the error
// it left; does nothing where this thread began none. Never throws.
void abort_capture(int device);

// Enqueues one replay on the device's current stream. A graph holding
// library work moves cuBLAS and the captured cuFFT plans to that stream
// first, waiting for the device when they were bound to another (blas.h's
// blas_follow_replay): a replay never shares a workspace with work queued on
// another stream, eager or another graph's replay. The first launch is
// where the graph's allocations first exist: tensors of them dropped before
// it are freed right after it, in stream order (capture_frees.h). A graph
// whose capture kept blocks (allocated in it and not freed in it) launches
// once: its relaunch throws fk::Error naming the blocks (capture_frees.h).
void launch_graph(GraphExec& g);
// Blocks the graph's capture kept (allocated in it, no free node in it): a
// graph keeping any launches once (0 for no graph, or in a CPU-only build).
int64_t kept_blocks(const GraphExec& g);
// Destroys the graph, after waiting for its last launch's stream (that
// stream must still exist). Blocks it allocated that a launch made live stay live
// until their tensors are dropped (CUDA does not free them); those of a graph
// that never ran were never memory, and their tensors' frees are dropped.
void destroy_graph(GraphExec& g);

// Captures begun and not ended, plus instantiated graphs not yet destroyed,
// on any device: while non-zero some graph may hold raw pointers into
// tensors (a cache of device constants must then keep what it made).
int64_t live_graphs();
// Instantiated graphs not yet destroyed that hold library work
// (GraphExec::library_work): while non-zero, blas_release and
// fft_plan_cache_clear refuse (a replay would use what they free).
int64_t live_library_graphs();

}  // namespace fk::cuda
