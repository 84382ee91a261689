#include "nefi/instances/photoacoustic3d_data.h"

#include <algorithm>
#include <cmath>

#include "fk/error.h"
#include "nefi/instances/datagen.h"

namespace nefi::pat {
namespace {

// Distance from point q to the segment a-b.
double segment_distance(const double* q, const double* a, const double* b) {
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

}  // namespace

std::vector<double> pressure_scene(const std::string& cls, const fk::Dims& shape,
                                   const std::vector<double>& extent, uint64_t seed) {
  FK_CHECK(cls == "vessels" || cls == "spheres", "config key 'scene'", "vessels or spheres",
           "'" + cls + "'");
  datagen::Rng rng(seed * 15485863 + 29);
  const double X = extent[0], Y = extent[1], Z = extent[2];
  struct Object {
    double a[3], b[3], radius, amplitude;
  };
  std::vector<Object> objects;
  if (cls == "vessels") {
    const int64_t count = rng.integer(3, 5);
    for (int64_t k = 0; k < count; ++k) {
      Object o{};
      // Entry and exit points on opposite lateral sides, gently sloping in depth.
      const bool along_x = rng.uniform() < 0.5;
      const double z0 = rng.uniform(0.2, 0.75) * Z, z1 = z0 + rng.uniform(-0.15, 0.15) * Z;
      const double u0 = rng.uniform(0.15, 0.85), u1 = rng.uniform(0.15, 0.85);
      o.a[0] = along_x ? 0.05 * X : u0 * X, o.a[1] = along_x ? u0 * Y : 0.05 * Y, o.a[2] = z0;
      o.b[0] = along_x ? 0.95 * X : u1 * X, o.b[1] = along_x ? u1 * Y : 0.95 * Y;
      o.b[2] = std::clamp(z1, 0.15 * Z, 0.85 * Z);
      o.radius = rng.uniform(0.12, 0.25), o.amplitude = rng.uniform(0.6, 1.0);
      objects.push_back(o);
    }
  } else {
    const int64_t count = rng.integer(3, 6);
    for (int64_t k = 0; k < count; ++k) {
      Object o{};
      o.radius = rng.uniform(0.3, 0.7);
      o.a[0] = rng.uniform(0.2, 0.8) * X, o.a[1] = rng.uniform(0.2, 0.8) * Y;
      o.a[2] = rng.uniform(0.2, 0.75) * Z;
      std::copy(o.a, o.a + 3, o.b);
      o.amplitude = rng.uniform(0.5, 1.0);
      objects.push_back(o);
    }
  }
  std::vector<double> p(shape.numel(), 0.0);
  const double hx = X / shape[0], hy = Y / shape[1], hz = Z / shape[2];
  for (int64_t i = 0; i < shape[0]; ++i)
    for (int64_t j = 0; j < shape[1]; ++j)
      for (int64_t k = 0; k < shape[2]; ++k) {
        const double q[3] = {(i + 0.5) * hx, (j + 0.5) * hy, (k + 0.5) * hz};
        double v = 0;
        for (const Object& o : objects) {
          const double d = segment_distance(q, o.a, o.b);
          const double prof = cls == "vessels"
                                  ? std::exp(-0.5 * std::pow(d / o.radius, 2))
                                  : 0.5 * (1 + std::tanh((o.radius - d) / (0.25 * hx)));
          v = std::max(v, o.amplitude * prof);
        }
        p[(i * shape[1] + j) * shape[2] + k] = v;
      }
  return p;
}

std::vector<std::vector<double>> planar_sensors(const std::vector<double>& extent,
                                                const std::vector<double>& sensors, double span) {
  std::vector<std::vector<double>> out;
  const auto nx = static_cast<int64_t>(sensors[0]), ny = static_cast<int64_t>(sensors[1]);
  auto at = [&](int64_t k, int64_t n, double L) {
    const double lo = 0.5 * (1 - span) * L, hi = L - lo;
    return n == 1 ? 0.5 * L : lo + (hi - lo) * static_cast<double>(k) / static_cast<double>(n - 1);
  };
  for (int64_t i = 0; i < nx; ++i)
    for (int64_t j = 0; j < ny; ++j)
      out.push_back({at(i, nx, extent[0]), at(j, ny, extent[1]), 0.0});
  return out;
}

}  // namespace nefi::pat
