#pragma once
// Pruning: the rows of a sparse tensor where a boolean mask is true.
//
// The kept rows keep x's row order and form a NEW map of x's manager (same
// tensor stride, a fresh tag), so later ops on the pruned tensor never mix its
// rows with x's. An all-false mask gives a valid empty tensor (0 x C), not an
// error; a mask of the wrong length or dtype is an fk::Error.
//
// Differentiable w.r.t. the features: the forward is fk::index_select of the
// kept rows and its backward fk::index_select_backward (the gradient rows added
// back into zeros at the kept rows: pruned rows get 0), both fk's pure
// forward/backward pair with its node; no kernel here. Dtypes: any feature
// dtype SparseTensor holds. Devices: CPU or CUDA features, the mask on either
// (a device mask is read back to the host, where the map is built: one
// sync). Deterministic (a gather). Memory: the kept rows' features and
// coordinates, one int64 per kept row.
#include <cstdint>
#include <vector>

#include "fk/tensor.h"
#include "minkowski/sparse_tensor.h"

namespace minkowski {

// mask: bool tensor of x.size() entries (shape (N) or (N, 1)), on any device.
SparseTensor prune(const SparseTensor& x, const fk::Tensor& mask);
SparseTensor prune(const SparseTensor& x, const std::vector<bool>& mask);

// The rows a mask keeps, ascending; `n` is the expected mask length.
std::vector<int64_t> kept_rows(const fk::Tensor& mask, int64_t n);

}  // namespace minkowski
