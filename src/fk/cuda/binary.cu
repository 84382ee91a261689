// Binary kernels with broadcast (arithmetic, maximum/minimum, pow, atan2 and
// comparisons), the in-place scale, and where. One kernel per storage type with
// the op chosen by a switch inside, as in unary.cu; the formulas mirror
// src/fk/ops/binary.cpp so results match the CPU to rounding.
#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "fk/cuda/common.cuh"
#include "fk/cuda/pack16.cuh"
#include "fk/ops/unary_formulas.h"

namespace fk::cuda {
namespace {
using namespace detail;
namespace math = unary_formulas::math;

template <typename C>
__device__ C binary_real(int op, C x, C y, C alpha) {
  if constexpr (std::is_integral_v<C>) {
    if (op == kBinaryPow) return unary_formulas::integer_pow(x, y);  // the host's formula
  }
  switch (op) {
    case kBinaryAdd:
      return x + alpha * y;
    case kBinarySub:
      return x - alpha * y;
    case kBinaryMul:
      return x * y;
    case kBinaryMaximum:
      return (x != x || x > y) ? x : y;  // NaN propagates
    case kBinaryMinimum:
      return (x != x || x < y) ? x : y;
    default:
      break;
  }
  if constexpr (std::is_floating_point_v<C>) {
    switch (op) {
      case kBinaryDiv:
        return x / y;
      case kBinaryPow:
        return math::pow(x, y);
      case kBinaryAtan2:
        return math::atan2(x, y);
      default:
        break;
    }
  }
  return x;
}

template <typename C>
__device__ bool compare(int op, C x, C y) {
  switch (op) {
    case kBinaryEq:
      return x == y;
    case kBinaryNe:
      return x != y;
    case kBinaryLt:
      return x < y;
    case kBinaryLe:
      return x <= y;
    case kBinaryGt:
      return x > y;
    default:
      return x >= y;
  }
}

// Operand order in the geometry: out, a, b.
template <typename T, typename C>
__global__ void binary_real_kernel(int op, const T* a, const T* b, void* out, Geometry g, bool flat,
                                   C alpha, C b_scalar) {
  const bool cmp = op >= kBinaryEq;
  FK_CUDA_LOOP(i, g.numel) {
    int64_t off[3] = {i, i, i};
    if (!flat) offsets<3>(g, i, off);
    C x = Num<T>::load(a[off[1]]);
    C y = b ? Num<T>::load(b[off[2]]) : b_scalar;
    if (cmp) {
      static_cast<bool*>(out)[off[0]] = compare<C>(op, x, y);
    } else {
      static_cast<T*>(out)[off[0]] = Num<T>::store(binary_real<C>(op, x, y, alpha));
    }
  }
}

// Flat operands, 16-byte aligned, and an op that is not a comparison: a pack
// of 16 / sizeof(T) elements per thread with one vector load per operand, and
// the last n % kN elements by the first threads of block 0. The formula per
// element is binary_real_kernel's. One 4-byte element per thread left the
// f32 add at 0.62 of a device copy's bytes/s on the H200 (sessions 26, 28).
template <typename T, typename C>
__global__ void binary_real_packed_kernel(int op, const T* a, const T* b, T* out, int64_t n,
                                          C alpha, C b_scalar) {
  using P = Pack16<T>;
  const int64_t packs = n / P::kN;
  const P* pa = reinterpret_cast<const P*>(a);
  const P* pb = reinterpret_cast<const P*>(b);
  P* po = reinterpret_cast<P*>(out);
  FK_CUDA_LOOP(i, packs) {
    const P x = pa[i];
    P y = x;
    if (b) y = pb[i];
    P r;
#pragma unroll
    for (int j = 0; j < P::kN; ++j)
      r.v[j] = Num<T>::store(
          binary_real<C>(op, Num<T>::load(x.v[j]), b ? Num<T>::load(y.v[j]) : b_scalar, alpha));
    po[i] = r;
  }
  const int64_t t = packs * P::kN + threadIdx.x;
  if (blockIdx.x == 0 && t < n)
    out[t] = Num<T>::store(
        binary_real<C>(op, Num<T>::load(a[t]), b ? Num<T>::load(b[t]) : b_scalar, alpha));
}

// alpha is real and scales b's parts: as a complex factor (alpha + 0i) it
// would turn an infinite part of b into NaN in the other part (0 * inf), where
// the CPU's x + y keeps it.
template <typename R>
__global__ void binary_complex_kernel(int op, const Cx<R>* a, const Cx<R>* b, void* out, Geometry g,
                                      bool flat, R alpha, Cx<R> b_scalar) {
  FK_CUDA_LOOP(i, g.numel) {
    int64_t off[3] = {i, i, i};
    if (!flat) offsets<3>(g, i, off);
    Cx<R> x = a[off[1]];
    Cx<R> y = b ? b[off[2]] : b_scalar;
    if (op == kBinaryEq || op == kBinaryNe) {
      bool eq = x.re == y.re && x.im == y.im;
      static_cast<bool*>(out)[off[0]] = op == kBinaryEq ? eq : !eq;
      continue;
    }
    Cx<R> r;
    switch (op) {
      case kBinaryAdd:
        r = x + Cx<R>{alpha * y.re, alpha * y.im};
        break;
      case kBinarySub:
        r = x - Cx<R>{alpha * y.re, alpha * y.im};
        break;
      case kBinaryMul:
        r = x * y;
        break;
      default:
        r = x / y;
        break;
    }
    static_cast<Cx<R>*>(out)[off[0]] = r;
  }
}

// Operand order: out, cond, a, b.
template <typename W>
__global__ void where_kernel(const bool* cond, const W* a, const W* b, W* out, Geometry g) {
  FK_CUDA_LOOP(i, g.numel) {
    int64_t off[4];
    offsets<4>(g, i, off);
    out[off[0]] = cond[off[1]] ? a[off[2]] : b[off[3]];
  }
}

// The half spectrum's per-bin weights (launch_fft_bin_weights).
template <typename R>
__global__ void fft_bin_weights_kernel(const Cx<R>* in, Cx<R>* out, int64_t total, int64_t n_last,
                                       R scale, R pair_scale, bool drop_edge_imag) {
  const int64_t bins = n_last / 2 + 1, pair_end = (n_last + 1) / 2;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t k = i % bins;
    const R w = k >= 1 && k < pair_end ? pair_scale : scale;
    const Cx<R> v = in[i];
    const bool edge = k == 0 || (n_last % 2 == 0 && k == n_last / 2);
    out[i] = Cx<R>{v.re * w, drop_edge_imag && edge ? R(0) : v.im * w};
  }
}

}  // namespace

