#pragma once
// axis_products: a matrix applied along each spatial axis of a (C, m_0, ...,
// m_{d-1}) tensor, y = x x_1 M_0 x_2 M_1 ... (the tensor-times-matrix
// product of every axis). Separable maps of a grid are this, e.g. a resize
// (one interpolation matrix per axis: linear_resize in deep_decoder.h).
#include <vector>

#include "fk/tensor.h"

namespace nefi {

// x (C, m_0, ..., m_{d-1}); mats[a] (n_a, m_a), or undefined to leave axis a
// as it is -> y (C, n_0, ..., n_{d-1}). One permute and one matmul per
// axis; differentiable in x and the matrices (fk ops).
fk::Tensor axis_products(const fk::Tensor& x, const std::vector<fk::Tensor>& mats);

}  // namespace nefi
