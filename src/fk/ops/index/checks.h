#pragma once
// Argument checks and helpers shared by the indexing ops (index/*.cpp).
#include <cstdint>
#include <vector>

#include "fk/cuda/kernels.h"
#include "fk/tensor.h"

namespace fk::index_detail {

// An index ready for an op's kernel: its values as a contiguous i64 tensor
// on t's device, and, on CUDA, where the kernel records an out-of-range value.
struct CheckedIndex {
  Tensor idx;
  cuda::IndexCheck check;  // {} on the CPU, or where the values were checked already
};
// The index with every value in [0, bound): on the CPU checked here, before
// any element is written; on CUDA by the op's kernel into the device's record
// for `op` (fk/cuda/index_errors.h: no host read, the fk::Error comes at the
// next synchronization), or, where the device has no record, by two device
// reductions and one host read here.
CheckedIndex checked_index(const Tensor& t, const Tensor& index, int64_t bound, int dim,
                           const char* op);
// Every value of a host-made index in [0, bound), checked on the host; else
// fk::Error naming the value and its position.
void check_host_index(const std::vector<int64_t>& index, int64_t bound, int dim, const char* op);
// An index whose values were checked on the host before its upload
// (check_host_index): converted as checked_index converts it, its values not
// read again, so on CUDA nothing is read back (the device kernels leave an
// out-of-range position untouched in any case: fk/cuda/kernels.h's IndexCheck).
Tensor prechecked_index(const Tensor& t, const Tensor& index, const char* op);
// index_add(self, dim, index, src) with a prechecked index: the backward of
// the host-index index_select, which stays free of host reads on a device.
Tensor index_add_prechecked(const Tensor& self, int64_t dim, const Tensor& index,
                            const Tensor& src);
// `what` (an index, mask or source) must live on t's device.
void check_device(const Tensor& t, const Tensor& other, const char* op, const char* what);
void check_broadcasts_to(const Tensor& t, const Dims& shape, const char* op, const char* what);
// An in-place op records no node: neither operand may need a gradient.
void check_inplace(const Tensor& self, const Tensor& other, const char* op);
// Reduces a gradient to an input's shape and dtype (real part for real inputs).
Tensor grad_for(const Tensor& g, const Dims& shape, DType dtype);
// A copy of `self` in dtype `ct` (contiguous), the buffer scatter/index add write.
Tensor accumulator_copy(const Tensor& self, DType ct);

}  // namespace fk::index_detail
