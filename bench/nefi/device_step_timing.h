#pragma once
// Shared by the device solve-step benchmarks (solver_graph_cuda_bench.cpp,
// imaging_graph_cuda_bench.cpp, thermal_step_cuda_bench.cpp): one solve of an
// instance's setup on CUDA device 0, eager or as one replayed CUDA graph,
// timed by the solver's own step times over its steps after the first
// `skip` (warm-up and capture), and the counters those benchmarks report.
// With the graph, only replayed steps are timed: a stage whose step changes
// shape mid-way (an annealing band the field cannot open in place) warms up
// and captures again, and those two steps are counted apart (eager_steps),
// not averaged in.
#include <benchmark/benchmark.h>

#include <string>

#include "nefi/instances/instance.h"
#include "nefi/solve/solver.h"

namespace nefi_bench {

// Sums over the measured steps of every solve, the eager steps among them
// that a graph row left out, and the last solve's graph_steps (how many of
// the stage's steps were graph launches).
struct DeviceStepTotals {
  double ms = 0, launches = 0, measured = 0, eager = 0, graph_steps = 0;
};

// Sets up `instance` (`method`, seed 3) from p, solves it on cuda_device(0)
// with the stopping rules off and adds its steps from `skip` on (with
// `graph`, its replays) to totals; returns their milliseconds (the
// iteration's manual time).
inline double timed_device_solve(const std::string& instance, const nefi::Params& p, bool graph,
                                 int skip, DeviceStepTotals& totals,
                                 const std::string& method = "neural") {
  auto su = nefi::find_instance(instance)->setup(p, method, 3);
  nefi::SolverOptions so;
  so.seed = 3;
  so.device = fk::cuda_device(0);
  so.cuda_graph = graph;
  so.stopping_rules = false;
  double it_ms = 0;
  so.callbacks.push_back([&](const nefi::StepInfo& s) {
    if (s.step < skip) return true;
    if (graph && !s.graph_replay) {
      totals.eager += 1;
      return true;
    }
    it_ms += s.step_ms;
    totals.launches += static_cast<double>(s.step_launches);
    totals.measured += 1;
    return true;
  });
  const nefi::Result r = nefi::Solver(su->problem, su->curriculum, so).run();
  totals.graph_steps = static_cast<double>(r.stages.front().graph_steps);
  totals.ms += it_ms;
  return it_ms;
}

// ms/step and launches/step over the measured steps, eager_steps per solve
// (graph rows: measured steps that were not replays) and graph_steps.
inline void set_step_counters(benchmark::State& state, const DeviceStepTotals& t) {
  state.counters["ms/step"] = t.measured > 0 ? t.ms / t.measured : 0;
  state.counters["launches/step"] = t.measured > 0 ? t.launches / t.measured : 0;
  state.counters["eager_steps"] =
      state.iterations() > 0 ? t.eager / static_cast<double>(state.iterations()) : 0;
  state.counters["graph_steps"] = t.graph_steps;
}

}  // namespace nefi_bench
