#include "nefi/byop/fit_output.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/io/npy.h"
#include "fk/plot/axes.h"
#include "nefi/byop/quick_report.h"
#include "nefi/diagnostics/data_fit.h"
#include "nefi/io/history_png.h"

namespace nefi {
namespace {

constexpr double kTileW = 330, kTileH = 260, kGap = 36;

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  FK_CHECK(f.good(), "nefi fit output", "a writable file", path);
}

// A field as a tile: a line (1-D), an image (2-D) or the middle slice of the
// first axis (3-D).
void draw_field(fk::plot::Figure& f, const fk::plot::Box& box, const std::string& title,
                const fk::Tensor& t) {
  const fk::Dims& s = t.shape();
  std::vector<double> v = t.to(fk::DType::F64).contiguous().to_vector<double>();
  fk::plot::AxesSpec a;
  a.box = {box.x + fk::plot::kLeftMargin, box.y + fk::plot::kTitleMargin,
           box.w - fk::plot::kLeftMargin - 70,
           box.h - fk::plot::kTitleMargin - fk::plot::kBottomMargin};
  a.title = title;
  if (s.size() <= 1 || (s.size() == 2 && s[0] <= 2)) {  // lines: a vector, or stacked parts
    const int64_t n = s.size() == 0 ? 1 : s[s.size() - 1], rows = t.numel() / n;
    std::vector<fk::plot::Series> lines;
    for (int64_t r = 0; r < rows; ++r) {
      fk::plot::Series ln;
      ln.colour = fk::plot::series_colour(static_cast<int>(r));
      for (int64_t i = 0; i < n; ++i) {
        ln.x.push_back(static_cast<double>(i));
        ln.y.push_back(v[r * n + i]);
      }
      lines.push_back(ln);
    }
    a.box.w += 70;
    a.x = {0, static_cast<double>(std::max<int64_t>(1, n - 1)), false, "cell"};
    std::vector<const std::vector<double>*> ys;
    for (const auto& ln : lines) ys.push_back(&ln.y);
    const fk::plot::Range r = fk::plot::padded(fk::plot::value_range(ys), 0.05);
    a.y = {r.lo, r.hi, false, "value"};
    a.grid = true;
    fk::plot::draw_frame(f, a);
    fk::plot::draw_lines(f, a, lines);
    return;
  }
  int64_t rows = s[s.size() - 2], cols = s[s.size() - 1];
  if (s.size() >= 3) {  // the middle slice along the leading axes
    const int64_t per = rows * cols, mid = t.numel() / per / 2;
    v = std::vector<double>(v.begin() + mid * per, v.begin() + (mid + 1) * per);
    a.title += " (middle slice)";
  }
  fk::plot::ImageData img;
  img.rows = static_cast<int>(rows);
  img.cols = static_cast<int>(cols);
  img.values = v;
  const fk::plot::Range r = fk::plot::value_range({&img.values});
  img.lo = r.lo;
  img.hi = r.hi;
  a.x = {0, static_cast<double>(cols), false, "axis 1"};
  a.y = {0, static_cast<double>(rows), false, "axis 0"};
  a.y_down = true;
  fk::plot::draw_image(f, a, img);
  fk::plot::draw_frame(f, a);
  fk::plot::draw_colorbar(f, {a.box.x + a.box.w + 12, a.box.y, 14, a.box.h}, img.lo, img.hi,
                          img.map, "");
}

}  // namespace

