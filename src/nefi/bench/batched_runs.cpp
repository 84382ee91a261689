#include "nefi/bench/batched_runs.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>

#include "fk/device.h"
#include "fk/error.h"
#include "fk/memory.h"
#include "fk/parallel.h"
#include "nefi/bench/unit_row.h"
#include "nefi/instances/run_method.h"
#include "nefi/io/fnv.h"
#include "nefi/solve/batch.h"

namespace nefi::bench {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using detail::start_row;
using detail::unit_params;

void mark_failed(Row& r, const std::string& error) {
  r.metrics.clear();
  r.steps = 0;
  r.final_data_loss = r.ms_per_step = r.ops_per_step = kNaN;
  r.stop = "failed";
  r.error = error.empty() ? "unknown error" : error;
}

// A solved unit's row, finished and scored as Instance::run finishes and
// scores it (its after_solve stage, then evaluate).
void fill_row(const Instance& inst, const Params& params, const Unit& u, const std::string& method,
              const ProblemSetup& setup, const Field& field, const Result& result, int step_cap,
              Row& r) {
  RunOutput o = start_run_output(method, setup.measurement, setup.gt);
  o.curriculum = setup.curriculum;
  o.step_cap = step_cap;  // as Instance::run's (its refinement kept to the cap)
  o.result = result;
  o.reconstruction = o.result.fields.at(field.primary()).to(fk::DType::F64);
  finish_solved_output(inst, unit_params(params, u), setup.problem, u.data_seed, o);
  r.metrics = o.metrics;
  r.steps = o.result.total_steps();
  r.n_params = o.result.n_parameters;
  std::string stops;
  for (const auto& s : o.result.stages) stops += (stops.empty() ? "" : ",") + s.stop;
  r.stop = stops;
  r.ms_per_step = o.result.ms_per_step();
  r.ops_per_step = o.result.ops_per_step();
  r.final_data_loss = o.result.stages.back().final_data_loss;
}

// One batch: setup, batch_invert, one row per unit. A unit whose setup
// throws (say, a scene that cannot be placed) is a failed row, as its
// sequential run would be, and the batch goes on without it.
void run_chunk(const Instance& inst, const Params& params, const std::vector<Unit>& chunk,
               const std::string& method, const Protocol& proto, fk::Device device,
               std::map<int64_t, BatchedRow>& out) {
  // A unit's problem as Instance::run sets it up, on the protocol's curriculum.
  const auto setup_of = [&](const Unit& u) {
    ProblemSetup s = *inst.setup(unit_params(params, u), method, u.data_seed);
    s.curriculum = campaign_curriculum(inst, proto, method, s.curriculum);
    return s;
  };
  std::vector<ProblemSetup> setups;
  std::vector<InverseProblem> problems;
  std::vector<size_t> solved;  // chunk index of each batched problem
  std::vector<std::string> setup_error(chunk.size());
  BatchOptions bo;
  bo.nan_guard = proto.nan_guard;
  bo.checkpoint_every = static_cast<int>(proto.checkpoint_every);
  bo.max_bad_steps = static_cast<int>(proto.max_bad_steps);
  bo.raise_on_error = false;
  bo.device = device;
  for (size_t k = 0; k < chunk.size(); ++k) {
    try {
      setups.push_back(setup_of(chunk[k]));
    } catch (const std::exception& e) {
      setup_error[k] = e.what();
      continue;
    }
    problems.push_back(setups.back().problem);
    bo.seeds.push_back(chunk[k].seed);
    solved.push_back(k);
  }
  const size_t n = solved.size();
  fk::reset_peak_memory();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Result> results;
  std::string error;
  try {
    if (n > 0) results = batch_invert(problems, setups.front().curriculum, bo);
  } catch (const std::exception& e) {
    error = e.what();
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double peak_mb = fk::memory_stats().peak / 1048576.0;
  // Each row's share of the batch's time and peak, or (solved alone) its own.
  int64_t batch_size = static_cast<int64_t>(n);
  std::vector<double> own_secs(n, secs / static_cast<double>(std::max<size_t>(n, 1))),
      own_peak(n, peak_mb / static_cast<double>(std::max<size_t>(n, 1)));
  std::vector<std::string> own_error(n);
  // A batch refused as a whole (a member that cannot batch with the first, a
  // measurement its loss check refuses) fails no member but its own: each is
  // set up afresh and solved alone, as its sequential run would be, and
  // only the members whose own solve fails are failed rows.
  if (!error.empty() && n > 1) {
    error.clear();
    batch_size = 1;
    results.assign(n, Result{});
    for (size_t b = 0; b < n; ++b) {
      const Unit& u = chunk[solved[b]];
      BatchOptions one = bo;
      one.seeds = {u.seed};
      fk::reset_peak_memory();
      const auto t1 = std::chrono::steady_clock::now();
      try {
        setups[b] = setup_of(u);
        problems[b] = setups[b].problem;
        results[b] = batch_invert({problems[b]}, setups[b].curriculum, one).front();
      } catch (const std::exception& e) {
        own_error[b] = e.what();
      }
      own_secs[b] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
      own_peak[b] = fk::memory_stats().peak / 1048576.0;
    }
  }
  for (size_t k = 0; k < chunk.size(); ++k)
    if (!setup_error[k].empty()) {
      BatchedRow br{start_row(chunk[k], method, 1), 0};  // it joined no batch
      mark_failed(br.row, setup_error[k]);
      out[chunk[k].index] = br;
    }
  for (size_t b = 0; b < n; ++b) {
    const Unit& u = chunk[solved[b]];
    BatchedRow br{start_row(u, method, batch_size), 0};
    Row& r = br.row;
    r.time_s = own_secs[b];
    r.peak_mem_mb = own_peak[b];
    const std::vector<double> data = setups[b].measurement.data.to_vector<double>();
    br.fingerprint = fnv1a(data.data(), data.size() * sizeof(double));
    const std::string err = !error.empty()          ? error
                            : !own_error[b].empty() ? own_error[b]
                                                    : results[b].error;
    if (err.empty()) {
      const auto f0 = std::chrono::steady_clock::now();
      fill_row(inst, params, u, method, setups[b], *problems[b].field, results[b],
               static_cast<int>(proto.max_total_steps), r);
      r.time_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - f0).count();
    } else {
      mark_failed(r, err);
    }
    out[u.index] = br;
  }
}

}  // namespace

