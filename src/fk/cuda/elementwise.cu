// Elementwise kernels: unary (forward and backward), binary with broadcast,
// where. One kernel per storage type with the op chosen by a switch inside (the
// op is uniform across the grid, so the branch costs little and each dtype is
// compiled once rather than once per op). Formulas mirror src/fk/ops/unary.cpp
// and binary.cpp so results match the CPU to rounding.
#include <type_traits>

#include "fk/cuda/common.cuh"

namespace fk::cuda {
namespace {
using namespace detail;

// float/double overloads of the math functions used below.
#define FK_MATH1(name, ffn, dfn)            \
  __device__ inline float name(float x) {   \
    return ffn(x);                          \
  }                                         \
  __device__ inline double name(double x) { \
    return dfn(x);                          \
  }
FK_MATH1(m_exp, expf, exp)
FK_MATH1(m_log, logf, log)
FK_MATH1(m_log1p, log1pf, log1p)
FK_MATH1(m_expm1, expm1f, expm1)
FK_MATH1(m_sqrt, sqrtf, sqrt)
FK_MATH1(m_sin, sinf, sin)
FK_MATH1(m_cos, cosf, cos)
FK_MATH1(m_tanh, tanhf, tanh)
FK_MATH1(m_erf, erff, erf)
#undef FK_MATH1
__device__ inline float m_pow(float x, float y) {
  return powf(x, y);
}
__device__ inline double m_pow(double x, double y) {
  return pow(x, y);
}
__device__ inline float m_atan2(float y, float x) {
  return atan2f(y, x);
}
__device__ inline double m_atan2(double y, double x) {
  return atan2(y, x);
}
__device__ inline float m_hypot(float x, float y) {
  return hypotf(x, y);
}
__device__ inline double m_hypot(double x, double y) {
  return hypot(x, y);
}

constexpr double kSqrt2 = 1.4142135623730951;
constexpr double kInvSqrtPi2 = 1.1283791670955126;  // 2 / sqrt(pi)
constexpr double kInvSqrt2Pi = 0.3989422804014327;  // 1 / sqrt(2 pi)
constexpr double kGeluC = 0.7978845608028654;       // sqrt(2 / pi)

template <typename C>
__device__ inline C sigmoid_of(C x) {
  return C(1) / (C(1) + m_exp(-x));
}

// y = f(x) for real compute type C (integers: the integer-preserving ops only;
// the launcher rejects the others before launch).
template <typename C>
__device__ C unary_real(int op, C v, C a, C b) {
  switch (op) {
    case kUnaryNeg:
      return -v;
    case kUnaryAbs:
      return v < C(0) ? -v : v;
    case kUnarySign:
      return static_cast<C>((C(0) < v) - (v < C(0)));
    case kUnaryRelu:
      return v > C(0) ? v : C(0);
    case kUnaryClamp:
      return v < a ? a : (v > b ? b : v);
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
        return m_exp(v);
      case kUnaryLog:
        return m_log(v);
      case kUnaryLog1p:
        return m_log1p(v);
      case kUnaryExpm1:
        return m_expm1(v);
      case kUnarySqrt:
        return m_sqrt(v);
      case kUnaryRsqrt:
        return C(1) / m_sqrt(v);
      case kUnarySin:
        return m_sin(v);
      case kUnaryCos:
        return m_cos(v);
      case kUnaryTanh:
        return m_tanh(v);
      case kUnarySigmoid:
        return sigmoid_of(v);
      case kUnaryLeakyRelu:
        return v > C(0) ? v : a * v;
      case kUnaryElu:
        return v > C(0) ? v : a * m_expm1(v);
      case kUnaryGelu:
        return C(0.5) * v * (C(1) + m_erf(v / C(kSqrt2)));
      case kUnaryGeluTanh:
        return C(0.5) * v * (C(1) + m_tanh(C(kGeluC) * (v + C(0.044715) * v * v * v)));
      case kUnarySilu:
        return v * sigmoid_of(v);
      case kUnarySoftplus: {
        C z = a * v;
        return z > b ? v : m_log1p(m_exp(z)) / a;
      }
      case kUnaryErf:
        return m_erf(v);
      case kUnaryPowScalar:
        return m_pow(v, a);
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
  const C v = r, y = r;
  switch (op) {
    case kUnaryNeg:
      return -g;
    case kUnaryConj:
      return g;
    case kUnaryAbs:
      return g * static_cast<C>((C(0) < v) - (v < C(0)));
    case kUnarySign:
      return C(0);
    case kUnaryExp:
      return g * y;
    case kUnaryLog:
      return g / v;
    case kUnaryLog1p:
      return g / (C(1) + v);
    case kUnaryExpm1:
      return g * (y + C(1));
    case kUnarySqrt:
      return g / (C(2) * y);
    case kUnaryRsqrt:
      return C(-0.5) * g * y * y * y;
    case kUnarySin:
      return g * m_cos(v);
    case kUnaryCos:
      return -g * m_sin(v);
    case kUnaryTanh:
      return g * (C(1) - y * y);
    case kUnarySigmoid:
      return g * y * (C(1) - y);
    case kUnaryRelu:
      return v > C(0) ? g : C(0);
    case kUnaryLeakyRelu:
      return v > C(0) ? g : a * g;
    case kUnaryElu:
      return v > C(0) ? g : g * a * m_exp(v);
    case kUnaryGelu: {
      C cdf = C(0.5) * (C(1) + m_erf(v / C(kSqrt2)));
      C pdf = C(kInvSqrt2Pi) * m_exp(C(-0.5) * v * v);
      return g * (cdf + v * pdf);
    }
    case kUnaryGeluTanh: {
      C inner = C(kGeluC) * (v + C(0.044715) * v * v * v);
      C th = m_tanh(inner);
      C dinner = C(kGeluC) * (C(1) + C(3 * 0.044715) * v * v);
      return g * (C(0.5) * (C(1) + th) + C(0.5) * v * (C(1) - th * th) * dinner);
    }
    case kUnarySilu: {
      C s = sigmoid_of(v);
      return g * (s + v * s * (C(1) - s));
    }
    case kUnarySoftplus: {
      C z = a * v;
      return z > b ? g : g * sigmoid_of(z);
    }
    case kUnaryErf:
      return g * C(kInvSqrtPi2) * m_exp(-v * v);
    case kUnaryPowScalar:
      return a == C(0) ? C(0) : g * a * m_pow(v, a - C(1));
    case kUnaryClamp:
      return (v >= a && v <= b) ? g : C(0);
    case kUnarySquare:
      return C(2) * g * v;
    case kUnaryReciprocal:
      return -g * y * y;
    default:
      return g;
  }
}

template <typename R>
__device__ inline R cabs(Cx<R> z) {
  return m_hypot(z.re, z.im);
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
    R t = m_sqrt((r + z.re) / R(2));
    return {t, z.im / (R(2) * t)};
  }
  R t = m_sqrt((r - z.re) / R(2));
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
      R e = m_exp(v.re);
      return {e * m_cos(v.im), e * m_sin(v.im)};
    }
    case kUnaryLog:
      return {m_log(cabs(v)), m_atan2(v.im, v.re)};
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

template <typename C>
__device__ C binary_real(int op, C x, C y, C alpha) {
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
        return m_pow(x, y);
      case kBinaryAtan2:
        return m_atan2(x, y);
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

template <typename R>
__global__ void binary_complex_kernel(int op, const Cx<R>* a, const Cx<R>* b, void* out, Geometry g,
                                      bool flat, Cx<R> alpha, Cx<R> b_scalar) {
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
        r = x + alpha * y;
        break;
      case kBinarySub:
        r = x - alpha * y;
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

// --- host side ----------------------------------------------------------------

bool keeps_integers(int op) {
  return op == kUnaryNeg || op == kUnaryAbs || op == kUnarySign || op == kUnaryRelu ||
         op == kUnaryClamp || op == kUnarySquare || op == kUnaryConj;
}
bool accepts_complex(int op) {
  return op == kUnaryNeg || op == kUnaryAbs || op == kUnaryExp || op == kUnaryLog ||
         op == kUnarySqrt || op == kUnaryConj || op == kUnarySquare || op == kUnaryReciprocal;
}

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

void check_op(int op, int count, const char* where) {
  FK_CHECK(op >= 0 && op < count, where, "an op code 0.." + std::to_string(count - 1),
           std::to_string(op));
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
    unary_real_kernel<T, C><<<blocks, kThreads, 0, s>>>(
        op, static_cast<const T*>(in), static_cast<T*>(out), g, flat, param<C>(a), param<C>(b));
  };
  switch (dtype) {
    case kI32:
    case kI64:
      FK_CHECK(keeps_integers(op), where,
               "an integer-preserving op for integer dtypes (convert to f32 first)",
               std::string("op ") + std::to_string(op) + " on " + dtype_name(dtype));
      if (dtype == kI32) {
        real(Tag<int32_t>{});
      } else {
        real(Tag<int64_t>{});
      }
      break;
    case kC64:
    case kC128:
      FK_CHECK(accepts_complex(op), where, "an op defined on complex numbers",
               std::string("op ") + std::to_string(op) + " on " + dtype_name(dtype));
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
             std::string("op ") + std::to_string(op) + " on " + dtype_name(dtype));
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
      unary_backward_real_kernel<T, C>
          <<<blocks, kThreads, 0, s>>>(op, static_cast<const T*>(grad), static_cast<const T*>(ref),
                                       static_cast<T*>(grad_in), n, param<C>(a), param<C>(b));
    });
  }
  check_launch(where);
}

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
    binary_real_kernel<T, C><<<blocks, kThreads, 0, s>>>(op, static_cast<const T*>(a),
                                                         static_cast<const T*>(b), out, g, flat,
                                                         param<C>(alpha), param<C>(b_scalar));
  };
  switch (dtype) {
    case kI32:
    case kI64:
      FK_CHECK(op != kBinaryDiv && op != kBinaryPow && op != kBinaryAtan2, where,
               "add, sub, mul, maximum, minimum or a comparison for integer dtypes",
               std::string("op ") + std::to_string(op) + " on " + dtype_name(dtype));
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
               std::string("op ") + std::to_string(op) + " on " + dtype_name(dtype));
      if (dtype == kC64) {
        binary_complex_kernel<float><<<blocks, kThreads, 0, s>>>(
            op, static_cast<const Cx<float>*>(a), static_cast<const Cx<float>*>(b), out, g, flat,
            cx<float>(static_cast<float>(alpha), 0.f),
            cx<float>(static_cast<float>(b_scalar), 0.f));
      } else {
        binary_complex_kernel<double><<<blocks, kThreads, 0, s>>>(
            op, static_cast<const Cx<double>*>(a), static_cast<const Cx<double>*>(b), out, g, flat,
            cx<double>(alpha, 0.0), cx<double>(b_scalar, 0.0));
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
