#pragma once
// The figures of a run directory: panel.png (png_panel.h) over every method,
// and history.png (history_png.h) when some method has a step history.
// Quantities, units and axes come from the instance's data_labels at the
// run's config.
#include <string>
#include <vector>

#include "nefi/instances/instance.h"
#include "nefi/io/png_panel.h"
#include "nefi/io/run_config.h"

namespace nefi {

// The panel of a run: its first output's truth and measurement, every
// method's reconstruction, the instance's labels. outs non-empty.
PanelInput run_panel_input(const RunConfig& cfg, const std::vector<RunOutput>& outs);
void write_run_figures(const std::string& dir, const RunConfig& cfg,
                       const std::vector<RunOutput>& outs);

}  // namespace nefi
