#pragma once
// Building sparse inputs: voxelizing points, batching coordinate lists.
#include <vector>

#include "fk/tensor.h"
#include "minkowski/sparse_tensor.h"

namespace minkowski {

struct Quantized {
  fk::Tensor coordinates;  // M x D int32 (floor(c / quantization_size))
  fk::Tensor features;     // M x C reduced by the mode, a new buffer (undefined if none given)
  fk::Tensor labels;       // M, the labels' dtype (undefined if none given)
  // Input row kept for each output row: under RandomSubsample the randomly
  // chosen point whose features the row holds, under every other mode the
  // first occurrence. `coordinates` row r is the voxel of input row
  // unique_index[r] under any mode.
  std::vector<int64_t> unique_index;
  std::vector<int64_t> inverse;  // output row of each input row
};

// MinkowskiEngine's default label for voxels whose points disagree.
inline constexpr int64_t kIgnoreLabel = -100;

// coordinates: N x D (any real or integer dtype, CPU; a batch column, if
// present, is just one more axis, use size 1 for it). quantization_size has 1
// or D positive finite values; f32, f16 and bf16 coordinates are divided in
// f32 (as MinkowskiEngine divides f32 points), the others in f64. features:
// N x C or undefined, on the CPU or a CUDA device (reduced there:
// quantize_features in sparse_tensor.h). Output rows follow the first
// occurrence of each voxel in input order. seed: the draw of RandomSubsample
// (subsample_rows in sparse_tensor.h).
//
// labels: undefined, or N int32/int64 CPU values (one class per point, as in
// MinkowskiEngine's sparse_quantize). A voxel whose points all carry one label
// gets that label; a voxel whose points carry two or more different labels
// gets ignore_label (which may itself occur among the inputs: it is a label
// like any other, so a voxel of ignore_label and 3 also ends up ignore_label).
// The labels do not depend on the quantization mode.
Quantized sparse_quantize(const fk::Tensor& coordinates, const fk::Tensor& features,
                          const std::vector<double>& quantization_size = {1.0},
                          QuantizationMode mode = QuantizationMode::RandomSubsample,
                          const fk::Tensor& labels = fk::Tensor(),
                          int64_t ignore_label = kIgnoreLabel, uint64_t seed = kSubsampleSeed);

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
