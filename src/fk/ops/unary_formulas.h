#pragma once
// The scalar formulas of fk's real unary ops: f(x) where it is more than one
// library call or operator, and every backward g * f'(x). One copy, called by
// the CPU's generic paths (src/fk/ops/unary.cpp) and by the CUDA kernels
// (src/fk/cuda/unary.cu), so the two devices compute the same expressions and
// agree to the rounding of their math libraries. (The AVX2 f32 kernels of
// src/fk/ops/cpu/vec_math.h are separate approximations with their own ulp
// bounds.)
//
// T is float or double (f16 and bf16 are computed in f32); sign, relu and
// clamp also take integers. a and b are the op's UnaryParams. Backward
// formulas marked "from y" read the forward's output y instead of x.
//
// Host and device: FK_HOST_DEVICE is __host__ __device__ under nvcc and empty
// otherwise, so the CPU build needs no CUDA header. The math functions are the
// C library's (expf, exp, ...): glibc's on the host, CUDA's in device code.
#include <math.h>

#include <type_traits>

#if defined(__CUDACC__)
#define FK_HOST_DEVICE __host__ __device__
#else
#define FK_HOST_DEVICE
#endif

namespace fk::unary_formulas {

constexpr double kSqrt2 = 1.4142135623730951;
constexpr double kInvSqrtPi2 = 1.1283791670955126;  // 2 / sqrt(pi)
constexpr double kInvSqrt2Pi = 0.3989422804014327;  // 1 / sqrt(2 pi)
constexpr double kGeluC = 0.7978845608028654;       // sqrt(2 / pi)
constexpr double kGeluCubic = 0.044715;             // tanh approximation's cubic term

// float and double overloads of the C math functions used below (and by the
// CUDA kernels' complex, binary and softmax formulas).
namespace math {
#define FK_MATH1(name, float_fn, double_fn)     \
  FK_HOST_DEVICE inline float name(float x) {   \
    return ::float_fn(x);                       \
  }                                             \
  FK_HOST_DEVICE inline double name(double x) { \
    return ::double_fn(x);                      \
  }
FK_MATH1(exp, expf, exp)
FK_MATH1(expm1, expm1f, expm1)
FK_MATH1(log, logf, log)
FK_MATH1(log1p, log1pf, log1p)
FK_MATH1(sqrt, sqrtf, sqrt)
FK_MATH1(sin, sinf, sin)
FK_MATH1(cos, cosf, cos)
FK_MATH1(tanh, tanhf, tanh)
FK_MATH1(erf, erff, erf)
#undef FK_MATH1
FK_HOST_DEVICE inline float pow(float x, float y) {
  return ::powf(x, y);
}
FK_HOST_DEVICE inline double pow(double x, double y) {
  return ::pow(x, y);
}
FK_HOST_DEVICE inline float atan2(float y, float x) {
  return ::atan2f(y, x);
}
FK_HOST_DEVICE inline double atan2(double y, double x) {
  return ::atan2(y, x);
}
FK_HOST_DEVICE inline float hypot(float x, float y) {
  return ::hypotf(x, y);
}
FK_HOST_DEVICE inline double hypot(double x, double y) {
  return ::hypot(x, y);
}
}  // namespace math

// --- forward ------------------------------------------------------------------

template <typename T>
FK_HOST_DEVICE inline T sign(T x) {
  return static_cast<T>((T(0) < x) - (x < T(0)));
}
// NaN passes through, as in torch (relu is max(x, 0) there): a NaN in the
// features stays visible instead of turning into a silent 0. x != x is
// false for integers.
template <typename T>
FK_HOST_DEVICE inline T relu(T x) {
  return x > T(0) || x != x ? x : T(0);
}
template <typename T>
FK_HOST_DEVICE inline T clamp(T x, T lo, T hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}
template <typename T>
FK_HOST_DEVICE inline T sigmoid(T x) {
  return T(1) / (T(1) + math::exp(-x));
}
template <typename T>
FK_HOST_DEVICE inline T leaky_relu(T x, T slope) {
  return x > T(0) ? x : slope * x;
}
template <typename T>
FK_HOST_DEVICE inline T elu(T x, T alpha) {
  return x > T(0) ? x : alpha * math::expm1(x);
}
// x Phi(x), Phi the standard normal CDF.
template <typename T>
FK_HOST_DEVICE inline T gelu(T x) {
  return T(0.5) * x * (T(1) + math::erf(x / T(kSqrt2)));
}
// Hendrycks & Gimpel's tanh approximation of gelu.
template <typename T>
FK_HOST_DEVICE inline T gelu_tanh(T x) {
  return T(0.5) * x * (T(1) + math::tanh(T(kGeluC) * (x + T(kGeluCubic) * x * x * x)));
}
template <typename T>
FK_HOST_DEVICE inline T silu(T x) {
  return x * sigmoid(x);
}
// log(1 + e^{beta x}) / beta, and x itself once beta x > threshold (where the
// two agree to rounding and the exponential would overflow).
template <typename T>
FK_HOST_DEVICE inline T softplus(T x, T beta, T threshold) {
  T z = beta * x;
  return z > threshold ? x : math::log1p(math::exp(z)) / beta;
}

// --- backward: g * f'(x) --------------------------------------------------------

template <typename T>
FK_HOST_DEVICE inline T abs_backward(T g, T x) {
  return g * sign(x);
}
template <typename T>
FK_HOST_DEVICE inline T exp_backward(T g, T y) {  // from y
  return g * y;
}
template <typename T>
FK_HOST_DEVICE inline T log_backward(T g, T x) {
  return g / x;
}
template <typename T>
FK_HOST_DEVICE inline T log1p_backward(T g, T x) {
  return g / (T(1) + x);
}
template <typename T>
FK_HOST_DEVICE inline T expm1_backward(T g, T y) {  // from y
  return g * (y + T(1));
}
template <typename T>
FK_HOST_DEVICE inline T sqrt_backward(T g, T y) {  // from y
  return g / (T(2) * y);
}
template <typename T>
FK_HOST_DEVICE inline T rsqrt_backward(T g, T y) {  // from y
  return T(-0.5) * g * y * y * y;
}
template <typename T>
FK_HOST_DEVICE inline T sin_backward(T g, T x) {
  return g * math::cos(x);
}
template <typename T>
FK_HOST_DEVICE inline T cos_backward(T g, T x) {
  return -g * math::sin(x);
}
template <typename T>
FK_HOST_DEVICE inline T tanh_backward(T g, T y) {  // from y
  return g * (T(1) - y * y);
}
template <typename T>
FK_HOST_DEVICE inline T sigmoid_backward(T g, T y) {  // from y
  return g * y * (T(1) - y);
}
template <typename T>
FK_HOST_DEVICE inline T relu_backward(T g, T x) {
  return x > T(0) ? g : T(0);
}
template <typename T>
FK_HOST_DEVICE inline T leaky_relu_backward(T g, T x, T slope) {
  return x > T(0) ? g : slope * g;
}
template <typename T>
FK_HOST_DEVICE inline T elu_backward(T g, T x, T alpha) {
  return x > T(0) ? g : g * alpha * math::exp(x);
}
// d/dx x Phi(x) = Phi(x) + x phi(x).
template <typename T>
FK_HOST_DEVICE inline T gelu_backward(T g, T x) {
  T cdf = T(0.5) * (T(1) + math::erf(x / T(kSqrt2)));
  T pdf = T(kInvSqrt2Pi) * math::exp(T(-0.5) * x * x);
  return g * (cdf + x * pdf);
}
template <typename T>
FK_HOST_DEVICE inline T gelu_tanh_backward(T g, T x) {
  T inner = T(kGeluC) * (x + T(kGeluCubic) * x * x * x);
  T th = math::tanh(inner);
  T dinner = T(kGeluC) * (T(1) + T(3 * kGeluCubic) * x * x);
  return g * (T(0.5) * (T(1) + th) + T(0.5) * x * (T(1) - th * th) * dinner);
}
// d/dx x s(x) = s + x s (1 - s), s = sigmoid(x).
template <typename T>
FK_HOST_DEVICE inline T silu_backward(T g, T x) {
  T s = sigmoid(x);
  return g * (s + x * s * (T(1) - s));
}
template <typename T>
FK_HOST_DEVICE inline T softplus_backward(T g, T x, T beta, T threshold) {
  T z = beta * x;
  return z > threshold ? g : g * sigmoid(z);
}
template <typename T>
FK_HOST_DEVICE inline T erf_backward(T g, T x) {
  return g * T(kInvSqrtPi2) * math::exp(-x * x);
}
// d/dx x^p = p x^(p - 1); p = 0 gives 0 (not 0 * inf at x = 0).
template <typename T>
FK_HOST_DEVICE inline T pow_backward(T g, T x, T p) {
  return p == T(0) ? T(0) : g * p * math::pow(x, p - T(1));
}
template <typename T>
FK_HOST_DEVICE inline T clamp_backward(T g, T x, T lo, T hi) {
  return (x >= lo && x <= hi) ? g : T(0);
}
template <typename T>
FK_HOST_DEVICE inline T square_backward(T g, T x) {
  return T(2) * g * x;
}
template <typename T>
FK_HOST_DEVICE inline T reciprocal_backward(T g, T y) {  // from y
  return -g * y * y;
}

// Binary pow of two integers (host binary.cpp and binary.cu share it): x^y
// exactly, by squaring, wrapping on overflow as torch's integer pow does (in
// unsigned arithmetic: signed overflow is undefined); a negative exponent
// gives 1 / x^|y| truncated: 1 for x = 1, +-1 for x = -1, else 0.
template <typename T>
FK_HOST_DEVICE inline T integer_pow(T x, T y) {
  if (y < 0) return x == 1 ? T(1) : x == -1 ? (y % 2 ? T(-1) : T(1)) : T(0);
  using U = std::make_unsigned_t<T>;
  U base = static_cast<U>(x), r = 1;
  for (; y > 0; y >>= 1) {
    if (y & 1) r *= base;
    base *= base;
  }
  return static_cast<T>(r);
}

}  // namespace fk::unary_formulas
