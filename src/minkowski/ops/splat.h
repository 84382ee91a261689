#pragma once
// Splatting (ME's TensorField.splat()): the features of continuous points
// spread onto the grid, the transpose of multilinear interpolation.
//
// points: N x (1+D) f32/f64 CPU tensor, column 0 the batch index (rounded to
// the nearest integer, half to even); features: N x C. Each point q gives each of its 2^D corners c
// (multilinear_corners.h: corner_j = floor(q_j/ts_j)*ts_j + bit_j*ts_j,
// w_c(q) = prod_j (1 - |q_j - c_j| / ts_j)) the share w_c(q) f_q:
//   out[c] = sum over the points q with corner c of w_c(q) * f_q.
// The output map holds every corner of every point, zero weights included (a
// point on a voxel still adds the voxels above it, as ME's corner generation
// does), in order of first occurrence (point order, then corner bits), and is
// inserted as a new map of tensor stride ts. The weights are the raw ones:
// every corner of every point is in the map, so interpolation (interpolation.h)
// at the same points on this map is never renormalized and is exactly the
// transpose of the splat (the dot test <interp(x), y> = <x, splat(y)>).
//
// Differentiable w.r.t. the features (not the points): the weights form a
// coordinate list and the op is spmm (spmm.h), so the backward is the
// transposed spmm, grad_f[q] = sum_c w_c(q) grad[c]. Devices: the map is built
// on the host, from points on either side (device points are read once); the
// features may be on a CUDA device, where the
// spmm and its backward run and the output's features land. Dtypes: features f64,
// f32, f16, bf16 (16-bit accumulated in f32; weights f64 for f64 features,
// else f32); result in the features' dtype. D <= 16. Deterministic for any
// thread count (spmm accumulates each output row in list order). Memory: the
// N * 2^D corner coordinates while inserting, then 2^D entries (int64 x 2 +
// weight) per point.
#include <cstdint>
#include <memory>
#include <vector>

#include "fk/tensor.h"
#include "minkowski/coords/coordinate_manager.h"
#include "minkowski/ops/spmm.h"
#include "minkowski/sparse_tensor.h"
#include "minkowski/tensor_field.h"

namespace minkowski {

// The splat's topology: the output map and the (map row, point) list.
struct SplatMap {
  std::shared_ptr<CoordinateManager> manager;
  MapKey key;
  CooList list;       // rows: row of the map, cols: point
  fk::Tensor weight;  // f64, one per entry (zero weights left out)
};
// tensor_stride: 1 or D positive values; manager: a new one when null (its
// dimension must be D).
SplatMap splat_map(const fk::Tensor& points, const std::vector<int32_t>& tensor_stride = {1},
                   std::shared_ptr<CoordinateManager> manager = nullptr);

// The pure pair: M x C (M rows of the map) from N x C features, and back.
fk::Tensor splat_forward(const SplatMap& map, const fk::Tensor& features);
fk::Tensor splat_backward(const fk::Tensor& grad, const SplatMap& map, const fk::Tensor& features);

// Forward + autograd node: the field's features splatted onto a new map.
SparseTensor splat(const TensorField& field, const std::vector<int32_t>& tensor_stride = {1},
                   std::shared_ptr<CoordinateManager> manager = nullptr);

}  // namespace minkowski
