#pragma once
// Boolean masks: masked_fill (out of place and in place) and masked_select;
// shapes, dtypes and devices in fk/ops/index.h.
#include "fk/tensor.h"

namespace fk {

Tensor masked_fill(const Tensor& t, const Tensor& mask, double value);
Tensor masked_select(const Tensor& t, const Tensor& mask);
Tensor& masked_fill_(Tensor& self, const Tensor& mask, double value);

// The pure backward functions (gradients of the data operand only).
// masked_fill: g with the filled positions zeroed.
Tensor masked_fill_backward(const Tensor& g, const Tensor& mask);
// masked_select: g (1-D) scattered back into zeros of the broadcast shape, reduced to t_shape.
Tensor masked_select_backward(const Tensor& g, const Tensor& mask, const Dims& t_shape);

}  // namespace fk
