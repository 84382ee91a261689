#include "nefi/instances/dot3d_model.h"

#include <algorithm>
#include <cmath>

#include "fk/error.h"
#include "nefi/instances/datagen.h"

namespace nefi::dot {

double detector_pitch_along(int64_t n, double span, double length) {
  return span * length / static_cast<double>(n);
}

namespace {

// Lattice coordinate a of n spanning `span` of [0, length], centred: the
// end points sit at the span's ends.
double lattice(int64_t a, int64_t n, double span, double length) {
  const double t = n > 1 ? static_cast<double>(a) / static_cast<double>(n - 1) - 0.5 : 0.0;
  return 0.5 * length + span * length * t;
}

// Centre of tile a of n tiling `span` of [0, length], centred: the tiles
// cover the span edge to edge, so the centres sit half a pitch inside it.
double tile_centre(int64_t a, int64_t n, double span, double length) {
  const double lo = 0.5 * length * (1.0 - span);
  return lo + (static_cast<double>(a) + 0.5) * detector_pitch_along(n, span, length);
}

}  // namespace

double Geometry::robin_a() const {
  const double n = refractive_index;
  const double r = -1.440 / (n * n) + 0.710 / n + 0.668 + 0.0636 * n;
  return (1 + r) / (1 - r);
}

double Geometry::detector_size() const {
  return std::min(detector_pitch_along(n_detectors, detector_span, extent[0]),
                  detector_pitch_along(n_detectors, detector_span, extent[1]));
}

double Geometry::boundary_conductance(double h) const {
  return 1.0 / (2.0 * robin_a() + h / (2.0 * diffusion()));
}

std::vector<elliptic::PointSource> source_positions(const Geometry& g) {
  std::vector<elliptic::PointSource> out;
  for (int64_t a = 0; a < g.n_sources; ++a)
    for (int64_t b = 0; b < g.n_sources; ++b)
      out.push_back({{lattice(a, g.n_sources, g.source_span, g.extent[0]),
                      lattice(b, g.n_sources, g.source_span, g.extent[1]), 1.0 / g.mus_prime},
                     1.0});
  return out;
}

std::vector<std::array<double, 2>> detector_positions(const Geometry& g) {
  std::vector<std::array<double, 2>> out;
  for (int64_t a = 0; a < g.n_detectors; ++a)
    for (int64_t b = 0; b < g.n_detectors; ++b)
      out.push_back({tile_centre(a, g.n_detectors, g.detector_span, g.extent[0]),
                     tile_centre(b, g.n_detectors, g.detector_span, g.extent[1])});
  return out;
}

std::vector<double> pair_mask(const Geometry& g) {
  const auto src = source_positions(g);
  const auto det = detector_positions(g);
  std::vector<double> mask;
  for (const auto& s : src)
    for (const auto& d : det) {
      // Lateral distance: the source's depth (one mean free path) plays no part.
      const double r = std::hypot(s.position[0] - d[0], s.position[1] - d[1]);
      mask.push_back(r < g.min_separation ? 0.0 : 1.0);
    }
  return mask;
}

elliptic::EllipticGrid slab_grid(const Geometry& g, const fk::Dims& shape) {
  FK_CHECK(shape.size() == 3, "nefi::dot::slab_grid", "a 3-D grid", shape.str());
  elliptic::EllipticGrid grid;
  grid.shape = shape;
  for (int a = 0; a < 3; ++a) grid.spacing.push_back(g.extent[a] / static_cast<double>(shape[a]));
  grid.boundary = elliptic::parse_boundary("neumann", 3);
  grid.validate();
  return grid;
}

std::vector<double> source_rhs(const Geometry& g, const fk::Dims& shape) {
  const auto grid = slab_grid(g, shape);
  std::vector<double> out;
  for (const auto& s : source_positions(g)) {
    const auto b = elliptic::point_source_rhs(grid, {s});
    out.insert(out.end(), b.begin(), b.end());
  }
  return out;
}

std::vector<double> robin_sink(const Geometry& g, const fk::Dims& shape) {
  const auto grid = slab_grid(g, shape);
  std::vector<double> sink(grid.numel(), 0.0);
  for (int a = 0; a < 3; ++a) {
    const double h = grid.spacing[a], k = g.boundary_conductance(h) / h;
    const int64_t len = shape[a], inner = grid.stride(a);
    for (int64_t i = 0; i < grid.numel(); ++i) {
      const int64_t idx = (i / inner) % len;
      sink[i] += (idx == 0 ? k : 0.0) + (idx == len - 1 ? k : 0.0);
    }
  }
  return sink;
}

std::vector<double> detector_matrix(const Geometry& g, const fk::Dims& shape) {
  const auto grid = slab_grid(g, shape);
  const int64_t nx = shape[0], ny = shape[1], nz = shape[2], n = grid.numel();
  const double hx = grid.spacing[0], hy = grid.spacing[1];
  const double kb = g.boundary_conductance(grid.spacing[2]);
  const double side = g.detector_size();
  const int64_t ns = g.detector_samples;
  const double w = kb / static_cast<double>(ns * ns);
  const auto det = detector_positions(g);
  std::vector<double> out(det.size() * n, 0.0);
  for (size_t d = 0; d < det.size(); ++d)
    for (int64_t sa = 0; sa < ns; ++sa)
      for (int64_t sb = 0; sb < ns; ++sb) {
        const double x = det[d][0] + side * ((sa + 0.5) / ns - 0.5);
        const double y = det[d][1] + side * ((sb + 0.5) / ns - 0.5);
        // Bilinear in the top cells (k = 0), clamped to the centres' range.
        const double cx = std::clamp(x / hx - 0.5, 0.0, double(nx - 1));
        const double cy = std::clamp(y / hy - 0.5, 0.0, double(ny - 1));
        const int64_t i = std::min<int64_t>(static_cast<int64_t>(cx), nx - 2);
        const int64_t j = std::min<int64_t>(static_cast<int64_t>(cy), ny - 2);
        const double fx = cx - i, fy = cy - j;
        double* r = out.data() + d * n;
        r[(i * ny + j) * nz] += w * (1 - fx) * (1 - fy);
        r[((i + 1) * ny + j) * nz] += w * fx * (1 - fy);
        r[(i * ny + j + 1) * nz] += w * (1 - fx) * fy;
        r[((i + 1) * ny + j + 1) * nz] += w * fx * fy;
      }
  return out;
}

Absorbers::Absorbers(const std::string& scene, const Geometry& g, double background, double margin,
                     uint64_t seed)
    : extent_(g.extent), background_(background) {
  FK_CHECK(scene == "single" || scene == "multi" || scene == "deep", "config key 'scene'",
           "single | multi | deep", "'" + scene + "'");
  datagen::Rng rng(seed * 2654435761u + 17);
  const int64_t count = scene == "multi" ? rng.integer(2, 3) : 1;
  const double z_lo = scene == "deep" ? 10 : scene == "multi" ? 4 : 5;
  const double z_hi = scene == "deep" ? 13 : scene == "multi" ? 11 : 8;
  const double lateral = 0.25, gap = 2;
  // The absorbers' depth windows are millimetres: a slab too thin for the
  // deepest (radius up to 5) cut it off or left no absorber at all.
  FK_CHECK(
      extent_[2] >= z_lo + 5 + margin, "config key 'extent'",
      "a slab at least " + fk::to_text(z_lo + 5 + margin) + " mm deep for scene '" + scene + "'",
      fk::to_text(extent_[2]) + " mm");
  for (int64_t c = 0; c < count; ++c) {
    const double r = rng.uniform(3, 5);
    double x = 0, y = 0;
    for (int attempt = 0; attempt < 50; ++attempt) {
      x = extent_[0] * (0.5 + rng.uniform(-lateral, lateral));
      y = extent_[1] * (0.5 + rng.uniform(-lateral, lateral));
      const bool apart = std::all_of(spheres_.begin(), spheres_.end(), [&](const Sphere& o) {
        return std::hypot(x - o.centre[0], y - o.centre[1]) >= r + o.radius + gap;
      });
      if (apart) break;
    }
    const double lo = std::max(z_lo, r + margin);
    const double hi = std::max(lo, std::min(z_hi, extent_[2] - r - margin));
    spheres_.push_back({{x, y, rng.uniform(lo, hi)}, r, background * rng.uniform(3, 5)});
  }
}

double Absorbers::operator()(double x, double y, double z) const {
  double v = background_;
  for (const Sphere& s : spheres_) {
    const double dx = x - s.centre[0], dy = y - s.centre[1], dz = z - s.centre[2];
    if (dx * dx + dy * dy + dz * dz <= s.radius * s.radius) v = std::max(v, s.value);
  }
  return v;
}

std::vector<double> Absorbers::render(const fk::Dims& shape, int64_t sub) const {
  const int64_t nx = shape[0], ny = shape[1], nz = shape[2];
  const double hx = extent_[0] / nx, hy = extent_[1] / ny, hz = extent_[2] / nz;
  std::vector<double> out(nx * ny * nz);
  const double inv = 1.0 / static_cast<double>(sub * sub * sub);
  for (int64_t i = 0; i < nx; ++i)
    for (int64_t j = 0; j < ny; ++j)
      for (int64_t k = 0; k < nz; ++k) {
        double acc = 0;
        for (int64_t a = 0; a < sub; ++a)
          for (int64_t b = 0; b < sub; ++b)
            for (int64_t c = 0; c < sub; ++c)
              acc += (*this)(hx * (i + (a + 0.5) / sub), hy * (j + (b + 0.5) / sub),
                             hz * (k + (c + 0.5) / sub));
        out[(i * ny + j) * nz + k] = acc * inv;
      }
  return out;
}

}  // namespace nefi::dot
