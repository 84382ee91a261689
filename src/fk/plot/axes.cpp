#include "fk/plot/axes.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "fk/plot/ticks.h"

namespace fk::plot {
namespace {

constexpr Rgb kInk{0.12, 0.12, 0.12};
constexpr Rgb kGrid{0.88, 0.88, 0.88};
constexpr double kTick = 4, kTickFont = 11, kLabelFont = 12, kTitleFont = 13;

double fraction(const Axis& ax, double v) {
  if (ax.log) return (std::log10(v) - std::log10(ax.lo)) / (std::log10(ax.hi) - std::log10(ax.lo));
  return (v - ax.lo) / (ax.hi - ax.lo);
}

struct Tick {
  double v;
  std::string label;
};

std::vector<Tick> ticks_of(const Axis& ax, int target) {
  std::vector<Tick> out;
  if (ax.log) {
    const std::vector<double> t = log_ticks(ax.lo, ax.hi);
    for (double v : t) out.push_back({v, log_tick_label(v)});
    // Labels that collide (the linear ticks of a range far under a decade,
    // 0.5 .. 0.500001) are labelled as a linear axis's, by their spacing.
    for (size_t i = 1; i < out.size(); ++i)
      if (out[i].label == out[i - 1].label) {
        for (Tick& k : out) k.label = tick_label(k.v, t[1] - t[0]);
        break;
      }
    return out;
  }
  const double step = nice_step(ax.lo, ax.hi, target, ax.integer);
  for (double v : nice_ticks(ax.lo, ax.hi, target, ax.integer))
    out.push_back({v, tick_label(v, step)});
  return out;
}

// At most one x tick label per ~70 px, one y label per ~40 px.
int tick_target(double px, double per) {
  return std::clamp(static_cast<int>(px / per), 2, 8);
}

void draw_x_ticks(Figure& f, const AxesSpec& a) {
  const Box& b = a.box;
  const double y = b.y + b.h;
  TextStyle st{kTickFont, kInk, Align::Centre, Align::Start};
  if (!a.x_categories.empty()) {
    // Names wider than their spacing alternate between two rows.
    double widest = 0;
    for (const std::string& c : a.x_categories)
      widest = std::max(widest, f.text_width(c, kTickFont));
    const bool stagger = a.x_categories.size() > 1 && widest + 6 > to_px_x(a, 1) - to_px_x(a, 0);
    for (size_t i = 0; i < a.x_categories.size(); ++i) {
      const double x = to_px_x(a, static_cast<double>(i));
      const double drop = stagger && i % 2 ? kTickFont + 3 : 0;
      f.line({x, y}, {x, y + kTick + drop}, kInk);
      f.text({x, y + kTick + 3 + drop}, a.x_categories[i], st);
    }
    return;
  }
  for (const Tick& t : ticks_of(a.x, tick_target(b.w, 70))) {
    const double x = to_px_x(a, t.v);
    if (a.grid) f.line({x, b.y}, {x, y}, kGrid);
    f.line({x, y}, {x, y + kTick}, kInk);
    f.text({x, y + kTick + 3}, t.label, st);
  }
}

// Returns the widest tick label's width.
double draw_y_ticks(Figure& f, const AxesSpec& a) {
  const Box& b = a.box;
  TextStyle st{kTickFont, kInk, Align::End, Align::Centre};
  double widest = 0;
  for (const Tick& t : ticks_of(a.y, tick_target(b.h, 40))) {
    const double y = to_px_y(a, t.v);
    if (a.grid) f.line({b.x, y}, {b.x + b.w, y}, kGrid);
    f.line({b.x - kTick, y}, {b.x, y}, kInk);
    f.text({b.x - kTick - 3, y}, t.label, st);
    widest = std::max(widest, f.text_width(t.label, kTickFont));
  }
  return widest;
}

bool drawable(const AxesSpec& a, double x, double y) {
  return std::isfinite(x) && std::isfinite(y) && (!a.x.log || x > 0) && (!a.y.log || y > 0);
}

}  // namespace

double to_px_x(const AxesSpec& a, double v) {
  return a.box.x + fraction(a.x, v) * a.box.w;
}

double to_px_y(const AxesSpec& a, double v) {
  const double t = fraction(a.y, v);
  return a.y_down ? a.box.y + t * a.box.h : a.box.y + (1 - t) * a.box.h;
}

void draw_frame(Figure& f, const AxesSpec& a) {
  const Box& b = a.box;
  draw_x_ticks(f, a);
  const double widest = draw_y_ticks(f, a);
  f.stroke_rect(b.x, b.y, b.w, b.h, kInk, 1);
  if (!a.x.label.empty())
    f.text({b.x + b.w / 2, b.y + b.h + 36}, a.x.label,
           {kLabelFont, kInk, Align::Centre, Align::End});
  if (!a.y.label.empty())
    // Beside the widest tick label, but not beyond the margin.
    f.text({std::max(b.x - kTick - widest - 16, b.x - kLeftMargin + 8), b.y + b.h / 2}, a.y.label,
           {kLabelFont, kInk, Align::Centre, Align::Centre, false, true});
  if (!a.title.empty())
    f.text({b.x + b.w / 2, b.y - 8}, a.title, {kTitleFont, kInk, Align::Centre, Align::End, true});
}

void draw_image(Figure& f, const AxesSpec& a, const ImageData& img) {
  std::vector<unsigned char> rgb(static_cast<size_t>(img.rows) * img.cols * 3);
  const double span = img.hi > img.lo ? img.hi - img.lo : 1;
  for (size_t k = 0; k < img.values.size() && k * 3 < rgb.size(); ++k) {
    const Rgb c = colormap(img.map, (img.values[k] - img.lo) / span);
    rgb[3 * k] = static_cast<unsigned char>(std::lround(255 * c.r));
    rgb[3 * k + 1] = static_cast<unsigned char>(std::lround(255 * c.g));
    rgb[3 * k + 2] = static_cast<unsigned char>(std::lround(255 * c.b));
  }
  f.raster(a.box.x, a.box.y, a.box.w, a.box.h, img.rows, img.cols, rgb);
  draw_frame(f, a);
}

void draw_colorbar(Figure& f, const Box& box, double lo, double hi, Colormap map,
                   const std::string& label) {
  const int n = 256;
  std::vector<unsigned char> rgb(n * 3);
  for (int i = 0; i < n; ++i) {  // row 0 (top) is hi
    const Rgb c = colormap(map, 1 - (i + 0.5) / n);
    rgb[3 * i] = static_cast<unsigned char>(std::lround(255 * c.r));
    rgb[3 * i + 1] = static_cast<unsigned char>(std::lround(255 * c.g));
    rgb[3 * i + 2] = static_cast<unsigned char>(std::lround(255 * c.b));
  }
  f.raster(box.x, box.y, box.w, box.h, n, 1, rgb);
  f.stroke_rect(box.x, box.y, box.w, box.h, kInk, 1);
  AxesSpec a{box, {0, 1}, {lo, hi > lo ? hi : lo + 1}, ""};
  const double step = nice_step(a.y.lo, a.y.hi, tick_target(box.h, 36));
  double widest = 0;
  const TextStyle st{kTickFont, kInk, Align::Start, Align::Centre};
  for (double v : nice_ticks(a.y.lo, a.y.hi, tick_target(box.h, 36))) {
    const double y = to_px_y(a, v);
    const std::string s = tick_label(v, step);
    f.line({box.x + box.w, y}, {box.x + box.w + kTick, y}, kInk);
    f.text({box.x + box.w + kTick + 3, y}, s, st);
    widest = std::max(widest, f.text_width(s, kTickFont));
  }
  if (!label.empty())
    f.text({box.x + box.w + kTick + 3 + widest + 14, box.y + box.h / 2}, label,
           {kLabelFont, kInk, Align::Centre, Align::Centre, false, true});
}

Range value_range(const std::vector<const std::vector<double>*>& sets) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto* s : sets)
    for (double v : *s)
      if (std::isfinite(v)) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
  if (!(lo <= hi)) return {0, 1};
  if (hi == lo)
    return {lo - std::max(std::abs(lo), 1.0) * 0.1, hi + std::max(std::abs(hi), 1.0) * 0.1};
  return {lo, hi};
}

