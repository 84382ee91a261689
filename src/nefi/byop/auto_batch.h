#pragma once
// Bring-your-own problems solved together: N problems from_forward built
// for one built-in model (N measurements: slices, frames, repeats of one
// instrument) solved by batch_invert in one optimisation loop. What
// batch_invert needs them to share is made shared; the rest stays each
// problem's:
//   start    every problem is rebuilt to start from one set of constants
//            and head scales, those of the medoid problem (with one field,
//            the median one), so their fields share heads. Its penalty
//            weights are then re-weighed from that start (auto_problem's
//            probe), so they match the problem's own only for the medoid
//   shared   the model (a batchable one without trainable parameters, of
//            one kind), grid, prior, representation, network, budget, lr
//            and stop options, supports: a problem that differs is an
//            fk::Error naming the option and both values
//   own      the measurement, noise level (estimated or given), data
//            weight, Morozov stop and seed
// A problem's result then equals the sequential solve of its rebuilt
// problem to within f32 summation order (NefiAutoBatch checks 1e-4).
#include <vector>

#include "nefi/byop/auto_problem.h"
#include "nefi/solve/batch.h"

namespace nefi {

// What one problem was built from (auto_problem's arguments).
struct AutoInput {
  OperatorPtr op;
  fk::Dims shape;
  Measurement measurement;
  AutoOptions options;
};

// A problem's own start: AutoProblem::constant_fits and head_scales of a
// build without a start.
struct FittedStart {
  std::vector<double> constants, scales;
};

// The problems rebuilt from the medoid's start (its constants and head
// scales). `fits`: each problem's own start when already known, else
// fitted here (a build each).
std::vector<AutoProblem> shared_start_problems(const std::vector<AutoInput>& inputs,
                                               std::vector<FittedStart> fits = {});

// What a device batch (options.device) of these problems refuses
// (batch_device_reason: chunk_size, loss_mode loop, a model without a device
// path, ...), read off the problems as from_forward built them, before the
// rebuild's constant fits and probes: the rebuild changes their start and
// weights, not what a device refuses. An fk::Error naming it; nothing for
// the CPU.
void check_device_batch(const std::vector<const AutoProblem*>& built, const BatchOptions& options);

// batch_invert of the problems, each field seeded with its problem's seed
// (options.seeds must be empty); one Result per problem.
std::vector<Result> solve_together(const std::vector<AutoProblem>& problems,
                                   BatchOptions options = {});

}  // namespace nefi
