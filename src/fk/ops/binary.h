#pragma once
// Elementwise binary and ternary ops with NumPy broadcasting and type
// promotion, differentiable (gradients reduced back over broadcast dims).
// f16/bf16 operands are computed in f32 and the result stored in the promoted
// type. Integer division is true division (-> f32). Comparisons give bool.
// The in-place forms (add_, mul_, addcmul_, ...) bump the version counter and
// refuse tensors autograd would have to record (use the out-of-place form).
#include "fk/tensor.h"

namespace fk {

enum class BinaryOp : uint8_t {
  Add,
  Sub,
  Mul,
  Div,
  Pow,
  Maximum,
  Minimum,
  Atan2,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge
};
const char* name(BinaryOp op);

// Pure forward: the result of `a op b` (alpha scales b for Add/Sub).
Tensor binary_forward(BinaryOp op, const Tensor& a, const Tensor& b, double alpha = 1.0);
// Forward + autograd node.
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, double alpha = 1.0);

inline Tensor add(const Tensor& a, const Tensor& b, double alpha = 1.0) {
  return binary(BinaryOp::Add, a, b, alpha);
}
inline Tensor sub(const Tensor& a, const Tensor& b, double alpha = 1.0) {
  return binary(BinaryOp::Sub, a, b, alpha);
}
inline Tensor mul(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::Mul, a, b);
}
inline Tensor div(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::Div, a, b);
}
inline Tensor pow(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::Pow, a, b);
}
inline Tensor maximum(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::Maximum, a, b);
}
inline Tensor minimum(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::Minimum, a, b);
}
inline Tensor atan2(const Tensor& y, const Tensor& x) {
  return binary(BinaryOp::Atan2, y, x);
}
inline Tensor eq(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::Eq, a, b);
}
inline Tensor ne(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::Ne, a, b);
}
inline Tensor lt(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::Lt, a, b);
}
inline Tensor le(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::Le, a, b);
}
inline Tensor gt(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::Gt, a, b);
}
inline Tensor ge(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::Ge, a, b);
}

// Scalar operands keep the tensor's dtype (an integer tensor with a
// non-integer scalar becomes f32).
Tensor add(const Tensor& a, double s);
Tensor sub(const Tensor& a, double s);
Tensor mul(const Tensor& a, double s);
Tensor div(const Tensor& a, double s);
Tensor scalar_like(const Tensor& t, double s);  // 0-dim tensor of t's (promoted) dtype and device

// cond ? a : b (cond is bool; a, b promoted).
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
// self + value * t1 * t2
Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, double value = 1.0);
// self + value * t1 / t2
Tensor addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2, double value = 1.0);
// a + w * (b - a)
Tensor lerp(const Tensor& a, const Tensor& b, const Tensor& w);
Tensor lerp(const Tensor& a, const Tensor& b, double w);

// In place (self keeps its shape and dtype; the other operands broadcast to it).
Tensor& add_(Tensor& self, const Tensor& other, double alpha = 1.0);
Tensor& sub_(Tensor& self, const Tensor& other, double alpha = 1.0);
Tensor& mul_(Tensor& self, const Tensor& other);
Tensor& div_(Tensor& self, const Tensor& other);
Tensor& mul_(Tensor& self, double s);
Tensor& addcmul_(Tensor& self, const Tensor& t1, const Tensor& t2, double value = 1.0);
Tensor& addcdiv_(Tensor& self, const Tensor& t1, const Tensor& t2, double value = 1.0);
Tensor& lerp_(Tensor& self, const Tensor& end, double w);
Tensor& lerp_(Tensor& self, const Tensor& end, const Tensor& w);

inline Tensor operator+(const Tensor& a, const Tensor& b) {
  return add(a, b);
}
inline Tensor operator-(const Tensor& a, const Tensor& b) {
  return sub(a, b);
}
inline Tensor operator*(const Tensor& a, const Tensor& b) {
  return mul(a, b);
}
inline Tensor operator/(const Tensor& a, const Tensor& b) {
  return div(a, b);
}
inline Tensor operator+(const Tensor& a, double s) {
  return add(a, s);
}
inline Tensor operator-(const Tensor& a, double s) {
  return sub(a, s);
}
inline Tensor operator*(const Tensor& a, double s) {
  return mul(a, s);
}
inline Tensor operator/(const Tensor& a, double s) {
  return div(a, s);
}
inline Tensor operator*(double s, const Tensor& a) {
  return mul(a, s);
}
Tensor operator-(const Tensor& a);

}  // namespace fk
