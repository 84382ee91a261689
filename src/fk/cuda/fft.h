#pragma once
// FFTs on CUDA devices through cuFFT, with a plan cache. Plain C++ signatures
// (device pointers, a cudaStream_t as void*); runtime_stub.cpp throws in
// CPU-only builds.
//
// Transforms are unnormalized in both directions (as cuFFT and FFTW): the
// caller scales, e.g. with launch_scale. Layouts follow cufftPlanMany's
// "advanced data layout": element (b, x) of batch b at position x of the
// embedded array sits at b * dist + (x . embed strides) * stride.
// Plans are cached per (device, kind, precision, rank, n, batch, layout) and
// reused; the cache holds at most kFftPlanCacheCapacity plans (least recently
// used evicted), except that a plan executed inside a stream capture is
// pinned (a CUDA graph holds its handle and work area) and not evicted while
// any capture or graph lives (fft_unpin_plans);
// fft_plan_cache_clear destroys pinned plans too, so it refuses (fk::Error)
// while a graph holding library work lives. A plan owns its work area
// (allocated by cuFFT when created), so a transform whose plan does not exist
// yet is refused inside a capture (fk::Error): run it eagerly first.
// Calls are serialized by a mutex. A plan (and its work area) is bound to one
// stream at a time: a call on another stream than the plan's last first waits
// for the device, and is refused inside a capture (fk::Error), as cuBLAS's
// handle is (blas_stream.h): run the transform eagerly on the captured stream
// before capturing it.
// Determinism: cuFFT is bitwise reproducible for a fixed plan, GPU model and
// library version.
// Caution: a c2r transform overwrites its input (cuFFT may use it as scratch);
// pass a copy when the input must survive.
#include <cstdint>
#include <functional>

namespace fk::cuda {

enum FftKind : int { kFftC2C = 0, kFftR2C = 1, kFftC2R = 2 };
inline constexpr int kFftPlanCacheCapacity = 64;

struct FftLayout {
  int rank = 1;       // 1..3 transformed dims
  int64_t n[3] = {};  // logical sizes; for r2c / c2r the real signal's sizes
  int64_t batch = 1;
  // Storage sizes of the embedding arrays; 0 = packed (n, with the last dim
  // n/2 + 1 on the complex side of r2c / c2r).
  int64_t in_embed[3] = {}, out_embed[3] = {};
  int64_t in_stride = 1, out_stride = 1;
  int64_t in_dist = 0, out_dist = 0;  // 0 = packed: the product of the embed sizes
};

// dtype: the precision, f32/c64 (single) or f64/c128 (double). inverse selects
// the direction of c2c; r2c is always forward and c2r always inverse.
// in and out may be equal (in-place) when the layouts allow it (cuFFT's rules).
void fft_execute(int device, int kind, int dtype, bool inverse, const FftLayout& layout, void* in,
                 void* out, void* stream);

// Before a CUDA graph holding transforms is launched on `stream` (graph.h's
// launch_graph): every plan of the device a capture ran (the pinned ones,
// which include the graph's) follows the replay to its stream, after a wait
// for the device where one was bound to another stream, so that the replay
// and eager transforms on other streams never share a work area at once;
// then runs `launch` with the cache's lock still held (as blas_follow_replay).
// fk::Error when that wait would break a capture running on the device.
void fft_follow_replay(int device, void* stream, const std::function<void()>& launch);

// Unpins the plans fk's captures pinned once none runs and no graph lives
// (graph.h's live_graphs() is 0, checked again under the cache's lock):
// nothing of fk's holds a handle then, so they are evictable again and no
// replay's to follow. Plans run in a capture fk did not begin (a host
// framework's, on a lent stream) stay pinned. graph.cpp calls it when the
// last capture or graph goes.
void fft_unpin_plans();

int64_t fft_plan_cache_size();
// Cached plans a capture ran and that are kept while captures or graphs live.
int64_t fft_pinned_plans();
void fft_plan_cache_clear();

}  // namespace fk::cuda
