#pragma once
// batch_invert's parameter blocks: the flat parameters of N fields as
// (chunk, P) f32 leaves, problem b in row b % chunk of block b / chunk, and
// back. The fields' own buffers carry the values between stages (a grid
// field resamples itself at a stage start) and hold the solution at the end.
#include <functional>
#include <vector>

#include "fk/tensor.h"
#include "nefi/field/fourier_features.h"
#include "nefi/field/neural_field.h"
#include "nefi/solve/problem.h"

namespace nefi {

// Rows copied from each problem's field (every field has P parameters);
// the blocks require grad.
std::vector<fk::Tensor> blocks_from_fields(const std::vector<InverseProblem>& problems,
                                           int64_t chunk);

// row (the field's n_parameters() floats) into the field's flat parameters.
void row_to_field(const float* row, Field& field);

// Grid fields at a stage start: problem b's values, row(b) at the old P,
// written back to its field, which moves to `domain`'s grid as it does
// alone (on_stage_start); the caller then makes its blocks anew at the new P.
void regrid_fields(std::vector<InverseProblem>& problems,
                   const std::function<const float*(int64_t)>& row, const Domain& domain);

// The shared encoding of a batch of neural fields like `mlp0`; grid fields
// (mlp0 null) read none, and a bare coordinate encoding stands in.
FourierFeatures batch_features(int ndim, const NeuralField* mlp0);

}  // namespace nefi
