#pragma once
// ExplicitHeatSimulator: the thermal_tomography data generator, deliberately
// a different discretisation from the inversion's HeatOperator (the
// inverse-crime guard) and sharing no code with it. ∂T/∂t = ∇·(α∇T) on an
// extent[0] × extent[1] × extent[2] slab of (nx, ny, nz) cells, last axis
// depth, z index 0 the observed front face.
//   time     forward Euler in f64, N_sub = max(min_substeps,
//            ⌈Δt / Δt_stable · safety⌉) substeps per camera frame with
//            Δt_stable = Δx_min² / (2 · 3 · max α) (the explicit limit)
//   space    finite volumes: the state is copied into a ghost-padded array
//            (lateral ghosts wrap: periodic, or mirror their cell:
//            insulated sides with lateral_bc neumann; the front ghost mirrors its
//            cell: adiabatic; the back ghost mirrors (neumann) or is set so
//            the face flux is −h T (robin)), face fluxes
//            F = ᾱ (T_nb − T) / Δ with ᾱ harmonic 2ab/(a+b) or arithmetic,
//            and the update is the flux difference / Δ
//   flash    T⁰ = the Gaussian flash A exp(−r_xy²/2w_xy²) exp(−z²/2w_z²) as
//            exact cell averages (products of erf differences), laterally
//            periodised by summing images
//   output   front-surface frames first_frame, first_frame + stride, ... ≤
//            n_frames: (n_obs, nx, ny). With supersample s the slab is
//            simulated on an s-times finer grid, observed at its own front
//            cells (the top fine layer) and area-averaged laterally over the
//            s² fine columns of each coarse one — the reference's
//            DataGenerator (the fine operator's frames, then a resample).
// Cost: N_sub · n_frames sweeps of 7-point work over s³ nx ny nz cells.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fk/shape.h"

namespace nefi::thermal {

constexpr const char* kExplicitHeatTag = "explicit-substepped-float64";

struct FlashSpec {
  double amplitude = 100.0;
  double width_xy = 2.5;
  double width_z = 0.2;
  std::optional<std::array<double, 2>> center;  // physical (x, y); default the middle
  bool periodic = true;
  bool uniform = false;  // A exp(−z²/2w_z²) in every column (initial: flash)
};

struct ExplicitHeatConfig {
  std::vector<double> extent{10.0, 10.0, 1.0};
  double dt = 0.05;
  int64_t n_frames = 100;
  int64_t first_frame = 1;
  int64_t frame_stride = 1;
  std::string face_mode = "harmonic";   // harmonic | arithmetic
  std::string back_bc = "neumann";      // neumann | robin
  std::string lateral_bc = "periodic";  // periodic | neumann
  double robin_h = 0.0;
  int64_t min_substeps = 10;
  double substep_safety = 2.0;
  FlashSpec flash;
  // Throws fk::Error naming the bad key.
  void validate() const;
};

// Cell averages of the flash on `shape` (nx, ny, nz) over `extent`, C order.
std::vector<double> flash_cell_averages(const FlashSpec& flash, const fk::Dims& shape,
                                        const std::vector<double>& extent);

class ExplicitHeatSimulator {
 public:
  explicit ExplicitHeatSimulator(ExplicitHeatConfig cfg);

  // Substeps per frame for a field whose maximum is alpha_max on `shape`.
  int64_t substeps(const fk::Dims& shape, double alpha_max) const;
  // Every state T⁰..T^{n_frames}, (n_frames + 1) × numel(shape), from the
  // initial state t0 (the flash when empty).
  std::vector<std::vector<double>> trajectory(const std::vector<double>& alpha,
                                              const fk::Dims& shape,
                                              std::vector<double> t0 = {}) const;
  // Front-surface temperatures at the observed frames, (n_obs, nx, ny) C
  // order. alpha lives on `shape` multiplied by `supersample` per axis.
  std::vector<double> surface_frames(const std::vector<double>& alpha, const fk::Dims& shape,
                                     int64_t supersample = 1) const;
  std::vector<int64_t> observed_frames() const;
  const ExplicitHeatConfig& config() const { return cfg_; }

 private:
  ExplicitHeatConfig cfg_;
};

}  // namespace nefi::thermal
