#include "nefi/instances/nv_relaxometry_scene.h"

#include <cmath>
#include <limits>
#include <numbers>

#include "fk/error.h"
#include "nefi/instances/numpy_rng.h"

namespace nefi::nv {
namespace {

double distance(const Source& a, int64_t i, int64_t j) {
  return std::hypot(static_cast<double>(a.i - i), static_cast<double>(a.j - j));
}

// Nearest-neighbour distance of every source within [lo, hi).
bool separations_hold(const std::vector<Source>& s, double lo, double hi) {
  if (s.size() < 2) return true;
  for (size_t a = 0; a < s.size(); ++a) {
    double nn = std::numeric_limits<double>::infinity();
    for (size_t b = 0; b < s.size(); ++b)
      if (a != b) nn = std::min(nn, distance(s[a], s[b].i, s[b].j));
    if (nn < lo || nn >= hi) return false;
  }
  return true;
}

}  // namespace

std::vector<Source> draw_scene(const SceneSpec& spec, int64_t n, double z0_px, uint64_t seed) {
  const std::vector<double>* counts = spec.count == "few"      ? &spec.count_few
                                      : spec.count == "medium" ? &spec.count_medium
                                      : spec.count == "many"   ? &spec.count_many
                                                               : nullptr;
  FK_CHECK(counts, "config key 'scene'", "<few|medium|many>/<close|medium|far>",
           spec.count + "/" + spec.separation);
  double lo = spec.sep_far, hi = std::numeric_limits<double>::infinity();
  if (spec.separation == "close" || spec.separation == "medium") {
    const auto& r = spec.separation == "close" ? spec.sep_close : spec.sep_medium;
    lo = r[0];
    hi = r[1];
  } else {
    FK_CHECK(spec.separation == "far", "config key 'scene'", "<few|medium|many>/<close|medium|far>",
             spec.count + "/" + spec.separation);
  }
  lo = std::max(lo * z0_px, spec.min_sep_px);
  hi *= z0_px;
  // min_sep_px may lift a class's lower bound past its upper one: no grid size helps then.
  FK_CHECK(lo < hi, "config key 'min_sep_px'",
           "a separation below the " + spec.separation + " class's upper bound " + fk::to_text(hi) +
               " px",
           fk::to_text(spec.min_sep_px) + " px");
  const int64_t m = static_cast<int64_t>(std::ceil(spec.margin_z0 * z0_px));
  FK_CHECK(n - 1 - 2 * m >= 0, "config key 'margin_z0'",
           "a margin that leaves room on the " + fk::to_text(n) + "^2 grid",
           fk::to_text(spec.margin_z0) + " z0 = " + fk::to_text(m) + " px per side");
  NumpyRng rng(seed);
  const int64_t k =
      rng.integers(static_cast<int64_t>((*counts)[0]), static_cast<int64_t>((*counts)[1]) + 1);
  auto pixel = [&] { return rng.integers(m, n - m); };
  for (int attempt = 0; attempt < 2000; ++attempt) {
    std::vector<Source> s;
    for (int tries = 0; static_cast<int64_t>(s.size()) < k && tries < 200 * k; ++tries) {
      int64_t i = pixel(), j = pixel();
      if (!s.empty() && std::isfinite(hi)) {
        // Next to a random earlier source, at a distance in [lo, hi).
        const Source& a = s[rng.integers(0, static_cast<int64_t>(s.size()))];
        const double d = rng.uniform(lo, hi), th = rng.uniform(0, 2 * std::numbers::pi);
        i = a.i + std::llround(d * std::cos(th));
        j = a.j + std::llround(d * std::sin(th));
        if (i < m || i > n - 1 - m || j < m || j > n - 1 - m) continue;
      }
      bool ok = true;
      for (const Source& o : s) ok = ok && distance(o, i, j) >= lo;
      if (ok) s.push_back({i, j, 0.0, 0.0});
    }
    if (static_cast<int64_t>(s.size()) < k || !separations_hold(s, lo, hi)) continue;
    for (Source& q : s) {
      q.amplitude = rng.uniform(spec.amp_range[0], spec.amp_range[1]);
      q.larmor = rng.uniform(spec.larmor_band[0], spec.larmor_band[1]);
    }
    return s;
  }
  FK_CHECK(false, "config key 'scene'",
           "a class whose sources fit the grid (n, margin_z0, separations)",
           spec.count + "/" + spec.separation + ": no placement of " + fk::to_text(k) +
               " sources found on the " + fk::to_text(n) + "^2 grid (a larger n, e.g. --set n=" +
               fk::to_text(2 * n) + ", or a smaller margin_z0 leaves room)");
  return {};
}

namespace {

// Source q's Gaussian at pixel (i, j), peak 1.
double profile(const Source& q, int64_t i, int64_t j, double width) {
  const auto di = static_cast<double>(i - q.i), dj = static_cast<double>(j - q.j);
  return std::exp(-0.5 * (di * di + dj * dj) / (width * width));
}

}  // namespace

std::vector<double> render_density(const std::vector<Source>& s, int64_t n, double width) {
  std::vector<double> rho(n * n, 0.0);
  if (width <= 0) {
    for (const Source& q : s) rho[q.i * n + q.j] += q.amplitude;
    return rho;
  }
  for (const Source& q : s)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) rho[i * n + j] += q.amplitude * profile(q, i, j, width);
  return rho;
}

std::vector<double> render_larmor(const std::vector<Source>& s, int64_t n, double fill,
                                  double width) {
  std::vector<double> w(n * n, fill);
  if (width <= 0) {
    for (const Source& q : s) w[q.i * n + q.j] = q.larmor;
    return w;
  }
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double best = 0;
      for (const Source& q : s) {
        const double c = q.amplitude * profile(q, i, j, width);
        if (c >= 0.01 * q.amplitude && c > best) {
          best = c;
          w[i * n + j] = q.larmor;
        }
      }
    }
  return w;
}

}  // namespace nefi::nv
