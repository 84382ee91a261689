#pragma once
// A markdown summary of a bring-your-own solve (the reference's
// quick_report): the field's size, how well the prediction explains the
// data as chi = RMSE / sigma with a verdict (diagnostics::misfit_verdict),
// how each stage stopped, the timings, the ground-truth metrics of each
// field given a truth, and every automatic decision with its reason.
#include <string>

#include "fk/tensor.h"
#include "nefi/byop/auto_problem.h"
#include "nefi/solve/result.h"

namespace nefi {

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
