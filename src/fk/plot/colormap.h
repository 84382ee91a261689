#pragma once
// Colormaps for fields: viridis and magma (perceptually uniform, lightness
// rising monotonically from 0 to 1) and a diverging blue-white-red map for
// signed quantities (lightest at 0.5). Each is a short table of anchor colours
// interpolated linearly in sRGB; the anchors are chosen by hand to follow the
// published character of the maps, not taken from any library's tables.
#include <string>

namespace fk::plot {

struct Rgb {
  double r = 0, g = 0, b = 0;  // sRGB in [0, 1]
};

enum class Colormap { Viridis, Magma, Diverging };

// The colour at t (clamped to [0, 1]; NaN gives mid grey).
Rgb colormap(Colormap map, double t);
// CIE L* (0 black .. 100 white) of an sRGB colour, for tests and legibility checks.
double lightness(const Rgb& c);

}  // namespace fk::plot
