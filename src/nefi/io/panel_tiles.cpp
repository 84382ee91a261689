#include "nefi/io/panel_tiles.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nefi::panel {
namespace {

// Title (bold) and, below it, a smaller second line (the metrics).
void head(fk::plot::Figure& f, const fk::plot::Box& b, const std::string& title,
          const std::string& sub) {
  f.text({b.x + b.w / 2, b.y - (sub.empty() ? 8 : 24)}, title,
         {13, {0.1, 0.1, 0.1}, fk::plot::Align::Centre, fk::plot::Align::End, true});
  if (!sub.empty())
    f.text({b.x + b.w / 2, b.y - 8}, sub, {11, {0.25, 0.25, 0.25}, fk::plot::Align::Centre});
}

}  // namespace

void tile(fk::plot::Figure& f, double x, double y, const Slice& s, fk::plot::Range r,
          fk::plot::Colormap map, const std::string& title, const std::string& sub) {
  fk::plot::AxesSpec a{
      {x + fk::plot::kLeftMargin, y + kHead, kTile, kTile}, s.horiz, s.vert, "", true};
  fk::plot::draw_image(f, a, {s.rows, s.cols, s.v, r.lo, r.hi, map});
  head(f, a.box, title, sub);
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
