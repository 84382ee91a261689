#include "nefi/instances/thermal/scenes.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "fk/error.h"
#include "nefi/instances/numpy_rng.h"

namespace nefi::thermal {
namespace {

std::string range_str(double lo, double hi) {
  // Appended piecewise: GCC 12 warns (-Wrestrict, a false positive) on the
  // chained operator+ form.
  std::string s = "[";
  s += std::to_string(lo);
  s += ", ";
  s += std::to_string(hi);
  s += "]";
  return s;
}

void check_range(const std::array<double, 2>& r, const std::string& key, bool positive) {
  FK_CHECK(r[0] <= r[1] && (!positive || r[0] > 0), "config key '" + key + "'",
           positive ? "a range 0 < lo <= hi" : "a range lo <= hi", range_str(r[0], r[1]));
}

}  // namespace

void SceneConfig::validate() const {
  FK_CHECK(extent.size() == 3 && extent[0] > 0 && extent[1] > 0 && extent[2] > 0,
           "config key 'extent'", "three positive lengths", fk::to_text(extent.size()) + " values");
  FK_CHECK(scene == "homogeneous" || scene == "layered", "config key 'scene'",
           "homogeneous or layered", scene);
  check_range(alpha_base_range, "alpha_base_range", true);
  check_range(alpha_defect_range, "alpha_defect_range", true);
  check_range(defect_radius_range, "defect_radius_range", true);
  check_range(defect_half_thickness_range, "defect_half_thickness_range", true);
  // A defect at least as thick as the slab fills its depth (it was taken, and
  // sat at H/2 whatever its depth range said).
  FK_CHECK(defect_half_thickness_range[1] < 0.5 * extent[2],
           "config key 'defect_half_thickness_range'",
           "half-thicknesses below half the slab's depth (" + fk::to_text(0.5 * extent[2]) + ")",
           range_str(defect_half_thickness_range[0], defect_half_thickness_range[1]));
  FK_CHECK(0 <= defect_depth_range[0] && defect_depth_range[0] <= defect_depth_range[1] &&
               defect_depth_range[1] <= 1,
           "config key 'defect_depth_range'", "centre depths / H with 0 <= lo <= hi <= 1",
           range_str(defect_depth_range[0], defect_depth_range[1]));
  FK_CHECK(n_defects[0] >= 0 && n_defects[0] <= n_defects[1], "config key 'n_defects'",
           "a range 0 <= lo <= hi", range_str(n_defects[0], n_defects[1]));
  FK_CHECK(n_layers[0] >= 1 && n_layers[0] <= n_layers[1], "config key 'n_layers'",
           "a range 1 <= lo <= hi", range_str(n_layers[0], n_layers[1]));
  FK_CHECK(!defect_shapes.empty(), "config key 'defect_shapes'", "at least one shape", "none");
  for (const auto& s : defect_shapes)
    FK_CHECK(s == "ellipsoid" || s == "cylinder" || s == "box", "config key 'defect_shapes'",
             "ellipsoid, cylinder or box", s);
  FK_CHECK(lateral_margin >= 0 && 2 * lateral_margin < std::min(extent[0], extent[1]),
           "config key 'lateral_margin'", "0 <= margin < half the lateral extent",
           fk::to_text(lateral_margin));
  FK_CHECK(min_layer_fraction >= 0 && min_layer_fraction * n_layers[1] <= 1.0,
           "config key 'min_layer_fraction'", "min_layer_fraction * max layers <= 1",
           fk::to_text(min_layer_fraction));
}

namespace {

// Offset a − c folded into [−L/2, L/2): the nearest periodic image.
double min_image(double a, double c, double L) {
  const double d = std::fmod(a - c + 0.5 * L, L);
  return (d < 0 ? d + L : d) - 0.5 * L;
}

// The defect frame at (x, y, z): (u, v) lateral offsets turned by the
// defect's angle, dz the depth offset.
std::array<double, 3> local(const Defect& d, const std::vector<double>& extent, double x, double y,
                            double z) {
  const double ox = min_image(x, d.center[0], extent[0]);
  const double oy = min_image(y, d.center[1], extent[1]);
  const double c = std::cos(d.angle), s = std::sin(d.angle);
  return {c * ox + s * oy, -s * ox + c * oy, z - d.center[2]};
}

bool contains(const Defect& d, const std::array<double, 3>& q) {
  const auto [u, v, dz] = q;
  const double t = d.half_thickness, ru = d.radii[0], rv = d.radii[1];
  if (d.shape == "ellipsoid")
    return (u * u) / (ru * ru) + (v * v) / (rv * rv) + dz * dz / (t * t) <= 1.0;
  if (d.shape == "cylinder") return u * u + v * v <= ru * ru && std::abs(dz) <= t;
  return std::abs(u) <= ru && std::abs(v) <= rv && std::abs(dz) <= t;
}

}  // namespace

double Scene::alpha_at(double x, double y, double z) const {
  double a = layer_alphas.front();
  for (size_t l = 0; l < layer_tops.size(); ++l)
    if (z >= layer_tops[l]) a = layer_alphas[l];
  for (const Defect& d : defects)
    if (contains(d, local(d, extent, x, y, z))) a = d.alpha;
  return a;
}

bool Scene::in_defect(double x, double y, double z) const {
  for (const Defect& d : defects)
    if (contains(d, local(d, extent, x, y, z))) return true;
  return false;
}

Scene draw_scene(const SceneConfig& cfg, uint64_t seed) {
  cfg.validate();
  NumpyRng rng(seed);
  const double H = cfg.extent[2];
  Scene s;
  s.extent = cfg.extent;
  const auto& ab = cfg.alpha_base_range;
  if (cfg.scene == "homogeneous") {
    s.layer_tops = {0.0};
    s.layer_alphas = {rng.uniform(ab[0], ab[1])};
  } else {
    const int64_t n = rng.integers(cfg.n_layers[0], cfg.n_layers[1] + 1);
    // Thicknesses f_i = m + (1 − n m) w_i with w a uniform point on the
    // simplex (NumPy's dirichlet(ones(n))), so every stratum keeps its
    // minimum; the interfaces are the running sums of f times H, then one α
    // per stratum ~ U(alpha_base_range), front to back.
    const std::vector<double> w = rng.dirichlet_flat(n);
    const double m = cfg.min_layer_fraction, free = std::max(0.0, 1.0 - n * m);
    double cum = 0;
    s.layer_tops.push_back(0.0);
    for (int64_t l = 0; l + 1 < n; ++l) {
      cum += m + free * w[l];
      s.layer_tops.push_back(cum * H);
    }
    for (int64_t l = 0; l < n; ++l) s.layer_alphas.push_back(rng.uniform(ab[0], ab[1]));
  }
  const int64_t nd = rng.integers(cfg.n_defects[0], cfg.n_defects[1] + 1);
  const double mg = cfg.lateral_margin;
  for (int64_t i = 0; i < nd; ++i) {
    Defect d;
    d.shape = cfg.defect_shapes[rng.integers(0, static_cast<int64_t>(cfg.defect_shapes.size()))];
    const auto& rr = cfg.defect_radius_range;
    d.radii = {rng.uniform(rr[0], rr[1]), rng.uniform(rr[0], rr[1])};
    d.half_thickness =
        rng.uniform(cfg.defect_half_thickness_range[0], cfg.defect_half_thickness_range[1]);
    const double zlo = std::max(cfg.defect_depth_range[0] * H, d.half_thickness);
    const double zhi = std::min(cfg.defect_depth_range[1] * H, H - d.half_thickness);
    const double x = rng.uniform(mg, cfg.extent[0] - mg), y = rng.uniform(mg, cfg.extent[1] - mg);
    const double u = rng.uniform();
    // zhi == zlo (a depth range of one value) is that depth, not H/2.
    d.center = {x, y, zhi >= zlo ? zlo + u * (zhi - zlo) : 0.5 * H};
    d.angle = rng.uniform(0.0, std::numbers::pi);
    d.alpha = rng.uniform(cfg.alpha_defect_range[0], cfg.alpha_defect_range[1]);
    s.defects.push_back(d);
  }
  return s;
}

std::vector<double> rasterise(const Scene& scene, const fk::Dims& shape,
                              const std::vector<double>& extent) {
  FK_CHECK(shape.size() == 3 && extent.size() == 3, "nefi::thermal::rasterise",
           "a 3-D grid and extent", shape.str());
  FK_CHECK(extent == scene.extent, "nefi::thermal::rasterise", "the scene's own extent",
           "another extent");
  const double hx = extent[0] / shape[0], hy = extent[1] / shape[1], hz = extent[2] / shape[2];
  auto centre = [&](int64_t i, int64_t j, int64_t k) {
    return std::array<double, 3>{(i + 0.5) * hx, (j + 0.5) * hy, (k + 0.5) * hz};
  };
  std::vector<double> out(shape.numel());
  for (int64_t i = 0; i < shape[0]; ++i)
    for (int64_t j = 0; j < shape[1]; ++j)
      for (int64_t k = 0; k < shape[2]; ++k) {
        const auto [x, y, z] = centre(i, j, k);
        out[(i * shape[1] + j) * shape[2] + k] = scene.alpha_at(x, y, z);
      }
  // A defect thinner than a cell may miss every centre: it keeps the cell(s)
  // nearest to its centre (later defects still overwrite earlier ones).
  for (size_t n = 0; n < scene.defects.size(); ++n) {
    const Defect& d = scene.defects[n];
    std::vector<double> dist(out.size());
    bool hit = false;
    for (int64_t i = 0; i < shape[0]; ++i)
      for (int64_t j = 0; j < shape[1]; ++j)
        for (int64_t k = 0; k < shape[2]; ++k) {
          const auto [x, y, z] = centre(i, j, k);
          const auto q = local(d, extent, x, y, z);
          hit = hit || contains(d, q);
          dist[(i * shape[1] + j) * shape[2] + k] = q[0] * q[0] + q[1] * q[1] + q[2] * q[2];
        }
    if (hit) continue;
    const double dmin = *std::min_element(dist.begin(), dist.end());
    for (size_t p = 0; p < out.size(); ++p) {
      if (dist[p] != dmin) continue;
      const auto [x, y, z] = centre(static_cast<int64_t>(p) / (shape[1] * shape[2]),
                                    (static_cast<int64_t>(p) / shape[2]) % shape[1],
                                    static_cast<int64_t>(p) % shape[2]);
      bool later = false;  // a later defect that covers this cell keeps it
      for (size_t m = n + 1; m < scene.defects.size(); ++m)
        later = later || contains(scene.defects[m], local(scene.defects[m], extent, x, y, z));
      if (!later) out[p] = d.alpha;
    }
  }
  return out;
}

}  // namespace nefi::thermal
