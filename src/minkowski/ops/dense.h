#pragma once
// Sparse <-> dense conversion (CPU, differentiable w.r.t. the features).
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

// Cell of row i: (x_a - min_a) / tensor_stride_a (contract_stride) or
// x_a - min_a. min_coordinate defaults to the origin, in which case negative
// coordinates are an error; `shape` (D spatial sizes) defaults to the smallest
// that holds every row (required for an empty tensor). B = max batch + 1.
Dense to_dense(const SparseTensor& x, std::optional<std::vector<int32_t>> min_coordinate = {},
               std::optional<std::vector<int64_t>> shape = {}, bool contract_stride = true);

// Every cell of `dense` (B x C x s_1..s_D) with a nonzero channel becomes a row
// at [b, cell_a * tensor_stride_a], in row-major cell order.
SparseTensor to_sparse(const fk::Tensor& dense, const std::vector<int32_t>& tensor_stride = {1},
                       std::shared_ptr<CoordinateManager> manager = nullptr);

}  // namespace minkowski
