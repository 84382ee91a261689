#pragma once
// Sum and mean over chosen dims (the family's conventions: fk/ops/reduce.h).
// Reducing over no elements gives 0 (sum); i32/i64/bool inputs give i64 from
// sum and f32 from mean.
#include "fk/tensor.h"

namespace fk {

Tensor sum(const Tensor& t, const Dims& dims = {}, bool keepdim = false);
Tensor mean(const Tensor& t, const Dims& dims = {}, bool keepdim = false);

// The pure backward functions: g (the forward's output shape) broadcast back
// to the input's shape `in_shape`, contiguous; mean's divided by the number of
// reduced elements.
Tensor sum_backward(const Tensor& g, const Dims& in_shape, const Dims& dims = {},
                    bool keepdim = false);
Tensor mean_backward(const Tensor& g, const Dims& in_shape, const Dims& dims = {},
                     bool keepdim = false);

}  // namespace fk
