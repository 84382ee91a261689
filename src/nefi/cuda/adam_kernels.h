#pragma once
// Launchers of the AdamW kernels (adam.cu): raw device pointers and a stream
// (a cudaStream_t as void*), no CUDA types, so adam_device.cpp is plain C++.
// T is float or double. Launches are asynchronous; a failed launch throws
// fk::Error. No atomics: every sum is in a fixed order, so results are
// bitwise reproducible run to run.
#include <cstdint>

namespace nefi::cuda {

// Blocks (and so partial sums) the squared-norm pass uses for n elements.
int64_t sum_sq_blocks(int64_t n);

// partials[b] = the f64 sum of g[i]² over block b's elements (a fixed
// strided walk per thread, then a fixed-shape tree), for b < sum_sq_blocks(n).
template <typename T>
void launch_sum_sq_partials(const T* g, int64_t n, double* partials, void* stream);

// *out = the sum of partials[0..count) (one block, fixed tree order).
void launch_sum_partials(const double* partials, int64_t count, double* out, void* stream);

// The scalars of one AdamW step, each already rounded to T on the host exactly
// as adam_update (solve/adam.cpp) rounds them.
// one_b1, one_b2: 1 - b1 and 1 - b2 formed in f64, then rounded (1 - b2
// taken in f32 is 7e-4 off at b2 = 0.99999).
template <typename T>
struct AdamScalars {
  T clip, l2, decay, b1, b2, step, inv_sqrt_bc2, eps, one_b1, one_b2;
};

// adam_update's loop body per element, operation for operation, each product,
// quotient, sum and square root rounded once (no contraction):
//   g' = g·clip + l2·x;  m = b1·m + one_b1·g';  v = b2·v + one_b2·g'·g'
//   x = x·decay − step·m / (√v · inv_sqrt_bc2 + eps)
template <typename T>
void launch_adam_update(T* x, const T* g, T* m, T* v, int64_t n, const AdamScalars<T>& s,
                        void* stream);

// The same update with its scalars read from the device step block
// (solve/adam_device.h, DeviceStepSlot) when the kernel runs, so one launch
// serves every step of a captured CUDA graph: the f64 AdamScalars (clip slot
// unused), the clip threshold and the squared gradient norm give the clip
// factor as FusedOptimizer::step computes it on the host, each scalar is rounded
// to T once, and nothing is written when the block's loss total is not finite.
template <typename T>
void launch_adam_update_gated(T* x, const T* g, T* m, T* v, int64_t n, const double* block,
                              void* stream);

// Up to kMaxGathered one-element f32/f64 tensors, widened to f64 into
// out[0..count) by one single-thread launch (a null pointer gives 0).
constexpr int kMaxGathered = 32;
struct GatherSources {
  const void* ptr[kMaxGathered];
  bool f64[kMaxGathered];
  int count;
};
void launch_gather_scalars(const GatherSources& src, double* out, void* stream);

}  // namespace nefi::cuda