Range symmetric_range(const std::vector<const std::vector<double>*>& sets) {
  double m = 0;
  for (const auto* s : sets)
    for (double v : *s)
      if (std::isfinite(v)) m = std::max(m, std::abs(v));
  if (!(m > 0)) m = 1;
  return {-m, m};
}

Range padded(Range r, double frac, bool log) {
  if (log) {
    const double a = std::log10(r.lo), b = std::log10(r.hi), p = std::max((b - a) * frac, 0.05);
    return {std::pow(10.0, a - p), std::pow(10.0, b + p)};
  }
  const double p = (r.hi - r.lo) * frac;
  return {r.lo - p, r.hi + p};
}

Rgb series_colour(int i) {
  static const Rgb kColours[] = {{0.12, 0.37, 0.66}, {0.85, 0.33, 0.10}, {0.17, 0.60, 0.29},
                                 {0.72, 0.20, 0.42}, {0.48, 0.36, 0.74}, {0.55, 0.43, 0.12}};
  return kColours[static_cast<size_t>(i) % (sizeof(kColours) / sizeof(kColours[0]))];
}

namespace {

// The legend's box in the top-left or top-right corner (empty: no entries).
Box legend_box(Figure& f, const AxesSpec& a, const std::vector<Series>& series, bool left) {
  double w = 0;
  int n = 0;
  for (const Series& s : series)
    if (!s.name.empty()) {
      w = std::max(w, f.text_width(s.name, kTickFont));
      ++n;
    }
  if (n == 0) return {};
  const double bw = w + 40, bh = n * 16 + 8;
  return {left ? a.box.x + 8 : a.box.x + a.box.w - bw - 8, a.box.y + a.legend_top, bw, bh};
}

// Whether the top-left corner hides fewer drawn points than the top-right.
bool left_is_emptier(Figure& f, const AxesSpec& a, const std::vector<Series>& series) {
  int hidden[2] = {0, 0};
  for (int side = 0; side < 2; ++side) {
    const Box b = legend_box(f, a, series, side == 0);
    for (const Series& s : series)
      for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
        if (!drawable(a, s.x[i], s.y[i])) continue;
        const double px = to_px_x(a, s.x[i]), py = to_px_y(a, s.y[i]);
        hidden[side] += px >= b.x && px <= b.x + b.w && py >= b.y && py <= b.y + b.h;
      }
  }
  return hidden[0] < hidden[1];
}

}  // namespace

