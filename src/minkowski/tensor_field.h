#pragma once
// TensorField: features on continuous points, the bridge between point clouds
// and SparseTensors.
//
// Coordinates: N x (1+D) f32 or f64 tensor, column 0 the batch index (rounded
// to the nearest integer, half to even), then D >= 1 spatial coordinates. Features: N x C
// f32/f64/f16/bf16 tensor on the CPU or a CUDA device, may require grad; on a
// device, sparse() reduces them there (quantize_features) and slice()
// gathers there, with the same results as on the CPU. Coordinates on a CUDA
// device need the features on that device: sparse() then voxelizes them there
// (tensor_field_device.h: the same int32 rows as the host loop) and inserts
// the rows through the device coordinate manager (coordinate_manager.h), so
// the map, its inverse mapping and every kernel map are the host path's; an
// invalid row is the same fk::Error.
//
// sparse() voxelizes the points (voxel = floor(x / voxel_size) per axis, in
// f64 whatever the points' dtype: sparse_quantize divides f32 points in f32,
// as MinkowskiEngine's, so the two may differ by a voxel at grid-aligned f32
// points; the batch column is rounded; with a tensor stride t the voxel is then
// floor(voxel / t) * t and the map has stride t), inserts the voxels as a map
// in a CoordinateManager through SparseTensor's constructor (so rows follow
// the first occurrence of each voxel in input order, deterministically) and
// reduces the features of points sharing a voxel by the QuantizationMode
// (differentiable w.r.t. the features; RandomSubsample keeps a point drawn
// from the seed, the same for any thread count). The field remembers the point->voxel
// row mapping and the map it was quantized to; slice() uses it to gather the
// features of a SparseTensor back to every point: on that map directly, on
// any other map (coarser stride, other manager, other row order) by looking
// up each voxel's coordinate, floored to that map's stride.
//
// Memory: the field holds its two tensors plus, after sparse(), one int64 per
// point (the inverse mapping) and a reference to the manager.
#include <cstdint>
#include <memory>
#include <vector>

#include "fk/tensor.h"
#include "minkowski/coords/coordinate_manager.h"
#include "minkowski/sparse_tensor.h"

namespace minkowski {

class TensorField {
 public:
  TensorField() = default;
  TensorField(const fk::Tensor& features, const fk::Tensor& coordinates);

  bool defined() const { return features_.defined(); }
  const fk::Tensor& F() const { return features_; }
  const fk::Tensor& features() const { return features_; }
  const fk::Tensor& C() const { return coordinates_; }
  const fk::Tensor& coordinates() const { return coordinates_; }
  int dimension() const { return static_cast<int>(coordinates_.size(1)) - 1; }
  int64_t size() const { return features_.size(0); }
  int64_t channels() const { return features_.size(1); }

  // Quantizes the field. voxel_size: one positive value or one per spatial
  // axis (D values); tensor_stride: 1 or D positive values (voxels are floored
  // to multiples of it). The result lives in `manager` (a new one when null)
  // under a key of that stride; the field records that map and the inverse
  // mapping (the last call wins). seed: the draw of RandomSubsample.
  SparseTensor sparse(const std::vector<double>& voxel_size,
                      QuantizationMode mode = QuantizationMode::UnweightedAverage,
                      std::shared_ptr<CoordinateManager> manager = nullptr,
                      const std::vector<int32_t>& tensor_stride = {1},
                      uint64_t seed = kSubsampleSeed);
  SparseTensor sparse(double voxel_size = 1.0,
                      QuantizationMode mode = QuantizationMode::UnweightedAverage,
                      std::shared_ptr<CoordinateManager> manager = nullptr,
                      const std::vector<int32_t>& tensor_stride = {1},
                      uint64_t seed = kSubsampleSeed) {
    return sparse(std::vector<double>{voxel_size}, mode, std::move(manager), tensor_stride, seed);
  }
  // Voxel size 1 (coordinates already in voxel units), as ME's
  // field.sparse(quantization_mode=...).
  SparseTensor sparse(QuantizationMode mode, std::shared_ptr<CoordinateManager> manager = nullptr) {
    return sparse(1.0, mode, std::move(manager));
  }

  // The features of `s` at every point: N x C (s.channels()). On the map this
  // field was last quantized to, row i = row inverse_mapping()[i] of s.F().
  // On any other map (e.g. after strided convolutions, or the same voxels in
  // another manager or row order) with a tensor stride that is a multiple of
  // the field's, point i gets the row holding its voxel floored to that stride
  // (ME's composition of the inverse mapping with a stride map); every voxel
  // must be found there, otherwise fk::Error. Differentiable w.r.t. s.F()
  // (index_select, whose backward is an ordered index_add, so deterministic).
  fk::Tensor slice(const SparseTensor& s) const;
  // Point row -> row of `s` that slice(s) uses (a copy of inverse_mapping() on
  // the field's own map).
  std::vector<int64_t> inverse_mapping(const SparseTensor& s) const;
  // The same points and quantization record with other features (N rows).
  TensorField with_features(const fk::Tensor& features) const;

  // Voxel row of each point (empty before sparse()).
  const std::vector<int64_t>& inverse_mapping() const { return inverse_; }
  // The map of the last sparse() (manager null before sparse()).
  const MapKey& quantized_key() const { return key_; }
  const std::shared_ptr<CoordinateManager>& quantized_manager() const { return manager_; }

 private:
  fk::Tensor features_, coordinates_;
  std::vector<int64_t> inverse_;
  std::shared_ptr<CoordinateManager> manager_;
  MapKey key_;
};

}  // namespace minkowski
