#include "nefi/instances/wave_fwi_data.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "fk/error.h"
#include "nefi/instances/datagen.h"

namespace nefi::fwi {
namespace {

double smooth_step(double x, double width) {
  return 0.5 * (1.0 + std::tanh(x / width));
}

// A point at arc length s along the square ring at `margin` from the edges,
// starting at the top-left corner and running clockwise.
std::vector<double> on_ring(double s, double extent, double margin) {
  const double side = extent - 2 * margin;
  s = std::fmod(s, 4 * side);
  const int edge = std::min(3, static_cast<int>(s / side));
  const double t = s - edge * side;
  switch (edge) {
    case 0:
      return {margin, margin + t};
    case 1:
      return {margin + t, extent - margin};
    case 2:
      return {extent - margin, extent - margin - t};
    default:
      return {extent - margin - t, margin};
  }
}

std::vector<double> line(double fixed0, double lo, double hi, int64_t k, int64_t count,
                         bool fixed_depth) {
  const double v = count == 1 ? 0.5 * (lo + hi) : lo + (hi - lo) * k / (count - 1.0);
  return fixed_depth ? std::vector<double>{fixed0, v} : std::vector<double>{v, fixed0};
}

}  // namespace

std::vector<double> velocity_scene(const std::string& cls, int64_t m, const MediumConfig& med,
                                   uint64_t seed) {
  FK_CHECK(cls == "smooth_anomaly" || cls == "layered" || cls == "scatterers", "config key 'scene'",
           "smooth_anomaly, layered or scatterers", "'" + cls + "'");
  datagen::Rng rng(seed * 104729 + 17);
  const double L = med.extent, h = L / static_cast<double>(m);
  std::vector<double> c(m * m, med.c_background);
  auto each = [&](auto f) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < m; ++j) c[i * m + j] += f((i + 0.5) * h, (j + 0.5) * h);
  };
  if (cls == "smooth_anomaly") {
    double z0 = 0, x0 = 0;
    for (int k = 0; k < 2; ++k) {
      double z, x;
      do {
        z = rng.uniform(0.3, 0.7) * L, x = rng.uniform(0.3, 0.7) * L;
      } while (k == 1 && std::hypot(z - z0, x - x0) < 0.25 * L);
      z0 = z, x0 = x;
      const double s = rng.uniform(0.08, 0.13) * L, a = (k == 0 ? 1.0 : -0.7) * med.anomaly;
      each([&](double zz, double xx) {
        return a * std::exp(-(std::pow(zz - z, 2) + std::pow(xx - x, 2)) / (2 * s * s));
      });
    }
  } else if (cls == "layered") {
    std::vector<double> depth, phase, contrast;
    for (int k = 0; k < 3; ++k) {
      depth.push_back((0.25 + 0.22 * k + rng.uniform(-0.04, 0.04)) * L);
      phase.push_back(rng.uniform(0, 2 * std::numbers::pi));
    }
    const double amp = 0.03 * L;
    each([&](double zz, double xx) {
      double v = -0.75 * med.anomaly;  // top layer slow, each interface faster below
      for (int k = 0; k < 3; ++k) {
        const double zi = depth[k] + amp * std::sin(2 * std::numbers::pi * xx / L + phase[k]);
        v += 0.55 * med.anomaly * smooth_step(zz - zi, 0.01 * L);
      }
      return v;
    });
  } else {
    const int64_t count = rng.integer(4, 6);
    for (int64_t k = 0; k < count; ++k) {
      const double z = rng.uniform(0.25, 0.75) * L, x = rng.uniform(0.25, 0.75) * L;
      const double r = rng.uniform(0.04, 0.07) * L;
      const double a = (rng.uniform() < 0.5 ? -1.0 : 1.0) * med.anomaly;
      each([&](double zz, double xx) {
        return a * smooth_step(r - std::hypot(zz - z, xx - x), 0.01 * L);
      });
    }
  }
  for (double& v : c) v = std::clamp(v, med.c_min, med.c_max);
  return c;
}

Acquisition acquisition(const std::string& kind, double extent, int64_t n_src, int64_t n_rec,
                        double margin) {
  FK_CHECK(kind == "surround" || kind == "transmission" || kind == "reflection",
           "config key 'acquisition'", "surround, transmission or reflection", "'" + kind + "'");
  Acquisition a;
  const double lo = margin, hi = extent - margin;
  if (kind == "surround") {
    const double per = 4 * (extent - 2 * margin);
    for (int64_t k = 0; k < n_src; ++k)
      a.sources.push_back(on_ring(per * k / n_src, extent, margin));
    for (int64_t k = 0; k < n_rec; ++k)
      a.receivers.push_back(on_ring(per * (k + 0.5) / n_rec, extent, margin));
  } else if (kind == "transmission") {
    for (int64_t k = 0; k < n_src; ++k) a.sources.push_back(line(lo, lo, hi, k, n_src, false));
    for (int64_t k = 0; k < n_rec; ++k) a.receivers.push_back(line(hi, lo, hi, k, n_rec, false));
  } else {
    for (int64_t k = 0; k < n_src; ++k) a.sources.push_back(line(lo, lo, hi, k, n_src, true));
    for (int64_t k = 0; k < n_rec; ++k) a.receivers.push_back(line(lo, lo, hi, k, n_rec, true));
  }
  return a;
}

std::vector<double> offset_mask(const Acquisition& acq, double min_offset, int64_t n_t) {
  std::vector<double> mask;
  mask.reserve(acq.sources.size() * acq.receivers.size() * n_t);
  for (const auto& s : acq.sources)
    for (const auto& r : acq.receivers) {
      const double d = std::hypot(s[0] - r[0], s[1] - r[1]);
      mask.insert(mask.end(), n_t, d < min_offset ? 0.0 : 1.0);
    }
  return mask;
}

}  // namespace nefi::fwi
