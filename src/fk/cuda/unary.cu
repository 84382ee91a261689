// Unary kernels, forward (strided) and backward (contiguous). One kernel per
// storage type with the op chosen by a switch inside (the op is uniform across
// the grid, so the branch costs little and each dtype is compiled once rather
// than once per op). The real formulas are the CPU's (fk/ops/unary_formulas.h),
// so results match the CPU to the rounding of the math libraries; the complex
// ones mirror forward_complex / backward_complex in src/fk/ops/unary.cpp.
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
namespace uf = unary_formulas;
namespace math = unary_formulas::math;

// y = f(x) for real compute type C (integers: the integer-preserving ops only;
// the launcher rejects the others before launch).
template <typename C>
__device__ C unary_real(int op, C v, C a, C b) {
  switch (op) {
    case kUnaryNeg:
      return -v;
    case kUnaryAbs:  // fabs for floats: -0 gives +0, as on the host
      if constexpr (std::is_floating_point_v<C>) return fabs(v);
      return v < C(0) ? -v : v;
    case kUnarySign:
      return uf::sign(v);
    case kUnaryRelu:
      return uf::relu(v);
    case kUnaryClamp:
      return uf::clamp(v, a, b);
    case kUnaryConj:
      return v;
    case kUnarySquare:
      return v * v;
    default:
      break;
  }
  if constexpr (std::is_floating_point_v<C>) {
    switch (op) {
      case kUnaryExp:
        return math::exp(v);
      case kUnaryLog:
        return math::log(v);
      case kUnaryLog1p:
        return math::log1p(v);
      case kUnaryExpm1:
        return math::expm1(v);
      case kUnarySqrt:
        return math::sqrt(v);
      case kUnaryRsqrt:
        return C(1) / math::sqrt(v);
      case kUnarySin:
        return math::sin(v);
      case kUnaryCos:
        return math::cos(v);
      case kUnaryTanh:
        return math::tanh(v);
      case kUnarySigmoid:
        return uf::sigmoid(v);
      case kUnaryLeakyRelu:
        return uf::leaky_relu(v, a);
      case kUnaryElu:
        return uf::elu(v, a);
      case kUnaryGelu:
        return uf::gelu(v);
      case kUnaryGeluTanh:
        return uf::gelu_tanh(v);
      case kUnarySilu:
        return uf::silu(v);
      case kUnarySoftplus:
        return uf::softplus(v, a, b);
      case kUnaryErf:
        return math::erf(v);
      case kUnaryPowScalar:
        return math::pow(v, a);
      case kUnaryReciprocal:
        return C(1) / v;
      default:
        break;
    }
  }
  return v;
}

// dx = g * f'(x), with r = y for the ops whose backward reads the output.
template <typename C>
__device__ C unary_real_backward(int op, C g, C r, C a, C b) {
  switch (op) {
    case kUnaryNeg:
      return -g;
    case kUnaryConj:
      return g;
    case kUnaryAbs:
      return uf::abs_backward(g, r);
    case kUnarySign:
      return C(0);
    case kUnaryExp:
      return uf::exp_backward(g, r);
    case kUnaryLog:
      return uf::log_backward(g, r);
    case kUnaryLog1p:
      return uf::log1p_backward(g, r);
    case kUnaryExpm1:
      return uf::expm1_backward(g, r);
    case kUnarySqrt:
      return uf::sqrt_backward(g, r);
    case kUnaryRsqrt:
      return uf::rsqrt_backward(g, r);
    case kUnarySin:
      return uf::sin_backward(g, r);
    case kUnaryCos:
      return uf::cos_backward(g, r);
    case kUnaryTanh:
      return uf::tanh_backward(g, r);
    case kUnarySigmoid:
      return uf::sigmoid_backward(g, r);
    case kUnaryRelu:
      return uf::relu_backward(g, r);
    case kUnaryLeakyRelu:
      return uf::leaky_relu_backward(g, r, a);
    case kUnaryElu:
      return uf::elu_backward(g, r, a);
    case kUnaryGelu:
      return uf::gelu_backward(g, r);
    case kUnaryGeluTanh:
      return uf::gelu_tanh_backward(g, r);
    case kUnarySilu:
      return uf::silu_backward(g, r);
    case kUnarySoftplus:
      return uf::softplus_backward(g, r, a, b);
    case kUnaryErf:
      return uf::erf_backward(g, r);
    case kUnaryPowScalar:
      return uf::pow_backward(g, r, a);
    case kUnaryClamp:
      return uf::clamp_backward(g, r, a, b);
    case kUnarySquare:
      return uf::square_backward(g, r);
    case kUnaryReciprocal:
      return uf::reciprocal_backward(g, r);
    default:
      return g;
  }
}