void write_fit_png(const std::string& path, const AutoProblem& ap, const Result& r) {
  const fk::Tensor& data = ap.problem.measurement.data;
  const fk::Tensor pred = r.prediction.to(fk::DType::F64).contiguous();
  // An image-shaped measurement gets its own tile and the residual's;
  // anything else is drawn flattened, the data as dots under the prediction,
  // then the residual in noise units.
  const bool image =
      data.dim() >= 2 && data.size(data.dim() - 1) >= 3 && data.size(data.dim() - 2) >= 3;
  const size_t tiles = ap.fields.size() + 2;
  fk::plot::Figure f(static_cast<int>(tiles * (kTileW + kGap) + kGap),
                     static_cast<int>(kTileH + 2 * kGap));
  double x = kGap;
  for (const std::string& name : ap.fields) {
    draw_field(f, {x, kGap, kTileW, kTileH}, "field " + name, r.fields.at(name));
    x += kTileW + kGap;
  }
  if (image) {
    draw_field(f, {x, kGap, kTileW, kTileH}, "data", data);
    x += kTileW + kGap;
    std::vector<double> res = pred.to_vector<double>();
    const std::vector<double> y = data.to_vector<double>();
    for (size_t i = 0; i < res.size(); ++i) res[i] -= y[i];
    draw_field(f, {x, kGap, kTileW, kTileH}, "prediction - data",
               fk::from_vector(res, data.shape()));
    f.save_png(path);
    return;
  }
  const std::vector<double> y = data.to_vector<double>();
  const std::vector<double> p = pred.to_vector<double>();
  fk::plot::Series dots{"data", {}, y, fk::plot::series_colour(1), 1.0, 0, true};
  fk::plot::Series line{"prediction", {}, p, fk::plot::series_colour(0)};
  for (size_t i = 0; i < y.size(); ++i) dots.x.push_back(static_cast<double>(i));
  line.x = dots.x;
  fk::plot::AxesSpec a;
  a.box = {x + fk::plot::kLeftMargin, kGap + fk::plot::kTitleMargin, kTileW - fk::plot::kLeftMargin,
           kTileH - fk::plot::kTitleMargin - fk::plot::kBottomMargin};
  a.title = "data and prediction";
  a.x = {0, static_cast<double>(std::max<size_t>(1, y.size() - 1)), false,
         "measurement (flattened)"};
  const fk::plot::Range rg = fk::plot::padded(fk::plot::value_range({&y, &p}), 0.05);
  a.y = {rg.lo, rg.hi, false, "value"};
  a.grid = true;
  fk::plot::draw_frame(f, a);
  fk::plot::draw_lines(f, a, {dots, line});
  // (prediction - data) / sigma at the observed cells: a fit at the noise
  // floor scatters within the +-1 band.
  const bool scaled = ap.noise_std > 0;
  const double sigma = scaled ? ap.noise_std : 1.0;
  const fk::Tensor& mask = ap.problem.measurement.mask;
  const std::vector<double> w =
      mask.defined() ? mask.to_vector<double>() : std::vector<double>(y.size(), 1.0);
  fk::plot::Series res{"", {}, {}, fk::plot::series_colour(1), 1.0, 0, true};
  for (size_t i = 0; i < y.size(); ++i)
    if (w[i] > 0) {
      res.x.push_back(static_cast<double>(i));
      res.y.push_back((p[i] - y[i]) / sigma);
    }
  const double last = a.x.hi;
  const fk::plot::Rgb grey{0.4, 0.4, 0.4};
  fk::plot::Series up{scaled ? "+-1 sigma" : "", {0, last}, {1, 1}, grey, 1.2, 5};
  fk::plot::Series down{"", {0, last}, {-1, -1}, grey, 1.2, 5};
  fk::plot::AxesSpec b = a;
  b.box.x += kTileW + kGap;
  b.title = scaled ? "residual / sigma" : "residual (prediction - data)";
  const fk::plot::Range rr = fk::plot::padded(fk::plot::symmetric_range({&res.y}), 0.05);
  b.y = {std::min(rr.lo, scaled ? -1.5 : rr.lo), std::max(rr.hi, scaled ? 1.5 : rr.hi), false,
         scaled ? "(prediction - data) / sigma" : "prediction - data"};
  fk::plot::draw_frame(f, b);
  std::vector<fk::plot::Series> drawn{res};
  if (scaled) drawn.insert(drawn.end(), {up, down});
  fk::plot::draw_lines(f, b, drawn);
  f.save_png(path);
}

