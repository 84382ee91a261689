#pragma once
// What `nefi fit` writes for a bring-your-own solve, into one folder:
//   <field>.npy      each reconstructed field (f64, the field's shape)
//   prediction.npy   the model on it (the measurement's shape)
//   report.md        quick_report (chi verdict, stages, decisions)
//   fit.json         the decisions, data fit (rmse, data PSNR, chi), steps,
//                    times and stop reasons
//   history.csv / history.png   the loss terms per step
//   fit.png          each field (a line in 1-D, an image in 2-D, the middle
//                    slice in 3-D), then the data and the residual as images
//                    (an image-shaped measurement) or the data as dots under
//                    the prediction
// and, after an edge refinement (`nefi fit --refine`), into <out>/refine:
//   refined.npy      the refit, accepted or not
//   x.npy            the field to use: the refit when accepted, else the fit
//   refine.json      the settings, accepted, the reason, chi (mean squared
//                    residual / sigma^2) before and after, levels,
//                    thresholds, the band and support shares
#include <string>

#include "nefi/byop/auto_problem.h"
#include "nefi/solve/refine.h"
#include "nefi/solve/result.h"

namespace nefi {

// Throws fk::Error when the folder cannot be written.
void write_fit(const std::string& dir, const AutoProblem& problem, const Result& result);

void write_refine(const std::string& dir, const RefineOptions& options, const RefineReport& r);

// Removes what an earlier fit wrote into `dir` when it holds one (its
// fit.json): the files above, the fields that fit.json names,
// autotune.md/.json, diagnostics/ and refine/, and nothing else: a fit into a reused folder left
// the earlier one's refine/x.npy, "the field to use", beside its own result.
void clear_fit_outputs(const std::string& dir);

// fit.png alone.
void write_fit_png(const std::string& path, const AutoProblem& problem, const Result& result);

}  // namespace nefi
