// Optimizer update kernels (nn/optim_device.h): one thread per element (Adam:
// a list of tensors per launch), the host loops' formulas in f64 with
// products rounded on their own, so the values are the CPU step's.
#include <cstdint>

#include "fk/cuda/common.cuh"
#include "minkowski/cuda/optim_kernels.h"
#include "minkowski/cuda/rounding.cuh"

namespace minkowski::cuda {

namespace {

using fk::cuda::detail::as_stream;
using fk::cuda::detail::blocks_for;
using fk::cuda::detail::check_launch;
using fk::cuda::detail::kThreads;

template <typename T>
__global__ void sgd_kernel(T* p, const T* g, double* v, int64_t n, double lr, double momentum,
                           double weight_decay, bool nesterov) {
  FK_CUDA_LOOP(i, n) {
    const double x = static_cast<double>(p[i]);
    // Decay 0 adds nothing (0 * inf would be NaN), as on the host.
    const double grad =
        weight_decay != 0.0 ? static_cast<double>(g[i]) + mul_rn(weight_decay, x) : g[i];
    double step = grad;
    if (v != nullptr) {
      v[i] = mul_rn(momentum, v[i]) + grad;
      step = nesterov ? grad + mul_rn(momentum, v[i]) : v[i];
    }
    p[i] = static_cast<T>(x - mul_rn(lr, step));
  }
}

// The list with each tensor's first block: block b updates elements
// [(b - first[i]) kAdamBlockElements, ...) of tensor i, first[i] <= b < first[i + 1].
constexpr int64_t kAdamBlockElements = 4096;
template <typename T>
struct AdamLaunch {
  AdamList<T> list;
  int64_t first[kAdamListTensors + 1];
  AdamScalars s;
};

template <typename T>
__global__ void adam_kernel(const AdamLaunch<T> a) {
  int i = 0;
  while (i + 1 < a.list.count && a.first[i + 1] <= blockIdx.x) ++i;
  T* p = a.list.p[i];
  const T* g = a.list.g[i];
  double *m = a.list.m[i], *v = a.list.v[i];
  const int64_t begin = (blockIdx.x - a.first[i]) * kAdamBlockElements;
  const int64_t end =
      begin + kAdamBlockElements < a.list.n[i] ? begin + kAdamBlockElements : a.list.n[i];
  const AdamScalars& s = a.s;
  for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x) {
    double x = static_cast<double>(p[k]), grad = static_cast<double>(g[k]);
    if (s.decoupled) {
      x = mul_rn(x, 1.0 - mul_rn(s.lr, s.weight_decay));
    } else if (s.weight_decay != 0.0) {  // 0 * inf would be NaN, as on the host
      grad = grad + mul_rn(s.weight_decay, x);
    }
    m[k] = mul_rn(s.beta1, m[k]) + mul_rn(1.0 - s.beta1, grad);
    v[k] = mul_rn(s.beta2, v[k]) + mul_rn(mul_rn(1.0 - s.beta2, grad), grad);
    p[k] = static_cast<T>(x - mul_rn(s.lr, m[k] / s.bias1) / (sqrt(v[k] / s.bias2) + s.eps));
  }
}

}  // namespace

template <typename T>
void launch_sgd_update(T* p, const T* g, double* v, int64_t n, double lr, double momentum,
                       double weight_decay, bool nesterov, void* stream) {
  if (n == 0) return;
  sgd_kernel<T><<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(p, g, v, n, lr, momentum,
                                                                   weight_decay, nesterov);
  check_launch("minkowski::cuda::launch_sgd_update");
}

template <typename T>
void launch_adam_update(const AdamList<T>& list, const AdamScalars& s, void* stream) {
  static_assert(sizeof(AdamLaunch<T>) <= 4000, "a kernel argument of at most 4 KiB");
  if (list.count <= 0) return;
  AdamLaunch<T> a{list, {}, s};
  a.first[0] = 0;
  for (int i = 0; i < list.count; ++i)
    a.first[i + 1] = a.first[i] + (list.n[i] + kAdamBlockElements - 1) / kAdamBlockElements;
  if (a.first[list.count] == 0) return;
  adam_kernel<T><<<static_cast<unsigned>(a.first[list.count]), kThreads, 0, as_stream(stream)>>>(a);
  check_launch("minkowski::cuda::launch_adam_update");
}

#define MK_OPTIM_LAUNCHERS(T)                                                                      \
  template void launch_sgd_update<T>(T*, const T*, double*, int64_t, double, double, double, bool, \
                                     void*);                                                       \
  template void launch_adam_update<T>(const AdamList<T>&, const AdamScalars&, void*);
MK_OPTIM_LAUNCHERS(float)
MK_OPTIM_LAUNCHERS(double)
#undef MK_OPTIM_LAUNCHERS

}  // namespace minkowski::cuda
