#include "nefi/byop/quick_report.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "fk/error.h"
#include "nefi/diagnostics/data_fit.h"
#include "nefi/solve/metrics.h"

namespace nefi {
namespace {

std::string fmt_fields(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// A markdown table cell: a '|' in a reason (a model's own error text) would
// split the row.
std::string cell(const std::string& text) {
  std::string out;
  for (char ch : text) out += ch == '|' ? std::string("\\|") : std::string(1, ch);
  return out;
}

}  // namespace

void check_ground_truth(const AutoProblem& ap, const FieldMap& truths) {
  for (const auto& [name, t] : truths) {
    FK_CHECK(std::find(ap.fields.begin(), ap.fields.end(), name) != ap.fields.end(), "ground truth",
             "one of the fields (" + fmt_fields(ap.fields) + ")", "'" + name + "'");
    FK_CHECK(t.defined() && fk::is_floating(t.dtype()) && t.numel() == ap.problem.domain.numel(),
             "ground truth of field '" + name + "'",
             "real values of the field's shape " + ap.problem.domain.shape().str(),
             t.defined() ? std::string(fk::name(t.dtype())) + " " + t.shape().str() : "none");
  }
}

std::string ground_truth_lines(const AutoProblem& ap, const FieldMap& fields,
                               const FieldMap& truths) {
  check_ground_truth(ap, truths);
  std::ostringstream o;
  o.precision(4);
  for (const auto& [name, t] : truths) {
    const auto it = fields.find(name);
    FK_CHECK(it != fields.end(), "quick_report", "the solved field '" + name + "'", "none");
    const fk::Tensor x = it->second.to(fk::DType::F64);
    FK_CHECK(x.numel() == t.numel(), "quick_report", "a field of the truth's size",
             x.shape().str() + " for '" + name + "'");
    const fk::Tensor g = t.to(fk::DType::F64).contiguous().reshape(x.shape());
    o << "- ground truth" << (ap.fields.size() > 1 ? " of " + name : "") << ": PSNR " << psnr(x, g)
      << " dB, relative error " << relative_error(x, g) << "\n";
  }
  return o.str();
}

std::string quick_report(const AutoProblem& ap, const Result& r, const FieldMap& truths) {
  check_ground_truth(ap, truths);
  std::ostringstream o;
  o.precision(4);
  o << "# from_forward solve\n\n";
  o << "- field: " << ap.problem.field->kind() << ", " << r.n_parameters << " parameters, shape "
    << ap.problem.domain.shape().str() << ", prior";
  for (size_t i = 0; i < ap.fields.size(); ++i)
    o << (i ? "; " : " ") << (ap.fields.size() > 1 ? ap.fields[i] + ": " : "")
      << ap.priors[i].str();
  o << "\n";
  if (const auto fit = diagnostics::data_fit(ap.problem.measurement, r.prediction)) {
    o << "- data: RMSE " << fit->rmse << ", data PSNR "
      << (std::isfinite(fit->psnr_db) ? fmt::format("{} dB", fit->psnr_db)
                                      : std::string("none (the data are all 0)"))
      << "\n";
    if (fit->rmse_over_sigma)
      o << "- chi = RMSE / sigma = " << *fit->rmse_over_sigma << " (sigma " << ap.noise_std
        << (ap.noise_estimated ? ", estimated" : ", given")
        << "): " << diagnostics::misfit_verdict(*fit->rmse_over_sigma, ap.noise_estimated) << "\n";
    else
      o << "- chi: no noise level (sigma 0)\n";
  }
  for (const auto& s : r.stages)
    o << "- stage " << s.name << ": " << s.steps << " steps, stop " << s.stop << ", " << s.seconds
      << " s\n";
  o << "- total: " << r.total_s << " s, " << (r.total_steps() > 0 ? r.ms_per_step() : 0.0)
    << " ms/step\n";
  o << ground_truth_lines(ap, r.fields, truths);
  o << "\n| decision | value | why |\n|---|---|---|\n";
  for (const auto& d : ap.decisions)
    o << "| " << cell(d.key) << " | " << cell(d.value) << " | " << cell(d.why) << " |\n";
  return o.str();
}

}  // namespace nefi
