#pragma once
// batch_invert's parameter blocks: the flat parameters of N fields as
// (chunk, P) f32 leaves, problem b in row b % chunk of block b / chunk, and
// back. The fields' own buffers carry the values between stages (a grid
// field resamples itself at a stage start) and hold the solution at the end.
#include <vector>

#include "fk/tensor.h"
#include "nefi/solve/problem.h"

namespace nefi {

// Rows copied from each problem's field (every field has P parameters);
// the blocks require grad.
std::vector<fk::Tensor> blocks_from_fields(const std::vector<InverseProblem>& problems,
                                           int64_t chunk);

// row (the field's n_parameters() floats) into the field's flat parameters.
void row_to_field(const float* row, Field& field);

}  // namespace nefi
