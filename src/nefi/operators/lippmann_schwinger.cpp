#include "nefi/operators/lippmann_schwinger.h"

#include <cmath>
#include <numbers>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/fft.h"

namespace nefi {
namespace {

using c128 = std::complex<double>;

// hat G_L on the padded grid (M x M, spacing h), FFT order.
std::vector<c128> green_spectrum(int64_t M, double h, double k0, double L) {
  std::vector<c128> g(M * M);
  const double ds = 2 * std::numbers::pi / (M * h);
  for (int64_t p = 0; p < M; ++p)
    for (int64_t q = 0; q < M; ++q) {
      const double sp = (p <= M / 2 ? p : p - M) * ds, sq = (q <= M / 2 ? q : q - M) * ds;
      g[p * M + q] = truncated_green_spectrum(std::hypot(sp, sq), k0, L);
    }
  return g;
}

}  // namespace

c128 truncated_green_spectrum(double s, double k0, double L) {
  // The removable singularity at s = k0: step off it (the value is continuous).
  if (std::abs(s * s - k0 * k0) < 1e-9 * k0 * k0) s = k0 * (1 + 1e-6);
  const c128 h0{std::cyl_bessel_j(0.0, k0 * L), std::cyl_neumann(0.0, k0 * L)};
  const c128 h1{std::cyl_bessel_j(1.0, k0 * L), std::cyl_neumann(1.0, k0 * L)};
  const double j0 = std::cyl_bessel_j(0.0, s * L), j1 = s > 0 ? std::cyl_bessel_j(1.0, s * L) : 0.0;
  const c128 f = L * (s * j1 * h0 - k0 * j0 * h1);
  return (1.0 + c128(0, std::numbers::pi / 2) * f) / (s * s - k0 * k0);
}

std::vector<c128> lippmann_schwinger_field(const std::vector<double>& chi, int64_t m, double D,
                                           double k0, double theta,
                                           const LippmannSchwingerOptions& o, int* iterations,
                                           double* change) {
  FK_CHECK(static_cast<int64_t>(chi.size()) == m * m, "nefi::lippmann_schwinger",
           std::to_string(m * m) + " contrast values", std::to_string(chi.size()));
  FK_CHECK(o.oversample >= 3 && o.oversample <= 16, "lippmann_schwinger 'oversample'",
           "a factor in [3, 16]", std::to_string(o.oversample));
  FK_CHECK(o.relax > 0 && o.relax <= 1, "lippmann_schwinger 'relax'", "a factor in (0, 1]",
           std::to_string(o.relax));
  const double h = D / m;
  const int64_t M = o.oversample * m;
  static thread_local std::vector<c128> spec;
  static thread_local double key[4] = {0, 0, 0, 0};
  if (key[0] != M || key[1] != h || key[2] != k0 || key[3] != D) {
    spec = green_spectrum(M, h, k0, std::sqrt(2.0) * D);
    key[0] = static_cast<double>(M), key[1] = h, key[2] = k0, key[3] = D;
  }
  std::vector<c128> ui(m * m), u;
  const double d0 = std::cos(theta), d1 = std::sin(theta);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < m; ++j)
      ui[i * m + j] =
          std::exp(c128(0, k0 * (d0 * ((i + 0.5) * h - D / 2) + d1 * ((j + 0.5) * h - D / 2))));
  u = ui;
  std::vector<c128> pad(M * M);
  int it = 0;
  double rel = 1;
  for (; it < o.max_iter && rel > o.tol; ++it) {
    std::fill(pad.begin(), pad.end(), c128(0));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < m; ++j) pad[i * M + j] = chi[i * m + j] * u[i * m + j];
    fk::Tensor t = fk::fftn(fk::from_vector(pad, {M, M}));
    std::vector<c128> f = t.contiguous().to_vector<c128>();
    for (int64_t p = 0; p < M * M; ++p) f[p] *= spec[p];
    f = fk::ifftn(fk::from_vector(f, {M, M})).contiguous().to_vector<c128>();
    double num = 0, den = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < m; ++j) {
        const c128 next = ui[i * m + j] + k0 * k0 * f[i * M + j];
        const c128 upd = (1 - o.relax) * u[i * m + j] + o.relax * next;
        num += std::norm(upd - u[i * m + j]), den += std::norm(upd);
        u[i * m + j] = upd;
      }
    rel = std::sqrt(num / den);
  }
  if (iterations) *iterations = it;
  if (change) *change = rel;
  FK_CHECK(rel <= o.tol, "lippmann_schwinger 'max_iter'",
           "convergence to tol " + std::to_string(o.tol) + " within " + std::to_string(o.max_iter) +
               " iterations (contrast too strong?)",
           "relative change " + std::to_string(rel));
  return u;
}

LippmannSchwingerResult lippmann_schwinger(const std::vector<double>& chi, int64_t m, double D,
                                           const ScatteringGeometry& g,
                                           const LippmannSchwingerOptions& o) {
  g.validate(D);
  const int64_t V = g.n_angles, R = g.n_receivers;
  const double k0 = g.k0(), h = D / m;
  // Hankel table receivers x cells: k0^2 dA G(x_r - y_j).
  std::vector<c128> G(R * m * m);
  for (int64_t r = 0; r < R; ++r) {
    const double phi = 2 * std::numbers::pi * r / R;
    const double x0 = g.receiver_radius * std::cos(phi), x1 = g.receiver_radius * std::sin(phi);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < m; ++j) {
        const double d = std::hypot(x0 - ((i + 0.5) * h - D / 2), x1 - ((j + 0.5) * h - D / 2));
        G[r * m * m + i * m + j] = k0 * k0 * h * h * c128(0, 0.25) * hankel0(k0 * d);
      }
  }
  LippmannSchwingerResult res;
  res.data.resize(2 * V * R);
  for (int64_t l = 0; l < V; ++l) {
    const double th = 2 * std::numbers::pi * l / V;
    int its = 0;
    double change = 0;
    const std::vector<c128> u = lippmann_schwinger_field(chi, m, D, k0, th, o, &its, &change);
    if (its >= res.max_iterations) res.max_iterations = its, res.max_change = change;
    for (int64_t r = 0; r < R; ++r) {
      c128 us = 0;
      for (int64_t j = 0; j < m * m; ++j) us += G[r * m * m + j] * chi[j] * u[j];
      if (g.rytov) {  // log(u / u_i) = log(1 + u_s / u_i), principal branch
        const double phi = 2 * std::numbers::pi * r / R;
        const c128 ui =
            std::exp(c128(0, k0 * g.receiver_radius *
                                 (std::cos(th) * std::cos(phi) + std::sin(th) * std::sin(phi))));
        us = std::log(1.0 + us / ui);
      }
      res.data[l * R + r] = us.real();
      res.data[V * R + l * R + r] = us.imag();
    }
  }
  return res;
}

}  // namespace nefi
