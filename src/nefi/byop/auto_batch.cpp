#include "nefi/byop/auto_batch.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <tuple>

#include "fk/error.h"
#include "nefi/operators/function_operator.h"

namespace nefi {
namespace {

constexpr const char* kWhere = "batch of from_forward problems";

template <typename T>
std::string text(const T& v) {
  if constexpr (std::is_same_v<T, std::string>)
    return "'" + v + "'";
  else if constexpr (std::is_same_v<T, bool>)
    return v ? "true" : "false";
  else
    return std::to_string(v);
}
template <typename T>
std::string text(const std::optional<T>& v) {
  return v ? text(*v) : "unset";
}
std::string text(const std::vector<double>& v) {
  std::string s;
  for (double e : v) s += (s.empty() ? "" : ", ") + std::to_string(e);
  return "[" + s + "]";
}
std::string text(const std::vector<std::pair<std::string, std::string>>& v) {
  std::string s;
  for (const auto& [k, p] : v) s += (s.empty() ? "" : ", ") + k + ": " + p;
  return "{" + s + "}";
}

// What problem i must share with problem 0 beyond its measurement, noise
// level and seed: the first option that differs is named with both values.
void check_alike(const AutoInput& a, const AutoInput& first, size_t i) {
  const std::string who = "problem " + std::to_string(i);
  auto same = [&](const char* option, const auto& mine, const auto& theirs) {
    FK_CHECK(mine == theirs, kWhere, std::string(option) + " " + text(theirs) + " (problem 0's)",
             who + "'s " + text(mine));
  };
  FK_CHECK(a.op->kind() == first.op->kind(), kWhere, "problem 0's model '" + first.op->kind() + "'",
           who + "'s '" + a.op->kind() + "'");
  FK_CHECK(a.shape == first.shape, kWhere, "problem 0's grid " + first.shape.str(),
           who + "'s " + a.shape.str());
  const AutoOptions &o = a.options, &f = first.options;
  same("prior", o.prior, f.prior);
  same("field priors", o.field_priors, f.field_priors);
  same("extent", o.extent, f.extent);
  same("representation", o.representation, f.representation);
  same("rank", o.rank, f.rank);
  same("shapes", o.shapes, f.shapes);
  same("harmonics", o.harmonics, f.harmonics);
  same("vertices", o.vertices, f.vertices);
  same("modes", o.modes, f.modes);
  same("smoothness", o.smoothness, f.smoothness);
  same("layers", o.layers, f.layers);
  same("layer_axis", o.layer_axis, f.layer_axis);
  same("budget", o.budget, f.budget);
  same("lr", o.lr, f.lr);
  same("hidden", o.hidden, f.hidden);
  same("depth", o.depth, f.depth);
  same("n_octaves", o.n_octaves, f.n_octaves);
  same("discrepancy", o.discrepancy, f.discrepancy);
  same("discrepancy_tau", o.discrepancy_tau, f.discrepancy_tau);
  same("multiscale", o.multiscale, f.multiscale);
  same("early_stop_patience", o.early_stop_patience, f.early_stop_patience);
  FK_CHECK(o.supports.size() == f.supports.size(), kWhere,
           fk::to_text(f.supports.size()) + " known supports (problem 0's)",
           who + "'s " + fk::to_text(o.supports.size()));
  for (const auto& [field, mask] : f.supports) {
    const auto it = o.supports.find(field);
    FK_CHECK(it != o.supports.end() && it->second.shape() == mask.shape() &&
                 it->second.to_vector<double>() == mask.to_vector<double>(),
             kWhere, "problem 0's support of field '" + field + "'", who + "'s other support");
  }
}

}  // namespace

std::vector<AutoProblem> shared_start_problems(const std::vector<AutoInput>& inputs,
                                               std::vector<FittedStart> fits) {
  FK_CHECK(!inputs.empty(), kWhere, "at least one problem", "none");
  // Refused before any problem is built (each build runs its model's probes).
  const std::string& rep = inputs[0].options.representation;
  FK_CHECK(rep == "neural" || rep == "grid", kWhere,
           "representation neural or grid (the fields batch_invert batches; solve each problem "
           "for the others)",
           "'" + rep + "'");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Operator& op = *inputs[i].op;
    FK_CHECK(op.batchable() && op.parameters().empty(), kWhere,
             "built-in models that run N fields in one call, with no trainable parameters",
             "problem " + fk::to_text(i) + "'s model '" + op.kind() + "'" +
                 (op.batchable() ? " (it has trainable parameters)"
                  : dynamic_cast<const FunctionOperator*>(&op)
                      ? " (a model of host or Python functions runs one field per call: solve "
                        "each problem)"
                      : " (not batchable)"));
    if (i > 0) check_alike(inputs[i], inputs[0], i);
  }
  FK_CHECK(fits.empty() || fits.size() == inputs.size(), kWhere,
           fk::to_text(inputs.size()) + " sets of fitted constants (one per problem)",
           fk::to_text(fits.size()));
  auto build = [&](size_t i, const AutoOptions& o) {
    try {
      return auto_problem(inputs[i].op, inputs[i].shape, inputs[i].measurement, o);
    } catch (const fk::Error& e) {
      throw fk::Error("problem " + fk::to_text(i) + " of the batch: " + e.where(), e.expected(),
                      e.given());
    }
  };
  if (fits.empty())
    for (size_t i = 0; i < inputs.size(); ++i) {
      AutoOptions o = inputs[i].options;
      o.start.clear();
      o.start_scales.clear();
      const AutoProblem own = build(i, o);
      fits.push_back({own.constant_fits, own.head_scales});
    }
  // The medoid: the problem whose constants are nearest (L1) to all the
  // others' (with one field, the median one), so that several fields start
  // at one problem's fit, never at a mix no problem fits. The fits are
  // visited and summed in sorted order, so the choice depends on the set of
  // problems, not their order: with an even count the two middle values tie
  // (the first listed won, so a reversed batch started elsewhere and every
  // result moved).
  std::vector<size_t> order(fits.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(fits[a].constants, fits[a].scales) <
           std::tie(fits[b].constants, fits[b].scales);
  });
  size_t medoid = order[0];
  double best = std::numeric_limits<double>::infinity();
  for (size_t i : order) {
    double d = 0;
    for (size_t j : order)
      for (size_t f = 0; f < fits[j].constants.size(); ++f)
        d += std::abs(fits[i].constants[f] - fits[j].constants[f]);
    if (d < best) {
      best = d;
      medoid = i;
    }
  }
  std::vector<AutoProblem> out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    AutoOptions o = inputs[i].options;
    o.start = fits[medoid].constants;
    o.start_scales = fits[medoid].scales;
    out.push_back(build(i, o));
  }
  return out;
}

