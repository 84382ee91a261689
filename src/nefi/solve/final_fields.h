#pragma once
// The tail shared by Solver::run and batch_invert: a solved problem's field
// evaluated once more, without gradients, at the final domain and progress.
#include <cmath>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "nefi/domain.h"
#include "nefi/measurement.h"
#include "nefi/solve/problem.h"
#include "nefi/solve/result.h"

namespace nefi::detail {

// res's prediction (final_op of the fields), raw and postprocessed fields,
// postprocess info and parameter count, from prob's field as it holds now.
inline void record_final_fields(Result& res, const InverseProblem& prob, const Operator& final_op,
                                const Domain& final_domain, double final_progress) {
  Field& field = *prob.field;
  fk::autograd::NoGradGuard ng;
  FieldMap fields = field.forward(final_domain, final_progress);
  res.prediction = final_op.forward(fields).detach();
  for (auto& [k, v] : fields) res.raw_fields[k] = v.detach().contiguous();
  res.fields = res.raw_fields;
  const Measurement final_obs = prob.measurement.resampled(res.prediction.shape());
  for (const auto& post : prob.postprocess)
    for (const auto& [k, v] : post->apply(res.fields, res.prediction, final_obs))
      res.post_info[k] = v;
  res.n_parameters = field.n_parameters();
}

// "" when every raw field of res is finite, else which is not and where: a
// last update that diverged leaves one (the NaN guard checks each step's
// loss, which that step's own update follows unchecked).
inline std::string non_finite_field(const Result& res) {
  for (const auto& [name, v] : res.raw_fields) {
    const std::vector<double> values = v.to_vector<double>();
    for (size_t i = 0; i < values.size(); ++i)
      if (!std::isfinite(values[i]))
        return "a non-finite field '" + name + "' (" + std::to_string(values[i]) + " at cell " +
               std::to_string(i) + ")";
  }
  return "";
}

}  // namespace nefi::detail
