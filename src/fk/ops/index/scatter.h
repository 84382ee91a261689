#pragma once
// Adding into a tensor at indexed positions: scatter_add (the adjoint of
// gather) and index_add (of index_select), out of place and in place;
// shapes, dtypes, devices and determinism in fk/ops/index.h.
#include <cstdint>
#include <vector>

#include "fk/tensor.h"

namespace fk {

Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                 double alpha = 1.0);
// The same with an index made on the host (a table of rows): its values are
// checked there against self.size(dim) (fk::Error at the call, naming the
// value and its position, on every device) and uploaded to self's device.
// Same values and gradients as the tensor form; not capturable in a CUDA
// graph (the upload is a host-to-device copy).
Tensor index_add(const Tensor& self, int64_t dim, const std::vector<int64_t>& index,
                 const Tensor& src, double alpha = 1.0);
Tensor& index_add_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                   double alpha = 1.0);
Tensor& scatter_add_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);

// The pure backward functions. The gradient w.r.t. self is g itself (cast to
// self's dtype); w.r.t. src it is what src added to: gather(g, dim, index)
// for scatter_add, alpha * index_select(g, dim, index) for index_add, each
// summed over the dims src was broadcast along and cast to src's dtype.
Tensor scatter_add_src_backward(const Tensor& g, int64_t dim, const Tensor& index,
                                const Dims& src_shape, DType src_dtype);
Tensor index_add_src_backward(const Tensor& g, int64_t dim, const Tensor& index,
                              const Dims& src_shape, DType src_dtype, double alpha = 1.0);

}  // namespace fk
