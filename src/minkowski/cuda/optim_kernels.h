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
// Adam / AdamW on up to kAdamListTensors parameters at once, in one launch
// (the list travels as the kernel's argument, under its 4 KiB limit, so the
// update copies nothing from the host and may be captured): tensor i is
// p[i] (T), its gradient g[i] (T), moments m[i], v[i] (f64), n[i] elements.
// bias1 = 1 - beta1^t, bias2 = 1 - beta2^t.
constexpr int kAdamListTensors = 64;
template <typename T>
struct AdamList {
  T* p[kAdamListTensors];
  const T* g[kAdamListTensors];
  double* m[kAdamListTensors];
  double* v[kAdamListTensors];
  int64_t n[kAdamListTensors];
  int count = 0;
};
struct AdamScalars {
  double lr = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0, bias1 = 1, bias2 = 1;
  bool decoupled = false;
};
template <typename T>
void launch_adam_update(const AdamList<T>& list, const AdamScalars& s, void* stream);

}  // namespace minkowski::cuda
