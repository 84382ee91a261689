#include "nefi/instances/deconvolution3d_data.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "fk/error.h"
#include "nefi/instances/datagen.h"
#include "nefi/instances/numpy_rng.h"

namespace nefi::deconv3d {
namespace {

// The quadratic Bezier curve through control points a, b, c as a polyline
// of 64 segments.
std::vector<Point> bezier_polyline(const Point& a, const Point& b, const Point& c) {
  std::vector<Point> poly;
  for (int k = 0; k <= 64; ++k) {
    const double t = k / 64.0;
    Point p;
    for (int d = 0; d < 3; ++d)
      p[d] = (1 - t) * (1 - t) * a[d] + 2 * (1 - t) * t * b[d] + t * t * c[d];
    poly.push_back(p);
  }
  return poly;
}

double dist2(const Point& p, const Point& q) {
  double s = 0;
  for (int a = 0; a < 3; ++a) s += (p[a] - q[a]) * (p[a] - q[a]);
  return s;
}

// Squared distance from p to the segment [u, v].
double segment_dist2(const Point& p, const Point& u, const Point& v) {
  double num = 0, den = 0;
  for (int a = 0; a < 3; ++a) {
    num += (p[a] - u[a]) * (v[a] - u[a]);
    den += (v[a] - u[a]) * (v[a] - u[a]);
  }
  const double t = den > 0 ? std::clamp(num / den, 0.0, 1.0) : 0.0;
  Point q;
  for (int a = 0; a < 3; ++a) q[a] = u[a] + t * (v[a] - u[a]);
  return dist2(p, q);
}

double polyline_dist2(const Point& p, const std::vector<Point>& polyline) {
  double best = 1e300;
  for (size_t k = 0; k + 1 < polyline.size(); ++k)
    best = std::min(best, segment_dist2(p, polyline[k], polyline[k + 1]));
  return best;
}

Point normalized(Point d) {
  const double len = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
  for (double& v : d) v /= std::max(len, 1e-12);
  return d;
}

double value_at(const Object& o, const Point& p) {
  if (o.kind == Object::kUniformTube)
    return polyline_dist2(p, o.path) <= o.radius * o.radius ? o.amplitude : 0.0;
  if (o.kind == Object::kCell) {
    double q = 0;
    for (int a = 0; a < 3; ++a) q += std::pow((p[a] - o.a[a]) / o.b[a], 2);
    const double r = std::sqrt(q);  // 1 on the surface
    const double rim = std::exp(-0.5 * std::pow((r - 1) * o.b[0] / o.radius, 2));
    return o.amplitude * (r < 1 ? 0.3 + 0.7 * rim : rim);
  }
  return o.amplitude * std::exp(-0.5 * polyline_dist2(p, o.path) / (o.radius * o.radius));
}

// The mean of exp(-(t - c)^2 / (2 s^2)) over t in [lo, hi].
double gaussian_mean(double lo, double hi, double c, double s) {
  const double k = 1 / (s * std::numbers::sqrt2);
  return s * std::sqrt(std::numbers::pi / 2) * (std::erf((hi - c) * k) - std::erf((lo - c) * k)) /
         (hi - lo);
}

// How far from its path or centre an object is rendered, in radii: the
// Gaussians of filaments and puncta drop to 1.5e-8 of their peak at 6.
double support_radii(const Object& o) {
  return o.kind == Object::kFilament || o.kind == Object::kPunctum ? 6.0 : 4.0;
}

}  // namespace

Point uniform_direction(NumpyRng& rng) {
  const double z = rng.uniform(-1.0, 1.0), phi = rng.uniform(0.0, 2 * std::numbers::pi);
  const double r = std::sqrt(std::max(0.0, 1 - z * z));
  return {r * std::cos(phi), r * std::sin(phi), z};
}

Point normal_direction(NumpyRng& rng) {
  Point d;
  for (double& v : d) v = rng.standard_normal();
  return normalized(d);
}

std::vector<Point> persistent_walk(NumpyRng& rng, Point start, Point direction, int64_t n_steps,
                                   double step, double persistence, const Point& lo,
                                   const Point& hi, Point (*draw_direction)(NumpyRng&)) {
  Point p = start, d = normalized(direction);
  std::vector<Point> pts{p};
  for (int64_t k = 0; k < n_steps; ++k) {
    const Point xi = draw_direction(rng);
    for (int a = 0; a < 3; ++a) d[a] = persistence * d[a] + (1 - persistence) * xi[a];
    d = normalized(d);
    for (int a = 0; a < 3; ++a) {
      const double q = p[a] + step * d[a];
      if (q < lo[a] || q > hi[a]) d[a] = -d[a];  // reflect off the face
    }
    for (int a = 0; a < 3; ++a) p[a] = std::clamp(p[a] + step * d[a], lo[a], hi[a]);
    pts.push_back(p);
  }
  return pts;
}

Scene draw_scene(const std::string& cls, const Point& box, NumpyRng& rng) {
  // A point uniform in the box less `margin` of each side, x first (NumPy's
  // uniform(lo, hi) on arrays of three).
  auto point = [&](double margin) {
    Point p;
    for (int a = 0; a < 3; ++a) p[a] = rng.uniform(margin * box[a], box[a] - margin * box[a]);
    return p;
  };
  Point lo, hi;  // the walks' box: 5 % inside each face
  for (int a = 0; a < 3; ++a) lo[a] = 0.05 * box[a], hi[a] = box[a] - 0.05 * box[a];
  const double walk_step = 0.09 * std::min(box[0], box[1]);
  // Widths in um, whatever the grid: multiples of the presets' nominal 0.1 um pixel.
  const double px = 0.1;
  Scene s;
  if (cls == "filaments") {
    // The reference's draw order: background, count, then per tube its
    // direction (z scaled by 0.4: fibres of thin adherent cells run mostly
    // in-plane), start, step count, walk, width, amplitude.
    s.background = rng.uniform(0.0, 0.02);
    s.ceiling = std::numeric_limits<double>::infinity();
    for (int64_t k = rng.integers(3, 7); k > 0; --k) {
      Point d = normal_direction(rng);
      d[2] *= 0.4;
      Object o{Object::kFilament, 0.0, point(0.15), {}, {}, 0.0, {}};
      const int64_t steps = rng.integers(10, 18);
      o.path = persistent_walk(rng, o.a, d, steps, walk_step, 0.85, lo, hi, normal_direction);
      o.radius = rng.uniform(0.06, 0.09);
      o.amplitude = rng.uniform(0.5, 1.0);
      s.objects.push_back(std::move(o));
    }
  } else if (cls == "bezier_filaments") {
    for (int64_t k = rng.integers(9, 16); k > 0; --k) {
      const Point a = point(0.1), b = point(0.2), c = point(0.1);
      s.objects.push_back({Object::kFilament, rng.uniform(0.5, 1.0), a, b, c,
                           px * rng.uniform(0.7, 1.2), bezier_polyline(a, b, c)});
    }
  } else if (cls == "puncta") {
    // The reference's draw order: count, every centre, every width, every
    // amplitude, then the background.
    const int64_t n = rng.integers(12, 30);
    for (int64_t k = 0; k < n; ++k)
      s.objects.push_back({Object::kPunctum, 0.0, point(0.06), {}, {}, 0.0, {}});
    for (Object& o : s.objects) o.radius = rng.uniform(0.04, 0.07);
    for (Object& o : s.objects) o.amplitude = rng.uniform(0.8, 1.6);
    s.background = rng.uniform(0.0, 0.02);
    s.ceiling = std::numeric_limits<double>::infinity();
  } else if (cls == "cells") {
    for (int64_t k = rng.integers(2, 5); k > 0; --k) {
      // Rims of std 0.05-0.08 um (a labelled membrane is far thinner than a
      // pixel): Richardson-Lucy then scores near the reference's cells.
      const Point a = point(0.3);
      Point b;
      for (int d = 0; d < 3; ++d) b[d] = rng.uniform(0.12, 0.22) * box[d];
      s.objects.push_back(
          {Object::kCell, rng.uniform(0.5, 1.0), a, b, {}, px * rng.uniform(0.5, 0.8), {}});
    }
  } else if (cls == "uniform_filaments") {
    for (int64_t k = rng.integers(3, 7); k > 0; --k) {
      Point d = uniform_direction(rng);
      d[2] *= 0.4;
      const Point start = point(0.15);
      const int64_t steps = rng.integers(10, 18);
      Object o{Object::kUniformTube, 1.0, start, {}, {}, rng.uniform(0.10, 0.15), {}};
      o.path = persistent_walk(rng, start, d, steps, walk_step, 0.85, lo, hi);
      s.objects.push_back(std::move(o));
    }
  } else {
    FK_CHECK(false, "config key 'scene'",
             "filaments, bezier_filaments, puncta, cells or uniform_filaments", cls);
  }
  return s;
}

Scene draw_scene(const std::string& cls, const Point& box, uint64_t seed) {
  NumpyRng rng(seed);
  return draw_scene(cls, box, rng);
}

std::vector<double> render(const Scene& s, const std::array<int64_t, 3>& shape, const Point& box) {
  std::vector<double> v(shape[0] * shape[1] * shape[2], s.background);
  for (const Object& o : s.objects) {
    Point lo = o.a, hi = o.a;  // bounding box of the object's support
    for (const Point& p : o.path)
      for (int a = 0; a < 3; ++a) lo[a] = std::min(lo[a], p[a]), hi[a] = std::max(hi[a], p[a]);
    if (o.kind == Object::kCell)
      for (int a = 0; a < 3; ++a) lo[a] -= o.b[a], hi[a] += o.b[a];
    std::array<int64_t, 3> i0, i1;
    for (int a = 0; a < 3; ++a) {
      const double h = box[a] / shape[a];
      const double reach = support_radii(o) * o.radius;
      i0[a] = std::max<int64_t>(0, static_cast<int64_t>((lo[a] - reach) / h));
      i1[a] = std::min<int64_t>(shape[a], static_cast<int64_t>((hi[a] + reach) / h) + 1);
    }
    for (int64_t i = i0[0]; i < i1[0]; ++i)
      for (int64_t j = i0[1]; j < i1[1]; ++j)
        for (int64_t k = i0[2]; k < i1[2]; ++k) {
          const std::array<int64_t, 3> cell{i, j, k};
          double& out = v[(i * shape[1] + j) * shape[2] + k];
          if (o.kind == Object::kPunctum) {  // the cell's mean: separable
            double mean = o.amplitude;
            for (int a = 0; a < 3; ++a) {
              const double h = box[a] / shape[a];
              mean *= gaussian_mean(cell[a] * h, (cell[a] + 1) * h, o.a[a], o.radius);
            }
            out += mean;
            continue;
          }
          const Point p{(i + 0.5) * box[0] / shape[0], (j + 0.5) * box[1] / shape[1],
                        (k + 0.5) * box[2] / shape[2]};
          out += value_at(o, p);
        }
  }
  for (double& x : v) x = std::clamp(x, 0.0, s.ceiling);
  return v;
}

std::vector<double> gaussian_blur(const std::vector<double>& v, const std::array<int64_t, 3>& shape,
                                  const Point& h, const Point& sigma) {
  std::vector<double> cur = v;
  for (int axis = 0; axis < 3; ++axis) {
    const int64_t r = static_cast<int64_t>(std::ceil(4 * sigma[axis] / h[axis]));
    std::vector<double> k(2 * r + 1);
    double total = 0;
    for (int64_t t = -r; t <= r; ++t)
      total += k[t + r] = std::exp(-0.5 * std::pow(t * h[axis] / sigma[axis], 2));
    for (double& w : k) w /= total;
    int64_t inner = 1, outer = 1;
    for (int a = axis + 1; a < 3; ++a) inner *= shape[a];
    for (int a = 0; a < axis; ++a) outer *= shape[a];
    const int64_t n = shape[axis];
    std::vector<double> out(cur.size(), 0.0);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t t = -r; t <= r; ++t) {
          const int64_t src = i - t;
          if (src < 0 || src >= n) continue;
          const double w = k[t + r];
          const double* in = cur.data() + (o * n + src) * inner;
          double* dst = out.data() + (o * n + i) * inner;
          for (int64_t j = 0; j < inner; ++j) dst[j] += w * in[j];
        }
    cur.swap(out);
  }
  return cur;
}

