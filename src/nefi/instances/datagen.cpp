#include "nefi/instances/datagen.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "fk/error.h"

namespace nefi::datagen {

double Rng::normal() {
  double u1 = uniform();
  while (u1 <= 0) u1 = uniform();
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// Exact draws at every rate: multiplied uniforms up to 60 (exp(-lambda) stays
// well inside f64), Hörmann's transformed rejection with squeeze (PTRS,
// 1993) past it, where a rounded normal drew the wrong skew (about 0 against
// 1 / sqrt(lambda)) and 1/12 too much variance, at the counts of the
// deconvolution instances' default 200-count peaks.
int64_t Rng::poisson(double lambda) {
  if (lambda <= 0) return 0;
  if (lambda > 60) {
    const double slam = std::sqrt(lambda), loglam = std::log(lambda);
    const double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
    const double inv_alpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2);
    for (;;) {
      const double u = uniform() - 0.5, v = uniform(), us = 0.5 - std::abs(u);
      const double k = std::floor((2 * a / us + b) * u + lambda + 0.43);
      if (us >= 0.07 && v <= vr) return static_cast<int64_t>(k);
      if (k < 0 || (us < 0.013 && v > us)) continue;
      if (std::log(v) + std::log(inv_alpha) - std::log(a / (us * us) + b) <=
          -lambda + k * loglam - std::lgamma(k + 1))
        return static_cast<int64_t>(k);
    }
  }
  const double l = std::exp(-lambda);
  int64_t k = 0;
  double p = 1;
  do {
    ++k;
    p *= uniform();
  } while (p > l);
  return k - 1;
}

std::vector<double> direct_convolve(const std::vector<double>& v, const fk::Dims& shape,
                                    const std::vector<double>& kernel, const fk::Dims& ks) {
  const int d = shape.size();
  FK_CHECK(d >= 1 && d <= 2 && ks.size() == d, "nefi::datagen::direct_convolve",
           "a 1-D or 2-D grid and kernel", shape.str() + " * " + ks.str());
  const int64_t rows = d == 2 ? shape[0] : 1, cols = shape[d - 1];
  const int64_t kr = d == 2 ? ks[0] : 1, kc = ks[d - 1];
  const int64_t rr = kr / 2, rc = kc / 2;
  std::vector<double> out(v.size(), 0.0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      double s = 0;
      for (int64_t a = 0; a < kr; ++a) {
        const int64_t ii = i - (a - rr);
        if (ii < 0 || ii >= rows) continue;
        for (int64_t b = 0; b < kc; ++b) {
          const int64_t jj = j - (b - rc);
          if (jj < 0 || jj >= cols) continue;
          s += kernel[a * kc + b] * v[ii * cols + jj];
        }
      }
      out[i * cols + j] = s;
    }
  return out;
}

std::vector<double> sample_psf(const std::string& kind, const std::vector<double>& h, double sigma,
                               double length, double angle_deg, double radius, fk::Dims* kshape) {
  const int d = static_cast<int>(h.size());
  std::vector<int64_t> r(d);
  if (kind == "gaussian") {
    for (int a = 0; a < d; ++a) r[a] = static_cast<int64_t>(std::ceil(5.0 * sigma / h[a]));
  } else if (kind == "motion") {
    for (int a = 0; a < d; ++a) r[a] = static_cast<int64_t>(std::ceil(0.5 * length / h[a])) + 1;
  } else if (kind == "disk") {
    for (int a = 0; a < d; ++a) r[a] = static_cast<int64_t>(std::ceil(radius / h[a])) + 1;
  } else {
    FK_CHECK(false, "config key 'psf'", "gaussian, motion or disk", kind);
  }
  fk::Dims ks;
  for (int a = 0; a < d; ++a) ks.push_back(2 * r[a] + 1);
  const int64_t kr = d == 2 ? ks[0] : 1, kc = ks[d - 1];
  const double hr = d == 2 ? h[0] : 1.0, hc = h[d - 1];
  const int64_t rr = d == 2 ? r[0] : 0, rc = r[d - 1];
  std::vector<double> k(kr * kc, 0.0);
  const double th = angle_deg * std::numbers::pi / 180.0;
  // Integrated over each fine cell with a 5x5 quadrature.
  constexpr int kQ = 5;
  for (int64_t a = 0; a < kr; ++a)
    for (int64_t b = 0; b < kc; ++b) {
      double s = 0;
      for (int qa = 0; qa < (d == 2 ? kQ : 1); ++qa)
        for (int qb = 0; qb < kQ; ++qb) {
          const double y = d == 2 ? (a - rr + (qa + 0.5) / kQ - 0.5) * hr : 0.0;
          const double x = (b - rc + (qb + 0.5) / kQ - 0.5) * hc;
          if (kind == "gaussian") {
            s += std::exp(-0.5 * (x * x + y * y) / (sigma * sigma));
          } else if (kind == "disk") {
            s += (x * x + y * y <= radius * radius) ? 1.0 : 0.0;
          } else {
            // Distance to the motion segment, smoothed over half a cell.
            const double ux = d == 2 ? std::cos(th) : 1.0, uy = d == 2 ? std::sin(th) : 0.0;
            const double t = std::clamp(x * ux + y * uy, -0.5 * length, 0.5 * length);
            const double dx = x - t * ux, dy = y - t * uy;
            const double w = 0.5 * std::min(hr, hc);
            s += std::exp(-0.5 * (dx * dx + dy * dy) / (w * w));
          }
        }
      k[a * kc + b] = s;
    }
  double total = 0;
  for (double v : k) total += v;
  FK_CHECK(total > 0, "nefi::datagen::sample_psf", "a kernel with positive mass", kind);
  for (double& v : k) v /= total;
  *kshape = ks;
  return k;
}

}  // namespace nefi::datagen
