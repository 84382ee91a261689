#include "nefi/bench/summary_png.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "fk/plot/axes.h"
#include "nefi/bench/metric_axes.h"
#include "nefi/bench/stats.h"
#include "nefi/bench/tables.h"

namespace nefi::bench {
namespace {

constexpr double kW = 300, kH = 220, kGap = 34, kHead = 34, kTop = 44;
constexpr int kCols = 3;

double value_of(const Row& r, const std::string& metric) {
  if (metric == "time_s") return r.error.empty() ? r.time_s : NAN;
  auto it = r.metrics.find(metric);
  return it == r.metrics.end() ? NAN : it->second;
}

std::vector<fk::plot::Interval> intervals(const std::vector<std::string>& methods,
                                          const std::vector<Row>& rows, const std::string& metric,
                                          double level) {
  std::vector<fk::plot::Interval> out;
  for (const std::string& m : methods) {
    fk::plot::Interval c{m, {}, NAN, NAN};
    std::vector<const Row*> mine;
    for (const Row& r : rows)
      if (r.method == m) {
        c.values.push_back(value_of(r, metric));
        mine.push_back(&r);
      }
    const MeanCI ci = scene_mean_ci(c.values, scenes_of(mine), level);
    c.mean = ci.mean;
    c.half = ci.half;
    out.push_back(c);
  }
  return out;
}

void clip_intervals(std::vector<fk::plot::Interval>& cats, const MetricBounds& b) {
  for (auto& c : cats) {
    if (!std::isfinite(c.half)) continue;
    const double lo = std::max(c.mean - c.half, b.lo), hi = std::min(c.mean + c.half, b.hi);
    c.lo = lo;
    c.hi = hi;
  }
}

std::vector<double> drawn_values(const std::vector<fk::plot::Interval>& cats) {
  std::vector<double> all;
  for (const auto& c : cats) {
    all.insert(all.end(), c.values.begin(), c.values.end());
    if (std::isfinite(c.half)) {
      all.push_back(c.lo);
      all.push_back(c.hi);
    }
  }
  return all;
}

// A metric worth a panel: one a method reports (with a single method, every
// one), but not a property of the data: equal for every method of each unit
// and varying between units (the blurred input's PSNR); a tie that holds
// everywhere (every method's F1 of 1) stays.
bool compares_methods(const std::string& metric, const std::vector<Row>& rows) {
  std::set<std::string> methods;
  std::map<int64_t, double> first;  // per unit, its first finite value
  bool within = false, across = false;
  double any = NAN;
  for (const Row& r : rows) {
    const double v = value_of(r, metric);
    if (!std::isfinite(v)) continue;
    methods.insert(r.method);
    const auto [it, fresh] = first.emplace(r.unit, v);
    within = within || (!fresh && it->second != v);
    if (std::isnan(any)) any = v;
    across = across || v != any;
  }
  std::set<std::string> all;
  for (const Row& r : rows) all.insert(r.method);
  if (methods.empty()) return false;
  if (all.size() == 1) return true;
  // A method's own diagnostic (admm_iterations): no other method has it.
  if (methods.size() < 2) return false;
  return within || !across;
}

}  // namespace

void write_summary_png(const std::string& path, const Protocol& p, const std::vector<Row>& rows,
                       double level) {
  std::vector<std::string> methods = p.methods;
  for (const Row& r : rows)
    if (std::find(methods.begin(), methods.end(), r.method) == methods.end())
      methods.push_back(r.method);
  std::vector<std::string> metrics;
  for (const std::string& m : metric_names(rows))
    if (compares_methods(m, rows)) metrics.push_back(m);
  metrics.push_back("time_s");
  const int n = static_cast<int>(metrics.size()), cols = std::min(n, kCols),
            nrows = (n + kCols - 1) / kCols;
  const double cell_w = fk::plot::kLeftMargin + kW + kGap,
               cell_h = kHead + kH + fk::plot::kBottomMargin;
  const std::string title = fmt::format("{}: {} runs, mean and {:g} % interval per method",
                                        p.instance, rows.size(), 100 * level);
  // Wide enough for the title too (one panel is narrower than it).
  const double title_w = fk::plot::Figure(1, 1).text_width(title, 16, true) + 32;
  fk::plot::Figure f(static_cast<int>(std::max(cols * cell_w + 10, title_w)),
                     static_cast<int>(kTop + nrows * cell_h));
  f.text({16, 28}, title,
         {16, {0.05, 0.05, 0.05}, fk::plot::Align::Start, fk::plot::Align::End, true});
  for (int i = 0; i < n; ++i) {
    const std::string& m = metrics[i];
    std::vector<fk::plot::Interval> cats = intervals(methods, rows, m, level);
    const MetricBounds b = metric_bounds(m);
    clip_intervals(cats, b);
    const std::vector<double> drawn = drawn_values(cats);
    // A quantity >= 0 whose values spread over more than two decades (one
    // method's MSE far above the rest): a log axis, so the rest stay apart.
    double lo = INFINITY, hi = 0;
    for (const auto& c : cats)
      for (double v : c.values)
        if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    const bool log = b.lo == 0 && std::isinf(b.hi) && lo > 0 && hi / lo > 100;
    fk::plot::Range r = fk::plot::padded(fk::plot::value_range({&drawn}), 0.08);
    if (log) {  // the values' decades; a bar reaching 0 ends at the frame
      r = fk::plot::padded({lo, hi}, 0.08, true);
      for (auto& c : cats)
        if (std::isfinite(c.half)) c.lo = std::max(c.lo, r.lo);
    }
    fk::plot::AxesSpec a;
    a.box = {(i % kCols) * cell_w + fk::plot::kLeftMargin, kTop + (i / kCols) * cell_h + kHead, kW,
             kH};
    a.x = {-0.5, static_cast<double>(methods.size()) - 0.5};
    a.y = {r.lo, r.hi, log, metric_axis_label(m)};
    a.title = m == "time_s" ? "time_s (lower is better)" : m + direction_note(m);
    a.x_categories = methods;
    a.grid = true;
    fk::plot::draw_intervals(f, a, cats);
  }
  f.save_png(path);
}

}  // namespace nefi::bench
