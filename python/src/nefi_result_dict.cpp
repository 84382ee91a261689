#include "nefi_result_dict.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "fk/factory.h"
#include "nefi/bench/merge.h"
#include "nefi/diagnostics/data_fit.h"
#include "nefi/diagnostics/report.h"
#include "tensor_bridge.h"

namespace fkpy {

nb::object numpy_or_none(const fk::Tensor& t) {
  return t.defined() ? to_numpy(t.contiguous()) : nb::none();
}

nb::dict json_dict(const std::string& text) {
  return nb::cast<nb::dict>(nb::module_::import_("json").attr("loads")(text));
}

namespace {

nb::dict history_dict(const nefi::History& h) {
  nb::dict d;
  for (const auto& c : h.columns) {
    std::vector<double> v = h.column(c);
    d[c.c_str()] = to_numpy(fk::from_vector(v, fk::Dims{static_cast<int64_t>(v.size())}));
  }
  return d;
}

}  // namespace

nb::dict solve_dict(const nefi::Result& r) {
  nb::dict d;
  nb::dict fields;
  for (const auto& [name, t] : r.fields) fields[name.c_str()] = numpy_or_none(t);
  d["fields"] = fields;
  d["history"] = history_dict(r.history);
  nb::list stages;
  for (const auto& s : r.stages) {
    nb::dict st;
    st["name"] = s.name;
    st["shape"] = std::vector<int64_t>(s.shape.begin(), s.shape.end());
    st["steps"] = s.steps;
    st["seconds"] = s.seconds;
    st["final_total"] = s.final_total;
    st["final_data_loss"] = s.final_data_loss;
    st["stop"] = s.stop;
    st["device_note"] = s.device_note;  // a device stage: how its steps ran
    st["graph_steps"] = s.graph_steps;
    stages.append(st);
  }
  d["stages"] = stages;
  d["total_steps"] = r.total_steps();
  d["ms_per_step"] = r.total_steps() > 0 ? r.ms_per_step() : 0.0;
  d["total_s"] = r.total_s;
  d["n_parameters"] = r.n_parameters;
  d["seed"] = r.seed;
  d["device"] = r.device;  // where the field trained
  return d;
}

nb::object data_fit_dict(const nefi::Measurement& m, const fk::Tensor& prediction) {
  const auto fit = nefi::diagnostics::data_fit(m, prediction);
  if (!fit) return nb::none();
  nb::dict f;
  f["rmse"] = fit->rmse;
  f["data_psnr"] = fit->psnr_db;
  f["discrepancy_ratio"] = fit->rmse_over_sigma ? nb::cast(*fit->rmse_over_sigma) : nb::none();
  return f;
}

nb::dict diagnostics_dict(const nefi::diagnostics::Diagnostics& d, const std::string& out,
                          bool png) {
  nb::dict j = json_dict(nefi::diagnostics::diagnostics_json(d));
  nb::dict sens = nb::cast<nb::dict>(j["sensitivity"]);
  sens["map"] = to_numpy(fk::from_vector(d.probes.sensitivity, d.field_shape));
  if (out.empty()) sens.attr("pop")("file");  // no sensitivity.npy written
  // The Hessian's condition as hessian_spectrum gives it: inf where it is
  // not positive definite (JSON, and so the file, holds null there).
  if (d.hessian) nb::cast<nb::dict>(j["hessian"])["condition"] = d.hessian->condition;
  j["report"] = nefi::diagnostics::diagnostics_md(d);
  if (!out.empty()) {
    nefi::bench::prepare_out_dir(out, "diagnose out");
    j["files"] = nefi::diagnostics::write_diagnostics(out, d, png);
  }
  return j;
}

}  // namespace fkpy
