#include "nefi/bench/sweep_png.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "fk/error.h"
#include "fk/plot/axes.h"
#include "nefi/bench/metric_axes.h"
#include "nefi/bench/stats.h"
#include "nefi/bench/tables.h"

namespace nefi::bench {
namespace {

constexpr double kW = 300, kH = 220, kGap = 34, kHead = 34, kTop = 44;
constexpr int kCols = 3;

struct Curve {
  std::vector<double> mean, lo, hi;
};

Curve curve(const std::vector<std::string>& labels, const std::vector<Row>& rows,
            const std::string& metric, double level) {
  Curve c;
  for (const auto& l : labels) {
    std::vector<double> v;
    std::vector<const Row*> mine;
    for (const Row& r : rows) {
      if (r.method != l) continue;
      const auto it = r.metrics.find(metric);
      v.push_back(it == r.metrics.end() ? NAN : it->second);
      mine.push_back(&r);
    }
    const MeanCI ci = scene_mean_ci(v, scenes_of(mine), level);
    const double half = std::isfinite(ci.half) ? ci.half : 0.0;
    c.mean.push_back(ci.mean);
    c.lo.push_back(ci.mean - half);
    c.hi.push_back(ci.mean + half);
  }
  return c;
}

}  // namespace

std::optional<std::vector<double>> numeric_values(const std::vector<std::string>& values) {
  std::vector<double> out;
  for (const auto& v : values) {
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(x)) return std::nullopt;
    out.push_back(x);
  }
  return out;
}

std::optional<SweepAxis> sweep_axis_of(const std::vector<std::string>& labels) {
  SweepAxis a;
  std::vector<std::string> values;
  for (const auto& l : labels) {
    const size_t eq = l.find('=');
    if (eq == std::string::npos || eq == 0) return std::nullopt;
    if (a.key.empty()) a.key = l.substr(0, eq);
    if (l.substr(0, eq) != a.key) return std::nullopt;
    values.push_back(l.substr(eq + 1));
  }
  const auto numbers = numeric_values(values);
  if (labels.empty() || !numbers) return std::nullopt;
  a.values = *numbers;
  return a;
}

void write_sweep_png(const std::string& path, const std::string& title, const std::string& axis,
                     const std::vector<double>& given_values,
                     const std::vector<std::string>& given_labels, const std::vector<Row>& rows,
                     double level) {
  FK_CHECK(
      !given_values.empty() && given_values.size() == given_labels.size(),
      "nefi::bench::write_sweep_png", "one label per value",
      fk::to_text(given_labels.size()) + " for " + fk::to_text(given_values.size()) + " values");
  // The curve runs in value order, whatever the order on the command line.
  std::vector<size_t> order(given_values.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return given_values[a] < given_values[b]; });
  std::vector<double> values;
  std::vector<std::string> labels;
  for (size_t i : order) {
    values.push_back(given_values[i]);
    labels.push_back(given_labels[i]);
  }
  const double vmin = *std::min_element(values.begin(), values.end());
  const double vmax = *std::max_element(values.begin(), values.end());
  const bool log = vmin > 0 && vmax >= 10 * vmin;
  // One value: half its size either side (a learning rate of 1e-2 would be
  // lost on [-1, 1]).
  const double half = vmin != 0 ? std::abs(vmin) / 2 : 1.0;
  const fk::plot::Range xr = vmax > vmin ? fk::plot::padded({vmin, vmax}, 0.06, log)
                                         : fk::plot::Range{vmin - half, vmin + half};
  const std::vector<std::string> metrics = metric_names(rows);
  const int n = std::max<int>(1, static_cast<int>(metrics.size())), cols = std::min(n, kCols),
            nrows = (n + kCols - 1) / kCols;
  const double cell_w = fk::plot::kLeftMargin + kW + kGap,
               cell_h = kHead + kH + fk::plot::kBottomMargin;
  fk::plot::Figure f(static_cast<int>(cols * cell_w + 10), static_cast<int>(kTop + nrows * cell_h));
  f.text({16, 28}, title,
         {16, {0.05, 0.05, 0.05}, fk::plot::Align::Start, fk::plot::Align::End, true});
  for (size_t i = 0; i < metrics.size(); ++i) {
    const std::string& m = metrics[i];
    Curve c = curve(labels, rows, m, level);
    // Intervals clipped to the values the metric can take (an MSE's reached below 0).
    const MetricBounds b = metric_bounds(m);
    for (size_t k = 0; k < c.lo.size(); ++k) {
      c.lo[k] = std::max(c.lo[k], b.lo);
      c.hi[k] = std::min(c.hi[k], b.hi);
    }
    std::vector<double> all = c.lo;
    all.insert(all.end(), c.hi.begin(), c.hi.end());
    const fk::plot::Range yr = fk::plot::padded(fk::plot::value_range({&all}), 0.08);
    fk::plot::AxesSpec a;
    a.box = {(i % kCols) * cell_w + fk::plot::kLeftMargin, kTop + (i / kCols) * cell_h + kHead, kW,
             kH};
    a.x = {xr.lo, xr.hi, log, axis};
    a.y = {yr.lo, yr.hi, false, metric_axis_label(m)};
    a.title = m + direction_note(m);
    a.grid = true;
    const fk::plot::Rgb colour = fk::plot::series_colour(0);
    std::vector<fk::plot::Series> series{
        {"", values, c.mean, colour, 1.6},
        {"mean, 95 % interval", values, c.mean, colour, 3.5, 0, true}};
    // Each interval a two-point series: over the grid and under the legend
    // (drawn after it, they ran through the legend's box).
    for (size_t k = 0; k < values.size(); ++k)
      if (std::isfinite(c.lo[k]) && std::isfinite(c.hi[k]))
        series.push_back({"", {values[k], values[k]}, {c.lo[k], c.hi[k]}, colour, 1.5});
    fk::plot::draw_lines(f, a, series);
  }
  f.save_png(path);
}

}  // namespace nefi::bench
