#pragma once
// Helpers shared by fk's .cu files (and common.cpp, their host half):
// storage <-> compute type traits (f16/bf16 computed in f32), a small complex
// type, strided geometry with in-kernel index math, and launch helpers.
// No fmt, no thrust: these TUs stay cheap to compile.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "fk/cuda/device_guard.h"
#include "fk/cuda/kernels.h"
#include "fk/error.h"

namespace fk::cuda::detail {

// A complex number with the std::complex<R> layout (re, im), for device code.
template <typename R>
struct alignas(sizeof(R)) Cx {
  R re, im;
};

template <typename R>
__host__ __device__ inline Cx<R> cx(R re, R im) {
  return Cx<R>{re, im};
}
template <typename R>
__device__ inline Cx<R> operator+(Cx<R> a, Cx<R> b) {
  return {a.re + b.re, a.im + b.im};
}
template <typename R>
__device__ inline Cx<R> operator-(Cx<R> a, Cx<R> b) {
  return {a.re - b.re, a.im - b.im};
}
template <typename R>
__device__ inline Cx<R> operator*(Cx<R> a, Cx<R> b) {
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
// Smith's algorithm: avoids overflow in |b|^2 for large denominators.
template <typename R>
__device__ inline Cx<R> operator/(Cx<R> a, Cx<R> b) {
  if (fabs(b.re) >= fabs(b.im)) {
    R r = b.im / b.re, d = b.re + b.im * r;
    return {(a.re + a.im * r) / d, (a.im - a.re * r) / d};
  }
  R r = b.re / b.im, d = b.im + b.re * r;
  return {(a.re * r + a.im) / d, (a.im * r - a.re) / d};
}

// Storage type -> compute type, load and store. Halves compute in f32.
template <typename T>
struct Num {
  using C = T;
  __device__ static C load(T v) { return v; }
  __device__ static T store(C v) { return v; }
};
template <>
struct Num<__half> {
  using C = float;
  __device__ static float load(__half v) { return __half2float(v); }
  __device__ static __half store(float v) { return __float2half_rn(v); }
};
template <>
struct Num<__nv_bfloat16> {
  using C = float;
  __device__ static float load(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 store(float v) { return __float2bfloat16_rn(v); }
};

// Strided geometry of up to four operands over one iteration shape, in
// elements. Offsets are computed in-kernel from the linear index (row-major).
struct Geometry {
  int ndim = 0;
  int64_t numel = 1;
  int64_t shape[kMaxDims] = {};
  int64_t strides[4][kMaxDims] = {};
};

// Offset of element `i` (row-major over shape) in operand k.
template <int K>
__device__ inline void offsets(const Geometry& g, int64_t i, int64_t (&off)[K]) {
  for (int k = 0; k < K; ++k) off[k] = 0;
  for (int d = g.ndim - 1; d >= 0; --d) {
    int64_t s = g.shape[d];
    int64_t c = i % s;
    i /= s;
    for (int k = 0; k < K; ++k) off[k] += c * g.strides[k][d];
  }
}

// Builds a geometry for `operands` stride arrays (an array or `strides`
// itself nullptr = C-contiguous),
// dropping size-1 dims and merging dims that are contiguous in every operand,
// so most calls end with ndim 1 and cheap index math.
Geometry make_geometry(int ndim, const int64_t* shape, int operands, const int64_t* const* strides,
                       const char* where);

// True when every operand of g is a flat contiguous range (ndim <= 1, unit stride).
bool is_flat(const Geometry& g, int operands);

inline cudaStream_t as_stream(void* s) {
  return static_cast<cudaStream_t>(s);
}

constexpr int kThreads = 256;
inline unsigned blocks_for(int64_t n, int threads = kThreads) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > (int64_t{1} << 20)) b = int64_t{1} << 20;  // grid-stride loops cover the rest
  return static_cast<unsigned>(b);
}

// Throws fk::Error when the last launch failed (bad configuration, no device).
void check_launch(const char* where);

// Throws unless 0 <= op < count (an op code of kernels.h).
void check_op(int op, int count, const char* where);

// A double parameter as compute type C, saturated for integers (clamp bounds may be +-inf).
template <typename C>
C param(double v) {
  if constexpr (std::is_integral_v<C>) {
    constexpr C lo = std::is_same_v<C, int32_t> ? INT32_MIN : INT64_MIN;
    constexpr C hi = std::is_same_v<C, int32_t> ? INT32_MAX : INT64_MAX;
    if (!(v > static_cast<double>(lo))) return lo;
    if (!(v < static_cast<double>(hi))) return hi;
  }
  return static_cast<C>(v);
}

[[noreturn]] void unsupported(const char* where, const char* expected, int dtype);
const char* dtype_name(int dtype);
size_t dtype_size(int dtype);

// A 16-byte element (c128) moved as two words: needs only 8-byte alignment.
struct alignas(8) Bytes16 {
  uint64_t lo, hi;
};

template <typename T>
struct Tag {
  using type = T;
};

// Host dispatch on an element size (data movement does not care about dtype).
template <typename F>
void visit_itemsize(int dtype, F&& f) {
  switch (dtype_size(dtype)) {
    case 1:
      return f(Tag<uint8_t>{});
    case 2:
      return f(Tag<uint16_t>{});
    case 4:
      return f(Tag<uint32_t>{});
    case 8:
      return f(Tag<uint64_t>{});
    default:
      return f(Tag<Bytes16>{});
  }
}

// Host dispatch on the floating storage types (f32 f64 f16 bf16).
template <typename F>
void visit_floating(int dtype, const char* where, F&& f) {
  switch (dtype) {
    case kF32:
      return f(Tag<float>{});
    case kF64:
      return f(Tag<double>{});
    case kF16:
      return f(Tag<__half>{});
    case kBF16:
      return f(Tag<__nv_bfloat16>{});
    default:
      unsupported(where, "f32, f64, f16 or bf16", dtype);
  }
}

// Grid-stride loop over [0, n).
#define FK_CUDA_LOOP(i, n)                                                               \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

}  // namespace fk::cuda::detail
