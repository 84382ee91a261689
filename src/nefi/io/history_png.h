#pragma once
// history.png of a run: per method with a history, the loss terms against
// the global step on a log scale (the total bold, the data term dashed),
// and the learning rate beside them; dashed markers where a stage starts,
// labelled with its name.
#include <string>
#include <vector>

#include "nefi/solve/result.h"

namespace nefi {

struct HistoryPlot {
  std::string method;
  const Result* result = nullptr;  // history and stage names
};

// Throws fk::Error when no run has history rows or the path is unwritable.
void write_history_png(const std::string& path, const std::string& title,
                       const std::vector<HistoryPlot>& runs);

}  // namespace nefi