template <typename R>
__device__ inline R cabs(Cx<R> z) {
  return math::hypot(z.re, z.im);
}
template <typename R>
__device__ inline Cx<R> conj(Cx<R> z) {
  return {z.re, -z.im};
}
template <typename R>
__device__ Cx<R> csqrt(Cx<R> z) {
  if (z.re == R(0) && z.im == R(0)) return {R(0), z.im};
  R r = cabs(z);
  if (z.re >= R(0)) {
    R t = math::sqrt((r + z.re) / R(2));
    return {t, z.im / (R(2) * t)};
  }
  R t = math::sqrt((r - z.re) / R(2));
  return {fabs(z.im) / (R(2) * t), copysign(t, z.im)};
}

template <typename R>
__device__ Cx<R> unary_complex(int op, Cx<R> v) {
  switch (op) {
    case kUnaryNeg:
      return {-v.re, -v.im};
    case kUnaryConj:
      return conj(v);
    case kUnaryExp: {
      R e = math::exp(v.re);
      return {e * math::cos(v.im), e * math::sin(v.im)};
    }
    case kUnaryLog:
      return {math::log(cabs(v)), math::atan2(v.im, v.re)};
    case kUnarySqrt:
      return csqrt(v);
    case kUnarySquare:
      return v * v;
    case kUnaryReciprocal:
      return Cx<R>{R(1), R(0)} / v;
    default:
      return v;
  }
}

// Conjugate-Wirtinger gradients: gx = g * conj(f'(x)) for holomorphic f.
template <typename R>
__device__ Cx<R> unary_complex_backward(int op, Cx<R> g, Cx<R> r) {
  const Cx<R> two{R(2), R(0)};
  switch (op) {
    case kUnaryNeg:
      return {-g.re, -g.im};
    case kUnaryConj:
      return conj(g);
    case kUnaryExp:
      return g * conj(r);
    case kUnaryLog:
      return g / conj(r);
    case kUnarySqrt:
      return g / (two * conj(r));
    case kUnarySquare:
      return two * g * conj(r);
    case kUnaryReciprocal: {
      Cx<R> q = g * conj(r * r);
      return {-q.re, -q.im};
    }
    default:
      return g;
  }
}

// --- kernels ----------------------------------------------------------------

template <typename T, typename C>
__global__ void unary_real_kernel(int op, const T* in, T* out, Geometry g, bool flat, C a, C b) {
  FK_CUDA_LOOP(i, g.numel) {
    int64_t off[2] = {i, i};
    if (!flat) offsets<2>(g, i, off);
    out[off[0]] = Num<T>::store(unary_real<C>(op, Num<T>::load(in[off[1]]), a, b));
  }
}

// Flat and 16-byte aligned: a pack per thread, the last n % kN elements by
// the first threads of block 0 (see Pack16).
template <typename T, typename C>
__global__ void unary_real_packed_kernel(int op, const T* in, T* out, int64_t n, C a, C b) {
  using P = Pack16<T>;
  const int64_t packs = n / P::kN;
  const P* pin = reinterpret_cast<const P*>(in);
  P* pout = reinterpret_cast<P*>(out);
  FK_CUDA_LOOP(i, packs) {
    const P x = pin[i];
    P r;
#pragma unroll
    for (int j = 0; j < P::kN; ++j)
      r.v[j] = Num<T>::store(unary_real<C>(op, Num<T>::load(x.v[j]), a, b));
    pout[i] = r;
  }
  const int64_t t = packs * P::kN + threadIdx.x;
  if (blockIdx.x == 0 && t < n)
    out[t] = Num<T>::store(unary_real<C>(op, Num<T>::load(in[t]), a, b));
}

