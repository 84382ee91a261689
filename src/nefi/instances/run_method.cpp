#include "nefi/instances/run_method.h"

#include <algorithm>
#include <cmath>
#include <utility>

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
  for (const auto& [k, v] : instance.evaluate(p, out)) out.metrics[k] = v;
}

Measurement measured_in_place_of(const Instance& instance, const Measurement& synthetic,
                                 const Measurement& measured) {
  const fk::Dims& want = synthetic.data.shape();
  const std::string expected = "a " + want.str() + " array (the shape " + instance.name() +
                               " measures with this config, as its measurement.npy)";
  FK_CHECK(measured.data.shape() == want, "run.data", expected, measured.data.shape().str());
  FK_CHECK(!fk::is_complex(measured.data.dtype()) && measured.data.dtype() != fk::DType::Bool,
           "run.data", "real values", fk::name(measured.data.dtype()));
  Measurement m;
  m.data = measured.data.to(synthetic.data.dtype());
  for (const double v : m.data.to_vector<double>())
    FK_CHECK(std::isfinite(v), "run.data", "finite values", "a NaN or an infinity");
  if (measured.mask.defined()) {
    FK_CHECK(measured.mask.shape() == want, "run.mask", "a " + want.str() + " array of weights",
             measured.mask.shape().str());
    m.mask = measured.mask.to(synthetic.data.dtype());
    check_mask(m, "run.mask");
  }
  m.noise_std = measured.noise_std;
  return m;
}

void finish_solved_output(const Instance& instance, const Params& p, const InverseProblem& solved,
                          uint64_t seed, RunOutput& out) {
  out.seed = seed;
  instance.after_solve(p, solved, out);
  score_output(instance, p, seed, out);
}

RunOutput run_method(const Instance& instance, const Params& p, const std::string& method,
                     uint64_t seed, const SolverOptions& so, const MethodRunners& runners) {
  check_method(instance, method);
  if (const auto direct = runners.direct.find(method); direct != runners.direct.end()) {
    auto [meas, gt] = instance.make_measurement(p, seed);
    if (so.measured) {
      meas = measured_in_place_of(instance, meas, *so.measured);
      gt = fk::Tensor();
    }
    RunOutput out = start_run_output(method, meas, gt);
    direct->second(meas, out);
    score_output(instance, p, seed, out);
    return out;
  }
  const std::optional<ProblemSetup> setup = instance.setup(p, method, seed);
  FK_CHECK(setup.has_value(), instance.name(),
           "a setup() for method " + method + " (or a direct runner)", "none");
  ProblemSetup s = *setup;
  if (so.measured) {
    s.measurement = measured_in_place_of(instance, s.measurement, *so.measured);
    s.problem.measurement = s.measurement;
    s.gt = fk::Tensor();
  }
  RunOutput out = start_run_output(method, s.measurement, s.gt);
  solve_and_record(s.problem, s.curriculum, seed, so, out);
  finish_solved_output(instance, p, s.problem, seed, out);
  return out;
}

}  // namespace nefi
