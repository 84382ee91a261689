#include "nefi/instances/photoacoustic3d_data.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "fk/error.h"
#include "nefi/instances/datagen.h"

namespace nefi::pat {
namespace {

using Point = std::array<double, 3>;

// Distance from point q to the segment a-b.
double segment_distance(const Point& q, const Point& a, const Point& b) {
  double ab[3], aq[3], t = 0, den = 0;
  for (int i = 0; i < 3; ++i) {
    ab[i] = b[i] - a[i], aq[i] = q[i] - a[i];
    t += ab[i] * aq[i], den += ab[i] * ab[i];
  }
  t = den > 0 ? std::clamp(t / den, 0.0, 1.0) : 0.0;
  double d2 = 0;
  for (int i = 0; i < 3; ++i) d2 += std::pow(aq[i] - t * ab[i], 2);
  return std::sqrt(d2);
}

Point unit(Point v) {
  const double n = std::max(std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]), 1e-12);
  for (double& x : v) x /= n;
  return v;
}

Point random_direction(datagen::Rng& rng) {
  return unit({rng.normal(), rng.normal(), rng.normal()});
}

// A persistent random walk of `steps` steps of length `step` from `start`:
// each direction keeps `persistence` of the last one, and a step that would
// leave the box [lo, hi] turns back along that axis.
std::vector<Point> random_walk(datagen::Rng& rng, Point p, Point d, int64_t steps, double step,
                               double persistence, const Point& lo, const Point& hi) {
  std::vector<Point> out{p};
  d = unit(d);
  for (int64_t s = 0; s < steps; ++s) {
    const Point xi = random_direction(rng);
    for (int a = 0; a < 3; ++a) d[a] = persistence * d[a] + (1 - persistence) * xi[a];
    d = unit(d);
    for (int a = 0; a < 3; ++a) {
      if (p[a] + step * d[a] < lo[a] || p[a] + step * d[a] > hi[a]) d[a] = -d[a];
      p[a] = std::clamp(p[a] + step * d[a], lo[a], hi[a]);
    }
    out.push_back(p);
  }
  return out;
}

// An object: a tube around a polyline (one vertex: a ball) of radius r with
// a tanh edge, times its amplitude.
struct Object {
  std::vector<Point> path;
  double radius, amplitude;
  double distance(const Point& q) const {
    if (path.size() == 1) return segment_distance(q, path[0], path[0]);
    double d = 1e300;
    for (size_t i = 0; i + 1 < path.size(); ++i)
      d = std::min(d, segment_distance(q, path[i], path[i + 1]));
    return d;
  }
};

// The box an object of radius r is drawn in: `margin` of each lateral side
// and depths [0.15, 0.8] of the slab, shrunk so the object and its edge
// stay inside the slab (a p0 cut by the sensor face would put a step at the
// sensors); an empty range collapses to its middle.
std::pair<Point, Point> bounds(const std::vector<double>& extent, double margin, double r) {
  Point lo{margin * extent[0], margin * extent[1], 0.15 * extent[2]};
  Point hi{(1 - margin) * extent[0], (1 - margin) * extent[1], 0.8 * extent[2]};
  const double keep = r + 2 * kEdgeWidth;
  for (int a = 0; a < 3; ++a) {
    lo[a] = std::max(lo[a], keep), hi[a] = std::min(hi[a], extent[a] - keep);
    if (hi[a] < lo[a]) lo[a] = hi[a] = 0.5 * extent[a];
  }
  return {lo, hi};
}

std::vector<Object> draw_vessels(datagen::Rng& rng, const std::vector<double>& extent) {
  const double width = std::min(extent[0], extent[1]);
  std::vector<Object> out;
  const int64_t trees = rng.integer(2, 4);
  for (int64_t t = 0; t < trees; ++t) {
    const double amplitude = rng.uniform(0.6, 1.0);
    const double r = rng.uniform(kVesselRadius[0], kVesselRadius[1]);
    const auto [lo, hi] = bounds(extent, 0.1, r);
    Point d = random_direction(rng);
    d[2] *= 0.3;  // vessels run mostly parallel to the skin
    const Point start{rng.uniform(lo[0], hi[0]), rng.uniform(lo[1], hi[1]),
                      rng.uniform(lo[2], hi[2])};
    auto trunk = random_walk(rng, start, d, rng.integer(8, 13), 0.08 * width, 0.85, lo, hi);
    const Point fork = trunk[rng.integer(2, static_cast<int64_t>(trunk.size()) - 3)];
    Point db = random_direction(rng);
    db[2] *= 0.5;
    auto branch = random_walk(rng, fork, db, rng.integer(4, 7), 0.07 * width, 0.8, lo, hi);
    out.push_back({std::move(trunk), r, amplitude});
    out.push_back({std::move(branch), std::max(kVesselRadius[0], 0.7 * r), amplitude});
  }
  return out;
}

std::vector<Object> draw_spheres(datagen::Rng& rng, const std::vector<double>& extent) {
  std::vector<Object> out;
  const int64_t count = rng.integer(3, 6);
  for (int64_t k = 0; k < count; ++k) {
    const double r = rng.uniform(kSphereRadius[0], kSphereRadius[1]);
    const auto [lo, hi] = bounds(extent, 0.15, r);
    const Point c{rng.uniform(lo[0], hi[0]), rng.uniform(lo[1], hi[1]), rng.uniform(lo[2], hi[2])};
    out.push_back({{c}, r, rng.uniform(0.4, 1.0)});
  }
  return out;
}

}  // namespace

std::vector<double> pressure_scene(const std::string& cls, const fk::Dims& shape,
                                   const std::vector<double>& extent, uint64_t seed) {
  FK_CHECK(cls == "vessels" || cls == "spheres", "config key 'scene'", "vessels or spheres",
           "'" + cls + "'");
  datagen::Rng rng(seed * 15485863 + 29);
  const std::vector<Object> objects =
      cls == "vessels" ? draw_vessels(rng, extent) : draw_spheres(rng, extent);
  std::vector<double> p(shape.numel(), 0.0);
  const double h[3] = {extent[0] / shape[0], extent[1] / shape[1], extent[2] / shape[2]};
  for (int64_t i = 0; i < shape[0]; ++i)
    for (int64_t j = 0; j < shape[1]; ++j)
      for (int64_t k = 0; k < shape[2]; ++k) {
        const Point q{(i + 0.5) * h[0], (j + 0.5) * h[1], (k + 0.5) * h[2]};
        double v = 0;
        for (const Object& o : objects)
          v += o.amplitude * 0.5 * (1 - std::tanh((o.distance(q) - o.radius) / kEdgeWidth));
        p[(i * shape[1] + j) * shape[2] + k] = std::clamp(v, 0.0, 1.0);
      }
  return p;
}

std::vector<std::vector<double>> planar_sensors(const std::vector<double>& extent,
                                                const std::vector<double>& sensors, double span) {
  std::vector<std::vector<double>> out;
  const auto nx = static_cast<int64_t>(sensors[0]), ny = static_cast<int64_t>(sensors[1]);
  // Cell centres of an n-cell split of the central `span` of [0, L].
  auto at = [&](int64_t k, int64_t n, double L) {
    return 0.5 * (1 - span) * L +
           span * L * (static_cast<double>(k) + 0.5) / static_cast<double>(n);
  };
  for (int64_t i = 0; i < nx; ++i)
    for (int64_t j = 0; j < ny; ++j)
      out.push_back({at(i, nx, extent[0]), at(j, ny, extent[1]), 0.0});
  return out;
}

}  // namespace nefi::pat
