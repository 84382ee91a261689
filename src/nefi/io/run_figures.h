#pragma once
// The figures of a run directory: panel.png (png_panel.h) over every method,
// and history.png (history_png.h) when some method has a step history.
// Physical axes come from the instance config's `extent` (a length or one
// per axis; 1 per axis when the instance has none).
#include <string>
#include <vector>

#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"

namespace nefi {

void write_run_figures(const std::string& dir, const RunConfig& cfg,
                       const std::vector<RunOutput>& outs);

}  // namespace nefi
