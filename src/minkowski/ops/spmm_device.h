#pragma once
// The coordinate-list products of spmm (spmm.h) on a CUDA device, and so of
// interpolation and splatting, which are spmm. spmm_forward and
// spmm_backward come here when the dense matrix is on a CUDA device, with the
// values on that device too and both already in the compute dtype (f32 or
// f64) and contiguous; the callers convert back, as on the CPU.
//
// Same sums in the same order as the CPU: the list is grouped by output row
// on the host (spmm.cpp's stable counting sort, uploaded per call: three
// int64 per entry, one per row), then one device thread per (row, channel)
// adds its entries in that order; a value gradient is one thread per entry
// summing over the channels in order. Products are rounded before the adds,
// as the CPU computes them, so results equal the CPU's up to the last-bit
// differences of f32 arithmetic the two may not share (none in practice: no
// atomics, no reordering). No host synchronization but fk::cuda::after_op.
//
// CUDA builds implement these in minkowski/cuda/spmm_dispatch.cpp; CPU-only
// builds in spmm_device_stub.cpp, as an fk::Error that says so.
#include <cstdint>
#include <vector>

#include "fk/tensor.h"

namespace minkowski {

// out (begin.size() - 1 rows x in.size(1)): row r = the sum over e in
// [begin[r], begin[r + 1]) of values[order[e]] * in[from[order[e]]].
fk::Tensor device_spmm_rows(const std::vector<int64_t>& begin, const std::vector<int64_t>& order,
                            const std::vector<int64_t>& from, const fk::Tensor& values,
                            const fk::Tensor& in);
// out[p] = <grad[rows[p]], dense[cols[p]]> for every entry p.
fk::Tensor device_spmm_value_grads(const std::vector<int64_t>& rows,
                                   const std::vector<int64_t>& cols, const fk::Tensor& grad,
                                   const fk::Tensor& dense);

}  // namespace minkowski
