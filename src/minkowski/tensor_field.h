#pragma once
// TensorField: features on continuous points, the bridge between point clouds
// and SparseTensors.
//
// Coordinates: N x (1+D) f32 or f64 CPU tensor, column 0 the batch index
// (must hold integers), then D >= 1 spatial coordinates. Features: N x C
// f32/f64/f16/bf16 CPU tensor, may require grad.
//
// sparse() voxelizes the points (voxel = floor(x / voxel_size) per axis, the
// batch column is kept as is), inserts the voxels as a stride-1 map in a
// CoordinateManager through SparseTensor's constructor (so rows follow the
// first occurrence of each voxel in input order, deterministically) and
// reduces the features of points sharing a voxel by the QuantizationMode
// (differentiable w.r.t. the features). The field remembers the point->voxel
// row mapping and the map it was quantized to; slice() uses it to gather the
// features of a SparseTensor on that map back to every point.
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
  // axis (D values). The result lives in `manager` (a new one when null) under
  // the stride-1 key; the field records that map and the inverse mapping (the
  // last call wins).
  SparseTensor sparse(const std::vector<double>& voxel_size,
                      QuantizationMode mode = QuantizationMode::UnweightedAverage,
                      std::shared_ptr<CoordinateManager> manager = nullptr);
  SparseTensor sparse(double voxel_size = 1.0,
                      QuantizationMode mode = QuantizationMode::UnweightedAverage,
                      std::shared_ptr<CoordinateManager> manager = nullptr) {
    return sparse(std::vector<double>{voxel_size}, mode, std::move(manager));
  }

  // The features of `s` at every point: N x C (s.channels()), row i = row
  // inverse_mapping()[i] of s.F(). Differentiable w.r.t. s.F() (index_select,
  // whose backward is an ordered index_add, so deterministic). `s` must live
  // on the map this field was last quantized to, or on any map whose
  // coordinates are identical row for row (e.g. the same voxels in another
  // manager, or a stride-preserving op's output map); otherwise fk::Error.
  fk::Tensor slice(const SparseTensor& s) const;

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
