#pragma once
// Thermal-tomography scenes: a bulk diffusivity (homogeneous, or layered in
// depth) with 1–4 low-diffusivity defects (delaminations, voids). A scene is
// drawn once per seed as a plain description (so tests can check every
// sampled parameter against its range) and rasterised on any grid.
//   homogeneous  bulk α ~ U(alpha_base_range)
//   layered      n_layers ~ U{n_layers range} strata; stratum i is
//                (m + (1 − n m) w_i) · H thick, m = min_layer_fraction, w a
//                flat Dirichlet draw; α per stratum ~ U(alpha_base_range)
//   defects      n ~ U{n_defects range}; shape ~ U(defect_shapes); lateral
//                centre ~ U(lateral_margin, L − lateral_margin) per axis;
//                two lateral semi-axes (r_u, r_v) ~ U(defect_radius_range)
//                each, turned in plane by θ ~ U(0, π); half-thickness in
//                depth t ~ U(defect_half_thickness_range); centre depth
//                ~ U(defect_depth_range · H) clipped to [t, H − t] so the
//                defect stays inside the slab (H / 2 when nothing is left);
//                α ~ U(alpha_defect_range). (u, v) are the lateral offsets
//                from the centre (minimum image across the periodic lateral
//                boundaries) turned by θ, dz the depth offset:
//                ellipsoid  u² / r_u² + v² / r_v² + dz² / t² ≤ 1
//                cylinder   u² + v² ≤ r_u², |dz| ≤ t   (a disk along depth)
//                box        |u| ≤ r_u, |v| ≤ r_v, |dz| ≤ t
// A defect that covers no cell centre of a raster keeps the cell(s) nearest
// its centre, so no drawn defect vanishes on a coarse grid.
// Later defects overwrite earlier ones where they overlap. Physical
// coordinates: x ∈ [0, L_x], y ∈ [0, L_y], z ∈ [0, H] with z = 0 the front.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "fk/shape.h"

namespace nefi::thermal {

struct SceneConfig {
  std::vector<double> extent{10.0, 10.0, 1.0};
  std::string scene = "homogeneous";  // homogeneous | layered
  std::array<double, 2> alpha_base_range{0.1, 0.2};
  std::array<double, 2> alpha_defect_range{0.005, 0.015};
  std::array<int64_t, 2> n_defects{1, 4};
  std::array<int64_t, 2> n_layers{3, 4};
  std::vector<std::string> defect_shapes{"ellipsoid", "cylinder", "box"};
  std::array<double, 2> defect_radius_range{0.6, 1.6};
  std::array<double, 2> defect_half_thickness_range{0.08, 0.2};
  std::array<double, 2> defect_depth_range{0.25, 0.75};  // centre depth / H
  double lateral_margin = 1.0;
  double min_layer_fraction = 0.15;
  // Throws fk::Error naming the key (inverted ranges, unknown scene/shape,
  // a margin leaving no room, layers that cannot fit, ...).
  void validate() const;
};

struct Defect {
  std::string shape;
  std::array<double, 3> center;  // physical x, y, z (z = depth of the centre)
  std::array<double, 2> radii;   // lateral semi-axes (r_u, r_v); a cylinder uses r_u
  double angle = 0;              // in-plane rotation of (u, v) from (x, y), radians
  double half_thickness = 0, alpha = 0;
};

struct Scene {
  std::vector<double> extent{10.0, 10.0, 1.0};  // the slab (lateral periods)
  std::vector<double> layer_tops;               // depth where each stratum starts (first 0)
  std::vector<double> layer_alphas;             // one per stratum (homogeneous: one)
  std::vector<Defect> defects;
  // α at a physical point.
  double alpha_at(double x, double y, double z) const;
  // True where (x, y, z) lies inside a defect.
  bool in_defect(double x, double y, double z) const;
};

// Deterministic per seed. Drawn from NumPy's default_rng(seed) stream
// (numpy_rng.h) in the reference's order: bulk α (layered: the stratum
// count, the Dirichlet thicknesses, then one α per stratum); defect count;
// per defect shape, r_u, r_v, t, x, y, depth, θ, α. Either scene is the
// reference's scene for the same seed.
Scene draw_scene(const SceneConfig& cfg, uint64_t seed);
// α at the cell centres of `shape` over `extent` (the scene's slab), C order
// (x, y, z); sub-cell defects keep their nearest cell(s).
std::vector<double> rasterise(const Scene& scene, const fk::Dims& shape,
                              const std::vector<double>& extent);

}  // namespace nefi::thermal
