#pragma once
// nefi profile --batch B: the per-problem step time of batch_invert on one
// curriculum stage. B problems of one instance (measurement and
// initialisation seeds seed, seed + 1, ...) run the stage together with the
// stopping rules off: `warmup` untimed batch steps, then `steps` timed ones.
// per_problem_ms = the batch step's median / B. The same process then times
// the sequential Solver on the first problem's stage the same way, so the
// report carries its own baseline. Both are timed twice: wall clock, and the
// process's CPU time (CLOCK_PROCESS_CPUTIME_ID) between consecutive steps,
// which a loaded machine's preemption does not inflate; speedup is the
// ratio of the CPU figures. Peak memory is the allocator's peak over the
// timed batch steps (it grows linearly with B).
#include <string>

#include "fk/shape.h"
#include "nefi/instances/instance.h"
#include "nefi/solve/curriculum_overrides.h"

namespace nefi::bench {

struct BatchProfileOptions {
  std::string method;  // empty: the instance's first method
  uint64_t seed = 0;
  int batch = 1;
  int chunk = 0;  // BatchOptions::chunk_size
  int steps = 20, warmup = 5;
  int stage = -1;  // negative: counted from the end
  // The config's curriculum overrides (the stopping rules stay off), on the
  // batch and on its sequential baseline alike, as the unbatched profile.
  CurriculumOverrides curriculum;
};

struct BatchProfileReport {
  std::string instance, method;
  int stage = 0, n_stages = 0, batch = 1, chunk = 0, steps = 0, warmup = 0, threads = 1;
  fk::Dims shape;
  double batch_ms = 0;                              // median wall time of one batch step
  double per_problem_ms = 0;                        // batch_ms / batch
  double per_problem_cpu_ms = 0;                    // median CPU time of a batch step / batch
  double sequential_ms = 0, sequential_cpu_ms = 0;  // one problem in the Solver
  double speedup() const { return sequential_cpu_ms / per_problem_cpu_ms; }
  double ops_per_step = 0;  // of the whole batch step
  int64_t peak_bytes = 0;
};

BatchProfileReport profile_batch(const Instance& instance, const Params& config,
                                 const BatchProfileOptions& options);
std::string format_batch_profile(const BatchProfileReport& r);
std::string batch_profile_json_line(const BatchProfileReport& r);

}  // namespace nefi::bench
