#include "nefi/byop/quick_report.h"

#include <sstream>

#include "fk/error.h"
#include "nefi/diagnostics/data_fit.h"
#include "nefi/solve/metrics.h"

namespace nefi {

std::string chi_verdict(double chi, bool estimated) {
  const double top = estimated ? 1.2 : 1.1;
  if (chi < 0.9) return "below the noise: the field fits noise (or sigma is overestimated)";
  if (chi <= top) return "at the noise floor";
  if (chi <= 2.0) return "slightly above the noise floor: more steps or a weaker prior may help";
  return "underfit: the field does not explain the data (budget, prior or model)";
}

std::string quick_report(const AutoProblem& ap, const Result& r, const fk::Tensor& gt) {
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
    o << "- data: RMSE " << fit->rmse << ", data PSNR " << fit->psnr_db << " dB\n";
    if (fit->rmse_over_sigma)
      o << "- chi = RMSE / sigma = " << *fit->rmse_over_sigma << " (sigma " << ap.noise_std
        << (ap.noise_estimated ? ", estimated" : ", given")
        << "): " << chi_verdict(*fit->rmse_over_sigma, ap.noise_estimated) << "\n";
    else
      o << "- chi: no noise level (sigma 0)\n";
  }
  for (const auto& s : r.stages)
    o << "- stage " << s.name << ": " << s.steps << " steps, stop " << s.stop << ", " << s.seconds
      << " s\n";
  o << "- total: " << r.total_s << " s, " << (r.total_steps() > 0 ? r.ms_per_step() : 0.0)
    << " ms/step\n";
  if (gt.defined()) {  // of the first field
    const fk::Tensor x = r.fields.at(ap.fields.front()).to(fk::DType::F64);
    FK_CHECK(gt.numel() == x.numel(), "quick_report ground truth",
             "the shape of field '" + ap.fields.front() + "' " + x.shape().str(), gt.shape().str());
    const fk::Tensor g = gt.to(fk::DType::F64).reshape(x.shape());
    o << "- ground truth: PSNR " << psnr(x, g) << " dB, relative error " << relative_error(x, g)
      << "\n";
  }
  o << "\n| decision | value | why |\n|---|---|---|\n";
  for (const auto& d : ap.decisions)
    o << "| " << d.key << " | " << d.value << " | " << d.why << " |\n";
  return o.str();
}

}  // namespace nefi
