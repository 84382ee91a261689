#pragma once
// What the elementwise binary, ternary and in-place ops share: the device
// check of their operands, the reduction of a gradient to an operand and the
// conjugation of an operand in a gradient.
#include "fk/autograd.h"
#include "fk/ops/binary/binary.h"
#include "fk/ops/unary.h"
#include "fk/ops/view.h"
#include "fk/tensor.h"

namespace fk::detail {

inline void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
  FK_CHECK(a.device() == b.device(), op, "operands on one device",
           a.device().str() + " and " + b.device().str());
}

// Reduces a gradient to an operand's shape and dtype (real part for real operands).
inline Tensor grad_for(const Tensor& g, const OperandInfo& operand) {
  Tensor r = autograd::sum_to(g, operand.shape);
  if (is_complex(r.dtype()) && !is_complex(operand.dtype)) r = real(r);
  return r.dtype() == operand.dtype ? r : r.to(operand.dtype);
}

// conj(x) for a complex x, x itself for a real one: the gradient formulas
// conjugate their operands, and conj of a real tensor is an elementwise copy
// (a deep decoder step made 31 of them over 32 MiB activations).
inline Tensor conj_if_complex(const Tensor& x) {
  return is_complex(x.dtype()) ? conj(x) : x;
}

}  // namespace fk::detail
