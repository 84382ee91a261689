// A ParametricField's shape kernels (parametric_kernels.h): forward one
// thread per (point, channel); the gradient one thread per (sub-chunk of
// points, shape) and per (sub-chunk, channel), then one per entry summing
// the sub-chunks within each chunk and the chunks in order. The arithmetic
// is parametric_cells.h's; built with --fmad=false (CMakeLists.txt) so that
// every product and sum rounds as the CPU op's loops do.
#include <cstdint>

#include "fk/cuda/common.cuh"
#include "nefi/cuda/parametric_cells.h"
#include "nefi/cuda/parametric_kernels.h"

namespace nefi::cuda {
namespace {

using fk::cuda::detail::as_stream;
using fk::cuda::detail::blocks_for;
using fk::cuda::detail::check_launch;
using fk::cuda::detail::kThreads;

template <class T>
__global__ void forward_kernel(ShapeProfile pr, ShapeLayout L, const T* x, const T* shapes,
                               const T* background, const double* tunables, T* y) {
  pr.read_tunables(tunables);
  FK_CUDA_LOOP(t, L.n * L.C) {
    const int64_t i = t / L.C, c = t % L.C;
    y[t] = static_cast<T>(shapes_value_at(pr, L.d, L.K, L.P, x + i * L.d, shapes + c * L.K * L.P,
                                          static_cast<double>(background[c])));
  }
}

template <class T>
__global__ void chunk_kernel(ShapeProfile pr, ShapeLayout L, const T* x, const T* shapes,
                             const double* tunables, const T* go, double* partial) {
  pr.read_tunables(tunables);
  const int64_t CK = L.C * L.K, per_chunk = CK + L.C;
  FK_CUDA_LOOP(t, L.subs() * per_chunk) {
    const int64_t s = t / per_chunk, r = t % per_chunk;
    const int64_t first = s * L.sub;
    const int64_t last = first + L.sub < L.n ? first + L.sub : L.n;
    double* row = partial + s * L.row();
    if (r < CK) {
      double dp[kShapeMaxEntries];
      for (int e = 0; e < L.P; ++e) dp[e] = 0;
      shape_gradient_over(pr, L.d, L.C, r / L.K, x, first, last, shapes + r * L.P, go, dp);
      for (int e = 0; e < L.P; ++e) row[r * L.P + e] = dp[e];
    } else {
      row[CK * L.P + (r - CK)] = background_gradient_over(L.C, r - CK, first, last, go);
    }
  }
}

template <class T>
__global__ void chunk_sum_kernel(ShapeLayout L, const double* partial, T* grad_shapes,
                                 T* grad_background) {
  const int64_t shape_entries = L.C * L.K * L.P, chunks = L.chunks(), subs = L.subs();
  const int64_t per_chunk = kShapeChunk / L.sub;
  FK_CUDA_LOOP(e, L.row()) {
    double acc = 0;
    for (int64_t ch = 0; ch < chunks; ++ch) {
      double chunk = 0;
      const int64_t end = (ch + 1) * per_chunk < subs ? (ch + 1) * per_chunk : subs;
      for (int64_t s = ch * per_chunk; s < end; ++s) chunk += partial[s * L.row() + e];
      acc += chunk;
    }
    if (e < shape_entries)
      grad_shapes[e] = static_cast<T>(acc);
    else
      grad_background[e - shape_entries] = static_cast<T>(acc);
  }
}

template <class T>
void forward(const ShapeProfile& pr, const ShapeLayout& L, const T* x, const T* shapes,
             const T* background, const double* tunables, T* y, void* stream) {
  forward_kernel<T><<<blocks_for(L.n * L.C), kThreads, 0, as_stream(stream)>>>(
      pr, L, x, shapes, background, tunables, y);
  check_launch("nefi::cuda::parametric_forward");
}

template <class T>
void backward(const ShapeProfile& pr, const ShapeLayout& L, const T* x, const T* shapes,
              const double* tunables, const T* go, double* partial, T* grad_shapes,
              T* grad_background, void* stream) {
  if (L.subs() > 0) {
    chunk_kernel<T><<<blocks_for(L.subs() * (L.C * L.K + L.C)), kThreads, 0, as_stream(stream)>>>(
        pr, L, x, shapes, tunables, go, partial);
    check_launch("nefi::cuda::parametric_backward_chunks");
  }
  chunk_sum_kernel<T><<<blocks_for(L.row()), kThreads, 0, as_stream(stream)>>>(
      L, partial, grad_shapes, grad_background);
  check_launch("nefi::cuda::parametric_backward_sum");
}

}  // namespace

void launch_parametric_forward(const ShapeProfile& profile, const ShapeLayout& layout,
                               const float* coords, const float* shapes, const float* background,
                               const double* tunables, float* y, void* stream) {
  forward(profile, layout, coords, shapes, background, tunables, y, stream);
}
void launch_parametric_forward(const ShapeProfile& profile, const ShapeLayout& layout,
                               const double* coords, const double* shapes, const double* background,
                               const double* tunables, double* y, void* stream) {
  forward(profile, layout, coords, shapes, background, tunables, y, stream);
}

void launch_parametric_backward(const ShapeProfile& profile, const ShapeLayout& layout,
                                const float* coords, const float* shapes, const double* tunables,
                                const float* go, double* partial, float* grad_shapes,
                                float* grad_background, void* stream) {
  backward(profile, layout, coords, shapes, tunables, go, partial, grad_shapes, grad_background,
           stream);
}
void launch_parametric_backward(const ShapeProfile& profile, const ShapeLayout& layout,
                                const double* coords, const double* shapes, const double* tunables,
                                const double* go, double* partial, double* grad_shapes,
                                double* grad_background, void* stream) {
  backward(profile, layout, coords, shapes, tunables, go, partial, grad_shapes, grad_background,
           stream);
}

}  // namespace nefi::cuda
