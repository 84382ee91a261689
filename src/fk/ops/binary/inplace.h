#pragma once
// In-place elementwise ops: self keeps its shape and dtype, the other operands
// broadcast to it, and the result must be writable into self (can_write_into
// in fk/dtype.h: a lower kind, or floating/complex of any width, rounded; an
// f32 self takes an f64 operand, an integer self no wider integer). Each bumps
// self's version and refuses tensors autograd would have to record (use the
// out-of-place op). Same-dtype f32/f64 CPU operands run one fused kernel
// writing self; anything else computes out of place and copies back.
#include "fk/tensor.h"

namespace fk {

Tensor& add_(Tensor& self, const Tensor& other, double alpha = 1.0);
Tensor& sub_(Tensor& self, const Tensor& other, double alpha = 1.0);
Tensor& mul_(Tensor& self, const Tensor& other);
Tensor& div_(Tensor& self, const Tensor& other);
Tensor& mul_(Tensor& self, double s);
Tensor& addcmul_(Tensor& self, const Tensor& t1, const Tensor& t2, double value = 1.0);
Tensor& addcdiv_(Tensor& self, const Tensor& t1, const Tensor& t2, double value = 1.0);
Tensor& lerp_(Tensor& self, const Tensor& end, double w);
Tensor& lerp_(Tensor& self, const Tensor& end, const Tensor& w);

}  // namespace fk
