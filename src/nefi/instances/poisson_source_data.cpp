#include "nefi/instances/poisson_source_data.h"

#include <cmath>

#include "fk/error.h"
#include "nefi/instances/numpy_rng.h"
#include "nefi/resample.h"

namespace nefi::poisson {
namespace {

// y = -(5-point Laplacian) x / h^2 with zero ghost-cell antisymmetry.
void neg_laplacian(const std::vector<double>& x, std::vector<double>& y, int64_t m, double h) {
  const double s = 1.0 / (h * h);
  auto at = [&](int64_t i, int64_t j, double self) {
    // A ghost cell outside the box mirrors -u, so the boundary is at the face.
    return (i < 0 || i >= m || j < 0 || j >= m) ? -self : x[i * m + j];
  };
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < m; ++j) {
      const double c = x[i * m + j];
      y[i * m + j] =
          s * (4 * c - at(i - 1, j, c) - at(i + 1, j, c) - at(i, j - 1, c) - at(i, j + 1, c));
    }
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace

std::vector<Source> draw_sources(const std::string& cls, int64_t n, double L, double point_cells,
                                 uint64_t seed) {
  NumpyRng rng(seed);
  std::vector<Source> s;
  auto add = [&](double margin, double sig_lo, double sig_hi, double amp_lo) {
    const double cx = rng.uniform(margin * L, L - margin * L);
    const double cy = rng.uniform(margin * L, L - margin * L);
    const double sigma = rng.uniform(sig_lo, sig_hi) * L;
    s.push_back({rng.uniform(amp_lo, 1.0), cx, cy, sigma});
  };
  if (cls == "blobs") {
    for (int64_t k = rng.integers(2, 5); k > 0; --k) add(0.2, 0.05, 0.1, 0.5);
  } else if (cls == "points") {
    const double c = point_cells / static_cast<double>(n);
    for (int64_t k = rng.integers(3, 7); k > 0; --k) add(0.15, c, c, 0.5);
  } else if (cls == "smooth") {
    for (int k = 0; k < 3; ++k) add(0.25, 0.12, 0.25, 0.3);
  } else {
    FK_CHECK(false, "config key 'scene'", "blobs, points or smooth", cls);
  }
  return s;
}

std::vector<double> render_sources(const std::vector<Source>& s, int64_t m, int64_t sub, double L) {
  const int64_t f = m * sub;
  std::vector<double> v(f * f, 0.0);
  for (int64_t i = 0; i < f; ++i)
    for (int64_t j = 0; j < f; ++j) {
      const double x = (i + 0.5) * L / f, y = (j + 0.5) * L / f;
      for (const Source& q : s)
        v[i * f + j] +=
            q.amplitude * std::exp(-0.5 * ((x - q.cx) * (x - q.cx) + (y - q.cy) * (y - q.cy)) /
                                   (q.sigma * q.sigma));
    }
  return sub > 1 ? area_resample(v, {f, f}, {m, m}) : v;
}

std::vector<double> solve_dirichlet_fd(const std::vector<double>& f, int64_t m, double h,
                                       double kappa, double tol) {
  FK_CHECK(static_cast<int64_t>(f.size()) == m * m, "nefi::poisson::solve_dirichlet_fd",
           fk::to_text(m * m) + " values", fk::to_text(f.size()));
  std::vector<double> u(f.size(), 0.0), r(f.size()), p, Ap(f.size());
  for (size_t i = 0; i < f.size(); ++i) r[i] = f[i] / kappa;
  p = r;
  const double stop = tol * tol * dot(r, r);
  double rr = dot(r, r);
  // The operator is SPD with condition ~ (m / pi)^2; CG needs O(m) iterations.
  for (int64_t it = 0; it < 20 * m + 100 && rr > stop; ++it) {
    neg_laplacian(p, Ap, m, h);
    const double alpha = rr / dot(p, Ap);
    for (size_t i = 0; i < u.size(); ++i) {
      u[i] += alpha * p[i];
      r[i] -= alpha * Ap[i];
    }
    const double rr_new = dot(r, r);
    for (size_t i = 0; i < p.size(); ++i) p[i] = r[i] + rr_new / rr * p[i];
    rr = rr_new;
  }
  return u;
}

}  // namespace nefi::poisson