std::optional<std::string> batched_method_reason(const Instance& inst, const Protocol& proto,
                                                 const Params& params, const std::string& method,
                                                 const std::vector<Unit>& units,
                                                 fk::Device device) {
  if (units.empty()) return std::string("no units in this shard");
  std::vector<InverseProblem> problems;
  Curriculum cur;
  // Two units' problems (a unit whose setup throws is skipped here: it
  // becomes a failed row in its batch).
  for (size_t i = 0; i < units.size() && problems.size() < 2; ++i) {
    std::optional<ProblemSetup> s;
    try {
      s = inst.setup(unit_params(params, units[i]), method, units[i].data_seed);
    } catch (const std::exception&) {
      continue;
    }
    if (!s) return "a direct method (no solver loop to batch)";
    problems.push_back(std::move(s->problem));
    cur = campaign_curriculum(inst, proto, method, s->curriculum);  // as run_chunk's
  }
  if (problems.empty()) return std::string("no unit's problem could be set up");
  if (auto why = batchable_reason(problems, cur)) return why;
  BatchOptions bo;
  bo.device = device;
  return batch_device_reason(problems, cur, bo);
}

void check_batch_device(fk::Device device) {
  fk::check_usable(device, "nefi bench --batch-device");
}

std::map<int64_t, BatchedRow> run_batched(const Instance& inst, const Params& params,
                                          const std::vector<Unit>& units, const std::string& method,
                                          const Protocol& proto, int batch_size,
                                          fk::Device device) {
  std::map<int64_t, BatchedRow> out;
  const size_t B = static_cast<size_t>(std::max(1, batch_size));
  for (size_t i = 0; i < units.size(); i += B) {
    const std::vector<Unit> chunk(units.begin() + i, units.begin() + std::min(units.size(), i + B));
    run_chunk(inst, params, chunk, method, proto, device, out);
  }
  return out;
}

}  // namespace nefi::bench
