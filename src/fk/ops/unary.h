#pragma once
// Elementwise unary ops, all differentiable (gradients by one fused backward
// kernel per op). Real dtypes i32/i64 are promoted to f32 where the result is
// not an integer; f16/bf16 are computed in f32 and stored back. Complex inputs
// are accepted by neg, conj, abs (-> real), exp, log, sqrt, square and reciprocal.
#include "fk/tensor.h"

namespace fk {

enum class UnaryOp : uint8_t {
  Neg,
  Abs,
  Sign,
  Exp,
  Log,
  Log1p,
  Expm1,
  Sqrt,
  Rsqrt,
  Sin,
  Cos,
  Tanh,
  Sigmoid,
  Relu,
  LeakyRelu,
  Elu,
  Gelu,
  GeluTanh,
  Silu,
  Softplus,
  Erf,
  PowScalar,
  Clamp,
  Conj,
  Square,
  Reciprocal
};
const char* name(UnaryOp op);

// Parameters for the ops that take them (slope, alpha, exponent, bounds, ...).
struct UnaryParams {
  double a = 0, b = 0;
};

// The pure forward and backward pair; `out` is the forward's result.
Tensor unary_forward(UnaryOp op, const Tensor& x, UnaryParams p = {});
Tensor unary_backward(UnaryOp op, const Tensor& grad, const Tensor& x, const Tensor& out,
                      UnaryParams p = {});
// The same two on n contiguous f32 host values: element by element the code
// unary_forward and unary_backward run on a CPU f32 tensor (so the same
// bits), without a tensor or a counted op, for kernels that apply an
// activation inside their own loops (nefi's batched MLP). backward reads x
// or y (uses the forward's output for tanh, sigmoid, exp, ...): pass both.
void unary_forward_host(UnaryOp op, const float* x, float* y, int64_t n, UnaryParams p = {});
void unary_backward_host(UnaryOp op, const float* g, const float* x, const float* y, float* gx,
                         int64_t n, UnaryParams p = {});
// Forward + autograd node.
Tensor unary(UnaryOp op, const Tensor& x, UnaryParams p = {});

inline Tensor neg(const Tensor& x) {
  return unary(UnaryOp::Neg, x);
}
inline Tensor abs(const Tensor& x) {
  return unary(UnaryOp::Abs, x);
}
inline Tensor sign(const Tensor& x) {
  return unary(UnaryOp::Sign, x);
}
inline Tensor exp(const Tensor& x) {
  return unary(UnaryOp::Exp, x);
}
inline Tensor log(const Tensor& x) {
  return unary(UnaryOp::Log, x);
}
inline Tensor log1p(const Tensor& x) {
  return unary(UnaryOp::Log1p, x);
}
inline Tensor expm1(const Tensor& x) {
  return unary(UnaryOp::Expm1, x);
}
inline Tensor sqrt(const Tensor& x) {
  return unary(UnaryOp::Sqrt, x);
}
inline Tensor rsqrt(const Tensor& x) {
  return unary(UnaryOp::Rsqrt, x);
}
inline Tensor sin(const Tensor& x) {
  return unary(UnaryOp::Sin, x);
}
inline Tensor cos(const Tensor& x) {
  return unary(UnaryOp::Cos, x);
}
inline Tensor tanh(const Tensor& x) {
  return unary(UnaryOp::Tanh, x);
}
inline Tensor sigmoid(const Tensor& x) {
  return unary(UnaryOp::Sigmoid, x);
}
inline Tensor relu(const Tensor& x) {
  return unary(UnaryOp::Relu, x);
}
inline Tensor leaky_relu(const Tensor& x, double slope = 0.01) {
  return unary(UnaryOp::LeakyRelu, x, {slope, 0});
}
inline Tensor elu(const Tensor& x, double alpha = 1.0) {
  return unary(UnaryOp::Elu, x, {alpha, 0});
}
// Exact (erf) GELU, or the tanh approximation.
inline Tensor gelu(const Tensor& x, bool tanh_approx = false) {
  return unary(tanh_approx ? UnaryOp::GeluTanh : UnaryOp::Gelu, x);
}
inline Tensor silu(const Tensor& x) {
  return unary(UnaryOp::Silu, x);
}
// log(1 + exp(beta x)) / beta, linear where beta x > threshold.
inline Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0) {
  return unary(UnaryOp::Softplus, x, {beta, threshold});
}
inline Tensor erf(const Tensor& x) {
  return unary(UnaryOp::Erf, x);
}
inline Tensor pow(const Tensor& x, double exponent) {
  return unary(UnaryOp::PowScalar, x, {exponent, 0});
}
Tensor clamp(const Tensor& x, double lo, double hi);  // either bound may be +-inf
inline Tensor conj(const Tensor& x) {
  return unary(UnaryOp::Conj, x);
}
inline Tensor square(const Tensor& x) {
  return unary(UnaryOp::Square, x);
}
inline Tensor reciprocal(const Tensor& x) {
  return unary(UnaryOp::Reciprocal, x);
}

}  // namespace fk
