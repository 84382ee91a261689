#include "nefi/instances/radon_keys.h"

#include <numbers>
#include <string>

#include "fk/error.h"

namespace nefi {

void declare_radon_keys(Params& p, int64_t n_views) {
  p.declare("n_views", n_views, "projection angles");
  p.declare("angle_range", 180.0, "angular span of the views (degrees)");
  p.declare("det_per_pixel", int64_t{1}, "detector bins per pixel (inversion)");
  p.declare("samples_per_pixel", int64_t{1}, "ray samples per pixel (inversion)");
}

RadonGeometry radon_geometry_from(const Params& p) {
  RadonGeometry g;
  g.n_views = p.i("n_views");
  FK_CHECK(g.n_views >= 1 && g.n_views <= 100000, "config key 'n_views'",
           "a view count in [1, 100000]", fk::to_text(g.n_views));
  const double range = p.d("angle_range");
  FK_CHECK(range > 0 && range <= 360, "config key 'angle_range'", "degrees in (0, 360]",
           fk::to_text(range));
  g.angle_range = range * std::numbers::pi / 180;
  g.det_per_pixel = p.i("det_per_pixel");
  FK_CHECK(g.det_per_pixel >= 1 && g.det_per_pixel <= 16, "config key 'det_per_pixel'",
           "an integer in [1, 16]", fk::to_text(g.det_per_pixel));
  g.samples_per_pixel = p.i("samples_per_pixel");
  FK_CHECK(g.samples_per_pixel >= 1 && g.samples_per_pixel <= 16, "config key 'samples_per_pixel'",
           "an integer in [1, 16]", fk::to_text(g.samples_per_pixel));
  return g;
}

std::vector<DataAxis> radon_sinogram_axes(const Params& p, int64_t n, bool views_as_frames) {
  const RadonGeometry g = radon_geometry_from(p);
  const double step = p.d("angle_range") / static_cast<double>(g.n_views);
  const DataAxis angle =
      views_as_frames
          ? frames_axis("view angle", "θ = ", evenly(0, step, g.n_views), "°")
          : span_axis("view angle θ", "°", -0.5 * step, p.d("angle_range") - 0.5 * step);
  const double half = 0.5 * static_cast<double>(n);
  return {angle, span_axis("detector position s", "px", -half, half)};
}

}  // namespace nefi
