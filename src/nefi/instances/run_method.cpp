#include "nefi/instances/run_method.h"

#include <algorithm>
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

RunOutput run_method(const Instance& instance, const Params& p, const std::string& method,
                     uint64_t seed, const SolverOptions& so, const MethodRunners& runners) {
  check_method(instance, method);
  RunOutput out;
  if (const auto direct = runners.direct.find(method); direct != runners.direct.end()) {
    auto [meas, gt] = instance.make_measurement(p, seed);
    out = start_run_output(method, meas, gt);
    direct->second(meas, out);
  } else if (runners.solve) {
    out = runners.solve(*instance.setup(p, method, seed), method, seed, so);
  } else {
    ProblemSetup s = *instance.setup(p, method, seed);
    out = start_run_output(method, s.measurement, s.gt);
    solve_and_record(std::move(s.problem), s.curriculum, seed, so, out);
  }
  for (const auto& [k, v] : instance.evaluate(p, out)) out.metrics[k] = v;
  return out;
}

}  // namespace nefi
