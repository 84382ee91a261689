#pragma once
// log(sum(exp(x))) over chosen dims (the family's conventions:
// fk/ops/reduce.h). Real dtypes only.
#include "fk/tensor.h"

namespace fk {

// Computed as m + log(sum(exp(x - m))) with m the max.
Tensor logsumexp(const Tensor& t, const Dims& dims, bool keepdim = false);

// The pure backward: g exp(x - out), `out` the forward's result.
Tensor logsumexp_backward(const Tensor& g, const Tensor& x, const Tensor& out, const Dims& dims,
                          bool keepdim = false);

}  // namespace fk
