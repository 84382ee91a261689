#pragma once
// A nefi solve's Result as the dicts fieldkit.nefi returns: the fields
// (numpy), the loss history (a dict of numpy columns), the stages and the
// timings; and the data fit of a prediction against its measurement.
#include <nanobind/nanobind.h>

#include <string>

#include "nefi/diagnostics/diagnose.h"
#include "nefi/measurement.h"
#include "nefi/solve/result.h"

namespace fkpy {

namespace nb = nanobind;

nb::object numpy_or_none(const fk::Tensor& t);
// A JSON text (a report's numbers) as the dict Python's json.loads makes.
nb::dict json_dict(const std::string& text);
// {fields, history, stages, total_steps, ms_per_step, total_s, n_parameters, seed (the
// field's: the winning attempt's initialisation seed)}
nb::dict solve_dict(const nefi::Result& r);
// {rmse, data_psnr, discrepancy_ratio (RMSE / sigma; None: sigma unknown)},
// or None without a prediction (a direct method).
nb::object data_fit_dict(const nefi::Measurement& m, const fk::Tensor& prediction);
// diagnostics.json's numbers as a dict, with the sensitivity map as a numpy
// array of the field's shape and `report` (diagnostics.md's text); with a
// non-empty `out`, the four files of `nefi diagnose` are written there too
// (`files`: their paths).
nb::dict diagnostics_dict(const nefi::diagnostics::Diagnostics& d, const std::string& out = "",
                          bool png = true);

}  // namespace fkpy
