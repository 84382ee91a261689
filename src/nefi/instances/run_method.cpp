#include "nefi/instances/run_method.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fk/amp.h"
#include "fk/error.h"

namespace nefi {

void check_method(const Instance& instance, const std::string& method) {
  const std::vector<std::string> methods = instance.methods();
  if (std::find(methods.begin(), methods.end(), method) != methods.end()) return;
  // "method a, b or c"
  std::string expected = "method";
  for (size_t i = 0; i < methods.size(); ++i) {
    expected += i == 0 ? " " : i + 1 == methods.size() ? " or " : ", ";
    expected += methods[i];
  }
  throw fk::Error(instance.name(), expected, method);
}

void score_output(const Instance& instance, const Params& p, uint64_t seed, RunOutput& out) {
  out.seed = seed;
  if (!out.gt.defined()) return;  // measured data: nothing to score against
  // A reconstruction holding NaN or infinity (a run with solver.nan_guard off)
  // scores NaN on every metric: thresholded ones (iou, dice, f1) read NaN as
  // background and would give a finite, plausible score.
  const bool finite = !out.reconstruction.defined() || fk::amp::all_finite(out.reconstruction);
  for (const auto& [k, v] : instance.evaluate(p, out))
    out.metrics[k] = finite ? v : std::numeric_limits<double>::quiet_NaN();
}

void finish_solved_output(const Instance& instance, const Params& p, const InverseProblem& solved,
                          uint64_t seed, RunOutput& out) {
  out.seed = seed;
  instance.after_solve(p, solved, out);
  score_output(instance, p, seed, out);
}

// A synthetic measurement of all zeros or holding NaN or infinity comes from a
// setting far outside its physical range (an extent of 1e300 underflows every
// reading to 0, a huge amplitude overflows): the solve would stop later with an
// error naming its data loss, never the setting. The settings away from the
// instance's defaults are named instead.
void check_synthetic_measurement(const Instance& instance, const Params& p, const Measurement& m) {
  const std::vector<double> v = m.data.to(fk::DType::F64).contiguous().to_vector<double>();
  const bool finite = std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
  if (finite && std::any_of(v.begin(), v.end(), [](double x) { return x != 0; })) return;
  std::string changed;
  int shown = 0;
  std::map<std::string, std::string> defaults;
  const Params declared = instance.default_config();
  for (const auto& e : declared.entries()) defaults[e.key] = Params::render(e.value);
  for (const auto& e : p.entries()) {
    if (const auto d = defaults.find(e.key);
        d != defaults.end() && d->second == Params::render(e.value))
      continue;
    if (++shown > 8) {
      changed += ", ...";
      break;
    }
    changed += (changed.empty() ? "" : ", ") + e.key + "=" + Params::render(e.value);
  }
  throw fk::Error(instance.name() + " measurement", "finite readings, not all zero",
                  std::string(finite ? "all zeros" : "a non-finite reading") +
                      " (a setting out of its physical range? settings away from the defaults: " +
                      (changed.empty() ? "none" : changed) + ")");
}

SolverOptions method_options(const Instance& instance, const std::string& method,
                             const Field& field, SolverOptions so) {
  if (method != default_method(instance) && !field.has_device_path()) so.device = fk::kCPU;
  return so;
}

RunOutput run_method(const Instance& instance, const Params& p, const std::string& method,
                     uint64_t seed, const SolverOptions& so, const MethodRunners& runners) {
  check_method(instance, method);
  if (const auto direct = runners.direct.find(method); direct != runners.direct.end()) {
    const auto [meas, gt] =
        measured_or(instance.make_measurement(p, seed), so.measured ? &*so.measured : nullptr);
    if (!so.measured) check_synthetic_measurement(instance, p, meas);
    RunOutput out = start_run_output(method, meas, gt);
    // A direct method has no solver to time it: its solve time is its run.
    const auto t0 = std::chrono::steady_clock::now();
    direct->second(meas, out);
    out.result.total_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    score_output(instance, p, seed, out);
    return out;
  }
  const std::optional<ProblemSetup> setup =
      instance.setup_from(p, method, seed, so.measured ? &*so.measured : nullptr);
  FK_CHECK(setup.has_value(), instance.name(),
           "a setup() for method " + method + " (or a direct runner)", "none");
  const ProblemSetup& s = *setup;
  if (!so.measured) check_synthetic_measurement(instance, p, s.measurement);
  RunOutput out = start_run_output(method, s.measurement, s.gt);
  solve_and_record(s.problem, s.curriculum, seed,
                   method_options(instance, method, *s.problem.field, so), out);
  finish_solved_output(instance, p, s.problem, seed, out);
  return out;
}

}  // namespace nefi
