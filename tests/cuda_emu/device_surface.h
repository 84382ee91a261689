#pragma once
// CUDA's device-side surface on the emulated device (emulated_device.h),
// forced in first (-include) when a rewritten .cu file is compiled: built-in
// variables, barriers, warp shuffles, bit intrinsics, rounding intrinsics,
// math shortcuts and atomics.
#ifndef __shared__
// Block-shared variables are function statics: blocks run one at a time, and
// a block's fibers all see one copy (host_defines.h keeps a __shared__
// defined before it).
#define __shared__ static
#endif
#ifndef __grid_constant__
// A kernel parameter read in place instead of copied: parameters here are
// the launch's own copies already (host_defines.h keeps a definition made
// before it).
#define __grid_constant__
#endif
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "emulated_device.h"

// The architecture the emulated device's code is built for (the H200's
// sm_90), for device code choosing a path by architecture: __CUDA_ARCH__
// itself stays undefined, which CUDA's headers read as host code.
#define FKEMU_CUDA_ARCH 900

// host_defines.h defines __launch_bounds__ for nvcc only.
#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif

#define threadIdx (::fkemu::thread_index())
#define blockIdx (::fkemu::block_index())
#define blockDim (::fkemu::block_dims())
#define gridDim (::fkemu::grid_dims())

inline void __syncthreads() {
  ::fkemu::sync_block();
}
inline void __syncwarp(unsigned = 0xffffffffu) {
  ::fkemu::sync_warp();
}
// The block's predicates ORed, at every thread: one block-shared word
// (blocks run one at a time) cleared by thread 0 between two barriers, set
// by any thread with a predicate, read after a third. The first barrier
// keeps the clear after every thread has read the previous call's word.
inline int __syncthreads_or(int predicate) {
  static int any;
  const uint3 t = ::fkemu::thread_index();
  __syncthreads();
  if (t.x == 0 && t.y == 0 && t.z == 0) any = 0;
  __syncthreads();
  if (predicate) any = 1;
  __syncthreads();
  return any;
}
inline void __threadfence() {}
inline void __threadfence_block() {}

template <typename T>
T __shfl_sync(unsigned, T v, int src, int width = 32) {
  const int l = ::fkemu::lane();
  return ::fkemu::shuffle_from(v, l - l % width + ((src % width) + width) % width);
}
template <typename T>
T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
  const int l = ::fkemu::lane();
  const int from = l % width + static_cast<int>(delta) < width ? l + static_cast<int>(delta) : l;
  return ::fkemu::shuffle_from(v, from);
}
template <typename T>
T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
  const int l = ::fkemu::lane();
  const int from = l % width >= static_cast<int>(delta) ? l - static_cast<int>(delta) : l;
  return ::fkemu::shuffle_from(v, from);
}
template <typename T>
T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
  const int l = ::fkemu::lane();
  const int from = l ^ mask;
  return ::fkemu::shuffle_from(v, from / width == l / width ? from : l);
}

inline int __popc(unsigned v) {
  return __builtin_popcount(v);
}
inline int __popcll(unsigned long long v) {
  return __builtin_popcountll(v);
}
inline int __ffs(int v) {
  return __builtin_ffs(v);
}
inline int __ffsll(long long v) {
  return __builtin_ffsll(v);
}
inline int __clz(int v) {
  return v == 0 ? 32 : __builtin_clz(static_cast<unsigned>(v));
}
inline int __clzll(long long v) {
  return v == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(v));
}
template <typename T>
T __ldg(const T* p) {
  return *p;
}

// CUDA's min/max take mixed integer types; so do these.
template <typename A, typename B>
constexpr std::common_type_t<A, B> min(A a, B b) {
  return b < a ? b : a;
}
template <typename A, typename B>
constexpr std::common_type_t<A, B> max(A a, B b) {
  return a < b ? b : a;
}

inline float __expf(float x) {
  return std::exp(x);
}
inline float __logf(float x) {
  return std::log(x);
}
inline float __sinf(float x) {
  return std::sin(x);
}
inline float __cosf(float x) {
  return std::cos(x);
}
inline float __fdividef(float a, float b) {
  return a / b;
}
inline float rsqrtf(float x) {
  return 1.0f / std::sqrt(x);
}
inline double rsqrt(double x) {
  return 1.0 / std::sqrt(x);
}
// CUDA declares isfinite in the global namespace; libstdc++'s <cmath> only in std.
using std::isfinite;
// Rounded once, never contracted: what the _rn intrinsics promise.
inline float __fmul_rn(float a, float b) {
  return a * b;
}
inline float __fadd_rn(float a, float b) {
  return a + b;
}
inline float __fsub_rn(float a, float b) {
  return a - b;
}
inline float __fmaf_rn(float a, float b, float c) {
  return std::fma(a, b, c);
}
inline float __fdiv_rn(float a, float b) {
  return a / b;
}
inline float __fsqrt_rn(float x) {
  return std::sqrt(x);
}
inline double __dmul_rn(double a, double b) {
  return a * b;
}
inline double __dadd_rn(double a, double b) {
  return a + b;
}
inline double __dsub_rn(double a, double b) {
  return a - b;
}
inline double __ddiv_rn(double a, double b) {
  return a / b;
}
inline double __dsqrt_rn(double x) {
  return std::sqrt(x);
}
inline double __fma_rn(double a, double b, double c) {
  return std::fma(a, b, c);
}
inline float __saturatef(float x) {
  return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x);
}
inline float __int_as_float(int v) {
  float f;
  std::memcpy(&f, &v, 4);
  return f;
}
inline int __float_as_int(float f) {
  int v;
  std::memcpy(&v, &f, 4);
  return v;
}

// Atomics: plain read-modify-writes (threads do not interleave between
// barriers); each returns the old value, as CUDA's do.
template <typename T, typename U>
T atomicAdd(T* p, U v) {
  const T old = *p;
  *p = static_cast<T>(old + v);
  return old;
}
template <typename T, typename U>
T atomicSub(T* p, U v) {
  const T old = *p;
  *p = static_cast<T>(old - v);
  return old;
}
template <typename T, typename U>
T atomicMin(T* p, U v) {
  const T old = *p;
  if (static_cast<T>(v) < old) *p = static_cast<T>(v);
  return old;
}
template <typename T, typename U>
T atomicMax(T* p, U v) {
  const T old = *p;
  if (old < static_cast<T>(v)) *p = static_cast<T>(v);
  return old;
}
template <typename T, typename U>
T atomicOr(T* p, U v) {
  const T old = *p;
  *p = static_cast<T>(old | v);
  return old;
}
template <typename T, typename U>
T atomicAnd(T* p, U v) {
  const T old = *p;
  *p = static_cast<T>(old & v);
  return old;
}
template <typename T, typename U>
T atomicExch(T* p, U v) {
  const T old = *p;
  *p = static_cast<T>(v);
  return old;
}
template <typename T, typename U, typename V>
T atomicCAS(T* p, U compare, V v) {
  const T old = *p;
  if (old == static_cast<T>(compare)) *p = static_cast<T>(v);
  return old;
}
