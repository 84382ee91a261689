#include "nefi/byop/auto_batch.h"

#include <algorithm>
#include <string>

#include "fk/error.h"

namespace nefi {
namespace {

constexpr const char* kWhere = "batch of from_forward problems";

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// What problem i must share with problem 0, beyond its measurement.
void check_alike(const AutoInput& a, const AutoInput& first, size_t i) {
  const std::string who = "problem " + std::to_string(i);
  FK_CHECK(a.shape == first.shape, kWhere, "problem 0's grid " + first.shape.str(),
           who + "'s " + a.shape.str());
  const AutoOptions &o = a.options, &f = first.options;
  const bool same =
      o.prior == f.prior && o.field_priors == f.field_priors && o.extent == f.extent &&
      o.representation == f.representation && o.rank == f.rank && o.budget == f.budget &&
      o.lr == f.lr && o.hidden == f.hidden && o.depth == f.depth && o.n_octaves == f.n_octaves &&
      o.discrepancy == f.discrepancy && o.discrepancy_tau == f.discrepancy_tau &&
      o.multiscale == f.multiscale && o.seed == f.seed &&
      o.early_stop_patience == f.early_stop_patience && o.supports.size() == f.supports.size();
  FK_CHECK(same, kWhere,
           "problems made with one set of options (prior, representation, network, budget, lr, "
           "stop, seed, supports), their measurements aside",
           who + " made with other options");
}

}  // namespace

std::vector<AutoProblem> shared_start_problems(const std::vector<AutoInput>& inputs) {
  FK_CHECK(!inputs.empty(), kWhere, "at least one problem", "none");
  for (size_t i = 1; i < inputs.size(); ++i) check_alike(inputs[i], inputs[0], i);
  std::vector<std::vector<double>> fits;  // per problem, per field
  for (const AutoInput& a : inputs) {
    AutoOptions o = a.options;
    o.start.clear();
    fits.push_back(auto_problem(a.op, a.shape, a.measurement, o).constant_fits);
  }
  std::vector<double> start(fits[0].size());
  for (size_t f = 0; f < start.size(); ++f) {
    std::vector<double> c;
    for (const auto& v : fits) c.push_back(v[f]);
    start[f] = median(c);
  }
  std::vector<AutoProblem> out;
  for (const AutoInput& a : inputs) {
    AutoOptions o = a.options;
    o.start = start;
    out.push_back(auto_problem(a.op, a.shape, a.measurement, o));
  }
  return out;
}

std::vector<Result> solve_together(const std::vector<AutoProblem>& problems, BatchOptions options) {
  FK_CHECK(!problems.empty(), kWhere, "at least one problem", "none");
  std::vector<InverseProblem> inverse;
  options.seeds.clear();
  for (size_t i = 0; i < problems.size(); ++i) {
    const AutoProblem& ap = problems[i];
    const Curriculum &c = ap.curriculum, &c0 = problems[0].curriculum;
    bool same = c.stages.size() == c0.stages.size() && c.discrepancy_tau == c0.discrepancy_tau &&
                c.early_stop_patience == c0.early_stop_patience;
    for (size_t s = 0; same && s < c.stages.size(); ++s)
      same = c.stages[s].steps == c0.stages[s].steps && c.stages[s].lr == c0.stages[s].lr &&
             c.stages[s].shape == c0.stages[s].shape;
    FK_CHECK(same, kWhere, "problem 0's curriculum (steps, lr, Morozov stop)",
             "problem " + std::to_string(i) +
                 "'s differs (a noise level of 0 turns the stop off: give every problem one)");
    ap.reset_operator();
    inverse.push_back(ap.problem);
    options.seeds.push_back(ap.seed);
  }
  return batch_invert(std::move(inverse), problems[0].curriculum, options);
}

}  // namespace nefi
