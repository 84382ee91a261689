#pragma once
// A markdown summary of a bring-your-own solve (the reference's
// quick_report): the field's size, how well the prediction explains the
// data as chi = RMSE / sigma with a verdict, how each stage stopped, the
// timings, the ground-truth metrics of each field given a truth, and every
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

// truths: ground truths by field name (any subset of the fields), each of
// the field's shape; their PSNR and relative error are reported.
std::string quick_report(const AutoProblem& problem, const Result& result,
                         const FieldMap& truths = {});
// quick_report's ground-truth lines ("- ground truth: PSNR .. dB, relative
// error .."), one per truth, of the solved fields (the field's shape each):
// a report scored after its solve.
std::string ground_truth_lines(const AutoProblem& problem, const FieldMap& fields,
                               const FieldMap& truths);
// Throws the fk::Error quick_report would, before a solve: a truth of an
// unknown field or of the wrong size.
void check_ground_truth(const AutoProblem& problem, const FieldMap& truths);

}  // namespace nefi
