#pragma once
// p-norms over chosen dims (the family's conventions: fk/ops/reduce.h).
#include "fk/tensor.h"

namespace fk {

// p-norm for any p > 0 (p = 2 by default; p = inf for the max-abs norm).
// Complex inputs give real norms. Where the derivative is undefined (x = 0,
// or a zero norm) the subgradient 0 is used.
Tensor norm(const Tensor& t, double p = 2.0, const Dims& dims = {}, bool keepdim = false);

// The pure backward: g sgn(x) (|x| / out)^(p-1), with `out` the forward's
// result (for p = inf, g split evenly among the elements attaining the max);
// x of an inexact dtype (f32, f64, c64, c128).
Tensor norm_backward(const Tensor& g, const Tensor& x, const Tensor& out, double p = 2.0,
                     const Dims& dims = {}, bool keepdim = false);

}  // namespace fk
