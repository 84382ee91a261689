#pragma once
// The tail shared by Solver::run and batch_invert: a solved problem's field
// evaluated once more, without gradients, at the final domain and progress.
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

}  // namespace nefi::detail
