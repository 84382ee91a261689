#pragma once
// The tile layout shared by the 2-D and volume panels (png_panel.cpp,
// png_volume_panel.cpp): fixed-size square image tiles with a two-line head
// (title, metrics), colour bars beside a row, a figure title on top.
#include <string>
#include <vector>

#include "nefi/io/png_panel.h"
#include "nefi/plot/axes.h"

namespace nefi::panel {

inline constexpr double kTile = 220, kHead = 46, kGap = 26, kBar = 14, kBarRoom = 86, kTop = 40;

// A 2-D array with its two axes (vertical = rows, drawn top-down).
struct Slice {
  int rows = 0, cols = 0;
  std::vector<double> v;
  plot::Axis vert, horiz;
};

inline double tile_w() {
  return plot::kLeftMargin + kTile + kGap;
}
inline double row_h() {
  return kHead + kTile + plot::kBottomMargin;
}

// A tile whose outer box starts at (x, y).
void tile(plot::Figure& f, double x, double y, const Slice& s, plot::Range r, plot::Colormap map,
          const std::string& title, const std::string& sub);
// A colour bar at x spanning the tile row that starts at y.
void bar(plot::Figure& f, double x, double y, plot::Range r, plot::Colormap map,
         const std::string& label);
void figure_title(plot::Figure& f, const std::string& title);
double extent_of(const PanelInput& in, int axis);
std::vector<double> minus(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace nefi::panel
