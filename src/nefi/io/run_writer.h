#pragma once
// Writes a run directory: config.yaml (re-runnable), metrics.json, history.csv
// (of the first method that has one; history-<method>.csv for the others),
// the fields as .npy (ground truth, measurement, one reconstruction per
// method), panel.png and history.png (run_figures.h) unless `figures` is
// false (`nefi run --no-plot`); metrics.json's figures_s is the time the
// figures took (0 without them). Into the folder of an earlier run, the
// earlier run's outputs are replaced: those this run does not write are
// removed (its checkpoints and the run's input files stay). `failed` names the
// methods that ended in an error, with its message (metrics.json's
// failed_methods), so a run that lost one method keeps the others.
#include <map>
#include <string>
#include <vector>

#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"

namespace nefi {

void write_run_dir(const std::string& dir, const RunConfig& cfg, const std::vector<RunOutput>& outs,
                   int threads, bool figures = true,
                   const std::map<std::string, std::string>& failed = {});

}  // namespace nefi