void draw_lines(Figure& f, const AxesSpec& a, const std::vector<Series>& series,
                std::optional<bool> legend_left) {
  if (a.grid) {
    AxesSpec g = a;
    g.title.clear();
    draw_frame(f, g);
  }
  f.clip(a.box.x, a.box.y, a.box.w, a.box.h);
  for (const Series& s : series) {
    std::vector<Point> run;
    auto flush = [&] {
      // A run of one point (a one-step history, a finite value between
      // NaNs) is no line: a dot, or it drew nothing.
      if (run.size() == 1) f.dot(run[0], std::max(s.width, 1.5), s.colour);
      f.polyline(run, s.colour, s.width, s.dash);
      run.clear();
    };
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!drawable(a, s.x[i], s.y[i])) {
        flush();
        continue;
      }
      const Point p{to_px_x(a, s.x[i]), to_px_y(a, s.y[i])};
      if (s.points)
        f.dot(p, s.width, s.colour);
      else
        run.push_back(p);
    }
    flush();
  }
  f.unclip();
  draw_frame(f, a);
  draw_legend(f, a, series, legend_left.value_or(left_is_emptier(f, a, series)));
}

void draw_legend(Figure& f, const AxesSpec& a, const std::vector<Series>& series, bool left) {
  const Box box = legend_box(f, a, series, left);
  if (box.w == 0) return;
  const double row = 16, bw = box.w, bh = box.h, x = box.x, y = box.y;
  f.fill_rect(x, y, bw, bh, {1, 1, 1});
  f.stroke_rect(x, y, bw, bh, {0.75, 0.75, 0.75}, 1);
  int k = 0;
  for (const Series& s : series) {
    if (s.name.empty()) continue;
    const double cy = y + 4 + row * (k++ + 0.5);
    if (s.points)
      f.dot({x + 16, cy}, std::max(s.width, 2.0), s.colour);
    else
      f.line({x + 6, cy}, {x + 26, cy}, s.colour, s.width, s.dash > 0 ? 4 : 0);
    f.text({x + 32, cy}, s.name, {kTickFont, kInk, Align::Start, Align::Centre});
  }
}

void draw_marker(Figure& f, const AxesSpec& a, double x, const std::string& label) {
  const double px = to_px_x(a, x);
  const Rgb c{0.45, 0.45, 0.45};
  f.line({px, a.box.y}, {px, a.box.y + a.box.h}, c, 1, 5);
  if (label.empty()) return;
  // On a white patch: the label stays legible over the lines it marks.
  f.fill_rect(px + 2, a.box.y + 2, f.text_width(label, 10) + 4, 13, {1, 1, 1});
  f.text({px + 4, a.box.y + 4}, label, {10, c, Align::Start, Align::Start});
}

void draw_intervals(Figure& f, const AxesSpec& a, const std::vector<Interval>& cats) {
  draw_frame(f, a);
  for (size_t i = 0; i < cats.size(); ++i) {
    const Interval& c = cats[i];
    const double cx = to_px_x(a, static_cast<double>(i));
    const Rgb colour = series_colour(static_cast<int>(i));
    const Rgb light{0.55 + 0.45 * colour.r, 0.55 + 0.45 * colour.g, 0.55 + 0.45 * colour.b};
    // Values spread sideways by rank so equal values stay visible.
    for (size_t k = 0; k < c.values.size(); ++k)
      if (drawable(a, 0.5, c.values[k])) {
        const double dx = c.values.size() > 1 ? (k / (c.values.size() - 1.0) - 0.5) * 24 : 0;
        f.dot({cx - 18 + dx * 0.5, to_px_y(a, c.values[k])}, 2.6, light);
      }
    if (!std::isfinite(c.mean)) continue;
    const double my = to_px_y(a, c.mean);
    if (std::isfinite(c.half)) {
      const double y0 = to_px_y(a, std::isnan(c.lo) ? c.mean - c.half : c.lo),
                   y1 = to_px_y(a, std::isnan(c.hi) ? c.mean + c.half : c.hi);
      f.line({cx + 8, y0}, {cx + 8, y1}, colour, 2);
      f.line({cx + 2, y0}, {cx + 14, y0}, colour, 2);
      f.line({cx + 2, y1}, {cx + 14, y1}, colour, 2);
    }
    f.dot({cx + 8, my}, 4.5, colour);
  }
}

}  // namespace fk::plot
