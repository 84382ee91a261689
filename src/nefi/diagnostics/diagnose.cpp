#include "nefi/diagnostics/diagnose.h"

#include <cmath>
#include <limits>

#include "fk/autograd.h"
#include "fk/device.h"
#include "fk/error.h"
#include "nefi/diagnostics/linearize.h"

namespace nefi::diagnostics {
double residual_rms(const fk::Tensor& prediction, const Measurement& y) {
  const Measurement obs =
      y.data.shape() == prediction.shape() ? y : y.resampled(prediction.shape());
  const Vec p = prediction.to_vector<double>(), d = obs.data.to_vector<double>();
  const Vec w = obs.mask.defined() ? obs.mask.to_vector<double>() : Vec(p.size(), 1.0);
  double num = 0, den = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    num += w[i] * (p[i] - d[i]) * (p[i] - d[i]);
    den += w[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::numeric_limits<double>::quiet_NaN();
}

namespace {

// The data see the operator through the measurement's mask: the fit weighs
// a cell's squared residual by w, so the map the data can invert is
// sqrt(w) J (a cell seen only by unobserved data is blind).
void see_through_mask(Linearization& L, const Measurement& y) {
  if (!y.mask.defined()) return;
  const Measurement obs = y.data.shape() == L.out_shape ? y : y.resampled(L.out_shape);
  Vec root = obs.mask.to_vector<double>();
  for (double& w : root) w = std::sqrt(w);
  L.map.apply = [apply = L.map.apply, root](const Vec& v) {
    Vec r = apply(v);
    for (size_t i = 0; i < r.size(); ++i) r[i] *= root[i];
    return r;
  };
  L.map.adjoint = [adjoint = L.map.adjoint, root](const Vec& u) {
    Vec weighted(u.size());
    for (size_t i = 0; i < u.size(); ++i) weighted[i] = u[i] * root[i];
    return adjoint(weighted);
  };
}

}  // namespace

void check_diagnose_options(const DiagnoseOptions& o, int64_t field_cells) {
  FK_CHECK(o.probes >= 1 && o.probes <= 100000, "probes (--probes)", "a probe count in [1, 100000]",
           fk::to_text(o.probes));
  FK_CHECK(o.k >= 1 && o.k <= 1000, "k (--k)", "a count of singular values in [1, 1000]",
           fk::to_text(o.k));
  FK_CHECK(o.n_iter >= o.k && o.n_iter <= 10000, "n_iter (--n-iter)",
           "bidiagonalisation steps in [k, 10000] (k = " + fk::to_text(o.k) + ")",
           fk::to_text(o.n_iter));
  FK_CHECK(!o.exact_sensitivity || field_cells <= kMaxExactCells,
           "exact_sensitivity (--exact-sensitivity)",
           "a field of at most " + fk::to_text(kMaxExactCells) + " cells",
           fk::to_text(field_cells));
}

Diagnostics diagnose(const Operator& op, const fk::Tensor& x, const Measurement& y,
                     const DiagnoseOptions& o) {
  check_diagnose_options(o, x.numel());  // before the Lanczos run
  check_mask(y, "diagnose measurement");
  Diagnostics d;
  d.options = o;
  // The products on the options' device (the operator's tables made first,
  // as a device solve makes them; a host-only operator refused by name).
  fk::Tensor xd = x.detach();
  // Before any table is made for it (linearize checks the same).
  FK_CHECK(xd.dtype() == fk::DType::F32 || xd.dtype() == fk::DType::F64,
           "nefi::diagnostics::diagnose", "an f32 or f64 field", xd.str());
  if (o.device.is_cuda()) {
    fk::check_usable(o.device, "diagnose device");
    const std::string refusal = device_solve_refusal(op, o.device);
    FK_CHECK(refusal.empty(), "diagnose device", "an operator with a device path", refusal);
    // A solve moves trainable operator parameters with the field; diagnose
    // holds the operator const and leaves them where they are.
    FK_CHECK(op.parameters().empty(), "diagnose device",
             "an operator without trainable parameters (diagnose it on the CPU)",
             "operator " + op.kind() + " with " + fk::to_text(op.parameters().size()) +
                 " trainable parameter tensor(s)");
    op.prepare_tables(o.device, xd.dtype());
    xd = xd.to(o.device);
  }
  Linearization L = linearize(op, xd);
  see_through_mask(L, y);
  d.jvp_mode = L.jvp_mode;
  d.field_shape = L.in_shape;
  d.data_shape = L.out_shape;
  d.spectrum = leading_singular_values(L.map, o.k, o.n_iter, o.seed);
  const auto& s = d.spectrum.singular_values;
  d.condition = s.back() > 0 ? s.front() / s.back() : std::numeric_limits<double>::infinity();
  d.probes = probe(L.map, o.probes, s.front(), o.seed, o.exact_sensitivity);
  {
    const Vec ones(L.map.n, 1.0 / std::sqrt(static_cast<double>(L.map.n)));
    double seen = 0;
    for (double v : L.map.apply(ones)) seen += v * v;
    d.constant_visibility = s.front() > 0 ? std::sqrt(seen) / s.front() : 0.0;
  }
  {
    fk::autograd::NoGradGuard ng;
    d.residual_rms = residual_rms(op.apply(xd).to(fk::kCPU), y);
  }
  d.noise_std = y.noise_std;
  d.misfit_ratio = y.has_noise() && y.noise_std > 0 ? d.residual_rms / y.noise_std
                                                    : std::numeric_limits<double>::quiet_NaN();
  return d;
}

}  // namespace nefi::diagnostics
