#pragma once
// The simulation grid of the acoustic wave solver: the domain's cells plus an
// absorbing layer on every side, the leapfrog step that the CFL bound for
// c_max allows, Ricker wavelets and the multilinear point stencils of sources
// and receivers.
//
// Layout: axes are right-aligned into three slots (a 2-D (nx, ny) grid is
// (1, nx, ny)) and every active axis carries a zero halo of order/2 cells, so
// the Laplacian reads u = 0 outside the padded grid (a Dirichlet box) without
// bounds tests. Cell i of the domain has its centre at (i + 1/2) h.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "fk/shape.h"

namespace nefi::wave {

enum class Absorbing { kNone, kPml, kSponge, kCerjan };

// "none" | "pml" | "sponge" | "cerjan"; anything else is an fk::Error naming `key`.
Absorbing absorbing_from(const std::string& name, const std::string& key = "absorbing");
std::string absorbing_name(Absorbing a);
// The observed samples of a recording t_max long at dt_obs, t_max / dt_obs + 1
// rounded; an fk::Error naming the config keys 't_max' and 'dt_obs' outside
// [2, 1e7].
int64_t recording_samples(double t_max, double dt_obs);

struct WaveConfig {
  std::vector<double> extent;  // physical size of the domain per axis (1-3 axes)
  int order = 4;               // Laplacian order: 2 | 4
  Absorbing absorbing = Absorbing::kPml;
  double absorb_width = 0.0;  // physical width of the layer on each side
  double absorb_R = 1e-3;     // design reflection coefficient of the layer
  double courant = 0.9;       // fraction of the CFL step
  double c_max = 0.0;         // largest velocity the step must carry
  double dt_obs = 0.0;        // interval between observed samples
  int64_t n_t = 0;            // observed samples at t = 0, dt_obs, ...
  // Throws fk::Error naming the field: extent of another rank than `ndim` or
  // not positive, order not 2 or 4, pml in 3-D, negative width, R outside
  // (0, 1), courant outside (0, 1], c_max, dt_obs or n_t not positive.
  void validate(int ndim) const;
};

struct WaveGrid {
  int ndim = 0, order = 4, halo = 2;
  std::array<bool, 3> active{false, false, false};
  std::array<int64_t, 3> interior{1, 1, 1};  // the domain's cells
  std::array<int64_t, 3> pad{0, 0, 0};       // absorbing cells per side
  std::array<int64_t, 3> n{1, 1, 1};         // interior + 2 pad
  std::array<int64_t, 3> dims{1, 1, 1};      // n + 2 halo (stored)
  std::array<int64_t, 3> stride{0, 0, 0};    // of the stored layout
  std::array<double, 3> h{1, 1, 1};
  int64_t numel = 0;     // stored cells
  int64_t substeps = 1;  // leapfrog steps per observed interval
  double dt = 0.0;       // leapfrog step
  int64_t n_t = 0;

  // Flat index of padded cell (i0, i1, i2) (each in [0, n)).
  int64_t at(int64_t i0, int64_t i1, int64_t i2) const {
    return (i0 + off(0)) * stride[0] + (i1 + off(1)) * stride[1] + (i2 + off(2)) * stride[2];
  }
  int64_t off(int d) const { return active[d] ? halo : 0; }
  double cell_volume() const;
  // Leapfrog steps from t = 0 to the last observed sample.
  int64_t n_steps() const { return (n_t - 1) * substeps; }
};

// The largest stable leapfrog step for velocity c on spacing h with the
// Laplacian of `order`: dt² c² λ_max ≤ 4, λ_max = Σ_d 4/h_d² (order 2) or
// Σ_d 16/(3 h_d²) (order 4).
double cfl_dt(int order, const std::vector<double>& h, double c);

// The grid of `cfg` for a domain of `shape` cells; the layer is
// ceil(absorb_width / h - 1e-9) cells (0 for absorbing none), the step is
// dt_obs / m with the smallest m that keeps dt ≤ courant · cfl_dt(c_max).
WaveGrid make_wave_grid(const WaveConfig& cfg, const fk::Dims& shape);

// Ricker wavelet (1 − 2π²f0²τ²) exp(−π²f0²τ²), τ = t − t0, t0 = 1.2 / f0.
double ricker(double t, double f0);

// A point's multilinear stencil on the padded grid: up to 8 (index, weight).
struct PointStencil {
  std::vector<int64_t> index;
  std::vector<double> weight;
};

// The stencil of the physical position `x` (ndim values inside [0, extent]);
// outside is an fk::Error naming `what` and the point.
PointStencil point_stencil(const WaveGrid& g, const std::vector<double>& x,
                           const std::string& what);

// Positions (n, ndim) given as rows -> stencils, each checked.
std::vector<PointStencil> point_stencils(const WaveGrid& g,
                                         const std::vector<std::vector<double>>& points,
                                         const std::string& what);

}  // namespace nefi::wave
