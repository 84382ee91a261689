#pragma once
// run_method: the Instance::run most instances share. A direct method (FBP,
// Wiener, Gerchberg-Saxton, a uniform baseline, ...) reconstructs from the
// instance's measurement with no solver loop; every other method solves the
// instance's setup(); either way the output is then scored by evaluate().
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "nefi/instances/instance.h"

namespace nefi {

// A method with no solver loop: from `measurement` it fills out.reconstruction
// (f64), out.result.fields and out.result.prediction (and any metrics of its own).
using DirectMethod = std::function<void(const Measurement& measurement, RunOutput& out)>;
// How a gradient method's setup becomes an output, when the instance adds a
// stage to solve_and_record's plain solve (the 3-D instances' refine stage).
using SolveSetup = std::function<RunOutput(ProblemSetup setup, const std::string& method,
                                           uint64_t seed, const SolverOptions& so)>;

struct MethodRunners {
  std::map<std::string, DirectMethod> direct;  // by method name
  SolveSetup solve;                            // empty: start_run_output + solve_and_record
};

// Throws an fk::Error naming `instance` and listing its methods() unless
// `method` is one of them.
void check_method(const Instance& instance, const std::string& method);

// Checks `method`; runs it as `runners` say (a method in runners.direct on
// instance.make_measurement(p, seed), any other on *instance.setup(p, method,
// seed)); then sets every metric instance.evaluate(p, out) reports, keeping
// the ones the method recorded itself.
RunOutput run_method(const Instance& instance, const Params& p, const std::string& method,
                     uint64_t seed, const SolverOptions& so, const MethodRunners& runners = {});

}  // namespace nefi
