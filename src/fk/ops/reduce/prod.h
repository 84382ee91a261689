#pragma once
// Product over chosen dims (the family's conventions: fk/ops/reduce.h).
// Reducing over no elements gives 1; i32/i64/bool inputs give i64.
#include "fk/tensor.h"

namespace fk {

// Gradient computed from products of the other elements (exact with zeros).
Tensor prod(const Tensor& t, const Dims& dims = {}, bool keepdim = false);

// The pure backward: g (prod's output shape) times the product of the other
// elements of each reduced run (conjugated for complex x), without division;
// x is prod's input (f32, f64, c64 or c128).
Tensor prod_backward(const Tensor& g, const Tensor& x, const Dims& dims = {}, bool keepdim = false);

}  // namespace fk
