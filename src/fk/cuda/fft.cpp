// cuFFT with a plan cache (see fft.h). Host code only: compiled by the host compiler.
#include "fk/cuda/fft.h"

#include <cuda_runtime.h>
#include <cufft.h>

#include <array>
#include <list>
#include <map>
#include <mutex>
#include <string>

#include "fk/cuda/blas_stream.h"
#include "fk/cuda/capture_marks.h"
#include "fk/cuda/device_guard.h"
#include "fk/cuda/graph.h"
#include "fk/cuda/kernels.h"
#include "fk/error.h"

namespace fk::cuda {
namespace {

using detail::check_cuda;
using detail::DeviceGuard;

void check_fft(cufftResult r, const char* what) {
  if (r != CUFFT_SUCCESS) {
    throw Error(what, "CUFFT_SUCCESS", "cufftResult " + fk::to_text(static_cast<int>(r)));
  }
}

// A fully resolved layout (packed defaults filled in) plus what else selects a plan.
struct PlanKey {
  std::array<int64_t, 20> v{};
  bool operator<(const PlanKey& o) const { return v < o.v; }
};

struct Plan {
  cufftHandle handle = 0;
  std::list<PlanKey>::iterator lru;
  // Executed inside a stream capture: a graph holds its handle and work area,
  // so eviction must not destroy it (only fft_plan_cache_clear does). An fk
  // capture's pin lasts while any fk capture or graph lives (fft_unpin_plans);
  // another's (a host framework's graph on a lent stream, which fk does not
  // see end) lasts for good.
  bool pinned = false;
  bool pinned_for_good = false;
  // The stream of its last execution (once `bound`): its work area may still
  // be in use there.
  StreamKey stream;
  bool bound = false;
};

std::mutex g_mu;
std::map<PlanKey, Plan> g_plans;
std::list<PlanKey> g_lru;  // front = most recently used

void destroy(Plan& p) {
  cufftDestroy(p.handle);
}

cufftType plan_type(int kind, bool dbl) {
  switch (kind) {
    case kFftC2C:
      return dbl ? CUFFT_Z2Z : CUFFT_C2C;
    case kFftR2C:
      return dbl ? CUFFT_D2Z : CUFFT_R2C;
    default:
      return dbl ? CUFFT_Z2D : CUFFT_C2R;
  }
}

Plan& plan_for(int device, int kind, bool dbl, FftLayout l, bool capture_running) {
  const char* where = "cuda::fft_execute";
  FK_CHECK(l.rank >= 1 && l.rank <= 3, where, "rank 1..3", fk::to_text(l.rank));
  FK_CHECK(l.batch >= 1, where, "batch >= 1", fk::to_text(l.batch));
  for (int i = 0; i < l.rank; ++i) {
    FK_CHECK(l.n[i] >= 1, where, "sizes >= 1", fk::to_text(l.n[i]));
  }
  // Packed defaults: the complex side of r2c / c2r holds n/2 + 1 in the last dim.
  const int last = l.rank - 1;
  for (int i = 0; i < l.rank; ++i) {
    int64_t real_n = l.n[i], cplx_n = i == last && kind != kFftC2C ? l.n[i] / 2 + 1 : l.n[i];
    if (l.in_embed[i] == 0) l.in_embed[i] = kind == kFftC2R ? cplx_n : real_n;
    if (l.out_embed[i] == 0) l.out_embed[i] = kind == kFftR2C ? cplx_n : real_n;
  }
  int64_t in_size = 1, out_size = 1;
  for (int i = 0; i < l.rank; ++i) {
    in_size *= l.in_embed[i];
    out_size *= l.out_embed[i];
  }
  if (l.in_dist == 0) l.in_dist = in_size;
  if (l.out_dist == 0) l.out_dist = out_size;

  PlanKey key;
  int j = 0;
  key.v[j++] = device;
  key.v[j++] = kind;
  key.v[j++] = dbl;
  key.v[j++] = l.rank;
  key.v[j++] = l.batch;
  for (int i = 0; i < 3; ++i) key.v[j++] = i < l.rank ? l.n[i] : 0;
  for (int i = 0; i < 3; ++i) key.v[j++] = i < l.rank ? l.in_embed[i] : 0;
  for (int i = 0; i < 3; ++i) key.v[j++] = i < l.rank ? l.out_embed[i] : 0;
  key.v[j++] = l.in_stride;
  key.v[j++] = l.out_stride;
  key.v[j++] = l.in_dist;
  key.v[j++] = l.out_dist;

  auto it = g_plans.find(key);
  if (it != g_plans.end()) {
    g_lru.splice(g_lru.begin(), g_lru, it->second.lru);
    return it->second;  // pinned by the caller once it runs inside a capture
  }
  // A plan first met inside a capture is refused by name before anything is
  // evicted or made: cufftMakePlanMany64 allocates the work area (cudaMalloc)
  // and an eviction's cufftDestroy frees one (cudaFree), both refused in a
  // capture (they would invalidate it, and the failed free left unchecked
  // would leak the plan's memory and blame a later call).
  if (capture_running) {
    throw Error("cuda::fft_execute inside a CUDA graph capture",
                "a cuFFT plan made before the capture (the same transform run eagerly on the "
                "device first)",
                "a new plan (rank " + fk::to_text(l.rank) + ", batch " + fk::to_text(l.batch) +
                    ") on cuda:" + fk::to_text(device) + " while a capture runs");
  }
  if (static_cast<int>(g_plans.size()) >= kFftPlanCacheCapacity) {
    // The least recently used plan no captured graph holds; when every plan
    // is pinned the cache grows past its capacity instead.
    for (auto k = g_lru.rbegin(); k != g_lru.rend(); ++k) {
      auto victim = g_plans.find(*k);
      if (victim->second.pinned) continue;
      destroy(victim->second);
      g_lru.erase(victim->second.lru);
      g_plans.erase(victim);
      break;
    }
  }
  long long n[3], ie[3], oe[3];
  for (int i = 0; i < l.rank; ++i) {
    n[i] = l.n[i];
    ie[i] = l.in_embed[i];
    oe[i] = l.out_embed[i];
  }
  cufftHandle h = 0;
  check_fft(cufftCreate(&h), "cufftCreate");
  size_t work = 0;
  cufftResult r = cufftMakePlanMany64(h, l.rank, n, ie, l.in_stride, l.in_dist, oe, l.out_stride,
                                      l.out_dist, plan_type(kind, dbl), l.batch, &work);
  if (r != CUFFT_SUCCESS) {
    cufftDestroy(h);
    check_fft(r, "cufftMakePlanMany64");
  }
  g_lru.push_front(key);
  Plan& plan = g_plans[key];  // made outside a capture: not pinned, not bound
  plan.handle = h;
  plan.lru = g_lru.begin();
  return plan;
}

// Binds a cached plan to `stream`. A plan's work area is shared by all its
// executions, so one queued on another stream must finish before this one
// starts: the same policy as cuBLAS's handle and workspace (blas_stream.h),
// a wait for the device when the plan moves, refused inside a capture (the
// wait would invalidate it; run the transform eagerly on the captured stream
// first, as the warm-up step before a capture does). `where` names the call
// a refusal blames.
void bind(Plan& p, int device, cudaStream_t stream, bool capture_running, const char* where) {
  const StreamKey key = stream_key(stream, capture_running);
  switch (blas_stream_step(p.bound, p.stream, key, capture_running)) {
    case BlasStreamStep::kKeep:
      return;
    case BlasStreamStep::kRefuse:
      throw Error(std::string(where) + " inside a CUDA graph capture",
                  "a cuFFT plan last run on the captured stream (the same transform run "
                  "eagerly on it first)",
                  "a plan last run on another stream (moving it waits for the device) on cuda:" +
                      fk::to_text(device) + " while a capture runs");
    case BlasStreamStep::kSyncThenBind:
      check_cuda(cudaDeviceSynchronize(),
                 (std::string(where) + " (moving a cuFFT plan to another stream)").c_str());
      break;
    case BlasStreamStep::kBind:  // a new plan: nothing of it is queued anywhere
      break;
  }
  check_fft(cufftSetStream(p.handle, stream), "cufftSetStream");
  p.stream = key;
  p.bound = true;
}

}  // namespace

void fft_execute(int device, int kind, int dtype, bool inverse, const FftLayout& layout, void* in,
                 void* out, void* stream) {
  const char* where = "cuda::fft_execute";
  FK_CHECK(kind >= kFftC2C && kind <= kFftC2R, where, "kind c2c, r2c or c2r (0..2)",
           fk::to_text(kind));
  FK_CHECK(dtype == kF32 || dtype == kF64 || dtype == kC64 || dtype == kC128, where,
           "precision f32/c64 or f64/c128", "dtype code " + fk::to_text(dtype));
  FK_CHECK(kind == kFftC2C || inverse == (kind == kFftC2R), where, "r2c forward and c2r inverse",
           inverse ? "r2c inverse" : "c2r forward");
  const bool dbl = dtype == kF64 || dtype == kC128;
  DeviceGuard guard(device);
  std::lock_guard<std::mutex> lock(g_mu);
  // A plan is created outside any capture (its work area is a cudaMalloc,
  // refused inside one): the warm-up step before a capture creates it, and a
  // miss inside one throws (plan_for).
  const bool capture = capture_running_on(device, stream);
  const auto s = static_cast<cudaStream_t>(stream);
  Plan& plan = plan_for(device, kind, dbl, layout, capture);
  bind(plan, device, s, capture, where);
  if (capture) {
    plan.pinned = true;
    if (capture_marks().captured_stream(device) != stream) plan.pinned_for_good = true;
    capture_marks().note_library_work(device, stream);
  }
  const cufftHandle h = plan.handle;
  const int dir = inverse ? CUFFT_INVERSE : CUFFT_FORWARD;
  cufftResult r;
  switch (kind) {
    case kFftC2C:
      r = dbl ? cufftExecZ2Z(h, static_cast<cufftDoubleComplex*>(in),
                             static_cast<cufftDoubleComplex*>(out), dir)
              : cufftExecC2C(h, static_cast<cufftComplex*>(in), static_cast<cufftComplex*>(out),
                             dir);
      break;
    case kFftR2C:
      r = dbl ? cufftExecD2Z(h, static_cast<cufftDoubleReal*>(in),
                             static_cast<cufftDoubleComplex*>(out))
              : cufftExecR2C(h, static_cast<cufftReal*>(in), static_cast<cufftComplex*>(out));
      break;
    default:
      r = dbl ? cufftExecZ2D(h, static_cast<cufftDoubleComplex*>(in),
                             static_cast<cufftDoubleReal*>(out))
              : cufftExecC2R(h, static_cast<cufftComplex*>(in), static_cast<cufftReal*>(out));
  }
  check_fft(r, "cufftExec");
}

void fft_follow_replay(int device, void* stream, const std::function<void()>& launch) {
  DeviceGuard guard(device);
  std::lock_guard<std::mutex> lock(g_mu);
  const auto s = static_cast<cudaStream_t>(stream);
  const bool capture = capture_running_on(device, stream);
  // Plans are keyed by device first (plan_for). Each move waits for the
  // device; after the first that wait finds it idle.
  for (auto& [key, plan] : g_plans)
    if (key.v[0] == device && plan.pinned)
      bind(plan, device, s, capture, "CUDA graph launch (its FFTs)");
  launch();
}

void fft_unpin_plans() {
  std::lock_guard<std::mutex> lock(g_mu);
  // A capture begun since the caller's count may have pinned a plan already
  // (it counts itself before its first transform, which takes this lock).
  if (live_graphs() != 0) return;
  for (auto& [key, plan] : g_plans) plan.pinned = plan.pinned_for_good;
}

int64_t fft_plan_cache_size() {
  std::lock_guard<std::mutex> lock(g_mu);
  return static_cast<int64_t>(g_plans.size());
}

int64_t fft_pinned_plans() {
  std::lock_guard<std::mutex> lock(g_mu);
  int64_t n = 0;
  for (const auto& [key, plan] : g_plans) n += plan.pinned;
  return n;
}

void fft_plan_cache_clear() {
  const int64_t graphs = live_library_graphs();
  FK_CHECK(graphs == 0, "cuda::fft_plan_cache_clear",
           "no live CUDA graph holding GEMMs or FFTs (its replays use the plans' work areas)",
           fk::to_text(graphs) + " such graph(s)");
  std::lock_guard<std::mutex> lock(g_mu);
  for (auto& [key, plan] : g_plans) destroy(plan);
  g_plans.clear();
  g_lru.clear();
}

}  // namespace fk::cuda
