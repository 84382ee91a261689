#pragma once
// The elementwise binary ops `a op b` (arithmetic and comparisons) and their
// scalar forms; conventions in fk/ops/binary.h.
#include <cstdint>

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

// An operand's shape and dtype: what its gradient is reduced to.
struct OperandInfo {
  Dims shape;
  DType dtype;
};

// Pure forward: the result of `a op b` (alpha scales b for Add/Sub).
Tensor binary_forward(BinaryOp op, const Tensor& a, const Tensor& b, double alpha = 1.0);
struct BinaryGrads {
  Tensor a, b;  // undefined where not requested
};
// Pure backward of `out = a op b`: the gradients w.r.t. a and b, summed over
// the dims they were broadcast along and cast to their dtypes (the real part
// for real operands). The tensors needed (others may be undefined): Add, Sub:
// none; Mul: b for need_a, a for need_b; Div: b, and a for need_b; Pow: a and
// b, and out for need_b; Maximum, Minimum, Atan2: a and b. Comparisons have
// no gradient (undefined results).
BinaryGrads binary_backward(BinaryOp op, const Tensor& grad, const Tensor& a, const Tensor& b,
                            const Tensor& out, const OperandInfo& a_info, const OperandInfo& b_info,
                            bool need_a, bool need_b, double alpha = 1.0);
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

// Scalar operands keep the tensor's dtype, unless it cannot hold them: an
// i32 tensor with a whole scalar past i32's range becomes i64, an integer
// tensor with a fraction, an infinity, a NaN or a value past i64's f32.
Tensor add(const Tensor& a, double s);
Tensor sub(const Tensor& a, double s);
Tensor mul(const Tensor& a, double s);
Tensor div(const Tensor& a, double s);
Tensor scalar_like(const Tensor& t, double s);  // 0-dim tensor of t's (promoted) dtype and device

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
