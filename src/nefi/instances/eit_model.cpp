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

// The grid faces a segment overlaps, with the overlap as a fraction of the
// segment: face f (perimeter order, side f / n, face f % n of it) covers
// [f, f + 1) / (4n).
std::vector<std::pair<int64_t, double>> segment_faces(int64_t n, const Segment& k) {
  const double faces = 4.0 * static_cast<double>(n);
  std::vector<std::pair<int64_t, double>> out;
  const auto first = static_cast<int64_t>(std::floor(k.s0 * faces));
  for (int64_t f = std::max<int64_t>(first, 0); f < 4 * n && f < k.s1 * faces; ++f) {
    const double lo = std::max(k.s0, f / faces), hi = std::min(k.s1, (f + 1) / faces);
    if (hi > lo) out.emplace_back(f, (hi - lo) / (k.s1 - k.s0));
  }
  return out;
}

std::pair<int64_t, int64_t> face_cells(int64_t f, int64_t n) {
  return side_cells(static_cast<int>(f / n), f % n, n);
}

// Pattern p's current density j(s) = A cos(ω s) (p even) or A sin(ω s),
// ω = 2π (p/2 + 1): at s, and its exact mean over [lo, hi).
double pattern_density(int64_t p, double amplitude, double s) {
  const double w = 2 * std::numbers::pi * static_cast<double>(p / 2 + 1);
  return amplitude * (p % 2 == 0 ? std::cos(w * s) : std::sin(w * s));
}
double pattern_mean(int64_t p, double amplitude, double lo, double hi) {
  const double w = 2 * std::numbers::pi * static_cast<double>(p / 2 + 1);
  auto primitive = [&](double s) {
    return amplitude * (p % 2 == 0 ? std::sin(w * s) : -std::cos(w * s)) / w;
  };
  return (primitive(hi) - primitive(lo)) / (hi - lo);
}

// Each column of the (m, cells) block w less its mean over the m rows (the
// voltages referenced to their mean over the segments).
void reference_to_mean(double* w, int64_t m, int64_t cells) {
  for (int64_t c = 0; c < cells; ++c) {
    double mean = 0;
    for (int64_t r = 0; r < m; ++r) mean += w[r * cells + c];
    mean /= static_cast<double>(m);
    for (int64_t r = 0; r < m; ++r) w[r * cells + c] -= mean;
  }
}

}  // namespace

void check_electrodes(const Electrodes& e, int64_t n_patterns) {
  FK_CHECK(e.count >= 0, "config key 'electrodes'", "an electrode count >= 0 (0: continuum)",
           fk::to_text(e.count));
  FK_CHECK(e.coverage > 0 && e.coverage <= 1, "config key 'electrode_coverage'",
           "a boundary fraction in (0, 1]", fk::to_text(e.coverage));
  const int64_t k_max = (n_patterns + 1) / 2;
  FK_CHECK(e.count == 0 || 2 * k_max < e.count, "config keys 'electrodes' and 'n_patterns'",
           "more than 2 ceil(n_patterns / 2) electrodes",
           fk::to_text(e.count) + " electrodes for " + fk::to_text(n_patterns) + " patterns");
}

std::vector<Segment> observed_segments(int64_t native, const Electrodes& e) {
  std::vector<Segment> out;
  if (e.count == 0) {
    const double faces = 4.0 * static_cast<double>(native);
    for (int64_t f = 0; f < 4 * native; ++f) out.push_back({f / faces, (f + 1) / faces});
    return out;
  }
  const auto l = static_cast<double>(e.count);
  for (int64_t i = 0; i < e.count; ++i) {
    const double c = (static_cast<double>(i) + 0.5) / l, w = 0.5 * e.coverage / l;
    out.push_back({c - w, c + w});
  }
  return out;
}

std::vector<double> inject(int64_t n, const std::vector<Segment>& segments,
                           const std::vector<double>& currents) {
  FK_CHECK(currents.size() == segments.size(), "nefi::eit::inject", "one current per segment",
           fk::to_text(currents.size()) + " for " + fk::to_text(segments.size()));
  const double h = 2.0 / static_cast<double>(n);
  std::vector<double> b(n * n, 0.0);
  for (size_t k = 0; k < segments.size(); ++k)
    for (const auto& [f, w] : segment_faces(n, segments[k]))
      b[face_cells(f, n).first] += currents[k] * w / (h * h);
  return b;
}

