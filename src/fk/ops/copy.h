#pragma once
// Copies and conversions. All differentiable except the in-place copy_.
//   copy_(dst, src): src broadcast to dst's shape, converted to dst's dtype and
//     moved to dst's device; bumps dst's version. Complex -> real keeps the real part.
//     A source overlapping dst in memory is read as it was before the copy; a
//     dst with repeated elements (a stride-0 dim, as from expand) is an error.
//   contiguous / clone: a C-contiguous copy (contiguous returns the input itself
//     when it already is).
//   to_dtype / to_device: the input itself when nothing changes.
#include "fk/tensor.h"

namespace fk {

void copy_(Tensor& dst, const Tensor& src);
// Whether two views of one storage can touch a common byte (from their
// extents, so interleaved views count as overlapping), and whether they are
// the very same view (dtype, offset, shape and strides).
bool overlaps(const Tensor& a, const Tensor& b);
bool same_view(const Tensor& a, const Tensor& b);
// Whether several elements of t share memory (a stride-0 dim of size > 1, as
// from expand): such a tensor cannot be written element by element.
bool repeats_elements(const Tensor& t);
Tensor contiguous(const Tensor& t);
Tensor clone(const Tensor& t);
Tensor to_dtype(const Tensor& t, DType dtype);
Tensor to_device(const Tensor& t, Device device);

// The pure backward functions (contiguous and clone pass the gradient through):
// to_dtype: g cast back to the input's dtype (its real part for a real input);
// to_device: g moved back to the input's device.
Tensor to_dtype_backward(const Tensor& g, DType in_dtype);
Tensor to_device_backward(const Tensor& g, Device in_device);

}  // namespace fk
