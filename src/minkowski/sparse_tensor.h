#pragma once
// SparseTensor: features (N x C, f32/f64/f16/bf16 fk tensor, may require grad)
// on the coordinates of one coordinate map (int32 [batch, x_1..x_D], any
// D >= 1, negatives allowed, every spatial coordinate a multiple of the tensor
// stride), held by a shared CoordinateManager. Row i of the features is row i
// of the map.
//
// Building from raw coordinates deduplicates them (quantization): map rows
// follow the first occurrence of each coordinate in input order, and the
// features of duplicates are reduced by the QuantizationMode; unique_index()
// and inverse_mapping() relate input rows and map rows.
//
// Coordinates must be an int32 tensor N x (1+D) (float coordinates are an
// error: quantize them with sparse_quantize first), on the CPU or on a CUDA
// device with the features on the same device: device coordinates get their
// maps and kernel maps built on the device (coordinate_manager.h says what
// crosses to the host), device features are quantized there. Spatial coordinates within
// [-2^30, 2^30] and tensor strides, dilations x strides and kernel offsets at
// most 2^30: inside that range every stride, kernel map and transposed
// convolution is exact; outside it they are an fk::Error (see "Coordinate
// range" in coords/coordinate_map.h).
//
// Tensors of different managers never mix: a MapKey is only (stride, tag) and
// names a map in any manager, so ops that combine two tensors, or a tensor and
// a target map, take the target as a MapRef (key + manager) and refuse one of
// another manager (check_same_manager).
#include <cstdint>
#include <memory>
#include <vector>

#include "fk/tensor.h"
#include "minkowski/coords/coordinate_manager.h"

namespace minkowski {

enum class QuantizationMode {
  RandomSubsample,    // keep one row per coordinate, drawn uniformly from a seed
  UnweightedAverage,  // mean of the duplicates
  UnweightedSum,      // sum of the duplicates
  MaxPool,            // per-channel max of the duplicates
  FirstOccurrence,    // keep the first row per coordinate in input order (what
                      // MinkowskiEngine's CPU RANDOM_SUBSAMPLE actually does)
};

// The seed RandomSubsample uses unless given one: a fixed value, so that runs
// are reproducible by default.
inline constexpr uint64_t kSubsampleSeed = 0;

// The input row each of the m map rows keeps under RandomSubsample: one of the
// rows i with inverse[i] == r, each with probability 1/count (up to a bias of
// count / 2^64). Map row r draws from Philox4x32-10 block (counter r, key
// seed), so the choice depends only on (seed, r, the rows of r), never on the
// thread count. O(N) time, N + m int64 of scratch.
std::vector<int64_t> subsample_rows(const std::vector<int64_t>& inverse, int64_t m,
                                    uint64_t seed = kSubsampleSeed);

// Reduces rows of `features` (N x C) to M rows by `inverse` (map row of each
// input row) and `kept_rows` (the input row each map row keeps: read by
// RandomSubsample and FirstOccurrence, which gather those rows). Differentiable.
// Features on a CUDA device are reduced there by fk's index ops (the sums in
// input-row order, as on the CPU) and, for MaxPool, quantize_device.h's
// arg-max, so the result is the CPU's.
fk::Tensor quantize_features(const fk::Tensor& features, const std::vector<int64_t>& kept_rows,
                             const std::vector<int64_t>& inverse, QuantizationMode mode);

class TensorField;

// One map of one manager: how an op is given coordinates that are not its
// input's (e.g. convolution onto given coordinates). Unlike a bare MapKey, it
// lets the op check that the map is in the input's manager.
struct MapRef {
  std::shared_ptr<CoordinateManager> manager;
  MapKey key;
};

class SparseTensor {
 public:
  SparseTensor() = default;
  // Inserts `coordinates` (a CPU tensor) into `manager` (a new one of
  // dimension C.size(1)-1 when null) and quantizes duplicates, on the
  // features' device (quantize_features); `seed` picks the rows
  // RandomSubsample keeps (subsample_rows), other modes ignore it.
  SparseTensor(const fk::Tensor& features, const fk::Tensor& coordinates,
               const std::vector<int32_t>& tensor_stride = {1},
               QuantizationMode mode = QuantizationMode::RandomSubsample,
               std::shared_ptr<CoordinateManager> manager = nullptr,
               uint64_t seed = kSubsampleSeed);
  // Features on an existing map. They may live on a CUDA device (the map
  // stays on the host): every op on features runs there.
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
  // This tensor's map, with its manager (e.g. as a convolution's target).
  MapRef map_ref() const { return {manager_, key_}; }
  // Input row kept for each row (under RandomSubsample the randomly chosen
  // duplicate whose features the row holds, under every other mode the first
  // occurrence), and row of each input row (both empty when built on an
  // existing map).
  const std::vector<int64_t>& unique_index() const { return unique_index_; }
  const std::vector<int64_t>& inverse_mapping() const { return inverse_; }
  // This tensor's features at the field's points, as a field on the same
  // points: field.with_features(field.slice(*this)) (MinkowskiEngine's
  // SparseTensor.slice(TensorField)). Defined in tensor_field.cpp.
  TensorField slice(const TensorField& field) const;
  // slice(field) with the field's own features appended as further channels
  // (N x (channels() + field.channels()); ME's cat_slice). Differentiable
  // w.r.t. both feature tensors. Defined in tensor_field.cpp.
  TensorField cat_slice(const TensorField& field) const;
  // The same map and quantization record with other features (same row count,
  // any channel count): what feature-wise ops (activations, normalization,
  // cat) return.
  SparseTensor with_features(const fk::Tensor& features) const;

 private:
  fk::Tensor features_;
  std::shared_ptr<CoordinateManager> manager_;
  MapKey key_;
  std::vector<int64_t> unique_index_, inverse_;
};

// Throws fk::Error unless both sides belong to one manager (the same object,
// not merely equal keys).
void check_same_manager(const SparseTensor& a, const SparseTensor& b, const char* where);
void check_same_manager(const SparseTensor& a, const MapRef& b, const char* where);

}  // namespace minkowski
