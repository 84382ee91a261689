#pragma once
// Indexing ops: select, gather and scatter along one dimension, and boolean
// masks. Every op is differentiable w.r.t. its float/complex data operands;
// indices and masks never receive gradients.
//
// Devices: CPU and CUDA; indices, masks and sources must be on the indexed
// tensor's device. On CUDA, indices are range-checked by two device
// reductions and one host read before any kernel writes; scatter_add and
// index_add use the sort-based deterministic scatter (each target adds its
// sources in the CPU's order: bitwise reproducible); masked_select reads the
// mask back to the host (its length sizes the output) and gathers with the
// positions found there.
//
// Indices are i32 or i64 tensors. Negative indices are an error (they are not
// wrapped), as is any index >= the size of the indexed dimension; the error
// names the offending value and the valid range. Indices are validated before
// any element is written, so a failed call leaves in-place targets untouched.
//
// Shapes (d = dim):
//   index_select(t, d, idx)     idx 1-D (or 0-dim) of length K; out = t with size K at d.
//   gather(t, d, idx)           idx has t's rank; NumPy take_along_axis semantics:
//                               out[..i..] = t[.., idx[..i..], ..] with the index
//                               taking the place of coordinate d. Sizes other than d
//                               broadcast between t and idx; out has idx's size at d.
//   scatter_add(self, d, idx, src)  the adjoint of gather: out = self, then
//                               out[.., idx[p], ..] += src[p] for every p of the
//                               "scatter shape" S (self's shape with idx's size at
//                               d). idx and src broadcast to S.
//   index_add(self, d, idx, src, alpha)  idx 1-D of length K; src broadcasts to
//                               self's shape with size K at d; out = self, then
//                               out[.., idx[k], ..] += alpha * src[.., k, ..].
//   masked_fill(t, mask, v)     mask bool, broadcast to t's shape.
//   masked_select(t, mask)      t and mask broadcast together; out is 1-D, the
//                               selected elements in row-major order.
//
// Dtypes: index_select, gather, masked_fill and masked_select move elements of
// any dtype. scatter_add and index_add add in i32, i64, f32, f64, c64, c128
// (f16/bf16 accumulate in f32 and are rounded once at the end); the result has
// promote(self, src)'s dtype.
//
// Determinism: scatter_add and index_add give bit-identical results for any
// thread count. Threads split the work by output slices that no other thread
// touches, and each output element receives its additions in ascending source
// order, so no two threads ever add into the same element.
//
// Memory: each out-of-place op allocates its output; non-contiguous inputs to
// index_select and index_add are first copied to contiguous buffers, and
// indices are converted to a contiguous i64 copy (validated in one pass).
//
// In-place forms (index_add_, scatter_add_, masked_fill_) write `self` (any
// layout), keep its dtype, bump its version and refuse tensors autograd would
// have to record (use the out-of-place forms for gradients).
#include <cstdint>

#include "fk/tensor.h"

namespace fk {

Tensor index_select(const Tensor& t, int64_t dim, const Tensor& index);
Tensor gather(const Tensor& t, int64_t dim, const Tensor& index);
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                 double alpha = 1.0);
Tensor masked_fill(const Tensor& t, const Tensor& mask, double value);
Tensor masked_select(const Tensor& t, const Tensor& mask);

Tensor& index_add_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                   double alpha = 1.0);
Tensor& scatter_add_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
Tensor& masked_fill_(Tensor& self, const Tensor& mask, double value);

// The pure backward functions (gradients of the data operands only).
// index_select: grad_t = index_add(zeros(t_shape), dim, index, g).
Tensor index_select_backward(const Tensor& g, const Dims& t_shape, int64_t dim,
                             const Tensor& index);
// gather: grad_t = scatter_add of g into zeros, reduced over dims t broadcast along.
Tensor gather_backward(const Tensor& g, const Dims& t_shape, int64_t dim, const Tensor& index);
// masked_select: g (1-D) scattered back into zeros of the broadcast shape, reduced to t_shape.
Tensor masked_select_backward(const Tensor& g, const Tensor& mask, const Dims& t_shape);

}  // namespace fk
