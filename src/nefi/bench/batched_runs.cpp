#include "nefi/bench/batched_runs.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include "fk/memory.h"
#include "fk/parallel.h"
#include "nefi/bench/unit_row.h"
#include "nefi/io/fnv.h"
#include "nefi/solve/batch.h"

namespace nefi::bench {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using detail::start_row;
using detail::unit_params;

// One batch: setup, batch_invert, one row per unit.
void run_chunk(const Instance& inst, const Params& params, const std::vector<Unit>& chunk,
               const std::string& method, const Protocol& proto,
               std::map<int64_t, BatchedRow>& out) {
  const int64_t B = static_cast<int64_t>(chunk.size());
  std::vector<ProblemSetup> setups;
  std::vector<InverseProblem> problems;
  BatchOptions bo;
  bo.nan_guard = proto.nan_guard;
  bo.checkpoint_every = static_cast<int>(proto.checkpoint_every);
  bo.max_bad_steps = static_cast<int>(proto.max_bad_steps);
  bo.raise_on_error = false;
  for (const Unit& u : chunk) {
    setups.push_back(*inst.setup(unit_params(params, u), method, u.data_seed));
    if (proto.max_total_steps > 0)  // as solve_and_record caps a sequential run
      setups.back().curriculum =
          setups.back().curriculum.capped(static_cast<int>(proto.max_total_steps));
    problems.push_back(setups.back().problem);
    bo.seeds.push_back(u.seed);
  }
  fk::reset_peak_memory();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Result> results;
  std::string error;
  try {
    results = batch_invert(problems, setups.front().curriculum, bo);
  } catch (const std::exception& e) {
    error = e.what();
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double peak_mb = fk::memory_stats().peak / 1048576.0;
  for (int64_t b = 0; b < B; ++b) {
    const Unit& u = chunk[b];
    BatchedRow br{start_row(u, method, B), 0};
    Row& r = br.row;
    r.time_s = secs / static_cast<double>(B);
    r.peak_mem_mb = peak_mb / static_cast<double>(B);
    const std::vector<double> data = setups[b].measurement.data.to_vector<double>();
    br.fingerprint = fnv1a(data.data(), data.size() * sizeof(double));
    const std::string err = error.empty() ? results[b].error : error;
    if (!err.empty()) {
      r.steps = 0;
      r.final_data_loss = r.ms_per_step = r.ops_per_step = kNaN;
      r.stop = "failed";
      r.error = err;
      out[u.index] = br;
      continue;
    }
    RunOutput o = start_run_output(method, setups[b].measurement, setups[b].gt);
    o.curriculum = setups[b].curriculum;
    o.result = results[b];
    o.reconstruction = o.result.fields.at(problems[b].field->primary()).to(fk::DType::F64);
    r.metrics = inst.evaluate(unit_params(params, u), o);
    r.steps = o.result.total_steps();
    r.n_params = o.result.n_parameters;
    std::string stops;
    for (const auto& s : o.result.stages) stops += (stops.empty() ? "" : ",") + s.stop;
    r.stop = stops;
    r.ms_per_step = o.result.ms_per_step();
    r.ops_per_step = o.result.ops_per_step();
    r.final_data_loss = o.result.stages.back().final_data_loss;
    out[u.index] = br;
  }
}

}  // namespace

std::optional<std::string> batched_method_reason(const Instance& inst, const Params& params,
                                                 const std::string& method,
                                                 const std::vector<Unit>& units) {
  if (units.empty()) return std::string("no units in this shard");
  std::vector<InverseProblem> problems;
  Curriculum cur;
  for (size_t i = 0; i < std::min<size_t>(units.size(), 2); ++i) {
    auto s = inst.setup(unit_params(params, units[i]), method, units[i].data_seed);
    if (!s) return "a direct method (no solver loop to batch)";
    problems.push_back(std::move(s->problem));
    cur = s->curriculum;
  }
  return batchable_reason(problems, cur);
}

std::map<int64_t, BatchedRow> run_batched(const Instance& inst, const Params& params,
                                          const std::vector<Unit>& units, const std::string& method,
                                          const Protocol& proto, int batch_size) {
  std::map<int64_t, BatchedRow> out;
  const size_t B = static_cast<size_t>(std::max(1, batch_size));
  for (size_t i = 0; i < units.size(); i += B) {
    const std::vector<Unit> chunk(units.begin() + i, units.begin() + std::min(units.size(), i + B));
    run_chunk(inst, params, chunk, method, proto, out);
  }
  return out;
}

}  // namespace nefi::bench
