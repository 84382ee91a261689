// Optimizer update kernels (nn/optim_device.h): one thread per element, the
// host loops' formulas in f64 with products rounded on their own, so the
// values are the CPU step's.
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
    const double grad = static_cast<double>(g[i]) + mul_rn(weight_decay, x);
    double step = grad;
    if (v != nullptr) {
      v[i] = mul_rn(momentum, v[i]) + grad;
      step = nesterov ? grad + mul_rn(momentum, v[i]) : v[i];
    }
    p[i] = static_cast<T>(x - mul_rn(lr, step));
  }
}

template <typename T>
__global__ void adam_kernel(T* p, const T* g, double* m, double* v, int64_t n, double lr,
                            double beta1, double beta2, double eps, double weight_decay,
                            double bias1, double bias2, bool decoupled) {
  FK_CUDA_LOOP(i, n) {
    double x = static_cast<double>(p[i]), grad = static_cast<double>(g[i]);
    if (decoupled)
      x = mul_rn(x, 1.0 - mul_rn(lr, weight_decay));
    else
      grad = grad + mul_rn(weight_decay, x);
    m[i] = mul_rn(beta1, m[i]) + mul_rn(1.0 - beta1, grad);
    v[i] = mul_rn(beta2, v[i]) + mul_rn(mul_rn(1.0 - beta2, grad), grad);
    p[i] = static_cast<T>(x - mul_rn(lr, m[i] / bias1) / (sqrt(v[i] / bias2) + eps));
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
void launch_adam_update(T* p, const T* g, double* m, double* v, int64_t n, double lr, double beta1,
                        double beta2, double eps, double weight_decay, double bias1, double bias2,
                        bool decoupled, void* stream) {
  if (n == 0) return;
  adam_kernel<T><<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(
      p, g, m, v, n, lr, beta1, beta2, eps, weight_decay, bias1, bias2, decoupled);
  check_launch("minkowski::cuda::launch_adam_update");
}

#define MK_OPTIM_LAUNCHERS(T)                                                                      \
  template void launch_sgd_update<T>(T*, const T*, double*, int64_t, double, double, double, bool, \
                                     void*);                                                       \
  template void launch_adam_update<T>(T*, const T*, double*, double*, int64_t, double, double,     \
                                      double, double, double, double, double, bool, void*);
MK_OPTIM_LAUNCHERS(float)
MK_OPTIM_LAUNCHERS(double)
#undef MK_OPTIM_LAUNCHERS

}  // namespace minkowski::cuda
