#pragma once
// Selecting elements by index: index_select (whole slices) and gather (one
// element per index); shapes, dtypes and devices in fk/ops/index.h.
#include <cstdint>
#include <vector>

#include "fk/tensor.h"

namespace fk {

Tensor index_select(const Tensor& t, int64_t dim, const Tensor& index);
// The same with an index made on the host (a table of positions): its values
// are checked there against t.size(dim) and it is uploaded to t's device, so
// on CUDA neither this op nor its backward reads anything back, and a bad
// value is an fk::Error at the call (the tensor form's check runs in its
// kernel and reports at the next synchronization: fk/cuda/index_errors.h).
// Same values and gradient as the tensor form.
// The upload is a host-to-device copy: a step using this form is not
// capturable in a CUDA graph (a replay would reuse the captured index).
Tensor index_select(const Tensor& t, int64_t dim, const std::vector<int64_t>& index);
Tensor gather(const Tensor& t, int64_t dim, const Tensor& index);
// The same with an index made on the host: `index` holds index_shape's
// values in row-major order, checked there against t.size(dim) (fk::Error at
// the call, naming the value and its flat position, on every device) and
// uploaded to t's device. Same values and gradient as the tensor form. Like
// index_select's host-index form, not capturable in a CUDA graph (the upload
// is a host-to-device copy).
Tensor gather(const Tensor& t, int64_t dim, const std::vector<int64_t>& index,
              const Dims& index_shape);

// The pure backward functions (gradients of the data operand only).
// index_select: grad_t = index_add(zeros(t_shape), dim, index, g).
Tensor index_select_backward(const Tensor& g, const Dims& t_shape, int64_t dim,
                             const Tensor& index);
// gather: grad_t = scatter_add of g into zeros, reduced over dims t broadcast along.
Tensor gather_backward(const Tensor& g, const Dims& t_shape, int64_t dim, const Tensor& index);

}  // namespace fk
