#pragma once
// Thermal-tomography scenes: a bulk diffusivity (homogeneous, or layered in
// depth) with 1–4 low-diffusivity defects (delaminations, voids). A scene is
// drawn once per seed as a plain description (so tests can check every
// sampled parameter against its range) and rasterised on any grid.
//   homogeneous  bulk α ~ U(alpha_base_range)
//   layered      n_layers ~ U{n_layers range} strata; each stratum's
//                thickness ≥ min_layer_fraction · H (the rest split by
//                sorted uniforms), α per stratum ~ U(alpha_base_range)
//   defects      n ~ U{n_defects range}; shape ~ U(defect_shapes); lateral
//                centre ~ U(lateral_margin, L − lateral_margin) per axis;
//                centre depth ~ U(defect_depth_range); lateral radius ~
//                U(defect_radius_range); half-thickness in depth ~
//                U(defect_half_thickness_range); α ~ U(alpha_defect_range)
//                ellipsoid  (dx² + dy²) / r² + dz² / t² ≤ 1
//                cylinder   dx² + dy² ≤ r², |dz| ≤ t   (a disk along depth)
//                box        |dx| ≤ r, |dy| ≤ r, |dz| ≤ t
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
  std::array<double, 2> defect_depth_range{0.25, 0.75};
  double lateral_margin = 1.0;
  double min_layer_fraction = 0.15;
  // Throws fk::Error naming the key (inverted ranges, unknown scene/shape,
  // a margin leaving no room, layers that cannot fit, ...).
  void validate() const;
};

struct Defect {
  std::string shape;
  std::array<double, 3> center;  // physical x, y, z (z = depth of the centre)
  double radius = 0, half_thickness = 0, alpha = 0;
};

struct Scene {
  std::vector<double> layer_tops;    // depth where each stratum starts (first 0)
  std::vector<double> layer_alphas;  // one per stratum (homogeneous: one)
  std::vector<Defect> defects;
  // α at a physical point.
  double alpha_at(double x, double y, double z) const;
  // True where (x, y, z) lies inside a defect.
  bool in_defect(double x, double y, double z) const;
};

// Deterministic per seed (datagen::Rng).
Scene draw_scene(const SceneConfig& cfg, uint64_t seed);
// α at the cell centres of `shape` over `extent`, C order (x, y, z).
std::vector<double> rasterise(const Scene& scene, const fk::Dims& shape,
                              const std::vector<double>& extent);

}  // namespace nefi::thermal