void launch_binary(int op, int dtype, const void* a, const void* b, void* out, int ndim,
                   const int64_t* shape, const int64_t* a_strides, const int64_t* b_strides,
                   const int64_t* out_strides, double alpha, double b_scalar, void* stream) {
  const char* where = "cuda::launch_binary";
  check_op(op, kNumBinaryOps, where);
  const int64_t* strides[3] = {out_strides, a_strides, b_strides};
  Geometry g = make_geometry(ndim, shape, 3, strides, where);
  if (g.numel == 0) return;
  const bool flat = is_flat(g, b ? 3 : 2);
  const unsigned blocks = blocks_for(g.numel);
  cudaStream_t s = as_stream(stream);
  auto real = [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = typename Num<T>::C;
    if (flat && op < kBinaryEq && aligned16(a) && aligned16(b) && aligned16(out)) {
      binary_real_packed_kernel<T, C>
          <<<blocks_for(std::max<int64_t>(g.numel / Pack16<T>::kN, 1)), kThreads, 0, s>>>(
              op, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out), g.numel,
              param<C>(alpha), param<C>(b_scalar));
      return;
    }
    binary_real_kernel<T, C><<<blocks, kThreads, 0, s>>>(op, static_cast<const T*>(a),
                                                         static_cast<const T*>(b), out, g, flat,
                                                         param<C>(alpha), param<C>(b_scalar));
  };
  switch (dtype) {
    case kI32:
    case kI64:
      FK_CHECK(op != kBinaryDiv && op != kBinaryAtan2, where,
               "add, sub, mul, pow, maximum, minimum or a comparison for integer dtypes",
               std::string("op ") + fk::to_text(op) + " on " + dtype_name(dtype));
      if (dtype == kI32) {
        real(Tag<int32_t>{});
      } else {
        real(Tag<int64_t>{});
      }
      break;
    case kC64:
    case kC128: {
      FK_CHECK(op <= kBinaryDiv || op == kBinaryEq || op == kBinaryNe, where,
               "add, sub, mul, div, eq or ne for complex dtypes",
               std::string("op ") + fk::to_text(op) + " on " + dtype_name(dtype));
      if (dtype == kC64) {
        binary_complex_kernel<float><<<blocks, kThreads, 0, s>>>(
            op, static_cast<const Cx<float>*>(a), static_cast<const Cx<float>*>(b), out, g, flat,
            static_cast<float>(alpha), cx<float>(static_cast<float>(b_scalar), 0.f));
      } else {
        binary_complex_kernel<double><<<blocks, kThreads, 0, s>>>(
            op, static_cast<const Cx<double>*>(a), static_cast<const Cx<double>*>(b), out, g, flat,
            alpha, cx<double>(b_scalar, 0.0));
      }
      break;
    }
    default:
      visit_floating(dtype, where, real);
  }
  check_launch(where);
}

