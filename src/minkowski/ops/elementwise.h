#pragma once
// Feature-wise combinations of sparse tensors: cat along channels, sum and
// mean of tensors on one coordinate map, and the binary ops + - * / between
// tensors that align their coordinates.
//
//   cat, sum, mean   every input on the SAME map (one manager, one key), or
//                    fields on the same points (one coordinate tensor, or
//                    equal coordinates): cat -> N x (sum C_i); sum, mean ->
//                    N x C (equal C and dtype). The result keeps input 0's
//                    map (or points and quantization record).
//   binary(a, b, op) op in Add, Sub, Mul, Div; equal channel counts and dtypes.
//     same map:      op(a.F(), b.F()) row by row; the result on that map.
//     different maps of one manager and one tensor stride: the result lives on
//                    the union map of the two (union.h: a's rows, then b's new
//                    rows), filled as MinkowskiEngine fills it:
//                      row in a and b:   op(a, b)
//                      row only in a:    a, unchanged, for every op (so a * b
//                                        keeps a there and a / b never divides
//                                        by a row b does not have)
//                      row only in b:    op(0, b): b, -b, 0, 0 (or 0 / 0 = NaN
//                                        where b itself is 0)
//     other managers or tensor strides: an fk::Error.
//   binary(a, t, op) t a dense tensor broadcast against a.F() (N x C, C, 1 x C
//                    or a scalar): op(a.F(), t) on a's map.
//
// No kernel here: every op is composed of fk's differentiable ops (cat, add,
// sub, mul, div, index_add/index_select, where), each a pure forward/backward
// pair with its node, so all are differentiable w.r.t. every feature tensor.
// Dtypes: f64, f32, f16, bf16 (16-bit computed in f32 by fk). Devices: CPU
// and CUDA (fk's device ops; the union's row indices uploaded). Deterministic
// for any thread count. Memory: the result; on different maps also the union
// map and two union-sized temporaries.
#include <vector>

#include "fk/ops/binary.h"
#include "fk/tensor.h"
#include "minkowski/sparse_tensor.h"
#include "minkowski/tensor_field.h"

namespace minkowski {

SparseTensor cat(const std::vector<SparseTensor>& xs);
SparseTensor sum(const std::vector<SparseTensor>& xs);
SparseTensor mean(const std::vector<SparseTensor>& xs);
TensorField cat(const std::vector<TensorField>& xs);
TensorField sum(const std::vector<TensorField>& xs);
TensorField mean(const std::vector<TensorField>& xs);

SparseTensor binary(const SparseTensor& a, const SparseTensor& b, fk::BinaryOp op);
SparseTensor binary(const SparseTensor& a, const fk::Tensor& b, fk::BinaryOp op);

inline SparseTensor operator+(const SparseTensor& a, const SparseTensor& b) {
  return binary(a, b, fk::BinaryOp::Add);
}
inline SparseTensor operator-(const SparseTensor& a, const SparseTensor& b) {
  return binary(a, b, fk::BinaryOp::Sub);
}
inline SparseTensor operator*(const SparseTensor& a, const SparseTensor& b) {
  return binary(a, b, fk::BinaryOp::Mul);
}
inline SparseTensor operator/(const SparseTensor& a, const SparseTensor& b) {
  return binary(a, b, fk::BinaryOp::Div);
}
inline SparseTensor operator+(const SparseTensor& a, const fk::Tensor& b) {
  return binary(a, b, fk::BinaryOp::Add);
}
inline SparseTensor operator-(const SparseTensor& a, const fk::Tensor& b) {
  return binary(a, b, fk::BinaryOp::Sub);
}
inline SparseTensor operator*(const SparseTensor& a, const fk::Tensor& b) {
  return binary(a, b, fk::BinaryOp::Mul);
}
inline SparseTensor operator/(const SparseTensor& a, const fk::Tensor& b) {
  return binary(a, b, fk::BinaryOp::Div);
}

}  // namespace minkowski
