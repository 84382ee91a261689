#include "learning_curve.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "fk/error.h"
#include "fk/plot/axes.h"

namespace minkowski_app {
namespace {

namespace plot = fk::plot;

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream s(line);
  for (std::string item; std::getline(s, item, ',');) out.push_back(item);
  return out;
}

double number(const std::string& text, const std::string& where) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  FK_CHECK(used > 0 && used == text.size(), where, "a number", "'" + text + "'");
  return v;
}

// Loss on a linear axis from 0 to a little above its largest finite value.
plot::Range loss_range(const std::vector<double>& v) {
  double hi = 0;
  for (double x : v) {
    if (std::isfinite(x)) hi = std::max(hi, x);
  }
  return {0, hi > 0 ? 1.08 * hi : 1};
}

}  // namespace

const std::vector<double>& CsvTable::column(const std::string& name) const {
  const auto it = std::find(names.begin(), names.end(), name);
  FK_CHECK(
      it != names.end(), "learning curves", "a column '" + name + "'", "columns " + [&] {
        std::string all;
        for (const auto& n : names) all += (all.empty() ? "" : ",") + n;
        return all;
      }());
  return columns[static_cast<size_t>(it - names.begin())];
}

CsvTable read_csv(const std::string& path) {
  std::ifstream in(path);
  FK_CHECK(in.good(), "read_csv", "a readable file", "'" + path + "'");
  CsvTable t;
  std::string line;
  FK_CHECK(static_cast<bool>(std::getline(in, line)), "read_csv " + path, "a header row",
           "an empty file");
  t.names = split(line);
  t.columns.resize(t.names.size());
  for (int row = 2; std::getline(in, line); ++row) {
    if (line.empty()) continue;
    const auto cells = split(line);
    const std::string where = "read_csv " + path + " line " + std::to_string(row);
    FK_CHECK(cells.size() == t.names.size(), where, fk::to_text(t.names.size()) + " values",
             fk::to_text(cells.size()));
    for (size_t c = 0; c < cells.size(); ++c) t.columns[c].push_back(number(cells[c], where));
  }
  return t;
}

void write_learning_curves(const std::string& log_csv, const std::string& png,
                           const std::string& title) {
  const CsvTable t = read_csv(log_csv);
  const auto& epoch = t.column("epoch");
  FK_CHECK(!epoch.empty(), "learning curves " + log_csv, "at least one epoch row", "none");
  constexpr double kW = 420, kH = 260, kGap = 40, kTop = 44;
  // Whole epochs, half an epoch of room either side: the first and last
  // points clear of the frame (one epoch's point sits in the middle).
  const double x0 = epoch.front() - 0.5, x1 = epoch.back() + 0.5;
  plot::Figure f(static_cast<int>(2 * (plot::kLeftMargin + kW) + kGap + 20),
                 static_cast<int>(kTop + plot::kTitleMargin + kH + plot::kBottomMargin));
  f.text({16, 28}, title, {16, {0.05, 0.05, 0.05}, plot::Align::Start, plot::Align::End, true});
  const double y = kTop + plot::kTitleMargin;
  const plot::Range lr = loss_range(t.column("loss"));
  plot::AxesSpec loss{{plot::kLeftMargin, y, kW, kH},
                      {x0, x1, false, "epoch", true},
                      {lr.lo, lr.hi, false, "loss"},
                      "training loss (mean per epoch)"};
  loss.grid = true;
  // Each series as a line and a dot per epoch (a single epoch draws no line).
  auto with_dots = [](std::vector<plot::Series> lines) {
    const size_t n = lines.size();
    for (size_t i = 0; i < n; ++i) {
      plot::Series d = lines[i];
      d.name.clear();
      d.points = true;
      d.dash = 0;
      d.width = 3;  // a dot's radius
      lines.push_back(d);
    }
    return lines;
  };
  plot::draw_lines(f, loss, with_dots({{"loss", epoch, t.column("loss"), {0.1, 0.1, 0.1}, 2.2}}));
  plot::AxesSpec score = loss;
  score.box.x = 2 * plot::kLeftMargin + kW + kGap;
  score.y = {0, 1, false, "held-out score"};
  score.title = "held-out mIoU and accuracy";
  plot::draw_lines(
      f, score,
      with_dots({{"mIoU", epoch, t.column("val_miou"), plot::series_colour(0), 2.2},
                 {"accuracy", epoch, t.column("val_accuracy"), plot::series_colour(1), 1.8, 6}}),
      true);
  f.save_png(png);
}

}  // namespace minkowski_app
