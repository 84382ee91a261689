#pragma once
// A markdown summary of a bring-your-own solve (the reference's
// quick_report): the field's size, how well the prediction explains the
// data as chi = RMSE / sigma with a verdict, how each stage stopped, the
// timings, the ground-truth metrics when a truth is given (of the first
// field), and every
// automatic decision with its reason.
//   chi < 0.9           below the noise: fitting the noise (or sigma too big)
//   0.9 <= chi <= 1.2   at the noise floor (the band holds an estimated
//                       sigma's error; a given sigma's is 0.9 .. 1.1)
//   up to 2             slightly above the noise floor
//   above 2             underfit: the field does not explain the data
#include <string>

#include "fk/tensor.h"
#include "nefi/byop/auto_problem.h"
#include "nefi/solve/result.h"

namespace nefi {

// The verdict line for chi (see above); estimated: sigma came from the data.
std::string chi_verdict(double chi, bool estimated);

std::string quick_report(const AutoProblem& problem, const Result& result,
                         const fk::Tensor& ground_truth = {});

}  // namespace nefi
