#pragma once
// The ordered reductions: largest / smallest values over dims, and values with
// indices, or indices alone, along one dim (the family's conventions:
// fk/ops/reduce.h). Real dtypes only; reducing over no elements is an error.
#include <cstdint>
#include <utility>

#include "fk/tensor.h"

namespace fk {

// Largest / smallest values (NaN propagates; ties: the gradient is split evenly among them).
Tensor amax(const Tensor& t, const Dims& dims = {}, bool keepdim = false);
Tensor amin(const Tensor& t, const Dims& dims = {}, bool keepdim = false);
// Values and i64 indices (first occurrence) along one dimension; the gradient
// flows to the indexed element.
std::pair<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim = false);
std::pair<Tensor, Tensor> min(const Tensor& t, int64_t dim, bool keepdim = false);
Tensor argmax(const Tensor& t, int64_t dim, bool keepdim = false);
Tensor argmin(const Tensor& t, int64_t dim, bool keepdim = false);

// The pure backward of amax and of amin: g split evenly among the elements of
// x equal to the result `out` (both of the forward's output shape).
Tensor amax_backward(const Tensor& g, const Tensor& x, const Tensor& out, const Dims& dims = {},
                     bool keepdim = false);
// The pure backward of max and of min along `dim`: g written at the positions
// `indices` names, zeros elsewhere (shape in_shape).
Tensor max_backward(const Tensor& g, const Tensor& indices, const Dims& in_shape, int64_t dim,
                    bool keepdim = false);

}  // namespace fk
