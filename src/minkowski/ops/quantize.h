#pragma once
// Building sparse inputs: voxelizing points, batching coordinate lists.
#include <vector>

#include "fk/tensor.h"
#include "minkowski/sparse_tensor.h"

namespace minkowski {

struct Quantized {
  fk::Tensor coordinates;             // M x D int32 (floor(c / quantization_size))
  fk::Tensor features;                // M x C reduced by the mode (undefined if none given)
  std::vector<int64_t> unique_index;  // input row kept for each output row (first occurrence)
  std::vector<int64_t> inverse;       // output row of each input row
};

// coordinates: N x D (any real or integer dtype, CPU; a batch column, if
// present, is just one more axis, use size 1 for it). quantization_size has 1
// or D positive values. features: N x C or undefined. Output rows follow the
// first occurrence of each voxel in input order.
Quantized sparse_quantize(const fk::Tensor& coordinates, const fk::Tensor& features,
                          const std::vector<double>& quantization_size = {1.0},
                          QuantizationMode mode = QuantizationMode::RandomSubsample);

// Concatenates per-sample N_i x D coordinates (int32, or real: floored) into
// (sum N_i) x (1+D) int32 with the sample index in column 0.
fk::Tensor batched_coordinates(const std::vector<fk::Tensor>& coordinates);

struct Collated {
  fk::Tensor coordinates;  // (sum N_i) x (1+D) int32
  fk::Tensor features;     // (sum N_i) x C
};
Collated sparse_collate(const std::vector<fk::Tensor>& coordinates,
                        const std::vector<fk::Tensor>& features);

}  // namespace minkowski
