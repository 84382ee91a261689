#pragma once
// Coordinate-list sparse matrix times dense matrix (ME's spmm / spmm_average):
//   out (M x C) = A (M x K) * dense (K x C),  A[rows[p], cols[p]] += values[p]
// (duplicate entries add up; an empty list gives zeros).
//
// Inputs: rows, cols: 1-D i32/i64 tensors of nnz entries in [0, M) and
// [0, K), on any device (read to the host, where the list is grouped);
// values: 1-D, nnz entries, any floating dtype; dense: K x C, f64, f32, f16
// or bf16. Computed in f64 when dense or values is f64, else in f32 (16-bit
// inputs accumulate in f32); the result has dense's dtype.
//
// Devices: dense on the CPU or a CUDA device, values (and the gradient) on
// the same one (fk::Error otherwise); on a CUDA device the products run there
// (spmm_device.h) in the CPU's order, so results match the CPU's.
//
// Differentiable w.r.t. values and dense (SpmmBackward calls spmm_backward):
//   grad_dense = A^T grad  (the same kernel on the transposed list),
//   grad_values[p] = <grad[rows[p]], dense[cols[p]]>.
// spmm_average uses values 1 / (entries in the row) and is differentiable
// w.r.t. dense only.
//
// Algorithm: the list is grouped by output row with a stable counting sort
// (entries of one row keep their input order), then each output row is
// accumulated by one thread in that order: bit-identical for any thread count.
// Memory: the grouping (int64 per entry and per row + 1) and compute-dtype
// copies of non-conforming inputs.
#include <array>
#include <cstdint>
#include <vector>

#include "fk/tensor.h"

namespace minkowski {

// A validated coordinate list.
struct CooList {
  std::vector<int64_t> rows, cols;
  int64_t m = 0, k = 0;
};
CooList coo_list(const fk::Tensor& rows, const fk::Tensor& cols, std::array<int64_t, 2> size);
CooList coo_list(std::vector<int64_t> rows, std::vector<int64_t> cols, std::array<int64_t, 2> size);

// The pure pair.
fk::Tensor spmm_forward(const CooList& a, const fk::Tensor& values, const fk::Tensor& dense);
struct SpmmGrads {
  fk::Tensor values, dense;  // undefined where not asked for
};
SpmmGrads spmm_backward(const fk::Tensor& grad, const CooList& a, const fk::Tensor& values,
                        const fk::Tensor& dense, bool need_values, bool need_dense);

// Forward + autograd node.
fk::Tensor spmm(const CooList& a, const fk::Tensor& values, const fk::Tensor& dense);
fk::Tensor spmm(const fk::Tensor& rows, const fk::Tensor& cols, const fk::Tensor& values,
                std::array<int64_t, 2> size, const fk::Tensor& dense);
fk::Tensor spmm_average(const fk::Tensor& rows, const fk::Tensor& cols, std::array<int64_t, 2> size,
                        const fk::Tensor& dense);

}  // namespace minkowski
