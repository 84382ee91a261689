#pragma once
// The darcy_flow instance's measurement model on [0, L]² (nefi.md §4.8),
// shared by the inversion operator and the data generator (which run it at
// different grids): the wells of each configuration, the gauges it keeps and
// the gauge observable; and the log-permeability scenes (data side only).
//
// Configuration c puts an injector (+Q) at the centre + 0.3 L (cos θ, sin θ),
// θ = well_angle + π c / n_configs, and a producer (−Q) opposite it. Gauges
// sit on an n_sensors² lattice at ((a + ½), (b + ½)) L / n_sensors; a gauge
// within 1.5 native cells of one of the configuration's wells is dropped.
#include <cstdint>
#include <string>
#include <vector>

#include "nefi/operators/elliptic/point_sources.h"

namespace nefi::darcy {

struct Layout {
  double extent = 1, well_angle = 0, rate = 1, viscosity = 1;
  int64_t n_configs = 1, n_sensors = 1, native = 16;
};

// The two wells of configuration c (strengths ±μQ).
std::vector<elliptic::PointSource> wells(const Layout& w, int64_t c);
// (n_configs, n_sensors²): 1 where configuration c keeps the gauge.
std::vector<double> gauge_mask(const Layout& w);
// The right-hand sides (n_configs, m, m) of every configuration on an m×m grid.
std::vector<double> well_rhs(const Layout& w, int64_t m);
// (n_configs, n_sensors², m·m): bilinear samples of the cell values at the
// kept gauges (clamped to the centres' range), referenced to the mean over
// the kept gauges of that configuration; dropped gauges have zero rows.
std::vector<double> gauge_matrix(const Layout& w, int64_t m);

// Y = log k at a point: smooth (a Gaussian random field of correlation
// length 0.15 L, unit variance, mean 0) or channels (a weak field plus 1–3
// sinuous channels of +2.5 and width in [width_lo, width_hi] L). Drawn from
// the seed; an unknown class is an fk::Error naming 'scene'.
class LogPermeability {
 public:
  LogPermeability(const std::string& scene, double extent, double width_lo, double width_hi,
                  uint64_t seed);
  double operator()(double x, double y) const;
  // Cell averages on an m×m grid (sub×sub samples per cell), clamped to [lo, hi].
  std::vector<double> render(int64_t m, int64_t sub, double lo, double hi) const;

 private:
  struct Mode {
    double kx, ky, phase;
  };
  struct Channel {
    double angle, offset, amplitude, wavelength, phase, width;
  };
  double extent_, field_scale_;
  std::vector<Mode> modes_;
  std::vector<Channel> channels_;
};

}  // namespace nefi::darcy