void clear_fit_outputs(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path d(dir);
  std::vector<std::string> files{"prediction.npy", "report.md", "fit.json",    "history.csv",
                                 "history.png",    "fit.png",   "autotune.md", "autotune.json"};
  std::ifstream f(d / "fit.json");
  if (!f.good()) return;  // no earlier fit here: nothing of ours to clear
  try {
    const nlohmann::json earlier = nlohmann::json::parse(f);
    for (const auto& name : earlier.at("fields"))
      if (const std::string n = name.get<std::string>();
          !n.empty() && n.find('/') == std::string::npos && n.find("..") == std::string::npos)
        files.push_back(n + ".npy");
  } catch (const std::exception&) {
    return;  // a fit.json that is not one of ours: leave the folder be
  }
  f.close();
  std::error_code ec;
  for (const std::string& name : files) fs::remove(d / name, ec);
  for (const char* sub : {"diagnostics", "refine"}) fs::remove_all(d / sub, ec);
}

void write_fit(const std::string& dir, const AutoProblem& ap, const Result& r) {
  std::filesystem::create_directories(dir);
  for (const std::string& name : ap.fields)
    fk::write_npy(dir + "/" + name + ".npy", r.fields.at(name).to(fk::DType::F64).contiguous());
  fk::write_npy(dir + "/prediction.npy", r.prediction.to(fk::DType::F64).contiguous());
  write_text(dir + "/report.md", quick_report(ap, r));
  write_text(dir + "/history.csv", r.history.csv());
  nlohmann::json j;
  j["fields"] = ap.fields;
  for (const auto& d : ap.decisions) j["decisions"][d.key] = {{"value", d.value}, {"why", d.why}};
  if (const auto fit = diagnostics::data_fit(ap.problem.measurement, r.prediction)) {
    j["data_fit"]["rmse"] = fit->rmse;
    j["data_fit"]["data_psnr"] = fit->psnr_db;
    j["data_fit"]["discrepancy_ratio"] =
        fit->rmse_over_sigma ? nlohmann::json(*fit->rmse_over_sigma) : nlohmann::json(nullptr);
  }
  j["noise_std"] = ap.noise_std;
  j["noise_estimated"] = ap.noise_estimated;
  j["n_parameters"] = r.n_parameters;
  j["total_steps"] = r.total_steps();
  j["total_s"] = r.total_s;
  for (const auto& s : r.stages)
    j["stages"].push_back({{"name", s.name},
                           {"steps", s.steps},
                           {"stop", s.stop},
                           {"seconds", s.seconds},
                           {"final_data_loss", s.final_data_loss}});
  write_text(dir + "/fit.json", j.dump(2) + "\n");
  if (!r.history.rows.empty()) write_history_png(dir + "/history.png", "nefi fit", {{"fit", &r}});
  write_fit_png(dir + "/fit.png", ap, r);
}

void write_refine(const std::string& dir, const RefineOptions& o, const RefineReport& r) {
  std::filesystem::create_directories(dir);
  fk::write_npy(dir + "/refined.npy", r.refined.to(fk::DType::F64).contiguous());
  fk::write_npy(dir + "/x.npy", r.field.to(fk::DType::F64).contiguous());
  nlohmann::json j;
  j["mode"] = o.mode;
  j["settings"] = {{"levels", o.levels},
                   {"levels_by", o.levels_by},
                   {"steps", o.steps},
                   {"lr", o.lr},
                   {"chi_factor", o.chi_factor},
                   {"floor", std::isfinite(o.floor) ? nlohmann::json(o.floor) : nullptr}};
  j["accepted"] = r.accepted;
  j["reason"] = r.reason;
  j["refusal"] = r.refusal;
  j["chi_smooth"] = r.chi_smooth;
  j["chi_refined"] = r.chi_refined;
  j["chi_sigma"] = r.chi_sigma;
  j["levels"] = r.levels;
  j["start_levels"] = r.start_levels;
  j["thresholds"] = r.thresholds;
  j["chi_by_levels"] = r.chi_by_levels;
  j["in_band"] = r.in_band;
  j["support_kept"] = r.support_kept;
  write_text(dir + "/refine.json", j.dump(2) + "\n");
}

}  // namespace nefi
