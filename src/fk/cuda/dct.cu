// fk::dct's passes either side of cuFFT's real transform (launch_dct_pack,
// launch_dct_unpack): Makhoul's reordering and twiddles, as cpu/fft.cpp's
// dct_along computes them, one thread per output value.
#include <cstdint>
#include <string>

#include "fk/cuda/common.cuh"

namespace fk::cuda {
namespace {
using namespace detail;

// conj(w_k) = cos + i sin, w_k = exp(-i pi k / 2n): the angle and its cosine
// and sine in f64, rounded to R, as the CPU's table.
template <typename R>
__device__ void twiddle(int64_t k, int64_t n, R& c, R& s) {
  const double t = 3.14159265358979323846 * static_cast<double>(k) / (2.0 * static_cast<double>(n));
  c = static_cast<R>(cos(t));
  s = static_cast<R>(sin(t));
}

// II: v (rows, n) from x (outer, n, inner): x's even entries in order, then its odd ones reversed.
template <typename R>
__global__ void pack_second_kernel(const R* x, R* v, int64_t outer, int64_t n, int64_t inner) {
  const int64_t n_even = (n + 1) / 2;
  FK_CUDA_LOOP(t, outer * inner * n) {
    const int64_t m = t % n, row = t / n, i = row % inner, o = row / inner;
    const int64_t j = m < n_even ? 2 * m : 2 * (n - 1 - m) + 1;
    v[t] = x[(o * n + j) * inner + i];
  }
}

// II: y (outer, n, inner) from V = rfft(v) (rows, n / 2 + 1).
template <typename R>
__global__ void unpack_second_kernel(const Cx<R>* spectrum, R* y, int64_t outer, int64_t n,
                                     int64_t inner) {
  const int64_t half = n / 2 + 1;
  FK_CUDA_LOOP(t, outer * n * inner) {
    const int64_t i = t % inner, k = (t / inner) % n, o = t / (inner * n);
    const bool low = k < half;
    const int64_t b = low ? k : n - k;  // y_{n-b} from V_b, with w_{n-b} = -i conj(w_b)
    const Cx<R> v = spectrum[(o * inner + i) * half + b];
    R c, s;
    twiddle(b, n, c, s);
    y[t] = low ? 2 * (c * v.re + s * v.im) : 2 * (s * v.re - c * v.im);
  }
}

// III: the half spectrum V_j = conj(w_j) (x_j - i x_{n-j}) (x_n = 0) of a real v.
template <typename R>
__global__ void pack_third_kernel(const R* x, Cx<R>* spectrum, int64_t outer, int64_t n,
                                  int64_t inner) {
  const int64_t half = n / 2 + 1;
  FK_CUDA_LOOP(t, outer * inner * half) {
    const int64_t j = t % half, row = t / half, i = row % inner, o = row / inner;
    const R a = x[(o * n + j) * inner + i], b = j == 0 ? R(0) : x[(o * n + n - j) * inner + i];
    R c, s;
    twiddle(j, n, c, s);
    spectrum[t] = cx(c * a + s * b, s * a - c * b);
  }
}

// III: y (outer, n, inner) from v = irfft(V) unscaled (rows, n), in II's order.
template <typename R>
__global__ void unpack_third_kernel(const R* v, R* y, int64_t outer, int64_t n, int64_t inner) {
  FK_CUDA_LOOP(t, outer * n * inner) {
    const int64_t i = t % inner, k = (t / inner) % n, o = t / (inner * n);
    const int64_t m = k % 2 == 0 ? k / 2 : n - 1 - (k - 1) / 2;
    y[t] = v[(o * inner + i) * n + m];
  }
}

void check_dct(const char* where, int dtype, int64_t outer, int64_t n, int64_t inner) {
  FK_CHECK(dtype == kF32 || dtype == kF64, where, "a real dtype (f32, f64)", dtype_name(dtype));
  FK_CHECK(outer >= 0 && n >= 1 && inner >= 0, where, "outer, inner >= 0 and a length >= 1",
           fk::to_text(outer) + ", " + fk::to_text(n) + ", " + fk::to_text(inner));
}

}  // namespace

void launch_dct_pack(int dtype, bool second_kind, const void* x, void* buf, int64_t outer,
                     int64_t n, int64_t inner, void* stream) {
  const char* where = "cuda::launch_dct_pack";
  check_dct(where, dtype, outer, n, inner);
  const int64_t count = outer * inner * (second_kind ? n : n / 2 + 1);
  if (count == 0) return;
  const auto launch = [&](auto zero) {
    using R = decltype(zero);
    if (second_kind) {
      pack_second_kernel<R><<<blocks_for(count), kThreads, 0, as_stream(stream)>>>(
          static_cast<const R*>(x), static_cast<R*>(buf), outer, n, inner);
    } else {
      pack_third_kernel<R><<<blocks_for(count), kThreads, 0, as_stream(stream)>>>(
          static_cast<const R*>(x), static_cast<Cx<R>*>(buf), outer, n, inner);
    }
  };
  if (dtype == kF32) {
    launch(0.0f);
  } else {
    launch(0.0);
  }
  check_launch(where);
}

void launch_dct_unpack(int dtype, bool second_kind, const void* buf, void* y, int64_t outer,
                       int64_t n, int64_t inner, void* stream) {
  const char* where = "cuda::launch_dct_unpack";
  check_dct(where, dtype, outer, n, inner);
  const int64_t count = outer * n * inner;
  if (count == 0) return;
  const auto launch = [&](auto zero) {
    using R = decltype(zero);
    if (second_kind) {
      unpack_second_kernel<R><<<blocks_for(count), kThreads, 0, as_stream(stream)>>>(
          static_cast<const Cx<R>*>(buf), static_cast<R*>(y), outer, n, inner);
    } else {
      unpack_third_kernel<R><<<blocks_for(count), kThreads, 0, as_stream(stream)>>>(
          static_cast<const R*>(buf), static_cast<R*>(y), outer, n, inner);
    }
  };
  if (dtype == kF32) {
    launch(0.0f);
  } else {
    launch(0.0);
  }
  check_launch(where);
}

}  // namespace fk::cuda
