#include "nefi/instances/current_density_data.h"

#include <cmath>
#include <numbers>

#include "fk/error.h"
#include "nefi/instances/numpy_rng.h"

namespace nefi::current_density {
namespace {

constexpr double kPi = std::numbers::pi;
constexpr double kTaper = 0.15;  // fraction of each axis over which g falls to 0

struct Point {
  double x0, x1;
};

// A path that bends at `p`: two rays from p at angles a and b. Points in the
// wedge swept counter-clockwise from b to a are on the positive side.
struct BentPath {
  Point p;
  double a, b, current, width;
};

struct Loop {
  Point c;
  double radius, current, width;
};

double ray_distance(const Point& q, const Point& p, double angle) {
  const double d0 = q.x0 - p.x0, d1 = q.x1 - p.x1;
  const double u0 = std::cos(angle), u1 = std::sin(angle);
  const double t = d0 * u0 + d1 * u1;
  return t <= 0 ? std::hypot(d0, d1) : std::abs(d0 * u1 - d1 * u0);
}

double signed_distance(const Point& q, const BentPath& w) {
  const double dist = std::min(ray_distance(q, w.p, w.a), ray_distance(q, w.p, w.b));
  auto wrap = [](double t) { return t - 2 * kPi * std::floor(t / (2 * kPi)); };
  const double phi = std::atan2(q.x1 - w.p.x1, q.x0 - w.p.x0);
  return wrap(phi - w.b) < wrap(w.a - w.b) ? dist : -dist;
}

double step(double u) {
  return 0.5 * (1 + std::tanh(2 * u));
}

double taper(double x, double L) {
  const double edge = std::min(x, L - x) / (kTaper * L);
  if (edge >= 1) return 1;
  const double s = std::sin(0.5 * kPi * std::max(edge, 0.0));
  return s * s;
}

}  // namespace

std::vector<double> stream_scene(const SceneSpec& s, int64_t m, uint64_t seed) {
  FK_CHECK(s.cls == "wires" || s.cls == "loops" || s.cls == "branching", "config key 'scene'",
           "wires, loops or branching", s.cls);
  NumpyRng rng(seed);
  const double L = s.extent, px = L / s.n;
  auto width = [&] { return rng.uniform(s.width_lo, s.width_hi) * px; };
  auto current = [&] { return (rng.uniform() < 0.5 ? -1 : 1) * rng.uniform(0.5, 1.0); };
  std::vector<BentPath> paths;
  std::vector<Loop> loops;
  if (s.cls == "wires") {
    for (int64_t k = rng.integers(1, 3); k > 0; --k) {
      const Point p{rng.uniform(0.35, 0.65) * L, rng.uniform(0.35, 0.65) * L};
      const double a = rng.uniform(0, kPi);
      paths.push_back({p, a, a + kPi, current(), width()});
    }
  } else if (s.cls == "loops") {
    for (int64_t k = rng.integers(2, 4); k > 0; --k) {
      const Point c{rng.uniform(0.3, 0.7) * L, rng.uniform(0.3, 0.7) * L};
      loops.push_back({c, rng.uniform(0.08, 0.16) * L, current(), width()});
    }
  } else {
    const Point p{rng.uniform(0.4, 0.6) * L, rng.uniform(0.4, 0.6) * L};
    const double in = kPi + rng.uniform(-0.4, 0.4);
    const double up = rng.uniform(0.3, 0.8), down = -rng.uniform(0.3, 0.8);
    const double i1 = rng.uniform(0.3, 0.7), i2 = rng.uniform(0.3, 0.7);
    const double w = width();
    paths.push_back({p, in, up, i1, w});
    paths.push_back({p, in, down, i2, w});
  }
  std::vector<double> g(m * m, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < m; ++j) {
      const Point q{(i + 0.5) * L / m, (j + 0.5) * L / m};
      double v = 0;
      for (const BentPath& w : paths) v += w.current * step(signed_distance(q, w) / w.width);
      for (const Loop& l : loops)
        v += l.current * step((l.radius - std::hypot(q.x0 - l.c.x0, q.x1 - l.c.x1)) / l.width);
      g[i * m + j] = v * taper(q.x0, L) * taper(q.x1, L);
    }
  return g;
}

}  // namespace nefi::current_density
