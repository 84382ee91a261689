#pragma once
// softmax and log_softmax along one dim, shifted by the max (no overflow);
// same shape as the input (the family's conventions: fk/ops/reduce.h). Real
// dtypes only.
#include <cstdint>

#include "fk/tensor.h"

namespace fk {

Tensor softmax(const Tensor& t, int64_t dim);
Tensor log_softmax(const Tensor& t, int64_t dim);

// The pure backward functions, from the forward's result `out` (f32 or f64):
// softmax: out (g - sum(g out)); log_softmax: g - exp(out) sum(g).
Tensor softmax_backward(const Tensor& g, const Tensor& out, int64_t dim);
Tensor log_softmax_backward(const Tensor& g, const Tensor& out, int64_t dim);

}  // namespace fk
