#include "nefi/bench/summary_png.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "fk/plot/axes.h"
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
    for (const Row& r : rows)
      if (r.method == m) c.values.push_back(value_of(r, metric));
    const MeanCI ci = mean_ci(c.values, level);
    c.mean = ci.mean;
    c.half = ci.half;
    out.push_back(c);
  }
  return out;
}

fk::plot::Range range_of(const std::vector<fk::plot::Interval>& cats) {
  std::vector<double> all;
  for (const auto& c : cats) {
    all.insert(all.end(), c.values.begin(), c.values.end());
    if (std::isfinite(c.half)) {
      all.push_back(c.mean - c.half);
      all.push_back(c.mean + c.half);
    }
  }
  return fk::plot::padded(fk::plot::value_range({&all}), 0.08);
}

}  // namespace

void write_summary_png(const std::string& path, const Protocol& p, const std::vector<Row>& rows,
                       double level) {
  std::vector<std::string> methods = p.methods;
  for (const Row& r : rows)
    if (std::find(methods.begin(), methods.end(), r.method) == methods.end())
      methods.push_back(r.method);
  std::vector<std::string> metrics = metric_names(rows);
  metrics.push_back("time_s");
  const int n = static_cast<int>(metrics.size()), cols = std::min(n, kCols),
            nrows = (n + kCols - 1) / kCols;
  const double cell_w = fk::plot::kLeftMargin + kW + kGap,
               cell_h = kHead + kH + fk::plot::kBottomMargin;
  fk::plot::Figure f(static_cast<int>(cols * cell_w + 10), static_cast<int>(kTop + nrows * cell_h));
  f.text({16, 28},
         fmt::format("{}: {} runs, mean and {:g} % interval per method", p.instance, rows.size(),
                     100 * level),
         {16, {0.05, 0.05, 0.05}, fk::plot::Align::Start, fk::plot::Align::End, true});
  for (int i = 0; i < n; ++i) {
    const std::string& m = metrics[i];
    const std::vector<fk::plot::Interval> cats = intervals(methods, rows, m, level);
    const fk::plot::Range r = range_of(cats);
    fk::plot::AxesSpec a;
    a.box = {(i % kCols) * cell_w + fk::plot::kLeftMargin, kTop + (i / kCols) * cell_h + kHead, kW,
             kH};
    a.x = {-0.5, static_cast<double>(methods.size()) - 0.5};
    a.y = {r.lo, r.hi, false, m == "time_s" ? "wall time (s)" : m};
    a.title = m == "time_s" ? "time_s (lower is better)" : m + direction_note(m);
    a.x_categories = methods;
    a.grid = true;
    fk::plot::draw_intervals(f, a, cats);
  }
  f.save_png(path);
}

}  // namespace nefi::bench
