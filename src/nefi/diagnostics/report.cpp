#include "nefi/diagnostics/report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/io/npy.h"
#include "fk/io/replace_file.h"
#include "fk/plot/axes.h"
#include "nefi/diagnostics/data_fit.h"

namespace nefi::diagnostics {
namespace {

// The fit's own report (report.md) says the same of the same chi.
std::string misfit_reading(const Diagnostics& d) {
  if (d.noise_std == 0) return "noise-free data: no noise level to compare with";
  if (!std::isfinite(d.misfit_ratio)) return "noise level unknown";
  return misfit_verdict(d.misfit_ratio, d.noise_estimated);
}

// "a, b, c" of values in %.4e.
std::string listed(const std::vector<double>& v) {
  std::string s;
  for (double x : v) s += fmt::format("{}{:.4e}", s.empty() ? "" : ", ", x);
  return s;
}

nlohmann::json number(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}

// The sensitivity map of a field of 2 or more dimensions as an image: 2-D
// itself, beyond the middle slice along the first axis.
fk::plot::ImageData sensitivity_image(const Diagnostics& d) {
  const fk::Dims& s = d.field_shape;
  fk::plot::ImageData img;
  const std::vector<double>& v = d.probes.sensitivity;
  img.rows = static_cast<int>(s[s.size() - 2]);
  img.cols = static_cast<int>(s[s.size() - 1]);
  const int64_t plane = static_cast<int64_t>(img.rows) * img.cols;
  const int64_t first = s.size() > 2 ? (s[0] / 2) * (static_cast<int64_t>(v.size()) / s[0]) : 0;
  img.values.assign(v.begin() + first, v.begin() + first + plane);
  const fk::plot::Range r = fk::plot::value_range({&img.values});
  img.lo = r.lo;
  img.hi = r.hi;
  img.map = fk::plot::Colormap::Magma;
  return img;
}

std::string sensitivity_title(const Diagnostics& d) {
  // A probe estimate is noisy at the cell scale: the title says so.
  return d.probes.exact
             ? std::string("sensitivity diag(J'J), exact")
             : fmt::format("sensitivity diag(J'J), {}-probe estimate (noisy)", d.probes.probes);
}

}  // namespace

std::string diagnostics_md(const Diagnostics& d) {
  const auto& sv = d.spectrum.singular_values;
  std::string s = fmt::format(
      "# Diagnostics: {} ({}, seed {}) at {}\n\n"
      "Forward operator linearized at the field: {} cells in, {} data out; J v {}, J^T u by "
      "the operator's adjoint{}.\n\n## Singular values (Golub-Kahan-Lanczos, {} steps{})\n\n"
      "| i | sigma_i | sigma_i / sigma_1 |\n|---|---|---|\n",
      d.instance, d.method, d.seed, d.at, d.field_shape.str(), d.data_shape.str(), d.jvp_mode,
      d.options.device.is_cuda() ? "; the products on " + d.options.device.str() : std::string(),
      d.spectrum.iterations, d.spectrum.invariant ? ", invariant subspace: exact" : "");
  for (size_t i = 0; i < sv.size(); ++i)
    s += fmt::format("| {} | {:.4e} | {:.3e} |\n", i + 1, sv[i], sv[0] > 0 ? sv[i] / sv[0] : 0.0);
  s += fmt::format("\nCondition estimate sigma_1 / sigma_{}: {:.3e}.\n\n", sv.size(), d.condition);
  s += fmt::format(
      "## Probes (sensitivity: {}; null space: {} Gaussian)\n\n"
      "- Sensitivity diag(J^T J): max {:.3e}, mean {:.3e}; blind cells (< 1e-6 of the max): "
      "{:.1f} %\n"
      "- Null-space probes: mean |J v|^2 / (sigma_1^2 |v|^2) = {:.3e}; directions barely seen "
      "(|J v| < 1e-2 sigma_1 |v|): {:.1f} %\n\n",
      d.probes.exact ? std::string("every column, exact")
                     : fmt::format("{} Rademacher", d.probes.probes),
      d.probes.probes, *std::max_element(d.probes.sensitivity.begin(), d.probes.sensitivity.end()),
      [&] {
        double m = 0;
        for (double x : d.probes.sensitivity) m += x / d.probes.sensitivity.size();
        return m;
      }(),
      100 * d.probes.blind_fraction, d.probes.visible_mean, 100 * d.probes.dark_fraction);
  s += fmt::format(
      "## Gauges\n\nThe constant direction (every cell alike) is seen at {:.3e} of sigma_1: "
      "{}.\n\n",
      d.constant_visibility,
      d.constant_visibility < kGaugeVisibility
          ? "a gauge, the data do not fix the field's mean (only the prior can: zero_mean, a "
            "known support or a known value)"
      : d.constant_visibility < 1e-2 ? "barely seen"
                                     : "seen");
  if (d.hessian) {
    const HessianSpectrum& h = *d.hessian;
    s += fmt::format(
        "## Loss Hessian in the field's {} parameters (Lanczos, {} steps on finite-difference "
        "products)\n\n| | eigenvalues |\n|---|---|\n| largest | {} |\n| smallest | {} |\n\n"
        "Condition largest / smallest: {}.\n\n",
        h.parameters, h.eigenvalues.iterations, listed(h.eigenvalues.largest),
        listed(h.eigenvalues.smallest),
        std::isfinite(h.condition)
            ? fmt::format("{:.3e}", h.condition)
            : std::string("none (the smallest is <= 0 or within the products' error of 0)"));
  }
  s += "## Data fit\n\n";
  // Noise-free data (sigma 0) have no ratio: "= nan" was printed.
  s += d.noise_std > 0
           ? fmt::format("RMS residual {:.4e}, noise sigma {:.4e}: RMSE / sigma = {:.3f} ({}).\n",
                         d.residual_rms, d.noise_std, d.misfit_ratio, misfit_reading(d))
           : fmt::format("RMS residual {:.4e} ({}).\n", d.residual_rms, misfit_reading(d));
  return s;
}

std::string diagnostics_json(const Diagnostics& d) {
  nlohmann::json j;
  j["instance"] = d.instance;
  j["method"] = d.method;
  j["seed"] = d.seed;
  j["at"] = d.at;
  j["settings"] = {{"probes", d.options.probes}, {"k", d.options.k}, {"n_iter", d.options.n_iter}};
  if (d.hessian) {
    j["settings"]["hessian_k"] = d.options.hessian_k;
    j["settings"]["hessian_iter"] = d.options.hessian_iter;
  }
  j["jvp_mode"] = d.jvp_mode;
  j["device"] = d.options.device.str();  // where the operator's products ran
  j["field_shape"] = d.field_shape.vec();
  j["data_shape"] = d.data_shape.vec();
  j["singular_values"] = d.spectrum.singular_values;
  j["lanczos_steps"] = d.spectrum.iterations;
  j["invariant_subspace"] = d.spectrum.invariant;
  j["condition"] = number(d.condition);
  const auto& sens = d.probes.sensitivity;
  j["sensitivity"] = {{"exact", d.probes.exact},
                      {"max", *std::max_element(sens.begin(), sens.end())},
                      {"min", *std::min_element(sens.begin(), sens.end())},
                      {"blind_fraction", d.probes.blind_fraction},
                      {"file", "sensitivity.npy"}};
  j["gauges"] = {{"constant_visibility", d.constant_visibility},
                 {"constant_is_gauge", d.constant_visibility < kGaugeVisibility}};
  j["null_space"] = {{"visible_mean", d.probes.visible_mean},
                     {"dark_fraction", d.probes.dark_fraction}};
  j["data_fit"] = {{"residual_rms", d.residual_rms},
                   {"noise_std", d.noise_std >= 0 ? nlohmann::json(d.noise_std) : nlohmann::json()},
                   {"misfit_ratio", number(d.misfit_ratio)},
                   {"reading", misfit_reading(d)}};
  if (d.hessian)
    j["hessian"] = {{"largest", d.hessian->eigenvalues.largest},
                    {"smallest", d.hessian->eigenvalues.smallest},
                    {"condition", number(d.hessian->condition)},
                    {"parameters", d.hessian->parameters},
                    {"lanczos_steps", d.hessian->eigenvalues.iterations},
                    {"invariant_subspace", d.hessian->eigenvalues.invariant}};
  return j.dump(2) + "\n";
}

void write_diagnostics_png(const std::string& path, const Diagnostics& d) {
  constexpr double kW = 420, kH = 300, kTop = 40, kGap = 110;
  fk::plot::Figure f(
      static_cast<int>(2 * fk::plot::kLeftMargin + 2 * kW + kGap + 60),
      static_cast<int>(kTop + fk::plot::kTitleMargin + kH + fk::plot::kBottomMargin + 10));
  f.text({16, 26}, "diagnostics: " + d.instance + " (" + d.method + ") at " + d.at,
         {16, {0.05, 0.05, 0.05}, fk::plot::Align::Start, fk::plot::Align::End, true});
  const auto& sv = d.spectrum.singular_values;
  std::vector<double> idx, pos;
  for (size_t i = 0; i < sv.size(); ++i) {
    idx.push_back(i + 1);
    pos.push_back(sv[i] > 0 ? sv[i] : NAN);
  }
  double lo = INFINITY, hi = 0;
  for (double v : pos)
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!(hi > 0)) lo = 0.1, hi = 10;
  if (hi <= lo) lo /= 2, hi *= 2;
  const fk::plot::Range yr = fk::plot::padded({lo, hi}, 0.05, true);
  fk::plot::AxesSpec a{
      {fk::plot::kLeftMargin, kTop + fk::plot::kTitleMargin, kW, kH},
      {0.5, sv.size() + 0.5, false, "index i"},
      {yr.lo, yr.hi, true, "singular value"},
      fmt::format("leading singular values (s1 / s{} = {:.3g})", sv.size(), d.condition)};
  a.grid = true;
  fk::plot::draw_lines(f, a,
                       {{"", idx, pos, fk::plot::series_colour(0), 1.2},
                        {"sigma_i", idx, pos, fk::plot::series_colour(0), 4, 0, true}});
  const fk::plot::Box right{2 * fk::plot::kLeftMargin + kW + 30, kTop + fk::plot::kTitleMargin, kW,
                            kH};
  if (d.field_shape.size() <= 1) {  // a 1-D field: the map as a line over the cells
    const std::vector<double>& sens = d.probes.sensitivity;
    std::vector<double> cell(sens.size());
    for (size_t i = 0; i < cell.size(); ++i) cell[i] = static_cast<double>(i);
    const fk::plot::Range r = fk::plot::padded(fk::plot::value_range({&sens}), 0.05);
    fk::plot::AxesSpec b{right,
                         {0, std::max(1.0, cell.size() - 1.0), false, "cell"},
                         {r.lo, r.hi, false, "squared column norm"},
                         sensitivity_title(d)};
    b.grid = true;
    fk::plot::draw_lines(f, b, {{"", cell, sens, fk::plot::series_colour(1), 1.6}});
  } else {
    const fk::plot::ImageData img = sensitivity_image(d);
    fk::plot::AxesSpec b{right,
                         {0, static_cast<double>(img.cols), false, "x (cells)"},
                         {0, static_cast<double>(img.rows), false, "y (cells)"},
                         sensitivity_title(d)};
    b.y_down = true;
    fk::plot::draw_image(f, b, img);
    fk::plot::draw_colorbar(f, {right.x + kW + 12, right.y, 14, kH}, img.lo, img.hi,
                            fk::plot::Colormap::Magma, "squared column norm");
  }
  f.save_png(path);
}

