#include "nefi/io/run_figures.h"

#include <variant>

#include "nefi/io/history_png.h"
#include "nefi/io/png_panel.h"

namespace nefi {
namespace {

std::vector<double> extent_of(const Params& p, int ndim) {
  for (const Params::Entry& e : p.entries()) {
    if (e.key != "extent") continue;
    if (const auto* v = std::get_if<std::vector<double>>(&e.value)) return *v;
    if (const auto* d = std::get_if<double>(&e.value)) return std::vector<double>(ndim, *d);
    if (const auto* i = std::get_if<int64_t>(&e.value))
      return std::vector<double>(ndim, static_cast<double>(*i));
  }
  return std::vector<double>(ndim, 1.0);
}

std::string value_label(const std::string& instance) {
  if (instance == "thermal_tomography") return "diffusivity";
  if (instance == "deconvolution") return "intensity";
  return "u";
}

}  // namespace

void write_run_figures(const std::string& dir, const RunConfig& cfg,
                       const std::vector<RunOutput>& outs) {
  const RunOutput& first = outs.front();
  const std::string title =
      cfg.instance + "   seed " + std::to_string(cfg.seed) + "   grid " + first.gt.shape().str();
  PanelInput in{title,
                first.gt,
                first.measurement.data,
                extent_of(cfg.config, first.gt.dim()),
                value_label(cfg.instance),
                {}};
  std::vector<HistoryPlot> hist;
  for (const RunOutput& o : outs) {
    in.methods.push_back({o.method, o.reconstruction, o.result.prediction, o.metrics});
    if (!o.result.history.rows.empty()) hist.push_back({o.method, &o.result});
  }
  write_panel_png(dir + "/panel.png", in);
  if (!hist.empty()) write_history_png(dir + "/history.png", cfg.instance + ": history", hist);
}

}  // namespace nefi