std::vector<double> poisson_counts(const std::vector<double>& clean, double peak, double background,
                                   uint64_t seed) {
  FK_CHECK(peak > 0, "config key 'peak_counts'", "counts > 0 at intensity 1", fk::to_text(peak));
  FK_CHECK(background >= 0, "config key 'background_counts'", "counts >= 0",
           fk::to_text(background));
  datagen::Rng rng(seed);
  std::vector<double> y(clean.size());
  for (size_t i = 0; i < y.size(); ++i)
    y[i] = static_cast<double>(rng.poisson(peak * std::max(clean[i], 0.0) + background));
  return y;
}

PsfExtent psf_extent_from(const std::string& name) {
  if (name == "full") return PsfExtent::kFull;
  if (name == "same") return PsfExtent::kSame;
  throw fk::Error("config key 'psf_extent'", "full or same", name);
}

std::vector<double> gaussian_psf(const Point& sigma, const Point& h,
                                 const std::array<int64_t, 3>& cells, PsfExtent extent,
                                 std::array<int64_t, 3>& shape) {
  std::array<std::vector<double>, 3> axis;
  for (int a = 0; a < 3; ++a) {
    const int64_t r = extent == PsfExtent::kFull ? cells[a] - 1 : (cells[a] - 1) / 2;
    double total = 0;
    for (int64_t t = -r; t <= r; ++t)
      total += axis[a].emplace_back(std::exp(-0.5 * std::pow(t * h[a] / sigma[a], 2)));
    for (double& w : axis[a]) w /= total;
    shape[a] = 2 * r + 1;
  }
  std::vector<double> v;
  v.reserve(shape[0] * shape[1] * shape[2]);
  for (double wx : axis[0])
    for (double wy : axis[1])
      for (double wz : axis[2]) v.push_back(wx * wy * wz);
  return v;
}

}  // namespace nefi::deconv3d
