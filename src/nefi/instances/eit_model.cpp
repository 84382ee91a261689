#include "nefi/instances/eit_model.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "fk/error.h"
#include "nefi/instances/datagen.h"

namespace nefi::eit {
namespace {

// Cell index of face t on `side` of an n×n grid, and of the cell inside it.
std::pair<int64_t, int64_t> side_cells(int side, int64_t t, int64_t n) {
  switch (side) {
    case 0:
      return {t * n, t * n + 1};
    case 1:
      return {(n - 1) * n + t, (n - 2) * n + t};
    case 2:
      return {(n - 1 - t) * n + n - 1, (n - 1 - t) * n + n - 2};
    default:
      return {(n - 1 - t) + 0, n + (n - 1 - t)};
  }
}

}  // namespace

std::vector<double> current_patterns(int64_t n, int64_t n_patterns, double amplitude) {
  const double h = 2.0 / static_cast<double>(n);
  std::vector<double> rhs(n_patterns * n * n, 0.0);
  for (int64_t p = 0; p < n_patterns; ++p) {
    const double k = static_cast<double>(p / 2 + 1);
    for (int side = 0; side < 4; ++side)
      for (int64_t t = 0; t < n; ++t) {
        const double s = (side + (t + 0.5) / static_cast<double>(n)) / 4.0;
        const double arg = 2 * std::numbers::pi * k * s;
        const double j = amplitude * (p % 2 == 0 ? std::cos(arg) : std::sin(arg));
        rhs[p * n * n + side_cells(side, t, n).first] += j / h;
      }
  }
  return rhs;
}

std::vector<double> trace_matrix(int64_t n, int64_t native) {
  FK_CHECK(n >= 2 && native >= 1, "nefi::eit::trace_matrix", "n >= 2 cells and native >= 1",
           std::to_string(n) + ", " + std::to_string(native));
  const int64_t m = 4 * native, cells = n * n;
  std::vector<double> w(m * cells, 0.0);
  for (int side = 0; side < 4; ++side)
    for (int64_t t = 0; t < n; ++t) {
      const auto [cell, inner] = side_cells(side, t, n);
      // Face t covers [t, t+1)/n of the side; native face T covers [T, T+1)/native.
      const double a = static_cast<double>(t) / n, b = static_cast<double>(t + 1) / n;
      for (int64_t T = static_cast<int64_t>(a * native); T < native && T < b * native; ++T) {
        const double lo = std::max(a, static_cast<double>(T) / native);
        const double hi = std::min(b, static_cast<double>(T + 1) / native);
        if (hi <= lo) continue;
        const double f = (hi - lo) * native;
        double* row = w.data() + (side * native + T) * cells;
        row[cell] += 1.5 * f;
        row[inner] -= 0.5 * f;
      }
    }
  for (int64_t c = 0; c < cells; ++c) {
    double mean = 0;
    for (int64_t r = 0; r < m; ++r) mean += w[r * cells + c];
    mean /= static_cast<double>(m);
    for (int64_t r = 0; r < m; ++r) w[r * cells + c] -= mean;
  }
  return w;
}

std::vector<Inclusion> draw_inclusions(const std::string& scene, double contrast_lo,
                                       double contrast_hi, double sigma_bg, uint64_t seed) {
  FK_CHECK(scene == "single" || scene == "multi" || scene == "contrast", "config key 'scene'",
           "single | multi | contrast", "'" + scene + "'");
  datagen::Rng rng(seed * 104729 + 17);
  if (scene == "contrast") contrast_lo = 10, contrast_hi = 20;
  const int count = scene == "multi" ? static_cast<int>(rng.integer(2, 3)) : 1;
  const double r_lo = scene == "multi" ? 0.15 : 0.25, r_hi = scene == "multi" ? 0.3 : 0.45;
  std::vector<Inclusion> out;
  for (int tries = 0; static_cast<int>(out.size()) < count && tries < 1000; ++tries) {
    Inclusion d;
    d.radius = rng.uniform(r_lo, r_hi);
    const double rho = rng.uniform(0, 0.85 - d.radius), phi = rng.uniform(0, 2 * std::numbers::pi);
    d.cx = rho * std::cos(phi), d.cy = rho * std::sin(phi);
    const double c = rng.uniform(contrast_lo, contrast_hi);
    d.sigma = rng.uniform() < 0.5 ? sigma_bg * c : sigma_bg / c;
    bool apart = true;
    for (const Inclusion& e : out)
      apart = apart && std::hypot(d.cx - e.cx, d.cy - e.cy) > d.radius + e.radius + 0.1;
    if (apart) out.push_back(d);
  }
  return out;
}

std::vector<double> render_sigma(const std::vector<Inclusion>& inc, double sigma_bg, int64_t m,
                                 int64_t sub, double lo, double hi) {
  std::vector<double> out(m * m, 0.0);
  const double h = 2.0 / static_cast<double>(m);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < m; ++j) {
      double acc = 0;
      for (int64_t a = 0; a < sub; ++a)
        for (int64_t b = 0; b < sub; ++b) {
          const double x = -1 + h * (i + (a + 0.5) / sub), y = -1 + h * (j + (b + 0.5) / sub);
          double s = sigma_bg;
          for (const Inclusion& d : inc)
            if (std::hypot(x - d.cx, y - d.cy) <= d.radius) s = d.sigma;
          acc += s;
        }
      out[i * m + j] = std::clamp(acc / static_cast<double>(sub * sub), lo, hi);
    }
  return out;
}

}  // namespace nefi::eit
