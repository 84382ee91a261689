#pragma once
// sweep.png of `nefi sweep` over a numeric axis: one plot per metric, the
// mean of each value's runs against the value (a log axis when the values
// are positive and span a decade or more) with its confidence interval as a
// bar (stats.h), titled with the better direction.
#include <optional>
#include <string>
#include <vector>

#include "nefi/bench/campaign.h"

namespace nefi::bench {

// The values as numbers when every one parses whole as one, else nullopt.
std::optional<std::vector<double>> numeric_values(const std::vector<std::string>& values);

// A sweep's axis and values read back from its row labels (Row::method),
// each "KEY=VALUE" with one KEY and a number: what bench-merge needs to draw
// the sweep.png of a sharded sweep. nullopt for any other campaign.
struct SweepAxis {
  std::string key;
  std::vector<double> values;
};
std::optional<SweepAxis> sweep_axis_of(const std::vector<std::string>& labels);

// `labels` name each value's rows (Row::method); throws fk::Error when the
// path cannot be written.
void write_sweep_png(const std::string& path, const std::string& title, const std::string& axis,
                     const std::vector<double>& values, const std::vector<std::string>& labels,
                     const std::vector<Row>& rows, double level = 0.95);

}  // namespace nefi::bench
