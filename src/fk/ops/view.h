#pragma once
// View ops: new geometry over the same storage (no elements touched; counted as
// view ops by the profiler). All are differentiable but as_strided (its
// elements may repeat), which refuses a tensor that needs a gradient. A shape
// may hold one -1, inferred from the others.
#include "fk/tensor.h"

namespace fk {

// view: a view, or an error where the layout forbids one (a strided tensor
// views where the new shape only splits or merges dims that are contiguous
// with each other, torch's rule); reshape: a view of a contiguous tensor,
// else a contiguous copy (callers write into it: never the source's storage).
Tensor reshape(const Tensor& t, const Dims& shape);
Tensor view(const Tensor& t, const Dims& shape);
Tensor transpose(const Tensor& t, int64_t d0, int64_t d1);
Tensor permute(const Tensor& t, const Dims& order);
Tensor expand(const Tensor& t, const Dims& shape);  // -1 keeps a size; stride 0 on broadcast dims
Tensor squeeze(const Tensor& t);                    // drops every size-1 dim
Tensor squeeze(const Tensor& t, int64_t dim);       // drops `dim` if it has size 1
Tensor unsqueeze(const Tensor& t, int64_t dim);
Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t length);
// Elements start, start+step, ... < end along dim (negative start/end count from the end; clamped).
Tensor slice(const Tensor& t, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
Tensor select(const Tensor& t, int64_t dim, int64_t index);  // removes dim
Tensor real(const Tensor& t);  // complex: view of the real parts; real: t itself
Tensor imag(const Tensor& t);  // complex only
Tensor as_strided(const Tensor& t, const Dims& shape, const Dims& strides, int64_t offset);

// The pure backward functions: g (the view's shape) as a gradient of the
// input, whose shape is in_shape (dtype in_dtype).
// reshape, view, squeeze and unsqueeze: g reshaped to in_shape.
Tensor reshape_backward(const Tensor& g, const Dims& in_shape);
// permute(t, order): g permuted back (transpose is its own inverse: transpose g).
Tensor permute_backward(const Tensor& g, const Dims& order);
// expand: g summed over the broadcast dims.
Tensor expand_backward(const Tensor& g, const Dims& in_shape);
// slice (narrow(d, s, n) is slice(d, s, s + n)) and select: zeros of
// in_shape with g written through the same view.
Tensor slice_backward(const Tensor& g, const Dims& in_shape, int64_t dim, int64_t start,
                      int64_t end, int64_t step = 1);
Tensor select_backward(const Tensor& g, const Dims& in_shape, int64_t dim, int64_t index);
// real / imag of a complex input: g as the real / imaginary parts of complex
// zeros (real of a real input is the identity).
Tensor real_backward(const Tensor& g, DType in_dtype);
Tensor imag_backward(const Tensor& g, DType in_dtype);

}  // namespace fk
