#pragma once
// Figure: a white raster canvas drawn with cairo (anti-aliased lines, text in
// DejaVu Sans, PNG output). Coordinates are pixels from the top-left corner.
// The primitives here know nothing about data; axes.h builds plots on them.
#include <memory>
#include <string>
#include <vector>

#include "fk/plot/colormap.h"

namespace fk::plot {

enum class Align { Start, Centre, End };  // left/top, centre, right/bottom

struct TextStyle {
  double size = 13;
  Rgb colour{0.1, 0.1, 0.1};
  Align h = Align::Start, v = Align::End;  // anchor: h along the text, v across it
  bool bold = false;
  bool vertical = false;  // rotated 90 degrees anticlockwise (y-axis labels)
};

struct Point {
  double x = 0, y = 0;
};

class Figure {
 public:
  // Throws fk::Error on a non-positive or huge size.
  Figure(int width, int height);
  ~Figure();
  Figure(const Figure&) = delete;
  Figure& operator=(const Figure&) = delete;

  int width() const { return width_; }
  int height() const { return height_; }

  void fill_rect(double x, double y, double w, double h, const Rgb& c);
  void stroke_rect(double x, double y, double w, double h, const Rgb& c, double lw = 1);
  // dash > 0: a dashed line with dashes of that length.
  void line(Point a, Point b, const Rgb& c, double lw = 1, double dash = 0);
  void polyline(const std::vector<Point>& pts, const Rgb& c, double lw = 1.5, double dash = 0);
  void dot(Point p, double r, const Rgb& c);
  void text(Point at, const std::string& s, const TextStyle& st = {});
  double text_width(const std::string& s, double size, bool bold = false);
  // An RGB raster (rows x cols, 3 bytes a pixel, row 0 on top) scaled to the
  // box with nearest-neighbour sampling, so cells stay visible as cells.
  void raster(double x, double y, double w, double h, int rows, int cols,
              const std::vector<unsigned char>& rgb);
  // Drawing outside the box is cut off until unclip().
  void clip(double x, double y, double w, double h);
  void unclip();
  // Throws fk::Error when the file cannot be written.
  void save_png(const std::string& path) const;

 private:
  struct Cairo;
  int width_, height_;
  std::unique_ptr<Cairo> cairo_;
};

}  // namespace fk::plot
