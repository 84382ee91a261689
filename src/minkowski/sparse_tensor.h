#pragma once
// SparseTensor: features (N x C, f32/f64/f16/bf16 fk tensor, may require grad)
// on the coordinates of one coordinate map (int32 [batch, x_1..x_D], any
// D >= 1, negatives allowed, every spatial coordinate a multiple of the tensor
// stride), held by a shared CoordinateManager. Row i of the features is row i
// of the map.
//
// Building from raw coordinates deduplicates them (quantization): the first
// occurrence of each coordinate is kept in input order, and the features of
// duplicates are reduced by the QuantizationMode; unique_index() and
// inverse_mapping() relate input rows and map rows.
//
// Coordinates must be an int32 CPU tensor N x (1+D) (float coordinates are an
// error: quantize them with sparse_quantize first).
#include <cstdint>
#include <memory>
#include <vector>

#include "fk/tensor.h"
#include "minkowski/coords/coordinate_manager.h"

namespace minkowski {

enum class QuantizationMode {
  RandomSubsample,    // keep one row per coordinate (deterministically the first)
  UnweightedAverage,  // mean of the duplicates
  UnweightedSum,      // sum of the duplicates
  MaxPool,            // per-channel max of the duplicates
};

// Reduces rows of `features` (N x C) to M rows by `inverse` (map row of each
// input row) and `unique_rows` (first input row of each map row). Differentiable.
fk::Tensor quantize_features(const fk::Tensor& features, const std::vector<int64_t>& unique_rows,
                             const std::vector<int64_t>& inverse, QuantizationMode mode);

class TensorField;

class SparseTensor {
 public:
  SparseTensor() = default;
  // Inserts `coordinates` into `manager` (a new one of dimension C.size(1)-1
  // when null) and quantizes duplicates.
  SparseTensor(const fk::Tensor& features, const fk::Tensor& coordinates,
               const std::vector<int32_t>& tensor_stride = {1},
               QuantizationMode mode = QuantizationMode::RandomSubsample,
               std::shared_ptr<CoordinateManager> manager = nullptr);
  // Features on an existing map.
  SparseTensor(const fk::Tensor& features, const MapKey& key,
               std::shared_ptr<CoordinateManager> manager);

  bool defined() const { return manager_ != nullptr; }
  const fk::Tensor& F() const { return features_; }
  const fk::Tensor& features() const { return features_; }
  fk::Tensor C() const { return manager_->coordinates(key_); }
  const MapKey& key() const { return key_; }
  const std::vector<int32_t>& tensor_stride() const { return key_.tensor_stride; }
  int dimension() const { return manager_->dimension(); }
  int64_t size() const { return features_.size(0); }
  int64_t channels() const { return features_.size(1); }
  const std::shared_ptr<CoordinateManager>& manager() const { return manager_; }
  // Input row kept for each row, and row of each input row (empty when built
  // on an existing map).
  const std::vector<int64_t>& unique_index() const { return unique_index_; }
  const std::vector<int64_t>& inverse_mapping() const { return inverse_; }
  // This tensor's features at the field's points, as a field on the same
  // points: field.with_features(field.slice(*this)) (MinkowskiEngine's
  // SparseTensor.slice(TensorField)). Defined in tensor_field.cpp.
  TensorField slice(const TensorField& field) const;

 private:
  fk::Tensor features_;
  std::shared_ptr<CoordinateManager> manager_;
  MapKey key_;
  std::vector<int64_t> unique_index_, inverse_;
};

// Throws unless a and b share a manager.
void check_same_manager(const SparseTensor& a, const SparseTensor& b, const char* where);

}  // namespace minkowski
