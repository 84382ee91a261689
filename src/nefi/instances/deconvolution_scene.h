#pragma once
// The analytic scenes of the deconvolution instance (deconvolution.cpp):
// random parameters drawn per seed from NumPy's default_rng stream in the
// reference's order, rendered as cell averages on any grid.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace nefi::deconv {

// A scene is analytic: its random parameters are drawn first, independently
// of any grid, and the continuous image is then rendered as cell averages on
// whichever grid asks for it (the native ground truth and the finer data
// grid are area averages of one point-sampled image, so they agree). Values
// lie in [0, 1] on a zero-ish background. Coordinates are physical on
// [0, extent]^2, axis 0 = x (rows), axis 1 = y (columns).
struct Primitive {
  enum Kind { kDisk, kRect, kGauss, kCosine } kind;
  bool paint;                  // overwrite the region (indicator shapes) instead of adding
  double value;                // painted value or additive amplitude
  double cx, cy, a, b, theta;  // centre, half sizes / stds, rotation (radians)
};

struct Scene {
  double background = 0;
  bool clip = true;  // clamp the point-sampled image to [0, 1]
  std::vector<Primitive> parts;

  double at(double x, double y) const {
    double v = background;
    for (const Primitive& q : parts) {
      if (q.kind == Primitive::kCosine) {  // (a, b) = wave vector, theta = phase
        v += q.value * 0.5 * (1.0 + std::cos(q.a * x + q.b * y + q.theta));
        continue;
      }
      const double c = std::cos(q.theta), s = std::sin(q.theta);
      const double dx = x - q.cx, dy = y - q.cy;
      const double u = c * dx + s * dy, w = -s * dx + c * dy;
      double m = 0;
      if (q.kind == Primitive::kDisk) {
        m = (u / q.a) * (u / q.a) + (w / q.b) * (w / q.b) <= 1.0 ? 1.0 : 0.0;
      } else if (q.kind == Primitive::kRect) {
        m = std::abs(u) <= q.a && std::abs(w) <= q.b ? 1.0 : 0.0;
      } else {
        m = std::exp(-0.5 * ((u / q.a) * (u / q.a) + (w / q.b) * (w / q.b)));
      }
      v = q.paint ? v * (1.0 - m) + q.value * m : v + q.value * m;
    }
    return clip ? std::clamp(v, 0.0, 1.0) : v;
  }
};

// Draws a scene of class `cls` for an n x n native grid on [0, L]^2; sizes
// are fractions of L, dots have std dot_cells native cells. The parameters
// come from NumPy's default_rng(seed) stream (numpy_rng.h) in the order the
// reference draws them (centre x then y, then sizes, angle, value; counts
// from integers(lo, hi) with hi exclusive), so a seed here draws the
// reference's scene for that seed.
Scene draw_scene(const std::string& cls, int64_t n, double L, double dot_cells, uint64_t seed);

}  // namespace nefi::deconv
