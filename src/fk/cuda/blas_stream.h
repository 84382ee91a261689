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

// `bound`: the handle exists and was bound to `bound_stream`; `capture_running`:
// a capture runs on the device or on `stream` (compared, never dereferenced).
BlasStreamStep blas_stream_step(bool bound, const void* bound_stream, const void* stream,
                                bool capture_running);

}  // namespace fk::cuda
