#pragma once
// The tile layout shared by the 2-D and volume panels (png_panel.cpp,
// png_volume_panel.cpp): fixed-size square image tiles with a two-line head
// (title, metrics), colour bars beside a row, a figure title on top. An image
// whose two axes are lengths in one unit is drawn to scale inside its tile
// (thermal's x-z slice of a 10 x 1 mm plate is flat), its drawn aspect held to
// kMaxStretch with the stretch said under the title.
#include <string>
#include <vector>

#include "fk/plot/axes.h"
#include "nefi/io/png_panel.h"

namespace nefi::panel {

inline constexpr double kTile = 220, kHead = 46, kGap = 26, kBar = 14, kBarRoom = 86, kTop = 40;
inline constexpr double kMaxStretch = 4;

// A 2-D array with its two axes (vertical = rows, drawn top-down).
struct Slice {
  int rows = 0, cols = 0;
  std::vector<double> v;
  fk::plot::Axis vert, horiz;
  double aspect = 0;           // vertical / horizontal span to scale; 0: a square tile
  std::string vert_name = {};  // named when the drawn aspect is stretched
};
// A slice over two data axes: to scale when both are lengths in one unit.
Slice slice(int rows, int cols, std::vector<double> v, const DataAxis& vert, const DataAxis& horiz);

inline double tile_w() {
  return fk::plot::kLeftMargin + kTile + kGap;
}
inline double row_h() {
  return kHead + kTile + fk::plot::kBottomMargin;
}

// A tile whose outer box starts at (x, y).
void tile(fk::plot::Figure& f, double x, double y, const Slice& s, fk::plot::Range r,
          fk::plot::Colormap map, const std::string& title, const std::string& sub);
// A colour bar at x spanning the tile row that starts at y.
void bar(fk::plot::Figure& f, double x, double y, fk::plot::Range r, fk::plot::Colormap map,
         const std::string& label);
void figure_title(fk::plot::Figure& f, const std::string& title);
// A plot axis over a's span, labelled with its name and unit.
fk::plot::Axis plot_axis(const DataAxis& a);
std::vector<double> minus(const std::vector<double>& a, const std::vector<double>& b);
// The colour range truth and reconstructions share: the truth's, widened to
// each reconstruction's 1st to 99th percentile, so an overshoot or ringing
// over many cells shows (clipped to the truth's range it would read as the
// truth's extremes) while a few wild cells do not flatten the truth.
fk::plot::Range field_range(const std::vector<double>& truth,
                            const std::vector<std::vector<double>>& reconstructions);

}  // namespace nefi::panel
