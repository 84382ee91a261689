#pragma once
// The current_density instance's scenes: stream functions g (mA) of thin
// current paths on [0, L]^2, point-sampled at the cell centres of an m x m
// grid. A path of width w is a smooth step of g across it, g = I S(sd / w)
// with S(u) = (1 + tanh 2u) / 2 and sd the signed distance to the path, so
// the current curl(g z^) flows along the path with a sech^2 profile.
//   wires:     1-2 straight wires through the central region;
//   loops:     2-3 circular loops (g = I inside the circle);
//   branching: a wire that splits in two at a junction (two bent wires
//              sharing the incoming leg, so Kirchhoff holds by construction).
// Wires end at the box: g is tapered to zero over the outer 15 % of each
// axis (a cos^2 ramp), where the return currents spread out. Draws come from
// NumPy's default_rng(seed) stream (numpy_rng.h); the width of each path is
// uniform in width_px pixels of the native grid.
#include <cstdint>
#include <string>
#include <vector>

namespace nefi::current_density {

struct SceneSpec {
  std::string cls;                      // wires | loops | branching
  int64_t n = 32;                       // native pixels per axis
  double extent = 8.0;                  // L
  double width_lo = 1, width_hi = 1.5;  // path width in native pixels
};

// g on an m x m grid (C order); an unknown class is an fk::Error naming 'scene'.
std::vector<double> stream_scene(const SceneSpec& s, int64_t m, uint64_t seed);

}  // namespace nefi::current_density
