#include "nefi/baselines/wiener.h"

#include <cmath>
#include <complex>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/fft.h"

namespace nefi {

WienerResult wiener_deconvolve(const fk::Tensor& y, const PsfFunction& psf, const Domain& domain,
                               double noise_std, double tau, double snr) {
  FK_CHECK(y.shape() == domain.shape(), "nefi::wiener_deconvolve",
           "data of shape " + domain.shape().str(), y.shape().str());
  FK_CHECK(snr > 0 || noise_std > 0, "nefi::wiener_deconvolve",
           "a known noise_std (or a fixed snr)", std::to_string(noise_std));
  const FFTConvolution op(psf, domain, /*periodic=*/true);
  const fk::Tensor H = op.spectrum(fk::DType::F64).contiguous();
  const fk::Tensor yd = y.to(fk::DType::F64).contiguous();
  const std::vector<int64_t> s(domain.shape().begin(), domain.shape().end());
  const fk::Tensor Y = fk::rfftn(yd, s).contiguous();
  const int64_t m = Y.numel();
  const auto* h = H.data<fk::c128>();
  const auto* yy = Y.data<fk::c128>();
  const double n = static_cast<double>(yd.numel());
  auto solve = [&](double lambda, fk::Tensor* x_out) {
    fk::Tensor X = fk::empty(Y.shape(), {fk::DType::C128});
    fk::Tensor R = fk::empty(Y.shape(), {fk::DType::C128});
    auto* xp = X.data<fk::c128>();
    auto* rp = R.data<fk::c128>();
    for (int64_t i = 0; i < m; ++i) {
      xp[i] = std::conj(h[i]) * yy[i] / (std::norm(h[i]) + lambda);
      rp[i] = h[i] * xp[i] - yy[i];
    }
    const fk::Tensor r = fk::irfftn(R, s);
    double ss = 0;
    for (double v : r.to_vector<double>()) ss += v * v;
    if (x_out) *x_out = fk::irfftn(X, s);
    return std::sqrt(ss / n);
  };
  WienerResult out;
  if (snr > 0) {
    out.snr = snr;
    out.residual_rmse = solve(1.0 / snr, &out.x);
    return out;
  }
  double chosen = 1e-10;
  for (int k = 0; k <= 100; ++k) {
    const double lambda = std::pow(10.0, -10.0 + 0.1 * k);
    if (solve(lambda, nullptr) <= tau * noise_std)
      chosen = lambda;
    else
      break;
  }
  out.snr = 1.0 / chosen;
  out.residual_rmse = solve(chosen, &out.x);
  return out;
}

}  // namespace nefi
