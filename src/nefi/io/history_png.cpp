#include "nefi/io/history_png.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "fk/error.h"
#include "fk/plot/axes.h"

namespace nefi {
namespace {

constexpr double kW = 560, kH = 250, kGap = 30, kHead = 34, kTop = 40, kMarkerBand = 20;

fk::plot::Range positive_range(const std::vector<fk::plot::Series>& s) {
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const auto& x : s)
    for (double v : x.y)
      if (std::isfinite(v) && v > 0) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
  if (!(hi > 0)) return {0.1, 10};
  if (hi <= lo) return {lo / 2, hi * 2};
  fk::plot::Range r = fk::plot::padded({lo, hi}, 0.04, true);
  // Headroom for the stage markers' labels along the top edge (a curve's
  // start there was hidden under them).
  r.hi *= std::pow(r.hi / r.lo, kMarkerBand / (kH - kMarkerBand));
  return r;
}

// Marks where the stage column changes, with the stage's name.
void stage_markers(fk::plot::Figure& f, const fk::plot::AxesSpec& a, const Result& r,
                   const std::vector<double>& step, const std::vector<double>& stage) {
  for (size_t i = 0; i < stage.size(); ++i) {
    if (i > 0 && stage[i] == stage[i - 1]) continue;
    const size_t s = static_cast<size_t>(std::max(0.0, stage[i]));
    std::string name = "stage " + std::to_string(s);
    if (s < r.stages.size()) {
      name = r.stages[s].name;
      if (r.stages[s].shape.size() > 0) name.append(1, ' ').append(r.stages[s].shape.str());
    }
    fk::plot::draw_marker(f, a, i == 0 ? a.x.lo : step[i] - 0.5, name);
  }
}

void method_row(fk::plot::Figure& f, double y, const HistoryPlot& run) {
  const History& h = run.result->history;
  const std::vector<double> step = h.column("global_step"), stage = h.column("stage");
  const auto first_loss = std::find(h.columns.begin(), h.columns.end(), "total");
  std::vector<fk::plot::Series> losses;
  std::string unplotted;  // terms below 0 (a log-likelihood): no line, so named in the title
  int colour = 0;
  const std::vector<double> data_loss = h.column("data_loss");
  for (auto it = first_loss; it != h.columns.end(); ++it) {
    const std::vector<double> y = h.column(*it);
    // A term that is 0 throughout (a penalty switched off) has no line on a
    // log axis, and one equal to the data term (its only part) would draw
    // the same line twice: neither gets a legend entry.
    const bool drawn = std::any_of(y.begin(), y.end(), [](double v) { return v > 0; });
    if (!drawn && std::any_of(y.begin(), y.end(), [](double v) { return v < 0; }))
      unplotted += (unplotted.empty() ? "" : ", ") + *it;
    if (*it != "total" && (!drawn || (*it != "data_loss" && y == data_loss))) continue;
    fk::plot::Series s{*it, step, y, fk::plot::series_colour(colour++), 1.6};
    if (*it == "total") s = {"total", step, h.column(*it), {0.1, 0.1, 0.1}, 2.4};
    if (*it == "data_loss") s.dash = 6;
    losses.push_back(s);
  }
  // The total and the data term on top of the terms they sum.
  if (losses.size() > 2) std::rotate(losses.begin(), losses.begin() + 2, losses.end());
  const double x1 = step.empty() ? 1 : std::max(step.back(), step.front() + 1);
  const fk::plot::Range lr = positive_range(losses);
  fk::plot::AxesSpec a{{fk::plot::kLeftMargin, y + kHead, kW, kH},
                       {step.empty() ? 0 : step.front(), x1, false, "global step", true},
                       {lr.lo, lr.hi, true, "loss"},
                       run.method + ": total and its terms (each unweighted)" +
                           (unplotted.empty() ? "" : "; below 0, not drawn: " + unplotted)};
  a.grid = true;
  a.legend_top = kMarkerBand + 6;  // below the stage markers' labels (the first sat on it)
  fk::plot::draw_lines(f, a, losses);
  stage_markers(f, a, *run.result, step, stage);
  std::vector<fk::plot::Series> rate{
      {"learning rate", step, h.column("lr"), fk::plot::series_colour(0)}};
  const fk::plot::Range rr = positive_range(rate);
  fk::plot::AxesSpec b = a;
  b.box = {2 * fk::plot::kLeftMargin + kW + kGap, y + kHead, kW * 0.6, kH};
  b.y = fk::plot::Axis{rr.lo, rr.hi, true, "learning rate"};
  b.title = run.method + ": learning rate";
  b.grid = true;
  fk::plot::draw_lines(f, b, rate);
  stage_markers(f, b, *run.result, step, stage);
}

}  // namespace

void write_history_png(const std::string& path, const std::string& title,
                       const std::vector<HistoryPlot>& runs) {
  std::vector<const HistoryPlot*> with;
  for (const HistoryPlot& r : runs)
    if (r.result && !r.result->history.rows.empty()) with.push_back(&r);
  FK_CHECK(!with.empty(), "nefi::write_history_png", "a run with history rows", "none");
  const double row = kHead + kH + fk::plot::kBottomMargin;
  fk::plot::Figure f(static_cast<int>(2 * fk::plot::kLeftMargin + kW * 1.6 + kGap + 20),
                     static_cast<int>(kTop + row * with.size()));
  f.text({16, 26}, title,
         {16, {0.05, 0.05, 0.05}, fk::plot::Align::Start, fk::plot::Align::End, true});
  for (size_t i = 0; i < with.size(); ++i) method_row(f, kTop + i * row, *with[i]);
  f.save_png(path);
}

}  // namespace nefi
