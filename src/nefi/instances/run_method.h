#pragma once
// run_method: the Instance::run the instances share. A direct method (FBP,
// Wiener, Gerchberg-Saxton, a uniform baseline, ...) reconstructs from the
// instance's measurement with no solver loop; every other method solves the
// instance's setup() and then runs its after_solve() stage; either way the
// output is then scored by evaluate(). A batched run (nefi bench --batched)
// finishes its solved outputs by the same call, so its rows hold what run()
// reports.
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "nefi/instances/instance.h"

namespace nefi {

// A method with no solver loop: from `measurement` it fills out.reconstruction
// (f64), out.result.fields and out.result.prediction (and any metrics of its own).
using DirectMethod = std::function<void(const Measurement& measurement, RunOutput& out)>;

struct MethodRunners {
  std::map<std::string, DirectMethod> direct;  // by method name
};

// Throws an fk::Error naming `instance` and listing its methods() unless
// `method` is one of them.
void check_method(const Instance& instance, const std::string& method);

// Records `seed` as out.seed and sets every metric instance.evaluate(p, out)
// reports, keeping the ones the method recorded itself; none without a
// ground truth (a measured dataset), NaN for a non-finite reconstruction.
void score_output(const Instance& instance, const Params& p, uint64_t seed, RunOutput& out);

// A solved output as run() reports it: instance.after_solve from `solved`
// (the problem as set up, before its solve), then score_output.
void finish_solved_output(const Instance& instance, const Params& p, const InverseProblem& solved,
                          uint64_t seed, RunOutput& out);

// The options `method` solves `field` with: `so`, on the CPU for a method
// other than the instance's own whose field has no device path
// (Field::has_device_path; every field kind nefi makes has one, so only a
// field of a caller's own falls back). so.curriculum's overrides apply to
// every method a run solves (the caller chose them); nefi bench's protocol
// gives them to the instance's own solver only (campaign.h).
SolverOptions method_options(const Instance& instance, const std::string& method,
                             const Field& field, SolverOptions so);

// Checks `method`; runs a method in runners.direct on
// instance.make_measurement(p, seed) and scores it, and solves any other
// on *instance.setup(p, method, seed) by solve_and_record and finishes it
// (finish_solved_output). With so.measured, that dataset replaces the
// synthetic measurement and the output has no ground truth.
RunOutput run_method(const Instance& instance, const Params& p, const std::string& method,
                     uint64_t seed, const SolverOptions& so, const MethodRunners& runners = {});

}  // namespace nefi
