#include "nefi/baselines/wiener.h"

#include <cmath>
#include <complex>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/fft.h"

namespace nefi {
namespace {

// v (C order, shape n) mirrored about every face into 2n cells per axis:
// out[i] = v[i] for i < n, v[2n - 1 - i] beyond.
std::vector<double> mirrored(const std::vector<double>& v, const fk::Dims& n, fk::Dims& out_shape) {
  const int d = static_cast<int>(n.size());
  std::vector<int64_t> m(d);
  for (int a = 0; a < d; ++a) m[a] = 2 * n[a];
  out_shape = fk::Dims(m);
  std::vector<double> out(out_shape.numel());
  std::vector<int64_t> idx(d, 0);
  for (size_t p = 0; p < out.size(); ++p) {
    int64_t src = 0;
    for (int a = 0; a < d; ++a) src = src * n[a] + (idx[a] < n[a] ? idx[a] : 2 * n[a] - 1 - idx[a]);
    out[p] = v[src];
    for (int a = d - 1; a >= 0 && ++idx[a] == m[a]; --a) idx[a] = 0;
  }
  return out;
}

// The first n cells per axis of v (C order, shape m).
std::vector<double> corner(const std::vector<double>& v, const fk::Dims& m, const fk::Dims& n) {
  const int d = static_cast<int>(n.size());
  std::vector<double> out(n.numel());
  std::vector<int64_t> idx(d, 0);
  for (size_t p = 0; p < out.size(); ++p) {
    int64_t src = 0;
    for (int a = 0; a < d; ++a) src = src * m[a] + idx[a];
    out[p] = v[src];
    for (int a = d - 1; a >= 0 && ++idx[a] == n[a]; --a) idx[a] = 0;
  }
  return out;
}

}  // namespace

WienerResult wiener_deconvolve(const fk::Tensor& y, const PsfFunction& psf, const Domain& domain,
                               double noise_std, double tau, double snr, WienerBoundary boundary) {
  FK_CHECK(y.shape() == domain.shape(), "nefi::wiener_deconvolve",
           "data of shape " + domain.shape().str(), y.shape().str());
  FK_CHECK(snr > 0 || noise_std > 0, "nefi::wiener_deconvolve",
           "a known noise_std (or a fixed snr)", std::to_string(noise_std));
  const bool reflect = boundary == WienerBoundary::kReflect;
  fk::Tensor yd = y.to(fk::DType::F64).contiguous();
  Domain grid = domain;
  if (reflect) {
    fk::Dims m;
    const auto v = mirrored(yd.to_vector<double>(), domain.shape(), m);
    std::vector<double> extent = domain.extent();
    for (double& e : extent) e *= 2;
    grid = Domain(m, extent);
    yd = fk::from_vector(v, m);
  }
  const FFTConvolution op(psf, grid, /*periodic=*/true);
  const fk::Tensor H = op.spectrum(fk::DType::F64).contiguous();
  const std::vector<int64_t> s(grid.shape().begin(), grid.shape().end());
  const fk::Tensor Y = fk::rfftn(yd, s).contiguous();
  const int64_t m = Y.numel(), bins = Y.size(Y.dim() - 1), last = s.back();
  const auto* h = H.data<fk::c128>();
  const auto* yy = Y.data<fk::c128>();
  const double n = static_cast<double>(yd.numel());
  // The residual's sum of squares by Parseval over the half spectrum: the
  // bins of the last axis other than 0 and last/2 stand for two.
  auto residual_rmse = [&](double lambda) {
    double ss = 0;
    for (int64_t i = 0; i < m; ++i) {
      const int64_t b = i % bins;
      const double w = b == 0 || 2 * b == last ? 1.0 : 2.0;
      ss += w * std::norm(lambda / (std::norm(h[i]) + lambda) * yy[i]);
    }
    return std::sqrt(ss / (n * n));
  };
  auto solve = [&](double lambda) {
    fk::Tensor X = fk::empty(Y.shape(), {fk::DType::C128});
    auto* xp = X.data<fk::c128>();
    for (int64_t i = 0; i < m; ++i) xp[i] = std::conj(h[i]) * yy[i] / (std::norm(h[i]) + lambda);
    const fk::Tensor x = fk::irfftn(X, s);
    if (!reflect) return x;
    return fk::from_vector(corner(x.to_vector<double>(), grid.shape(), domain.shape()),
                           domain.shape());
  };
  WienerResult out;
  double chosen = 1e-10;
  if (snr > 0) {
    chosen = 1.0 / snr;
  } else {
    for (int k = 0; k <= 100; ++k) {
      const double lambda = std::pow(10.0, -10.0 + 0.1 * k);
      if (residual_rmse(lambda) > tau * noise_std) break;
      chosen = lambda;
    }
  }
  out.snr = snr > 0 ? snr : 1.0 / chosen;
  out.x = solve(chosen);
  out.residual_rmse = residual_rmse(chosen);
  return out;
}

}  // namespace nefi
