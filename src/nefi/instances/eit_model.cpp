#include "nefi/instances/eit_model.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "fk/error.h"
#include "nefi/instances/numpy_rng.h"

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
  constexpr double kAxisLo = 0.2, kAxisHi = 0.4, kCentreRadius = 0.5, kGap = 0.1;
  NumpyRng rng(seed);
  if (scene == "contrast") contrast_lo = 10, contrast_hi = 20;
  const int64_t count = scene == "multi" ? rng.integers(2, 4) : 1;
  std::vector<Inclusion> out;
  for (int64_t k = 0; k < count; ++k) {
    Inclusion d{};
    for (int attempt = 0; attempt < 200; ++attempt) {
      d.a = rng.uniform(kAxisLo, kAxisHi);
      d.b = rng.uniform(kAxisLo, kAxisHi);
      d.angle = rng.uniform(0, std::numbers::pi);
      const double rho = kCentreRadius * std::sqrt(rng.uniform());
      const double phi = rng.uniform(0, 2 * std::numbers::pi);
      d.cx = rho * std::cos(phi), d.cy = rho * std::sin(phi);
      bool apart = true;
      for (const Inclusion& e : out)
        apart = apart && std::hypot(d.cx - e.cx, d.cy - e.cy) >
                             std::max(d.a, d.b) + std::max(e.a, e.b) + kGap;
      if (apart) break;
    }
    const double c = rng.uniform(contrast_lo, contrast_hi);
    d.sigma = rng.uniform() < 0.5 ? sigma_bg * c : sigma_bg / c;
    out.push_back(d);
  }
  return out;
}

std::vector<double> render_sigma(const std::vector<Inclusion>& inc, double sigma_bg, int64_t m,
                                 int64_t sub, double lo, double hi) {
  std::vector<double> out(m * m, sigma_bg);
  const double h = 2.0 / static_cast<double>(m), per = 1.0 / static_cast<double>(sub * sub);
  for (const Inclusion& d : inc) {
    const double c = std::cos(d.angle), s = std::sin(d.angle);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < m; ++j) {
        int64_t inside = 0;
        for (int64_t a = 0; a < sub; ++a)
          for (int64_t b = 0; b < sub; ++b) {
            const double dx = -1 + h * (i + (a + 0.5) / sub) - d.cx;
            const double dy = -1 + h * (j + (b + 0.5) / sub) - d.cy;
            const double u = (c * dx + s * dy) / d.a, v = (c * dy - s * dx) / d.b;
            inside += u * u + v * v <= 1.0;
          }
        out[i * m + j] += (d.sigma - sigma_bg) * static_cast<double>(inside) * per;
      }
  }
  for (double& v : out) v = std::clamp(v, lo, hi);
  return out;
}

double inclusion_iou(const std::vector<double>& pred, const std::vector<double>& gt,
                     double sigma_bg) {
  FK_CHECK(pred.size() == gt.size(), "nefi::eit::inclusion_iou", "maps of equal size",
           std::to_string(pred.size()) + " and " + std::to_string(gt.size()));
  auto log_contrast = [sigma_bg](const std::vector<double>& x, double* peak) {
    std::vector<double> l(x.size());
    *peak = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      l[i] = std::log(std::max(x[i], 1e-12) / sigma_bg);
      *peak = std::max(*peak, std::abs(l[i]));
    }
    return l;
  };
  double pg = 0, pp = 0;
  const auto lg = log_contrast(gt, &pg), lp = log_contrast(pred, &pp);
  if (pg <= 0) return pp <= 1e-6 ? 1.0 : 0.0;
  const double tg = 0.5 * pg, tp = 0.5 * pp;
  int64_t inter = 0, uni = 0;
  for (size_t i = 0; i < gt.size(); ++i)
    for (int sign : {1, -1}) {
      const bool g = sign * lg[i] > tg, p = sign * lp[i] > tp;
      inter += g && p;
      uni += g || p;
    }
  return uni > 0 ? static_cast<double>(inter) / static_cast<double>(uni) : 0.0;
}

}  // namespace nefi::eit
