#include "nefi/solve/result.h"

#include <sstream>

namespace nefi {

std::vector<double> History::column(const std::string& name) const {
  std::vector<double> out;
  for (size_t c = 0; c < columns.size(); ++c)
    if (columns[c] == name) {
      for (const auto& r : rows) out.push_back(r[c]);
      break;
    }
  return out;
}

std::string History::csv() const {
  std::ostringstream os;
  os.precision(9);
  for (size_t c = 0; c < columns.size(); ++c) os << (c ? "," : "") << columns[c];
  os << "\n";
  for (const auto& r : rows) {
    for (size_t c = 0; c < r.size(); ++c) os << (c ? "," : "") << r[c];
    os << "\n";
  }
  return os.str();
}

int Result::total_steps() const {
  int n = 0;
  for (const auto& s : stages) n += s.steps;
  return n;
}

double Result::ms_per_step() const {
  double t = 0;
  for (const auto& s : stages) t += s.seconds;
  return total_steps() ? 1e3 * t / total_steps() : 0.0;
}

double Result::ops_per_step() const {
  int64_t o = 0;
  for (const auto& s : stages) o += s.ops;
  return total_steps() ? static_cast<double>(o) / total_steps() : 0.0;
}

}  // namespace nefi
