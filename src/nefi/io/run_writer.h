#pragma once
// Writes a run directory: config.yaml (re-runnable), metrics.json, history.csv
// (of the first method that has one), the fields as .npy (ground truth,
// measurement, one reconstruction per method), panel.png and history.png
// (run_figures.h) unless `figures` is false (`nefi run --no-plot`);
// metrics.json's figures_s is the time the figures took (0 without them).
#include <string>
#include <vector>

#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"

namespace nefi {

void write_run_dir(const std::string& dir, const RunConfig& cfg, const std::vector<RunOutput>& outs,
                   int threads, bool figures = true);

}  // namespace nefi
