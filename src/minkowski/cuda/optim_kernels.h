#pragma once
// Launchers of the optimizer update kernels (optim.cu), in kernels.h's
// conventions (raw device pointers, a stream as void*, T float or double).
#include <cstdint>

namespace minkowski::cuda {

// nn/optim.h's element updates in f64 on n elements of a parameter p (T) and
// its gradient g (T), products rounded on their own (rounding.cuh).
// SGD: v (f64) null when momentum == 0.
template <typename T>
void launch_sgd_update(T* p, const T* g, double* v, int64_t n, double lr, double momentum,
                       double weight_decay, bool nesterov, void* stream);
// Adam / AdamW: m, v (f64); bias1 = 1 - beta1^t, bias2 = 1 - beta2^t.
template <typename T>
void launch_adam_update(T* p, const T* g, double* m, double* v, int64_t n, double lr, double beta1,
                        double beta2, double eps, double weight_decay, double bias1, double bias2,
                        bool decoupled, void* stream);

}  // namespace minkowski::cuda
