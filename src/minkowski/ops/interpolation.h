#pragma once
// Features of a SparseTensor at continuous points (ME's
// MinkowskiInterpolation / SparseTensor.features_at_coordinates, with the
// fork's renormalization).
//
// points: Q x (1+D) f32/f64 CPU tensor, column 0 the batch index (rounded to
// the nearest integer, half to even), then D spatial coordinates in the units of x's coordinates.
// With ts the tensor stride on axis j, a point q has 2^D corners
//   corner_j = floor(q_j / ts_j) * ts_j + bit_j * ts_j   (same batch),
//   weight    = prod_j (1 - |q_j - corner_j| / ts_j).
//   Multilinear  out[q] = sum over the corners present in x of weight * F.
//                Where some corners are absent and the present weights sum to
//                s > 0, out[q] is divided by s: a point at the edge of the
//                occupied region gets the average of the corners it has, not a
//                value shrunk toward 0 (MinkowskiEngine before v0.5.8 returned
//                the shrunk value: issues #477, #363, #383). A point with every
//                corner present is not touched (its weights already sum to 1);
//                a point with no present corner (or only zero weights) gets 0.
//   Nearest      out[q] = F of the present corner closest to q (Euclidean, in
//                units of ts; ties: the corner with the lowest bit pattern,
//                i.e. toward -inf), 0 when none is present.
//
// Differentiable w.r.t. x.F() (not the points): the weights form a coordinate
// list and the op is spmm (spmm.h) of it with x.F(), so its backward is the
// transposed spmm. Devices: the weights are built on the host (with the map),
// from points on either side (device points, e.g. a field's device
// coordinates, are read once: Q x (1+D) values); x.F() may be on a CUDA
// device, where the spmm and
// its backward run and the result lands. Dtypes: features f64, f32, f16, bf16 (16-bit accumulated
// in f32, weights kept in f32/f64); result in the features' dtype. D <= 16.
// Deterministic for any thread count. Memory: up to 2^D entries (int64 x 2 +
// weight) per point.
#include <cstdint>
#include <vector>

#include "fk/tensor.h"
#include "minkowski/ops/spmm.h"
#include "minkowski/sparse_tensor.h"
#include "minkowski/tensor_field.h"

namespace minkowski {

enum class InterpolationMode { Multilinear, Nearest };

struct InterpolationWeights {
  CooList list;                // rows: point, cols: row of x
  std::vector<double> weight;  // one per entry, renormalized
};
InterpolationWeights interpolation_weights(const SparseTensor& x, const fk::Tensor& points,
                                           InterpolationMode mode);

// Q x C features at the points.
fk::Tensor interpolate(const SparseTensor& x, const fk::Tensor& points,
                       InterpolationMode mode = InterpolationMode::Multilinear);
// The same at a field's points (its coordinates read in x's units, i.e. a
// field quantized with voxel size 1), as a field on those points.
TensorField interpolate(const SparseTensor& x, const TensorField& field,
                        InterpolationMode mode = InterpolationMode::Multilinear);

}  // namespace minkowski
