#include "nefi/bench/batch_profile.h"

#include <algorithm>
#include <ctime>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "fk/error.h"
#include "fk/memory.h"
#include "fk/parallel.h"
#include "nefi/instances/instance.h"
#include "nefi/solve/batch.h"
#include "nefi/solve/solver.h"

namespace nefi::bench {
namespace {

double cpu_now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Wall and CPU time of the timed steps of a loop whose step callback is `tick`.
struct StepClock {
  int warmup = 0, total = 0;
  double prev_cpu = 0;
  std::vector<double> wall, cpu;
  // Returns false after the last timed step.
  bool tick(int step, double step_ms) {
    const double now = cpu_now_ms();
    if (step >= warmup) {
      wall.push_back(step_ms);
      cpu.push_back(now - prev_cpu);
    }
    prev_cpu = now;
    return step + 1 < total;
  }
};

// The sequential Solver on the same stage of one problem.
void time_sequential(InverseProblem problem, const Curriculum& cur, uint64_t seed, int stage,
                     StepClock& clock) {
  SolverOptions so;
  so.seed = seed;
  so.stopping_rules = false;
  so.only_stage = stage;
  so.callbacks.push_back([&clock](const StepInfo& s) { return clock.tick(s.step, s.step_ms); });
  Solver(std::move(problem), cur, so).run();
}

}  // namespace

BatchProfileReport profile_batch(const Instance& inst, const Params& config,
                                 const BatchProfileOptions& opt) {
  FK_CHECK(opt.batch >= 1, "--batch", "a batch size >= 1", fk::to_text(opt.batch));
  FK_CHECK(opt.steps >= 1 && opt.warmup >= 0, "--steps / --warmup", "steps >= 1, warmup >= 0",
           fk::to_text(opt.steps) + " / " + fk::to_text(opt.warmup));
  BatchProfileReport rep;
  rep.instance = inst.name();
  // The reference's names for the instance's own solver too, as nefi
  // profile takes them without --batch ("ours" was refused here).
  rep.method =
      opt.method.empty() ? inst.methods().front() : canonical_method(inst, opt.method, "--method");
  rep.batch = opt.batch;
  rep.chunk = opt.chunk < opt.batch ? opt.chunk : 0;  // a chunk of the whole batch is none
  rep.steps = opt.steps;
  rep.warmup = opt.warmup;
  rep.threads = fk::get_num_threads();
  std::vector<InverseProblem> problems;
  std::vector<uint64_t> seeds;
  InverseProblem first;
  Curriculum cur;
  for (int b = 0; b < opt.batch; ++b) {
    auto s = inst.setup(config, rep.method, opt.seed + b);
    FK_CHECK(s.has_value(), "nefi profile --batch", "a method that runs the solver loop",
             rep.instance + " " + rep.method);
    if (b == 0) first = inst.setup(config, rep.method, opt.seed)->problem;
    problems.push_back(std::move(s->problem));
    cur = run_curriculum(s->curriculum, opt.curriculum, 0);
    seeds.push_back(opt.seed + b);
  }
  rep.n_stages = static_cast<int>(cur.stages.size());
  rep.stage = opt.stage < 0 ? rep.n_stages + opt.stage : opt.stage;
  FK_CHECK(rep.stage >= 0 && rep.stage < rep.n_stages, "--stage",
           "a stage of the " + fk::to_text(rep.n_stages) + "-stage curriculum",
           fk::to_text(opt.stage));
  const Stage& st = cur.stages[rep.stage];
  rep.shape = st.shape.empty() ? problems[0].domain.shape() : st.shape;
  const int total = opt.warmup + opt.steps;
  FK_CHECK(st.steps >= total, "--warmup + --steps",
           "at most the stage's " + fk::to_text(st.steps) + " steps", fk::to_text(total));
  StepClock bc;
  bc.warmup = opt.warmup;
  bc.total = total;
  double ops = 0;
  BatchOptions bo;
  bo.seeds = seeds;
  bo.chunk_size = opt.chunk;
  bo.stopping_rules = false;
  bo.only_stage = rep.stage;
  bo.on_step = [&](const BatchStepInfo& s) {
    if (s.step + 1 == opt.warmup) fk::reset_peak_memory();
    if (s.step >= opt.warmup) ops += static_cast<double>(s.step_ops);
    if (bc.tick(s.step, s.step_ms)) return true;
    rep.peak_bytes = fk::memory_stats().peak;
    return false;
  };
  if (opt.warmup == 0) fk::reset_peak_memory();
  bc.prev_cpu = cpu_now_ms();
  batch_invert(std::move(problems), cur, bo);
  FK_CHECK(static_cast<int>(bc.wall.size()) == opt.steps, "nefi profile --batch",
           fk::to_text(opt.steps) + " timed steps", fk::to_text(bc.wall.size()));
  rep.batch_ms = median(bc.wall);
  rep.per_problem_ms = rep.batch_ms / opt.batch;
  rep.per_problem_cpu_ms = median(bc.cpu) / opt.batch;
  rep.ops_per_step = ops / opt.steps;
  StepClock sc;
  sc.warmup = opt.warmup;
  sc.total = total;
  sc.prev_cpu = cpu_now_ms();
  time_sequential(std::move(first), cur, opt.seed, rep.stage, sc);
  rep.sequential_ms = median(sc.wall);
  rep.sequential_cpu_ms = median(sc.cpu);
  return rep;
}

std::string format_batch_profile(const BatchProfileReport& r) {
  std::string s = fmt::format(
      "{} · {} · stage {}/{} ({}) · batch {}{} · {} timed steps after {} warm-up · {} thread{}\n",
      r.instance, r.method, r.stage + 1, r.n_stages, fmt::join(r.shape.vec(), "×"), r.batch,
      r.chunk > 0 ? fmt::format(" in chunks of {}", r.chunk) : "", r.steps, r.warmup, r.threads,
      r.threads == 1 ? "" : "s");
  s += fmt::format(
      "  ms/step      per problem {:.4f}  (batch step median {:.4f})   sequential {:.4f}\n",
      r.per_problem_ms, r.batch_ms, r.sequential_ms);
  s += fmt::format("  cpu ms/step  per problem {:.4f}   sequential {:.4f}   speedup {:.2f}x\n",
                   r.per_problem_cpu_ms, r.sequential_cpu_ms, r.speedup());
  s += fmt::format("  ops/step     {:.1f} for the batch ({:.2f} per problem)\n", r.ops_per_step,
                   r.ops_per_step / r.batch);
  s += fmt::format("  peak memory  {:.3f} MiB ({:.3f} per problem)\n", r.peak_bytes / 1048576.0,
                   r.peak_bytes / 1048576.0 / r.batch);
  return s;
}

std::string batch_profile_json_line(const BatchProfileReport& r) {
  const nlohmann::json j{{"instance", r.instance},
                         {"method", r.method},
                         {"stage", r.stage},
                         {"n_stages", r.n_stages},
                         {"shape", r.shape.vec()},
                         {"batch", r.batch},
                         {"chunk", r.chunk},
                         {"threads", r.threads},
                         {"steps", r.steps},
                         {"warmup", r.warmup},
                         {"batch_ms", r.batch_ms},
                         {"ms_per_problem_step", r.per_problem_ms},
                         {"cpu_ms_per_problem_step", r.per_problem_cpu_ms},
                         {"sequential_ms_per_step", r.sequential_ms},
                         {"sequential_cpu_ms_per_step", r.sequential_cpu_ms},
                         {"speedup_cpu", r.speedup()},
                         {"ops_per_step", r.ops_per_step},
                         {"peak_mem_mb", r.peak_bytes / 1048576.0}};
  return j.dump();
}

}  // namespace nefi::bench
