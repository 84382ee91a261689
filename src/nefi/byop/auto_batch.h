#pragma once
// Bring-your-own problems solved together: N problems from_forward built
// for one model (N measurements: slices, frames, repeats of one instrument)
// solved by batch_invert in one optimisation loop. Each keeps what
// auto_problem decided from its own data (noise, data weight, penalty
// weights, Morozov stop); what batch_invert needs them to share is made
// shared:
//   start   every problem restarts from one set of constants, per field the
//           median of the problems' own best constants, so their fields
//           share heads (the problems are rebuilt with AutoOptions::start)
//   rest    the same model (kind and map), grid, representation, network,
//           curriculum and seed, which problems made with one set of options
//           have; a problem that differs is an fk::Error naming it
// A problem's result then equals the sequential solve of its rebuilt
// problem (batch.h: a batched row's updates are the sequential ones).
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

// The problems rebuilt from one shared start (they must differ in their
// measurement only).
std::vector<AutoProblem> shared_start_problems(const std::vector<AutoInput>& inputs);

// batch_invert of the problems (each field seeded with its problem's seed),
// one Result per problem.
std::vector<Result> solve_together(const std::vector<AutoProblem>& problems,
                                   BatchOptions options = {});

}  // namespace nefi
