#include "nefi/io/panel_tiles.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace nefi::panel {
namespace {

// The largest size up to `size` at which `s` fits `width` (down to 8 px):
// a long title ("richardson_lucy - truth: x-y at z = 1.1 µm") ran into the
// next tile's.
double fitted(fk::plot::Figure& f, const std::string& s, double size, double width, bool bold) {
  const double w = f.text_width(s, size, bold);
  return w <= width ? size : std::max(8.0, std::floor(size * width / w));
}

// Title (bold) and, below it, a smaller second line (the metrics), each
// within the tile and the margin before the next one.
void head(fk::plot::Figure& f, const fk::plot::Box& b, const std::string& title,
          const std::string& sub) {
  const double width = b.w + fk::plot::kLeftMargin - 8;
  f.text({b.x + b.w / 2, b.y - (sub.empty() ? 8 : 24)}, title,
         {fitted(f, title, 13, width, true),
          {0.1, 0.1, 0.1},
          fk::plot::Align::Centre,
          fk::plot::Align::End,
          true});
  if (!sub.empty())
    f.text({b.x + b.w / 2, b.y - 8}, sub,
           {fitted(f, sub, 11, width, false), {0.25, 0.25, 0.25}, fk::plot::Align::Centre});
}

}  // namespace

Slice slice(int rows, int cols, std::vector<double> v, const DataAxis& vert,
            const DataAxis& horiz) {
  Slice s{rows, cols, std::move(v), plot_axis(vert), plot_axis(horiz)};
  // Lengths: a unit, no named frames or numbered items (receivers, shots).
  const auto length = [](const DataAxis& a) {
    return !a.unit.empty() && a.frames.empty() && !a.numbered && a.hi != a.lo &&
           std::isfinite(a.hi - a.lo);
  };
  if (length(vert) && length(horiz) && vert.unit == horiz.unit) {
    s.aspect = std::abs(vert.hi - vert.lo) / std::abs(horiz.hi - horiz.lo);
    s.vert_name = vert.name;
  }
  return s;
}

void tile(fk::plot::Figure& f, double x, double y, const Slice& s, fk::plot::Range r,
          fk::plot::Colormap map, const std::string& title, const std::string& sub) {
  double w = kTile, h = kTile;
  std::string note = sub;
  if (s.aspect > 0) {
    const double drawn = std::clamp(s.aspect, 1 / kMaxStretch, kMaxStretch);
    (drawn < 1 ? h : w) = kTile * (drawn < 1 ? drawn : 1 / drawn);
    if (drawn != s.aspect) {
      const double by = drawn / s.aspect;  // > 1: the vertical axis drawn taller
      note += (note.empty() ? "" : ", ") + s.vert_name + " drawn " +
              short_number(by > 1 ? by : 1 / by) + "x " + (by > 1 ? "taller" : "shorter");
    }
  }
  // Centred in the tile's square, so a row's tiles keep their columns.
  fk::plot::AxesSpec a{
      {x + fk::plot::kLeftMargin + (kTile - w) / 2, y + kHead + (kTile - h) / 2, w, h},
      s.horiz,
      s.vert,
      "",
      true};
  fk::plot::draw_image(f, a, {s.rows, s.cols, s.v, r.lo, r.hi, map});
  head(f, {x + fk::plot::kLeftMargin, a.box.y, kTile, h}, title, note);
}

void bar(fk::plot::Figure& f, double x, double y, fk::plot::Range r, fk::plot::Colormap map,
         const std::string& label) {
  fk::plot::draw_colorbar(f, {x, y + kHead, kBar, kTile}, r.lo, r.hi, map, label);
}

void figure_title(fk::plot::Figure& f, const std::string& title) {
  f.text({16, 26}, title,
         {16, {0.05, 0.05, 0.05}, fk::plot::Align::Start, fk::plot::Align::End, true});
}

fk::plot::Axis plot_axis(const DataAxis& a) {
  return {a.lo, a.hi, false, axis_label(a), a.numbered};
}

std::vector<double> minus(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> d(a.size());
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) d[i] = a[i] - b[i];
  return d;
}

fk::plot::Range field_range(const std::vector<double>& truth,
                            const std::vector<std::vector<double>>& reconstructions) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double e : truth)
    if (std::isfinite(e)) lo = std::min(lo, e), hi = std::max(hi, e);
  for (const std::vector<double>& rec : reconstructions) {
    std::vector<double> v;
    for (double e : rec)
      if (std::isfinite(e)) v.push_back(e);
    if (v.empty()) continue;
    // Nearest rank, alike at both ends.
    const auto at = [&](double q) {
      const auto k =
          static_cast<std::ptrdiff_t>(std::lround(q * static_cast<double>(v.size() - 1)));
      std::nth_element(v.begin(), v.begin() + k, v.end());
      return v[static_cast<size_t>(k)];
    };
    lo = std::min(lo, at(0.01));
    hi = std::max(hi, at(0.99));
  }
  const std::vector<double> ends{lo, hi};
  return fk::plot::value_range({&ends});  // nothing finite: its default; one value: widened
}

}  // namespace nefi::panel
