#include "nefi/operators/lippmann_schwinger.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "fk/blas.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/fft.h"

namespace nefi {
namespace {

using c128 = std::complex<double>;

// hat G_L at |s| given H0(k0 L) and H1(k0 L).
c128 truncated_green_spectrum(double s, double k0, double L, c128 h0, c128 h1) {
  // The removable singularity at s = k0: step off it (the value is continuous).
  if (std::abs(s * s - k0 * k0) < 1e-9 * k0 * k0) s = k0 * (1 + 1e-6);
  const double j0 = std::cyl_bessel_j(0.0, s * L), j1 = s > 0 ? std::cyl_bessel_j(1.0, s * L) : 0.0;
  const c128 f = L * (s * j1 * h0 - k0 * j0 * h1);
  return (1.0 + c128(0, std::numbers::pi / 2) * f) / (s * s - k0 * k0);
}

// hat G_L on the padded grid (M x M, spacing h), FFT order. It depends on
// the folded frequencies (min(p, M - p), min(q, M - q)) only, symmetrically,
// so an eighth of the grid is evaluated.
std::vector<c128> green_spectrum(int64_t M, double h, double k0, double L) {
  const c128 h0{std::cyl_bessel_j(0.0, k0 * L), std::cyl_neumann(0.0, k0 * L)};
  const c128 h1{std::cyl_bessel_j(1.0, k0 * L), std::cyl_neumann(1.0, k0 * L)};
  const int64_t F = M / 2 + 1;
  const double ds = 2 * std::numbers::pi / (M * h);
  std::vector<c128> folded(F * F), g(M * M);
  for (int64_t a = 0; a < F; ++a)
    for (int64_t b = 0; b <= a; ++b)
      folded[a * F + b] = folded[b * F + a] = truncated_green_spectrum(
          std::hypot(static_cast<double>(a), static_cast<double>(b)) * ds, k0, L, h0, h1);
  for (int64_t p = 0; p < M; ++p)
    for (int64_t q = 0; q < M; ++q)
      g[p * M + q] = folded[std::min(p, M - p) * F + std::min(q, M - q)];
  return g;
}

// The same convolution on the 2m-periodic grid (the Vico-Greengard-Ferrando
// precomputation): hat G_L on the big grid back to space, cut to the offsets
// |p|, |q| < m that a convolution over the m x m domain reaches, and
// transformed on 2m x 2m. The circular convolution on 2m then equals the big
// grid's on the domain, with (oversample / 2)^2 fewer points per FFT.
std::vector<c128> domain_green_spectrum(int64_t m, int64_t M, double h, double k0, double L) {
  const std::vector<c128> kernel = fk::ifftn(fk::from_vector(green_spectrum(M, h, k0, L), {M, M}))
                                       .contiguous()
                                       .to_vector<c128>();
  const int64_t P = 2 * m;
  std::vector<c128> cut(P * P, c128(0));
  for (int64_t p = 1 - m; p < m; ++p)
    for (int64_t q = 1 - m; q < m; ++q)
      cut[(p + P) % P * P + (q + P) % P] = kernel[(p + M) % M * M + (q + M) % M];
  return fk::fftn(fk::from_vector(cut, {P, P})).contiguous().to_vector<c128>();
}

}  // namespace

c128 truncated_green_spectrum(double s, double k0, double L) {
  return truncated_green_spectrum(s, k0, L,
                                  {std::cyl_bessel_j(0.0, k0 * L), std::cyl_neumann(0.0, k0 * L)},
                                  {std::cyl_bessel_j(1.0, k0 * L), std::cyl_neumann(1.0, k0 * L)});
}

std::vector<c128> lippmann_schwinger_field(const std::vector<double>& chi, int64_t m, double D,
                                           double k0, double theta,
                                           const LippmannSchwingerOptions& o, int* iterations,
                                           double* change) {
  FK_CHECK(static_cast<int64_t>(chi.size()) == m * m, "nefi::lippmann_schwinger",
           fk::to_text(m * m) + " contrast values", fk::to_text(chi.size()));
  FK_CHECK(o.oversample >= 3 && o.oversample <= 16, "lippmann_schwinger 'oversample'",
           "a factor in [3, 16]", fk::to_text(o.oversample));
  FK_CHECK(o.relax > 0 && o.relax <= 1, "lippmann_schwinger 'relax'", "a factor in (0, 1]",
           fk::to_text(o.relax));
  const double h = D / m;
  const int64_t M = o.oversample * m, P = 2 * m;
  static thread_local std::vector<c128> spec;
  static thread_local double key[4] = {0, 0, 0, 0};
  if (key[0] != M || key[1] != h || key[2] != k0 || key[3] != D) {
    spec = domain_green_spectrum(m, M, h, k0, std::sqrt(2.0) * D);
    key[0] = static_cast<double>(M), key[1] = h, key[2] = k0, key[3] = D;
  }
  std::vector<c128> ui(m * m), u, src(m * m);
  const double d0 = std::cos(theta), d1 = std::sin(theta);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < m; ++j)
      ui[i * m + j] =
          std::exp(c128(0, k0 * (d0 * ((i + 0.5) * h - D / 2) + d1 * ((j + 0.5) * h - D / 2))));
  u = ui;
  int it = 0;
  double rel = 1;
  for (; it < o.max_iter && rel > o.tol; ++it) {
    for (int64_t p = 0; p < m * m; ++p) src[p] = chi[p] * u[p];
    std::vector<c128> f =
        fk::fftn(fk::from_vector(src, {m, m}), {P, P}).contiguous().to_vector<c128>();
    for (int64_t p = 0; p < P * P; ++p) f[p] *= spec[p];
    f = fk::ifftn(fk::from_vector(f, {P, P})).contiguous().to_vector<c128>();
    double num = 0, den = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < m; ++j) {
        const c128 next = ui[i * m + j] + k0 * k0 * f[i * P + j];
        const c128 upd = (1 - o.relax) * u[i * m + j] + o.relax * next;
        num += std::norm(upd - u[i * m + j]), den += std::norm(upd);
        u[i * m + j] = upd;
      }
    rel = std::sqrt(num / den);
  }
  if (iterations) *iterations = it;
  if (change) *change = rel;
  FK_CHECK(rel <= o.tol, "lippmann_schwinger 'max_iter'",
           "convergence to tol " + fk::to_text(o.tol) + " within " + fk::to_text(o.max_iter) +
               " iterations (contrast too strong?)",
           "relative change " + fk::to_text(rel));
  return u;
}

