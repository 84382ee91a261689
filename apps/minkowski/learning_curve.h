#pragma once
// The learning-curve figure of `minkowski train`: drawn from the run's
// log.csv after every epoch (so a resumed run shows its whole history), two
// panels — training loss per epoch and held-out mIoU and accuracy
// per epoch — written as a PNG with fk's cairo plotting layer (fk/plot).
#include <string>
#include <vector>

namespace minkowski_app {

// The columns of a CSV with a header row, by name; every value a number.
struct CsvTable {
  std::vector<std::string> names;
  std::vector<std::vector<double>> columns;
  const std::vector<double>& column(const std::string& name) const;
};
// Throws fk::Error naming the file on a missing file, a row of the wrong
// width or a value that is not a number.
CsvTable read_csv(const std::string& path);

// log.csv (columns epoch, loss, val_miou, val_accuracy) -> PNG. Throws
// fk::Error when a column is missing, the log has no rows or the PNG cannot
// be written.
void write_learning_curves(const std::string& log_csv, const std::string& png,
                           const std::string& title);

}  // namespace minkowski_app
