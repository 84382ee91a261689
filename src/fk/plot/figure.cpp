#include "fk/plot/figure.h"

#include <cairo.h>

#include <algorithm>
#include <cstring>

#include "fk/error.h"
#include "fk/io/replace_file.h"

namespace fk::plot {

struct Figure::Cairo {
  cairo_surface_t* surface = nullptr;
  cairo_t* cr = nullptr;
  ~Cairo() {
    if (cr) cairo_destroy(cr);
    if (surface) cairo_surface_destroy(surface);
  }
};

namespace {

void set_colour(cairo_t* cr, const Rgb& c) {
  cairo_set_source_rgb(cr, c.r, c.g, c.b);
}

void set_font(cairo_t* cr, double size, bool bold) {
  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL,
                         bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
}

}  // namespace

Figure::Figure(int width, int height)
    : width_(width), height_(height), cairo_(std::make_unique<Cairo>()) {
  FK_CHECK(width > 0 && height > 0 && width <= 16384 && height <= 16384, "nefi::plot::Figure",
           "a size in [1, 16384]^2", fk::to_text(width) + "x" + fk::to_text(height));
  cairo_->surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height);
  cairo_->cr = cairo_create(cairo_->surface);
  FK_CHECK(cairo_status(cairo_->cr) == CAIRO_STATUS_SUCCESS, "nefi::plot::Figure",
           "a cairo surface", cairo_status_to_string(cairo_status(cairo_->cr)));
  fill_rect(0, 0, width, height, {1, 1, 1});
}

Figure::~Figure() = default;

void Figure::fill_rect(double x, double y, double w, double h, const Rgb& c) {
  set_colour(cairo_->cr, c);
  cairo_rectangle(cairo_->cr, x, y, w, h);
  cairo_fill(cairo_->cr);
}

void Figure::stroke_rect(double x, double y, double w, double h, const Rgb& c, double lw) {
  cairo_t* cr = cairo_->cr;
  set_colour(cr, c);
  cairo_set_line_width(cr, lw);
  cairo_set_dash(cr, nullptr, 0, 0);
  cairo_rectangle(cr, x, y, w, h);
  cairo_stroke(cr);
}

void Figure::line(Point a, Point b, const Rgb& c, double lw, double dash) {
  polyline({a, b}, c, lw, dash);
}

void Figure::polyline(const std::vector<Point>& pts, const Rgb& c, double lw, double dash) {
  if (pts.size() < 2) return;
  cairo_t* cr = cairo_->cr;
  set_colour(cr, c);
  cairo_set_line_width(cr, lw);
  cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
  if (dash > 0) {
    const double d[2] = {dash, dash * 0.7};
    cairo_set_dash(cr, d, 2, 0);
  } else {
    cairo_set_dash(cr, nullptr, 0, 0);
  }
  cairo_move_to(cr, pts[0].x, pts[0].y);
  for (size_t i = 1; i < pts.size(); ++i) cairo_line_to(cr, pts[i].x, pts[i].y);
  cairo_stroke(cr);
  cairo_set_dash(cr, nullptr, 0, 0);
}

void Figure::dot(Point p, double r, const Rgb& c) {
  set_colour(cairo_->cr, c);
  cairo_new_sub_path(cairo_->cr);
  cairo_arc(cairo_->cr, p.x, p.y, r, 0, 6.283185307179586);
  cairo_fill(cairo_->cr);
}

double Figure::text_width(const std::string& s, double size, bool bold) {
  set_font(cairo_->cr, size, bold);
  cairo_text_extents_t e;
  cairo_text_extents(cairo_->cr, s.c_str(), &e);
  return e.x_advance;
}

void Figure::text(Point at, const std::string& s, const TextStyle& st) {
  cairo_t* cr = cairo_->cr;
  set_font(cr, st.size, st.bold);
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  cairo_font_extents_t f;
  cairo_font_extents(cr, &f);
  // Offsets along the text (width) and across it (cap height ~ ascent * 0.75).
  const double along = st.h == Align::Start    ? 0
                       : st.h == Align::Centre ? -e.x_advance / 2
                                               : -e.x_advance;
  const double cap = f.ascent * 0.72;
  const double across = st.v == Align::End ? 0 : st.v == Align::Centre ? cap / 2 : cap;
  cairo_save(cr);
  cairo_translate(cr, at.x, at.y);
  if (st.vertical) cairo_rotate(cr, -1.5707963267948966);
  set_colour(cr, st.colour);
  cairo_move_to(cr, along, across);
  cairo_show_text(cr, s.c_str());
  cairo_restore(cr);
}

void Figure::raster(double x, double y, double w, double h, int rows, int cols,
                    const std::vector<unsigned char>& rgb) {
  FK_CHECK(rows > 0 && cols > 0 && rgb.size() == static_cast<size_t>(rows) * cols * 3,
           "nefi::plot::Figure::raster", "rows * cols * 3 bytes",
           fk::to_text(rgb.size()) + " for " + fk::to_text(rows) + "x" + fk::to_text(cols));
  cairo_surface_t* img = cairo_image_surface_create(CAIRO_FORMAT_RGB24, cols, rows);
  cairo_surface_flush(img);
  unsigned char* data = cairo_image_surface_get_data(img);
  const int stride = cairo_image_surface_get_stride(img);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      const unsigned char* p = &rgb[(static_cast<size_t>(i) * cols + j) * 3];
      const uint32_t v = (uint32_t{p[0]} << 16) | (uint32_t{p[1]} << 8) | p[2];
      std::memcpy(data + static_cast<size_t>(i) * stride + 4 * static_cast<size_t>(j), &v, 4);
    }
  cairo_surface_mark_dirty(img);
  cairo_t* cr = cairo_->cr;
  cairo_save(cr);
  cairo_rectangle(cr, x, y, w, h);
  cairo_clip(cr);
  cairo_translate(cr, x, y);
  cairo_scale(cr, w / cols, h / rows);
  cairo_set_source_surface(cr, img, 0, 0);
  cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
  cairo_paint(cr);
  cairo_restore(cr);
  cairo_surface_destroy(img);
}

void Figure::clip(double x, double y, double w, double h) {
  cairo_save(cairo_->cr);
  cairo_rectangle(cairo_->cr, x, y, w, h);
  cairo_clip(cairo_->cr);
}

void Figure::unclip() {
  cairo_restore(cairo_->cr);
}

void Figure::save_png(const std::string& path) const {
  cairo_surface_flush(cairo_->surface);
  // Whole or not at all (a redrawn curves.png once stayed half written when
  // the disk filled): a temporary, renamed onto the path.
  fk::replace_file(
      path,
      [&](const std::string& tmp) {
        const cairo_status_t s = cairo_surface_write_to_png(cairo_->surface, tmp.c_str());
        FK_CHECK(s == CAIRO_STATUS_SUCCESS, "nefi::plot::Figure::save_png", "a writable path",
                 path + " (" + cairo_status_to_string(s) + ")");
      },
      "nefi::plot::Figure::save_png");
}

}  // namespace fk::plot