LippmannSchwingerResult lippmann_schwinger(const std::vector<double>& chi, int64_t m, double D,
                                           const ScatteringGeometry& g,
                                           const LippmannSchwingerOptions& o) {
  g.validate(D);
  const int64_t V = g.n_angles, R = g.n_receivers, N = m * m;
  const double k0 = g.k0();
  LippmannSchwingerResult res;
  std::vector<c128> sources(V * N);  // chi u per view
  for (int64_t l = 0; l < V; ++l) {
    int its = 0;
    double change = 0;
    const std::vector<c128> u =
        lippmann_schwinger_field(chi, m, D, k0, 2 * std::numbers::pi * l / V, o, &its, &change);
    if (its >= res.max_iterations) res.max_iterations = its, res.max_change = change;
    for (int64_t j = 0; j < N; ++j) sources[l * N + j] = chi[j] * u[j];
  }
  // All views to all receivers at once: (V, N) x (N, R).
  const std::vector<c128> green = receiver_green(m, D, g);
  std::vector<c128> us(V * R);
  fk::gemm(fk::DType::C128, false, true, V, R, N, 1.0, sources.data(), N, green.data(), N, 0.0,
           us.data(), R);
  res.data.resize(2 * V * R);
  for (int64_t l = 0; l < V; ++l)
    for (int64_t r = 0; r < R; ++r) {
      c128 v = us[l * R + r];
      if (g.rytov) {  // log(u / u_i) = log(1 + u_s / u_i), principal branch
        const double th = 2 * std::numbers::pi * l / V, phi = 2 * std::numbers::pi * r / R;
        const c128 ui =
            std::exp(c128(0, k0 * g.receiver_radius *
                                 (std::cos(th) * std::cos(phi) + std::sin(th) * std::sin(phi))));
        v = std::log(1.0 + v / ui);
      }
      res.data[l * R + r] = v.real();
      res.data[V * R + l * R + r] = v.imag();
    }
  return res;
}

}  // namespace nefi