std::vector<std::string> write_diagnostics(const std::string& dir, const Diagnostics& d, bool png) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  FK_CHECK(!ec && std::filesystem::is_directory(dir), "nefi diagnose --out",
           "a directory that can be created", dir);
  std::vector<std::string> files{dir + "/diagnostics.md", dir + "/diagnostics.json",
                                 dir + "/sensitivity.npy"};
  // Whole or not at all, and checked (an unwritable report exited 0).
  for (const auto& [path, text] :
       {std::pair{files[0], diagnostics_md(d)}, std::pair{files[1], diagnostics_json(d)}})
    fk::replace_file(
        path,
        [&](const std::string& tmp) {
          std::ofstream f(tmp);
          f << text;
          f.close();
          FK_CHECK(f.good(), "nefi diagnose", "a writable report", "'" + path + "'");
        },
        "nefi diagnose");
  fk::write_npy(files[2], fk::from_vector(d.probes.sensitivity, d.field_shape));
  const std::string figure = dir + "/diagnostics.png";
  if (png) {
    files.push_back(figure);
    write_diagnostics_png(figure, d);
  } else {
    // An earlier run's figure beside this run's report would contradict it.
    std::filesystem::remove(figure, ec);
  }
  return files;
}

}  // namespace nefi::diagnostics