void check_device_batch(const std::vector<const AutoProblem*>& built, const BatchOptions& options) {
  if (options.device.is_cpu() || built.empty()) return;
  std::vector<InverseProblem> problems;
  for (const AutoProblem* ap : built) problems.push_back(ap->problem);
  if (const auto why = batch_device_reason(problems, built[0]->curriculum, options))
    throw fk::Error(kWhere, "problems a device batch supports", *why);
}

std::vector<Result> solve_together(const std::vector<AutoProblem>& problems, BatchOptions options) {
  FK_CHECK(!problems.empty(), kWhere, "at least one problem", "none");
  FK_CHECK(options.seeds.empty(), kWhere, "no BatchOptions::seeds (each problem's seed is used)",
           fk::to_text(options.seeds.size()) + " seeds");
  std::vector<InverseProblem> inverse;
  for (size_t i = 0; i < problems.size(); ++i) {
    const AutoProblem& ap = problems[i];
    const Curriculum& c = ap.curriculum;
    const Curriculum& c0 = problems[0].curriculum;
    bool same = c.stages.size() == c0.stages.size() && c.discrepancy_tau == c0.discrepancy_tau &&
                c.early_stop_patience == c0.early_stop_patience;
    for (size_t s = 0; same && s < c.stages.size(); ++s)
      same = c.stages[s].steps == c0.stages[s].steps && c.stages[s].lr == c0.stages[s].lr &&
             c.stages[s].shape == c0.stages[s].shape;
    FK_CHECK(same, kWhere, "problem 0's curriculum (steps, lr, Morozov stop)",
             "problem " + fk::to_text(i) +
                 "'s differs (a noise level of 0 turns the stop off: give every problem one)");
    inverse.push_back(ap.problem);
    options.seeds.push_back(ap.seed);
  }
  return batch_invert(std::move(inverse), problems[0].curriculum, options);
}

}  // namespace nefi
