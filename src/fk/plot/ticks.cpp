#include "fk/plot/ticks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace fk::plot {

double nice_step(double lo, double hi, int target, bool integer) {
  if (lo > hi) std::swap(lo, hi);
  double span = hi - lo;
  if (!(span > 0)) span = std::max(std::abs(lo), 1.0) * 0.2;
  const double raw = span / std::max(target, 1);
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0}) {
    const double s = m * p;
    if (integer && (s < 1 || s != std::round(s))) continue;
    if (s >= raw * 0.999) return s;
  }
  return integer ? std::max(10 * p, 1.0) : 10 * p;
}

std::vector<double> nice_ticks(double lo, double hi, int target, bool integer) {
  if (lo > hi) std::swap(lo, hi);
  if (!(hi > lo)) {
    const double pad = std::max(std::abs(lo), 1.0) * 0.1;
    lo -= pad;
    hi += pad;
  }
  std::vector<double> t;
  // A narrow axis's target can give one tick (0 alone on [-22, 22] with a
  // step of 50): a finer step until two fall inside, which reads a scale.
  for (int tries = 0; tries < 4 && t.size() < 2; ++tries, target = 2 * std::max(target, 1)) {
    t.clear();
    const double step = nice_step(lo, hi, target, integer);
    const double eps = step * 1e-9;
    // Counted, not stepped until past hi: past 2^53 steps k + 1 == k.
    const double first = std::ceil((lo - eps) / step);
    const double count = std::floor((hi + eps) / step) - first + 1;
    const int n = count > 0 ? static_cast<int>(std::min(count, 1000.0)) : 0;
    for (int i = 0; i < n; ++i) {
      const double v = (first + i) * step;
      t.push_back(std::abs(v) < eps ? 0.0 : v);
    }
    if (integer && step == 1) break;  // whole numbers cannot get finer
  }
  return t;
}

std::vector<double> log_ticks(double lo, double hi) {
  if (lo > hi) std::swap(lo, hi);
  std::vector<double> t;
  if (!(lo > 0)) return t;
  const double eps = 1e-9;
  for (int e = static_cast<int>(std::floor(std::log10(lo))); e <= std::ceil(std::log10(hi)); ++e)
    for (double m : {1.0, 2.0, 5.0}) {
      const double v = m * std::pow(10.0, e);
      if (v >= lo * (1 - eps) && v <= hi * (1 + eps)) t.push_back(v);
    }
  std::vector<double> decades;
  for (double v : t)
    if (std::abs(std::log10(v) - std::round(std::log10(v))) < 1e-9) decades.push_back(v);
  if (decades.size() >= 2) {
    // Too many decades: keep every k-th so about six remain.
    const size_t k = (decades.size() + 5) / 6;
    std::vector<double> kept;
    for (size_t i = 0; i < decades.size(); i += k) kept.push_back(decades[i]);
    return kept;
  }
  // Under a decade or so no 1-2-5 value may fall inside ([0.3, 0.45] had
  // none, [0.7, 1.2] one): round linear values, which read a scale.
  if (t.size() < 2) return nice_ticks(lo, hi, 4);
  return t;
}

std::string tick_label(double v, double step) {
  const double a = std::max(std::abs(v), step);
  if (a >= 1e5 || (step < 1e-3 && a < 1e-2)) {  // "1.5e5", "-2e-4": short and exact enough
    if (v == 0) return "0";
    const int ex = static_cast<int>(std::floor(std::log10(std::abs(v)) + 1e-9));
    // Digits enough to tell ticks a step apart on a large offset (1e6 +
    // 0.02 k all read "1e6" with three).
    const int digits =
        step > 0
            ? std::clamp(static_cast<int>(std::ceil(std::log10(std::abs(v) / step))) + 1, 3, 15)
            : 3;
    return fmt::format("{:.{}g}e{}", v / std::pow(10.0, ex), digits, ex);
  }
  // Decimals enough to tell neighbouring ticks apart: one more where the
  // step has a digit past them (2.5 -> 1, 0.25 -> 2; 25 -> 0, not "25.0").
  int dec = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  const double scaled = step * std::pow(10.0, dec);
  if (std::abs(scaled - std::round(scaled)) > 1e-6 * scaled) ++dec;
  std::string s = fmt::format("{:.{}f}", v, dec);
  if (s == "-0" || s.rfind("-0.", 0) == 0) {
    bool zero = std::all_of(s.begin() + 1, s.end(), [](char c) { return c == '0' || c == '.'; });
    if (zero) s.erase(0, 1);
  }
  return s;
}

std::string log_tick_label(double v) {
  const double e = std::log10(v);
  if (e >= -2 && e < 4) return fmt::format("{:g}", v);
  const int ex = static_cast<int>(std::floor(e + 1e-9));
  const double m = v / std::pow(10.0, ex);
  return std::abs(m - 1) < 1e-9 ? fmt::format("1e{}", ex) : fmt::format("{:g}e{}", m, ex);
}

}  // namespace fk::plot