std::vector<double> inject_adjoint(int64_t n, const std::vector<Segment>& segments,
                                   const std::vector<double>& u) {
  FK_CHECK(static_cast<int64_t>(u.size()) == n * n, "nefi::eit::inject_adjoint",
           fk::to_text(n * n) + " cell values", fk::to_text(u.size()));
  const double h = 2.0 / static_cast<double>(n);
  std::vector<double> out;
  for (const Segment& k : segments) {
    double sum = 0;
    for (const auto& [f, w] : segment_faces(n, k)) sum += w * u[face_cells(f, n).first];
    out.push_back(sum / (h * h));
  }
  return out;
}

std::vector<double> current_patterns(int64_t n, int64_t n_patterns, double amplitude,
                                     const Electrodes& electrodes) {
  check_electrodes(electrodes, n_patterns);
  constexpr double kPerimeter = 8.0;  // metres of [−1, 1]²'s boundary
  const double h = 2.0 / static_cast<double>(n), faces = 4.0 * static_cast<double>(n);
  const std::vector<Segment> el = observed_segments(1, electrodes);
  std::vector<double> rhs;
  rhs.reserve(n_patterns * n * n);
  for (int64_t p = 0; p < n_patterns; ++p) {
    std::vector<double> b(n * n, 0.0);
    if (electrodes.count == 0) {
      for (int64_t f = 0; f < 4 * n; ++f)
        b[face_cells(f, n).first] += pattern_mean(p, amplitude, f / faces, (f + 1) / faces) / h;
    } else {
      std::vector<double> current;
      for (const Segment& e : el)
        current.push_back(pattern_density(p, amplitude, 0.5 * (e.s0 + e.s1)) * (e.s1 - e.s0) *
                          kPerimeter);
      b = inject(n, el, current);
    }
    rhs.insert(rhs.end(), b.begin(), b.end());
  }
  return rhs;
}

std::vector<double> trace_matrix(int64_t n, const std::vector<Segment>& segments,
                                 bool extrapolate) {
  FK_CHECK(n >= 2 && !segments.empty(), "nefi::eit::trace_matrix",
           "n >= 2 cells and at least one segment",
           fk::to_text(n) + ", " + fk::to_text(segments.size()));
  const auto m = static_cast<int64_t>(segments.size());
  const int64_t cells = n * n;
  std::vector<double> w(m * cells, 0.0);
  for (int64_t r = 0; r < m; ++r)
    for (const auto& [f, frac] : segment_faces(n, segments[r])) {
      const auto [cell, inner] = face_cells(f, n);
      w[r * cells + cell] += (extrapolate ? 1.5 : 1.0) * frac;
      if (extrapolate) w[r * cells + inner] -= 0.5 * frac;
    }
  reference_to_mean(w.data(), m, cells);
  return w;
}

std::vector<double> trace_matrix(int64_t n, int64_t native) {
  FK_CHECK(native >= 1, "nefi::eit::trace_matrix", "native >= 1", fk::to_text(native));
  return trace_matrix(n, observed_segments(native, {}));
}

std::vector<double> flux_trace_matrix(int64_t n, const std::vector<Segment>& segments,
                                      int64_t n_patterns, double amplitude,
                                      const Electrodes& electrodes) {
  check_electrodes(electrodes, n_patterns);
  const auto m = static_cast<int64_t>(segments.size());
  const int64_t cells = n * n;
  const double h = 2.0 / static_cast<double>(n), faces = 4.0 * static_cast<double>(n);
  std::vector<double> c(n_patterns * m * cells, 0.0);
  for (int64_t p = 0; p < n_patterns; ++p) {
    double* cp = c.data() + p * m * cells;
    for (int64_t k = 0; k < m; ++k) {
      const Segment& seg = segments[k];
      for (const auto& [f, frac] : segment_faces(n, seg)) {
        const double lo = std::max(seg.s0, f / faces), hi = std::min(seg.s1, (f + 1) / faces);
        const double j = electrodes.count == 0
                             ? pattern_mean(p, amplitude, lo, hi)
                             : pattern_density(p, amplitude, 0.5 * (seg.s0 + seg.s1));
        cp[k * cells + face_cells(f, n).first] += frac * 0.5 * h * j;
      }
    }
    reference_to_mean(cp, m, cells);
  }
  return c;
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
           fk::to_text(pred.size()) + " and " + fk::to_text(gt.size()));
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
