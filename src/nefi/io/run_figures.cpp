#include "nefi/io/run_figures.h"

#include "nefi/io/history_png.h"

namespace nefi {

PanelInput run_panel_input(const RunConfig& cfg, const std::vector<RunOutput>& outs) {
  const RunOutput& first = outs.front();
  PanelInput in{
      cfg.instance + "   seed " + std::to_string(cfg.seed) + "   grid " + first.gt.shape().str(),
      first.gt,
      first.measurement.data,
      find_instance(cfg.instance)->data_labels(cfg.config),
      {}};
  for (const RunOutput& o : outs)
    in.methods.push_back({o.method, o.reconstruction, o.result.prediction, o.metrics});
  return in;
}

void write_run_figures(const std::string& dir, const RunConfig& cfg,
                       const std::vector<RunOutput>& outs) {
  // The panel sets each reconstruction beside the truth; measured data has none.
  if (outs.front().gt.defined()) write_panel_png(dir + "/panel.png", run_panel_input(cfg, outs));
  std::vector<HistoryPlot> hist;
  for (const RunOutput& o : outs)
    if (!o.result.history.rows.empty()) hist.push_back({o.method, &o.result});
  if (!hist.empty()) write_history_png(dir + "/history.png", cfg.instance + ": history", hist);
}

}  // namespace nefi
