#pragma once
// Sparse <-> dense conversion (differentiable w.r.t. the features), on the
// CPU or a CUDA device: to_dense makes the dense tensor on the features'
// device, to_sparse the features on the dense tensor's (the nonzero test runs
// there and only one flag per cell comes to the host, which builds the map).
#include <optional>
#include <vector>

#include "fk/tensor.h"
#include "minkowski/sparse_tensor.h"

namespace minkowski {

struct Dense {
  fk::Tensor dense;                     // B x C x s_1 x .. x s_D (D <= 6)
  std::vector<int32_t> min_coordinate;  // spatial coordinate of cell 0
  std::vector<int32_t> tensor_stride;
};

// Cell of row i: (x_a - min_a) / tensor_stride_a (contract_stride; min_a must
// then be a multiple of the stride) or x_a - min_a. min_coordinate defaults to
// the origin, in which case negative coordinates are an error; `shape` (D
// spatial sizes) defaults to the smallest that holds every row (required for
// an empty tensor, whose B is 0). B = max batch + 1. Differentiable w.r.t.
// the features (fk::index_add into zeros; f16/bf16 exact, since no two rows
// share a cell).
Dense to_dense(const SparseTensor& x, std::optional<std::vector<int32_t>> min_coordinate = {},
               std::optional<std::vector<int64_t>> shape = {}, bool contract_stride = true);

// Every cell of `dense` (B x C x s_1..s_D) with a nonzero channel (every cell
// when remove_zeros is false: ME's to_sparse_all) becomes a row at
// [b, min_a + cell_a * tensor_stride_a], in row-major cell order; min
// defaults to the origin (to_dense's min_coordinate inverts it).
// Differentiable w.r.t. the dense values (fk::index_select of the kept cells).
SparseTensor to_sparse(const fk::Tensor& dense, const std::vector<int32_t>& tensor_stride = {1},
                       std::shared_ptr<CoordinateManager> manager = nullptr,
                       std::optional<std::vector<int32_t>> min_coordinate = {},
                       bool remove_zeros = true);

}  // namespace minkowski
