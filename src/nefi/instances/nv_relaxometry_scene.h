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

// rho and omega_L on the n x n grid, C order. width 0 (the paper's scenes):
// rho is each source's amplitude at its pixel, 0 elsewhere, and omega_L its
// Larmor frequency there, `fill` elsewhere. width > 0 (pixels): each source
// is a Gaussian of that standard deviation peaking at its amplitude, rho
// their sum, and omega_L at a pixel the Larmor frequency of the source that
// contributes most there, where that contribution is at least 1 % of its
// amplitude (within ~3 widths), `fill` elsewhere.
std::vector<double> render_density(const std::vector<Source>& s, int64_t n, double width = 0);
std::vector<double> render_larmor(const std::vector<Source>& s, int64_t n, double fill,
                                  double width = 0);

}  // namespace nefi::nv