void launch_scale(int dtype, void* data, int64_t n, double s, void* stream) {
  FK_CHECK(dtype != kI32 && dtype != kI64 && dtype != kBool, "cuda::launch_scale",
           "a floating or complex dtype", dtype_name(dtype));
  launch_binary(kBinaryMul, dtype, data, nullptr, data, 1, &n, nullptr, nullptr, nullptr, 1.0, s,
                stream);
}

void launch_fft_bin_weights(int dtype, const void* in, void* out, int64_t rows, int64_t n_last,
                            double scale, double pair_factor, bool drop_edge_imag, void* stream) {
  const char* where = "cuda::launch_fft_bin_weights";
  FK_CHECK(dtype == kC64 || dtype == kC128, where, "a complex dtype (c64, c128)",
           dtype_name(dtype));
  FK_CHECK(rows >= 0 && n_last >= 1, where, "rows >= 0 and a signal length >= 1",
           fk::to_text(rows) + " rows, length " + fk::to_text(n_last));
  const int64_t bins = n_last / 2 + 1;
  if (rows * bins == 0) return;
  const auto launch = [&](auto zero) {
    using R = decltype(zero);
    fft_bin_weights_kernel<R><<<blocks_for(rows * bins), kThreads, 0, as_stream(stream)>>>(
        static_cast<const Cx<R>*>(in), static_cast<Cx<R>*>(out), rows * bins, n_last,
        static_cast<R>(scale), static_cast<R>(scale * pair_factor), drop_edge_imag);
  };
  if (dtype == kC64) {
    launch(0.0f);
  } else {
    launch(0.0);
  }
  check_launch(where);
}

void launch_where(int dtype, const void* cond, const void* a, const void* b, void* out, int ndim,
                  const int64_t* shape, const int64_t* cond_strides, const int64_t* a_strides,
                  const int64_t* b_strides, void* stream) {
  const char* where = "cuda::launch_where";
  const int64_t* strides[4] = {nullptr, cond_strides, a_strides, b_strides};
  Geometry g = make_geometry(ndim, shape, 4, strides, where);
  if (g.numel == 0) return;
  visit_itemsize(dtype, [&](auto tag) {
    using W = typename decltype(tag)::type;
    where_kernel<W><<<blocks_for(g.numel), kThreads, 0, as_stream(stream)>>>(
        static_cast<const bool*>(cond), static_cast<const W*>(a), static_cast<const W*>(b),
        static_cast<W*>(out), g);
  });
  check_launch(where);
}

}  // namespace fk::cuda
