// ForwardProblem's studies (forward_problem.h): the model linearized at a
// field (diagnose, with the loss Hessian on request), the loss Hessian
// alone, edge refinement of a solve (byop/refine_fit.h) and pilot-solve
// tuning (tune/fit_autotune.h). Each runs under the problem's solve lock with
// the GIL released, the model's parameters put back afterwards.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "forward_problem.h"
#include "nefi/byop/refine_fit.h"
#include "nefi/diagnostics/diagnose.h"
#include "nefi/diagnostics/hessian.h"
#include "nefi/tune/fit_autotune.h"
#include "nefi_result_dict.h"
#include "tensor_bridge.h"

namespace fkpy {
namespace {

// `ap` whose operator_start is `values` (a solve's fitted model parameters;
// none: as given), so that its reset_operator puts them in place.
nefi::AutoProblem with_operator_values(const nefi::AutoProblem& ap,
                                       const std::vector<nb::ndarray<nb::ro>>& values,
                                       const std::string& who) {
  nefi::AutoProblem out = ap;
  if (values.empty()) return out;
  FK_CHECK(values.size() == ap.operator_start.size(), who + " operator_parameters",
           std::to_string(ap.operator_start.size()) + " (the model's)",
           std::to_string(values.size()));
  for (size_t i = 0; i < values.size(); ++i) {
    const fk::Tensor v = from_dlpack(values[i]).to(fk::DType::F64);
    const fk::Dims& want = ap.operator_start[i].shape();
    FK_CHECK(v.numel() == want.numel(), who + " operator_parameters",
             "parameter " + std::to_string(i) + " of shape " + want.str(), v.shape().str());
    out.operator_start[i] = v.contiguous().clone().reshape(want);
  }
  return out;
}

// The loss Hessian at the problem's start (`given` undefined) or at a
// solve's field parameters; the caller holds the solve's lock without the
// GIL and has put the model's parameters (`fitted`) in place.
nefi::diagnostics::HessianSpectrum problem_hessian(const nefi::AutoProblem& ap,
                                                   const fk::Tensor& given, int k, int n_iter,
                                                   uint64_t seed, fk::Device device) {
  nefi::Field& field = *ap.problem.field;
  field.on_stage_start(ap.problem.domain);
  field.reset_parameters(ap.seed);
  if (given.defined()) {
    fk::Tensor& flat = field.params().flat();
    FK_CHECK(given.numel() == flat.numel(), "ForwardProblem.hessian_spectrum at",
             "a solve's field_parameters (" + std::to_string(flat.numel()) + ")",
             std::to_string(given.numel()) + " values");
    fk::autograd::NoGradGuard ng;
    flat.copy_(given.reshape(flat.shape()).to(flat.dtype()));
    flat.bump_version();
  }
  return nefi::diagnostics::hessian_spectrum(ap.problem, k, n_iter, seed, device);
}

// refine_edges' numeric options by name (RefineOptions' fields).
nefi::RefineOptions refine_options(const std::string& mode, int levels,
                                   const std::string& levels_by,
                                   const std::vector<double>& start_levels,
                                   const std::map<std::string, double>& numbers) {
  nefi::RefineOptions o;
  o.mode = mode;
  o.levels = levels;
  o.levels_by = levels_by;
  o.start_levels = start_levels;
  const std::map<std::string, double*> reals{{"lr", &o.lr},
                                             {"eps_start", &o.eps_start},
                                             {"eps_end", &o.eps_end},
                                             {"chi_factor", &o.chi_factor},
                                             {"noise_sigmas", &o.noise_sigmas},
                                             {"min_chi_smooth", &o.min_chi_smooth},
                                             {"band_fraction", &o.band_fraction},
                                             {"support_share", &o.support_share},
                                             {"boundary_weight", &o.boundary_weight},
                                             {"boundary_eps", &o.boundary_eps},
                                             {"floor", &o.floor},
                                             {"tv_weight", &o.tv_weight},
                                             {"tv_eps", &o.tv_eps},
                                             {"well_weight", &o.well_weight},
                                             {"phase_width", &o.phase_width},
                                             {"auto_separation", &o.auto_separation}};
  const std::map<std::string, int*> counts{
      {"steps", &o.steps}, {"max_levels", &o.max_levels}, {"band_width", &o.band_width}};
  for (const auto& [key, value] : numbers) {
    if (const auto r = reals.find(key); r != reals.end()) {
      *r->second = value;
    } else if (const auto c = counts.find(key); c != counts.end()) {
      FK_CHECK(value == std::floor(value) && std::abs(value) < 1e9, "refine option '" + key + "'",
               "an integer", std::to_string(value));
      *c->second = static_cast<int>(value);
    } else {
      std::string known;
      for (const auto& [k, v] : reals) known += (known.empty() ? "" : ", ") + k;
      for (const auto& [k, v] : counts) known += ", " + k;
      throw fk::Error("refine_edges", "an option among " + known, "'" + key + "'");
    }
  }
  FK_CHECK(o.steps >= 1, "refine option 'steps'", ">= 1", std::to_string(o.steps));
  o.validate();
  return o;
}

nb::dict refine_report_dict(const nefi::RefineReport& r) {
  nb::dict d;
  d["accepted"] = r.accepted;
  d["reason"] = r.reason;
  d["refusal"] = r.refusal;
  d["thresholds"] = r.thresholds;
  d["start_levels"] = r.start_levels;
  d["levels"] = r.levels;
  d["chi_by_levels"] = r.chi_by_levels;
  d["chi_smooth"] = r.chi_smooth;
  d["chi_refined"] = r.chi_refined;
  d["chi_sigma"] = r.chi_sigma;
  d["in_band"] = r.in_band;
  d["support_kept"] = r.support_kept;
  d["refit_steps"] = r.refit_steps;
  d["refit_graph_steps"] = r.refit_graph_steps;
  d["refined"] = numpy_or_none(r.refined);
  d["field"] = numpy_or_none(r.field);
  return d;
}

}  // namespace

void bind_forward_problem_studies(nb::class_<ForwardProblem>& problem) {
  problem
      .def(
          "diagnose",
          [](const ForwardProblem& p, std::optional<nb::ndarray<nb::ro>> at,
             const std::vector<nb::ndarray<nb::ro>>& operator_parameters, int probes, int k,
             int n_iter, bool exact_sensitivity, uint64_t seed, const std::string& out, bool png,
             int hessian_k, int hessian_iter, std::optional<nb::ndarray<nb::ro>> field_parameters,
             const std::string& device) {
            nefi::diagnostics::DiagnoseOptions opt{
                probes, k, n_iter, exact_sensitivity, seed, hessian_k, hessian_iter};
            opt.device = fk::parse_device(device);
            fk::check_usable(opt.device, "ForwardProblem.diagnose device");  // before any work
            const fk::Tensor given_parameters =
                field_parameters
                    ? from_dlpack(*field_parameters).to(fk::DType::F64).contiguous().clone()
                    : fk::Tensor();
            const nefi::AutoProblem& ap = p.ap;
            FK_CHECK(ap.fields.size() == 1, "ForwardProblem.diagnose",
                     "a problem with one field (the linearization is in one field's cells)",
                     std::to_string(ap.fields.size()) + " fields");
            const fk::Dims shape = ap.problem.domain.shape();
            fk::Tensor x;
            std::string where;
            if (at) {
              x = from_dlpack(*at).to(fk::DType::F64).contiguous().clone();
              FK_CHECK(x.numel() == shape.numel(), "ForwardProblem.diagnose at",
                       "a field of shape " + shape.str(), x.shape().str());
              x = x.reshape(shape);
              where = "the given field";
            } else {
              x = fk::full(shape, ap.constant_fits.front(), {fk::DType::F64});
              where = "the start (the constant " + std::to_string(ap.constant_fits.front()) + ")";
            }
            // The model's own parameters: a solve's fit when given with its
            // field, else their given values (put back afterwards).
            const nefi::AutoProblem fitted =
                with_operator_values(ap, operator_parameters, "ForwardProblem.diagnose");
            nefi::diagnostics::Diagnostics d;
            {  // a Python model takes the GIL for its own calls
              nb::gil_scoped_release nogil;
              const OneSolveAtATime one_at_a_time(*p.solving, "ForwardProblem.diagnose");
              fitted.reset_operator();
              try {
                d = nefi::diagnostics::diagnose(*ap.problem.op, x, ap.problem.measurement, opt);
                if (hessian_k > 0)  // at the same parameters: the start's or the solve's
                  d.hessian = problem_hessian(ap, given_parameters, hessian_k, hessian_iter, seed,
                                              opt.device);
              } catch (...) {
                ap.reset_operator();
                throw;
              }
              ap.reset_operator();
            }
            d.instance = "from_forward";
            d.noise_estimated = ap.noise_estimated;
            d.method = ap.problem.op->kind();
            d.seed = opt.seed;
            d.at = where;
            return diagnostics_dict(d, out, png);
          },
          nb::arg("at").none(), nb::arg("operator_parameters"), nb::arg("probes"), nb::arg("k"),
          nb::arg("n_iter"), nb::arg("exact_sensitivity"), nb::arg("seed"), nb::arg("out") = "",
          nb::arg("png") = true, nb::arg("hessian_k") = 0, nb::arg("hessian_iter") = 30,
          nb::arg("field_parameters").none() = nb::none(), nb::arg("device") = "cpu")
      .def(
          "hessian_spectrum",
          [](const ForwardProblem& p, std::optional<nb::ndarray<nb::ro>> at,
             const std::vector<nb::ndarray<nb::ro>>& operator_parameters, int k, int n_iter,
             uint64_t seed, const std::string& device) {
            const fk::Device dev = fk::parse_device(device);
            fk::check_usable(dev, "ForwardProblem.hessian_spectrum device");  // before any work
            const nefi::AutoProblem fitted =
                with_operator_values(p.ap, operator_parameters, "ForwardProblem.hessian_spectrum");
            const fk::Tensor given =
                at ? from_dlpack(*at).to(fk::DType::F64).contiguous().clone() : fk::Tensor();
            nefi::diagnostics::HessianSpectrum h;
            {
              nb::gil_scoped_release nogil;
              const OneSolveAtATime one_at_a_time(*p.solving, "ForwardProblem.hessian_spectrum");
              fitted.reset_operator();
              try {  // the problem's start, or a solve's parameters
                h = problem_hessian(p.ap, given, k, n_iter, seed, dev);
              } catch (...) {
                p.ap.reset_operator();
                throw;
              }
              p.ap.reset_operator();
            }
            nb::dict d;
            d["largest"] = h.eigenvalues.largest;
            d["smallest"] = h.eigenvalues.smallest;
            d["condition"] = h.condition;
            d["parameters"] = h.parameters;
            d["lanczos_steps"] = h.eigenvalues.iterations;
            d["invariant_subspace"] = h.eigenvalues.invariant;
            return d;
          },
          nb::arg("at").none(), nb::arg("operator_parameters"), nb::arg("k"), nb::arg("n_iter"),
          nb::arg("seed"), nb::arg("device") = "cpu")
      .def(
          "refine_edges",
          [](const ForwardProblem& p, nb::ndarray<nb::ro> smooth, const std::string& mode,
             int levels, const std::string& levels_by, const std::vector<double>& start_levels,
             const std::map<std::string, double>& numbers, uint64_t seed,
             const std::string& device) {
            nefi::FitRefineOptions o;
            o.seed = seed;
            o.device = fk::parse_device(device);
            fk::check_usable(o.device, "ForwardProblem.refine_edges device");  // before any work
            o.refine = refine_options(mode, levels, levels_by, start_levels, numbers);
            if (const auto lr = numbers.find("lr"); lr != numbers.end()) o.lr = lr->second;
            if (const auto f = numbers.find("floor"); f != numbers.end()) o.floor = f->second;
            const fk::Tensor x = from_dlpack(smooth).to(fk::DType::F64).contiguous().clone();
            FK_CHECK(x.shape() == p.shape, "ForwardProblem.refine_edges",
                     "a field of the problem's shape " + p.shape.str(), x.shape().str());
            nefi::RefineReport r;
            fk::Tensor pred;
            {  // a Python model takes the GIL for its own calls
              nb::gil_scoped_release nogil;
              const OneSolveAtATime one_at_a_time(*p.solving, "ForwardProblem.refine_edges");
              r = nefi::refine_fit(p.ap, x, o);
              fk::autograd::NoGradGuard ng;
              pred = p.ap.problem.op->forward({{p.ap.fields.front(), r.field}});
            }
            // The arrays apart: an accepted report's field is its refit.
            if (r.refined.defined()) r.refined = r.refined.clone();
            nb::dict d = refine_report_dict(r);
            d["prediction"] = numpy_or_none(pred.to(fk::DType::F64));
            d["data_fit"] = data_fit_dict(p.ap.problem.measurement, pred);
            return d;
          },
          nb::arg("smooth"), nb::arg("mode"), nb::arg("levels"), nb::arg("levels_by"),
          nb::arg("start_levels"), nb::arg("numbers"), nb::arg("seed"), nb::arg("device") = "cpu")
      .def(
          "autotune",
          [](const ForwardProblem& p, const std::string& level,
             std::optional<nb::ndarray<nb::ro>> truth, const std::string& device) {
            const fk::Device dev = fk::parse_device(device);
            fk::check_usable(dev, "ForwardProblem.autotune device");  // before any work
            const nefi::tune::LevelPlan plan = nefi::tune::level_plan(level, "autotune level");
            const fk::Tensor gt =
                truth ? from_dlpack(*truth).to(fk::DType::F64).contiguous().clone() : fk::Tensor();
            nefi::tune::FitTuneReport rep;
            ForwardProblem tuned = p;  // shares the model, so its lock too
            {                          // a Python model takes the GIL for its own calls
              nb::gil_scoped_release nogil;
              const OneSolveAtATime one_at_a_time(*p.solving, "ForwardProblem.autotune");
              p.ap.reset_operator();  // pilots start where every solve does
              rep = nefi::tune::autotune_fit(p.op, p.shape, p.measurement, p.options, plan, gt, {},
                                             dev);
              tuned.options = rep.tuned;
              tuned.ap = nefi::tune::tuned_problem(p.op, p.shape, p.measurement, rep);
            }
            nb::dict d = json_dict(nefi::tune::fit_autotune_json(rep));
            d["report"] = nefi::tune::fit_autotune_md(rep);
            return nb::make_tuple(d, tuned);
          },
          nb::arg("level"), nb::arg("truth").none(), nb::arg("device"));
}

}  // namespace fkpy
