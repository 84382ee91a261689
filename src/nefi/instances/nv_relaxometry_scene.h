#pragma once
// The nv_relaxometry instance's scenes (NeTMY's paper classes): single-pixel
// spin sources, each with an amplitude and its own Larmor frequency.
// A class is "<count>/<separation>": count few | medium | many picks the
// number of sources from an inclusive range, separation close | medium |
// far the nearest-neighbour distance of every source, [lo, hi) in units of
// z0 (far: >= lo). Sources keep margin_z0 * z0 from the edges and at least
// min_sep_px pixels from each other.
#include <cstdint>
#include <string>
#include <vector>

namespace nefi::nv {

struct SceneSpec {
  std::string count = "medium", separation = "medium";
  std::vector<double> count_few{1, 3}, count_medium{4, 8}, count_many{9, 15};
  std::vector<double> sep_close{2, 3}, sep_medium{3, 5};
  double sep_far = 5;
  double margin_z0 = 3, min_sep_px = 2;
  std::vector<double> amp_range{0.5, 1.0}, larmor_band{1.5, 2.5};
};

struct Source {
  int64_t i, j;
  double amplitude, larmor;
};

// Draws a scene on an n x n grid with z0 = z0_px pixels from `seed`; an
// impossible class (no room, or no placement found in 2000 tries) is an
// fk::Error naming the key to change.
std::vector<Source> draw_scene(const SceneSpec& spec, int64_t n, double z0_px, uint64_t seed);

// rho (sources' amplitudes, 0 elsewhere) and omega_L (sources' Larmor
// frequencies, `fill` elsewhere) on the n x n grid, C order.
std::vector<double> render_density(const std::vector<Source>& s, int64_t n);
std::vector<double> render_larmor(const std::vector<Source>& s, int64_t n, double fill);

}  // namespace nefi::nv
