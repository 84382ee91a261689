#pragma once
// Selecting elements by index: index_select (whole slices) and gather (one
// element per index); shapes, dtypes and devices in fk/ops/index.h.
#include <cstdint>

#include "fk/tensor.h"

namespace fk {

Tensor index_select(const Tensor& t, int64_t dim, const Tensor& index);
Tensor gather(const Tensor& t, int64_t dim, const Tensor& index);

// The pure backward functions (gradients of the data operand only).
// index_select: grad_t = index_add(zeros(t_shape), dim, index, g).
Tensor index_select_backward(const Tensor& g, const Dims& t_shape, int64_t dim,
                             const Tensor& index);
// gather: grad_t = scatter_add of g into zeros, reduced over dims t broadcast along.
Tensor gather_backward(const Tensor& g, const Dims& t_shape, int64_t dim, const Tensor& index);

}  // namespace fk