template <typename R>
__global__ void unary_complex_kernel(int op, const Cx<R>* in, void* out, Geometry g, bool flat) {
  FK_CUDA_LOOP(i, g.numel) {
    int64_t off[2] = {i, i};
    if (!flat) offsets<2>(g, i, off);
    Cx<R> v = in[off[1]];
    if (op == kUnaryAbs) {
      static_cast<R*>(out)[off[0]] = cabs(v);
    } else {
      static_cast<Cx<R>*>(out)[off[0]] = unary_complex(op, v);
    }
  }
}

template <typename T, typename C>
__global__ void unary_backward_real_kernel(int op, const T* grad, const T* ref, T* gx, int64_t n,
                                           C a, C b) {
  FK_CUDA_LOOP(i, n) {
    gx[i] = Num<T>::store(
        unary_real_backward<C>(op, Num<T>::load(grad[i]), Num<T>::load(ref[i]), a, b));
  }
}

template <typename T, typename C>
__global__ void unary_backward_real_packed_kernel(int op, const T* grad, const T* ref, T* gx,
                                                  int64_t n, C a, C b) {
  using P = Pack16<T>;
  const int64_t packs = n / P::kN;
  const P* pg = reinterpret_cast<const P*>(grad);
  const P* pr = reinterpret_cast<const P*>(ref);
  P* po = reinterpret_cast<P*>(gx);
  FK_CUDA_LOOP(i, packs) {
    const P g = pg[i], x = pr[i];
    P r;
#pragma unroll
    for (int j = 0; j < P::kN; ++j)
      r.v[j] = Num<T>::store(
          unary_real_backward<C>(op, Num<T>::load(g.v[j]), Num<T>::load(x.v[j]), a, b));
    po[i] = r;
  }
  const int64_t t = packs * P::kN + threadIdx.x;
  if (blockIdx.x == 0 && t < n)
    gx[t] = Num<T>::store(
        unary_real_backward<C>(op, Num<T>::load(grad[t]), Num<T>::load(ref[t]), a, b));
}

template <typename R>
__global__ void unary_backward_complex_kernel(int op, const void* grad, const Cx<R>* ref, Cx<R>* gx,
                                              int64_t n) {
  FK_CUDA_LOOP(i, n) {
    Cx<R> v = ref[i];
    if (op == kUnaryAbs) {  // g real: g * x / |x|
      R gv = static_cast<const R*>(grad)[i];
      R m = cabs(v);
      gx[i] = m == R(0) ? Cx<R>{R(0), R(0)} : Cx<R>{gv * v.re / m, gv * v.im / m};
    } else {
      gx[i] = unary_complex_backward(op, static_cast<const Cx<R>*>(grad)[i], v);
    }
  }
}

// --- host side ----------------------------------------------------------------

bool keeps_integers(int op) {
  return op == kUnaryNeg || op == kUnaryAbs || op == kUnarySign || op == kUnaryRelu ||
         op == kUnaryClamp || op == kUnarySquare || op == kUnaryConj;
}
bool accepts_complex(int op) {
  return op == kUnaryNeg || op == kUnaryAbs || op == kUnaryExp || op == kUnaryLog ||
         op == kUnarySqrt || op == kUnaryConj || op == kUnarySquare || op == kUnaryReciprocal;
}

