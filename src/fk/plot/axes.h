#pragma once
// Axes on a Figure: a plot box with ticks in data units, axis labels and a
// title; image tiles on a colormap with colour bars; line plots with a
// legend; per-category intervals. Every function draws into the box given
// and leaves the room outside it to the caller's layout (the margins below).
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "fk/plot/colormap.h"
#include "fk/plot/figure.h"

namespace fk::plot {

// Room the decorations take around a plot box, in pixels.
inline constexpr double kLeftMargin = 58, kBottomMargin = 44, kTitleMargin = 26;

struct Box {
  double x = 0, y = 0, w = 0, h = 0;
};

struct Axis {
  double lo = 0, hi = 1;
  bool log = false;  // lo, hi > 0
  std::string label = {};
  bool integer = false;  // ticks at whole numbers only (an axis of numbered items)
};

struct AxesSpec {
  Box box;
  Axis x, y;
  std::string title = {};
  bool y_down = false;  // image convention: y.lo at the top
  bool grid = false;    // light lines at the ticks
  // Non-empty: x ticks at 0, 1, ... labelled by these (x.lo, x.hi around them).
  std::vector<std::string> x_categories = {};
  // The legend's gap below the top edge (more where markers label that edge).
  double legend_top = 8;
};

// Data -> pixel.
double to_px_x(const AxesSpec& a, double v);
double to_px_y(const AxesSpec& a, double v);
// Frame, ticks, tick labels, axis labels and title.
void draw_frame(Figure& f, const AxesSpec& a);

// A field on a colormap: values row-major (rows, cols), row 0 at the top
// (a.y_down should be set), colours spanning [lo, hi] (clamped outside).
struct ImageData {
  int rows = 0, cols = 0;
  std::vector<double> values;
  double lo = 0, hi = 1;
  Colormap map = Colormap::Viridis;
};
void draw_image(Figure& f, const AxesSpec& a, const ImageData& img);
// A vertical colour bar in `box` for [lo, hi] with ticks and a label on its right.
void draw_colorbar(Figure& f, const Box& box, double lo, double hi, Colormap map,
                   const std::string& label);

// Ranges: min..max over all values (finite only; an empty or flat range is
// widened), and a range symmetric about 0 covering max |v|.
struct Range {
  double lo = 0, hi = 1;
};
Range value_range(const std::vector<const std::vector<double>*>& sets);
Range symmetric_range(const std::vector<const std::vector<double>*>& sets);
// A range padded by `frac` of its span on both sides (log: in decades).
Range padded(Range r, double frac, bool log = false);

struct Series {
  std::string name;  // empty: not in the legend
  std::vector<double> x, y;
  Rgb colour = {};
  double width = 1.8;
  double dash = 0;      // > 0: dashed
  bool points = false;  // dots instead of a line
};
// Distinguishable line colours (cycled).
Rgb series_colour(int i);
// Lines (non-finite points, and non-positive ones on a log axis, break the line)
// and a legend in the top-left corner when legend_left, the top-right when
// not; unset: the corner that hides fewer points (right on a tie).
void draw_lines(Figure& f, const AxesSpec& a, const std::vector<Series>& s,
                std::optional<bool> legend_left = std::nullopt);
void draw_legend(Figure& f, const AxesSpec& a, const std::vector<Series>& s, bool left);
// A dashed vertical marker at x with a label beside its top.
void draw_marker(Figure& f, const AxesSpec& a, double x, const std::string& label);

// Per category: its values as dots and the mean with an interval bar.
struct Interval {
  std::string name;
  std::vector<double> values;
  double mean = 0, half = 0;  // half NaN: no bar
  // The bar's ends: mean -/+ half unless set (a caller clipping it to the
  // values the quantity can take).
  double lo = NAN, hi = NAN;
};
void draw_intervals(Figure& f, const AxesSpec& a, const std::vector<Interval>& cats);

}  // namespace fk::plot
