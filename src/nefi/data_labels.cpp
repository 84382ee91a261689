#include "nefi/data_labels.h"

#include <fmt/format.h>

namespace nefi {

std::string quantity_label(const Quantity& q) {
  std::string s = q.name;
  if (!q.symbol.empty()) s += (s.empty() ? "" : " ") + q.symbol;
  return q.unit.empty() ? s : s + " (" + q.unit + ")";
}

std::string error_label(const Quantity& q) {
  const std::string what = q.symbol.empty() ? q.name : "Δ" + q.symbol;
  return q.unit.empty() ? "error " + what : "error " + what + " (" + q.unit + ")";
}

std::string axis_label(const DataAxis& a) {
  return a.unit.empty() ? a.name : a.name + " (" + a.unit + ")";
}

double cell_centre(const DataAxis& a, int64_t i, int64_t n) {
  return a.lo + (static_cast<double>(i) + 0.5) * (a.hi - a.lo) / static_cast<double>(n);
}

std::string frame_label(const DataAxis& a, int64_t i, int64_t n) {
  if (i >= 0 && i < static_cast<int64_t>(a.frames.size())) return a.frames[static_cast<size_t>(i)];
  const std::string v = a.name + " = " + short_number(cell_centre(a, i, n));
  return a.unit.empty() ? v : v + " " + a.unit;
}

DataAxis span_axis(std::string name, std::string unit, double lo, double hi) {
  return {std::move(name), std::move(unit), lo, hi};
}

DataAxis frames_axis(std::string name, const std::string& prefix, const std::vector<double>& values,
                     const std::string& unit) {
  DataAxis a{std::move(name), unit, 0, static_cast<double>(values.size())};
  const char* gap = unit == "°" ? "" : " ";
  for (double v : values) a.frames.push_back(fmt::format("{}{:.3g}{}{}", prefix, v, gap, unit));
  return a;
}

DataAxis counted_axis(const std::string& name, int64_t n) {
  DataAxis a{name, "", 0, static_cast<double>(n)};
  for (int64_t i = 1; i <= n; ++i) a.frames.push_back(fmt::format("{} {}", name, i));
  return a;
}

DataAxis index_axis(const std::string& name, int64_t n) {
  return {name + " no.", "", 0.5, static_cast<double>(n) + 0.5, {}, true};
}

std::vector<DataAxis> square_axes(double side, const std::string& unit) {
  return {{"y", unit, 0, side}, {"x", unit, 0, side}};
}

DataAxis lattice_axis(std::string name, std::string unit, double first, double last, int64_t n) {
  const double pitch = n > 1 ? (last - first) / static_cast<double>(n - 1) : 1.0;
  return {std::move(name), std::move(unit), first - 0.5 * pitch, last + 0.5 * pitch};
}

std::vector<DataAxis> joined(std::vector<DataAxis> a, const std::vector<DataAxis>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::string short_number(double v) {
  return fmt::format("{:.3g}", v);
}

std::vector<double> evenly(double lo, double step, int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = lo + static_cast<double>(i) * step;
  return v;
}

}  // namespace nefi