void unary_geometry(int op, int dtype, const void* in, void* out, const Geometry& g, double a,
                    double b, void* stream) {
  const char* where = "cuda::launch_unary";
  check_op(op, kNumUnaryOps, where);
  if (g.numel == 0) return;
  const bool flat = is_flat(g, 2);
  const unsigned blocks = blocks_for(g.numel);
  cudaStream_t s = as_stream(stream);
  auto real = [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = typename Num<T>::C;
    if (flat && aligned16(in) && aligned16(out)) {
      unary_real_packed_kernel<T, C>
          <<<blocks_for(std::max<int64_t>(g.numel / Pack16<T>::kN, 1)), kThreads, 0, s>>>(
              op, static_cast<const T*>(in), static_cast<T*>(out), g.numel, param<C>(a),
              param<C>(b));
      return;
    }
    unary_real_kernel<T, C><<<blocks, kThreads, 0, s>>>(
        op, static_cast<const T*>(in), static_cast<T*>(out), g, flat, param<C>(a), param<C>(b));
  };
  switch (dtype) {
    case kI32:
    case kI64:
      FK_CHECK(keeps_integers(op), where,
               "an integer-preserving op for integer dtypes (convert to f32 first)",
               std::string("op ") + fk::to_text(op) + " on " + dtype_name(dtype));
      if (dtype == kI32) {
        real(Tag<int32_t>{});
      } else {
        real(Tag<int64_t>{});
      }
      break;
    case kC64:
    case kC128:
      FK_CHECK(accepts_complex(op), where, "an op defined on complex numbers",
               std::string("op ") + fk::to_text(op) + " on " + dtype_name(dtype));
      if (dtype == kC64) {
        unary_complex_kernel<float>
            <<<blocks, kThreads, 0, s>>>(op, static_cast<const Cx<float>*>(in), out, g, flat);
      } else {
        unary_complex_kernel<double>
            <<<blocks, kThreads, 0, s>>>(op, static_cast<const Cx<double>*>(in), out, g, flat);
      }
      break;
    default:
      visit_floating(dtype, where, real);
  }
  check_launch(where);
}

}  // namespace

void launch_unary(int op, int dtype, const void* in, void* out, int64_t n, double a, double b,
                  void* stream) {
  unary_geometry(op, dtype, in, out, make_geometry(1, &n, 2, nullptr, "cuda::launch_unary"), a, b,
                 stream);
}

void launch_unary_strided(int op, int dtype, const void* in, void* out, int ndim,
                          const int64_t* shape, const int64_t* in_strides,
                          const int64_t* out_strides, double a, double b, void* stream) {
  const int64_t* strides[2] = {out_strides, in_strides};
  unary_geometry(op, dtype, in, out, make_geometry(ndim, shape, 2, strides, "cuda::launch_unary"),
                 a, b, stream);
}

void launch_unary_backward(int op, int dtype, const void* grad, const void* ref, void* grad_in,
                           int64_t n, double a, double b, void* stream) {
  const char* where = "cuda::launch_unary_backward";
  check_op(op, kNumUnaryOps, where);
  if (n <= 0) return;
  const unsigned blocks = blocks_for(n);
  cudaStream_t s = as_stream(stream);
  if (dtype == kC64 || dtype == kC128) {
    FK_CHECK(accepts_complex(op), where, "an op defined on complex numbers",
             std::string("op ") + fk::to_text(op) + " on " + dtype_name(dtype));
    if (dtype == kC64) {
      unary_backward_complex_kernel<float><<<blocks, kThreads, 0, s>>>(
          op, grad, static_cast<const Cx<float>*>(ref), static_cast<Cx<float>*>(grad_in), n);
    } else {
      unary_backward_complex_kernel<double><<<blocks, kThreads, 0, s>>>(
          op, grad, static_cast<const Cx<double>*>(ref), static_cast<Cx<double>*>(grad_in), n);
    }
  } else {
    visit_floating(dtype, where, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = typename Num<T>::C;
      if (aligned16(grad) && aligned16(ref) && aligned16(grad_in)) {
        unary_backward_real_packed_kernel<T, C>
            <<<blocks_for(std::max<int64_t>(n / Pack16<T>::kN, 1)), kThreads, 0, s>>>(
                op, static_cast<const T*>(grad), static_cast<const T*>(ref),
                static_cast<T*>(grad_in), n, param<C>(a), param<C>(b));
        return;
      }
      unary_backward_real_kernel<T, C>
          <<<blocks, kThreads, 0, s>>>(op, static_cast<const T*>(grad), static_cast<const T*>(ref),
                                       static_cast<T*>(grad_in), n, param<C>(a), param<C>(b));
    });
  }
  check_launch(where);
}

}  // namespace fk::cuda
