#pragma once
// summary.png of a campaign: one plot per metric (and the wall time), per
// method its runs as dots and the mean with its confidence interval
// (stats.h, at TableOptions::level), titled with the better direction.
#include <string>
#include <vector>

#include "nefi/bench/campaign.h"

namespace nefi::bench {

// Throws fk::Error when the path cannot be written.
void write_summary_png(const std::string& path, const Protocol& p, const std::vector<Row>& rows,
                       double level = 0.95);

}  // namespace nefi::bench
