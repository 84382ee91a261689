#include "nefi/baselines/backpropagation.h"

#include <cmath>
#include <complex>
#include <numbers>

#include "fk/error.h"

namespace nefi {

std::vector<double> filtered_backpropagation(const std::vector<double>& data,
                                             const ScatteringGeometry& g, int64_t n, double D) {
  using c128 = std::complex<double>;
  const int64_t V = g.n_angles, R = g.n_receivers;
  FK_CHECK(static_cast<int64_t>(data.size()) == 2 * V * R, "nefi::filtered_backpropagation",
           fk::to_text(2 * V * R) + " data values", fk::to_text(data.size()));
  g.validate(D);
  const double k0 = g.k0(), pi = std::numbers::pi, dphi = 2 * pi / R, dth = 2 * pi / V;
  const int64_t nmax = R / 2;
  // 1 / H_n(k0 R) and (-i)^n for n in [-nmax, nmax).
  std::vector<c128> hinv(2 * nmax), mi(2 * nmax);
  for (int64_t k = 0; k < 2 * nmax; ++k) {
    const int64_t m = k - nmax;
    const double nu = static_cast<double>(std::abs(m));
    c128 h{std::cyl_bessel_j(nu, k0 * g.receiver_radius),
           std::cyl_neumann(nu, k0 * g.receiver_radius)};
    if (m < 0 && (m % 2)) h = -h;  // H_{-n} = (-1)^n H_n
    hinv[k] = 1.0 / h;
    mi[k] = std::pow(c128(0, -1), static_cast<double>(m));
  }
  std::vector<double> chi(n * n, 0.0);
  std::vector<c128> us(R), spec(R);
  const double h = D / n;
  for (int64_t l = 0; l < V; ++l) {
    const double th = 2 * pi * l / V, d0 = std::cos(th), d1 = std::sin(th);
    for (int64_t r = 0; r < R; ++r) {
      us[r] = {data[l * R + r], data[V * R + l * R + r]};
      if (g.rytov) {
        const double phi = r * dphi;
        us[r] *=
            std::exp(c128(0, k0 * g.receiver_radius * (d0 * std::cos(phi) + d1 * std::sin(phi))));
      }
    }
    // Outgoing-wave coefficients a_n (-i)^n, the far-field pattern at the
    // receiver directions, then the spectrum.
    std::vector<c128> coef(2 * nmax);
    for (int64_t k = 0; k < 2 * nmax; ++k) {
      c128 cn = 0;  // (1/R) sum_q u_s[q] e^{-i m phi_q}
      for (int64_t q = 0; q < R; ++q) cn += us[q] * std::exp(c128(0, -(k - nmax) * q * dphi));
      coef[k] = cn / static_cast<double>(R) * hinv[k] * mi[k];
    }
    for (int64_t r = 0; r < R; ++r) {
      c128 f = 0;
      for (int64_t k = 0; k < 2 * nmax; ++k)
        f += coef[k] * std::exp(c128(0, (k - nmax) * r * dphi));
      spec[r] = c128(0, -4) * f / (k0 * k0);
    }
    for (int64_t r = 0; r < R; ++r) {
      const double phi = r * dphi;
      const double K0 = k0 * (std::cos(phi) - d0), K1 = k0 * (std::sin(phi) - d1);
      const double w = k0 * k0 * std::abs(std::sin(phi - th)) * dth * dphi / (8 * pi * pi);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
          const double x0 = (i + 0.5) * h - D / 2, x1 = (j + 0.5) * h - D / 2;
          chi[i * n + j] += w * (spec[r] * std::exp(c128(0, K0 * x0 + K1 * x1))).real();
        }
    }
  }
  return chi;
}

}  // namespace nefi
