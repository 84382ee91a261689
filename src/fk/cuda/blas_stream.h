#pragma once
// When cuBLAS's handle moves to the stream of a GEMM (cuda/blas.cpp), as a
// pure function: no CUDA header, so that CPU-only builds and host tests use
// it too.
//
// fk keeps one cuBLAS handle and one workspace per device, bound to one
// stream at a time. The GEMMs queued on the previous stream use that
// workspace, so a move waits for the device first (cudaDeviceSynchronize:
// it also covers graph replays on the previous stream, and needs no handle to
// a stream that may have been destroyed since). Nothing may wait for the
// device while a CUDA graph capture runs, and the first call creates the
// handle and allocates its workspace, which a capture cannot hold either: so
// inside a capture the handle must already be bound to the captured stream
// (an eager step on that stream first, as nefi's StepGraph runs), and any
// other call is refused with an fk::Error rather than left to invalidate the
// capture. A cuFFT plan and its work area follow the same decision
// (cuda/fft.cpp), the plan's creation standing for the handle's.
namespace fk::cuda {

enum class BlasStreamStep {
  kKeep,          // bound to this stream already: nothing to do
  kBind,          // the first call: create the handle and bind it
  kSyncThenBind,  // another stream's GEMMs may still use the workspace
  kRefuse,        // a first call or a move while a capture runs
};

// Which stream a call runs on. The address alone is not enough: a destroyed
// stream's address can come back for a new stream, whose work is not
// ordered after the old one's. CUDA's stream id is unique for the life of
// the process, but may not be asked of a stream under capture, so inside a
// capture it is left unknown and the address decides (the captured stream is
// alive, and a handle bound to it was bound by an eager call on it).
struct StreamKey {
  const void* address = nullptr;
  unsigned long long id = 0;
  bool id_known = false;
};

// The same stream: equal addresses, and equal ids where both are known.
bool same_stream(const StreamKey& a, const StreamKey& b);

// `bound`: the handle exists and was bound to `bound_stream`; `capture_running`:
// a capture runs on the device or on `stream` (compared, never dereferenced).
BlasStreamStep blas_stream_step(bool bound, const StreamKey& bound_stream, const StreamKey& stream,
                                bool capture_running);

// CUDA builds only (cuda/stream_key.cpp); fk::Error naming the CUDA error if
// a query fails. `stream` is a cudaStream_t passed as void* (nullptr: the
// legacy default stream).
//
// Whether a capture runs that a move (a device wait) or a first call (an
// allocation) would break: fk's own on the device, or another framework's on
// `stream`. CUDA's default streams are not asked (they are never captured,
// and the query fails on the legacy stream while a blocking stream captures).
bool capture_running_on(int device, void* stream);
// The key of `stream`: its id is asked of CUDA unless `capture_running` or
// the handle is one of CUDA's default streams, which live as long as the
// process (their address is their identity).
StreamKey stream_key(void* stream, bool capture_running);

}  // namespace fk::cuda
