#include "nefi/instances/darcy_model.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "fk/error.h"
#include "nefi/instances/datagen.h"

namespace nefi::darcy {
namespace {

constexpr double kPi = std::numbers::pi;

std::pair<double, double> gauge_position(const Layout& w, int64_t g) {
  const double s = w.extent / static_cast<double>(w.n_sensors);
  return {(g / w.n_sensors + 0.5) * s, (g % w.n_sensors + 0.5) * s};
}

elliptic::EllipticGrid square(const Layout& w, int64_t m) {
  elliptic::EllipticGrid g;
  g.shape = {m, m};
  g.spacing = {w.extent / m, w.extent / m};
  g.boundary = elliptic::parse_boundary("neumann", 2);
  return g;
}

}  // namespace

std::vector<elliptic::PointSource> wells(const Layout& w, int64_t c) {
  const double th = w.well_angle + kPi * static_cast<double>(c) / static_cast<double>(w.n_configs);
  const double r = 0.3 * w.extent, mid = 0.5 * w.extent, q = w.viscosity * w.rate;
  return {{{mid + r * std::cos(th), mid + r * std::sin(th)}, q},
          {{mid - r * std::cos(th), mid - r * std::sin(th)}, -q}};
}

std::vector<double> gauge_mask(const Layout& w) {
  const int64_t m = w.n_sensors * w.n_sensors;
  const double cell = w.extent / static_cast<double>(w.native);
  std::vector<double> mask(w.n_configs * m, 1.0);
  for (int64_t c = 0; c < w.n_configs; ++c)
    for (const auto& well : wells(w, c))
      for (int64_t g = 0; g < m; ++g) {
        const auto [x, y] = gauge_position(w, g);
        if (std::hypot(x - well.position[0], y - well.position[1]) < 1.5 * cell)
          mask[c * m + g] = 0.0;
      }
  return mask;
}

std::vector<double> well_rhs(const Layout& w, int64_t m) {
  std::vector<double> out;
  for (int64_t c = 0; c < w.n_configs; ++c) {
    const auto b = elliptic::point_source_rhs(square(w, m), wells(w, c));
    out.insert(out.end(), b.begin(), b.end());
  }
  return out;
}

std::vector<double> gauge_matrix(const Layout& w, int64_t m) {
  const int64_t ng = w.n_sensors * w.n_sensors, cells = m * m;
  const auto mask = gauge_mask(w);
  const double h = w.extent / static_cast<double>(m);
  std::vector<double> out(w.n_configs * ng * cells, 0.0);
  std::vector<double> row(ng * cells, 0.0);  // the bilinear samples, one row per gauge
  for (int64_t g = 0; g < ng; ++g) {
    const auto [x, y] = gauge_position(w, g);
    const double cx = std::clamp(x / h - 0.5, 0.0, double(m - 1));
    const double cy = std::clamp(y / h - 0.5, 0.0, double(m - 1));
    const int64_t i = std::min<int64_t>(static_cast<int64_t>(cx), m - 2);
    const int64_t j = std::min<int64_t>(static_cast<int64_t>(cy), m - 2);
    const double fx = cx - i, fy = cy - j;
    double* r = row.data() + g * cells;
    r[i * m + j] += (1 - fx) * (1 - fy);
    r[(i + 1) * m + j] += fx * (1 - fy);
    r[i * m + j + 1] += (1 - fx) * fy;
    r[(i + 1) * m + j + 1] += fx * fy;
  }
  for (int64_t c = 0; c < w.n_configs; ++c) {
    double kept = 0;
    for (int64_t g = 0; g < ng; ++g) kept += mask[c * ng + g];
    std::vector<double> mean(cells, 0.0);
    for (int64_t g = 0; g < ng; ++g)
      if (mask[c * ng + g] > 0)
        for (int64_t k = 0; k < cells; ++k) mean[k] += row[g * cells + k] / kept;
    for (int64_t g = 0; g < ng; ++g)
      if (mask[c * ng + g] > 0)
        for (int64_t k = 0; k < cells; ++k)
          out[(c * ng + g) * cells + k] = row[g * cells + k] - mean[k];
  }
  return out;
}

LogPermeability::LogPermeability(const std::string& scene, double extent, double width_lo,
                                 double width_hi, uint64_t seed)
    : extent_(extent) {
  FK_CHECK(scene == "smooth" || scene == "channels", "config key 'scene'", "smooth | channels",
           "'" + scene + "'");
  datagen::Rng rng(seed * 15485863 + 7);
  // Random Fourier features: cos(k·x + φ) with k ~ N(0, I/ℓ²) has the
  // covariance exp(−|r|²/(2ℓ²)); 256 of them give a near-Gaussian field.
  const double ell = 0.15 * extent;
  for (int k = 0; k < 256; ++k)
    modes_.push_back({rng.normal() / ell, rng.normal() / ell, rng.uniform(0, 2 * kPi)});
  field_scale_ = scene == "smooth" ? 1.0 : 0.3;
  if (scene == "channels") {
    const int64_t count = rng.integer(1, 3);
    for (int64_t c = 0; c < count; ++c)
      channels_.push_back({rng.uniform(0, kPi), rng.uniform(-0.3, 0.3) * extent,
                           rng.uniform(0.05, 0.12) * extent, rng.uniform(0.5, 1.0) * extent,
                           rng.uniform(0, 2 * kPi), rng.uniform(width_lo, width_hi) * extent});
  }
}

double LogPermeability::operator()(double x, double y) const {
  double g = 0;
  for (const Mode& m : modes_) g += std::cos(m.kx * x + m.ky * y + m.phase);
  double v = field_scale_ * g * std::sqrt(2.0 / static_cast<double>(modes_.size()));
  const double cx = x - 0.5 * extent_, cy = y - 0.5 * extent_;
  for (const Channel& c : channels_) {
    // Along-channel coordinate s and offset d from a sinuous centre line.
    const double s = cx * std::cos(c.angle) + cy * std::sin(c.angle);
    const double d = -cx * std::sin(c.angle) + cy * std::cos(c.angle);
    const double centre = c.offset + c.amplitude * std::sin(2 * kPi * s / c.wavelength + c.phase);
    if (std::abs(d - centre) <= 0.5 * c.width) v += 2.5;
  }
  return v;
}

std::vector<double> LogPermeability::render(int64_t m, int64_t sub, double lo, double hi) const {
  std::vector<double> out(m * m);
  const double h = extent_ / static_cast<double>(m);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < m; ++j) {
      double acc = 0;
      for (int64_t a = 0; a < sub; ++a)
        for (int64_t b = 0; b < sub; ++b)
          acc += (*this)(h * (i + (a + 0.5) / sub), h * (j + (b + 0.5) / sub));
      out[i * m + j] = std::clamp(acc / static_cast<double>(sub * sub), lo, hi);
    }
  return out;
}

}  // namespace nefi::darcy
