#include "nefi/bench/stats.h"

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "fk/error.h"

namespace nefi::bench {
namespace {

// Continued fraction of the incomplete beta function (modified Lentz), the
// standard expansion that converges fast for x < (a + 1) / (a + b + 2).
double beta_continued_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300, kEps = 1e-15;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::abs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 500; ++m) {
    const double m2 = 2.0 * m;
    double num = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + num * d;
    c = 1 + num / c;
    if (std::abs(d) < kTiny) d = kTiny;
    if (std::abs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + num * d;
    c = 1 + num / c;
    if (std::abs(d) < kTiny) d = kTiny;
    if (std::abs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1) < kEps) break;
  }
  return h;
}

// I_x(a, b), the regularized incomplete beta function.
double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double log_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  const double front = std::exp(log_front);
  if (x < (a + 1) / (a + b + 2)) return front * beta_continued_fraction(a, b, x) / a;
  return 1 - front * beta_continued_fraction(b, a, 1 - x) / b;
}

}  // namespace

double student_t_cdf(double t, double df) {
  FK_CHECK(df > 0, "student_t_cdf", "degrees of freedom > 0", fk::to_text(df));
  const double tail = 0.5 * incomplete_beta(0.5 * df, 0.5, df / (df + t * t));
  return t >= 0 ? 1 - tail : tail;
}

double student_t_quantile(double p, double df) {
  FK_CHECK(p > 0 && p < 1, "student_t_quantile", "a probability in (0, 1)", fk::to_text(p));
  FK_CHECK(df > 0, "student_t_quantile", "degrees of freedom > 0", fk::to_text(df));
  double lo = -1, hi = 1;
  while (student_t_cdf(lo, df) > p) lo *= 2;
  while (student_t_cdf(hi, df) < p) hi *= 2;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * std::max(1.0, std::abs(lo)); ++i) {
    const double mid = 0.5 * (lo + hi);
    (student_t_cdf(mid, df) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

MeanCI mean_ci(const std::vector<double>& values, double level) {
  FK_CHECK(level > 0 && level < 1, "mean_ci", "a confidence level in (0, 1)", fk::to_text(level));
  MeanCI r;
  double sum = 0;
  for (double v : values)
    if (std::isfinite(v)) {
      sum += v;
      ++r.n;
    }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (r.n == 0) return {0, nan, nan, 0};
  r.runs = r.n;
  r.mean = sum / r.n;
  if (r.n < 2) {
    r.half = nan;
    return r;
  }
  double ss = 0;
  for (double v : values)
    if (std::isfinite(v)) ss += (v - r.mean) * (v - r.mean);
  const double sd = std::sqrt(ss / (r.n - 1));
  r.half = student_t_quantile(0.5 * (1 + level), r.n - 1) * sd / std::sqrt(r.n);
  return r;
}

MeanCI scene_mean_ci(const std::vector<double>& values, const std::vector<int64_t>& scenes,
                     double level) {
  FK_CHECK(values.size() == scenes.size(), "scene_mean_ci", "a scene for every value",
           fk::to_text(scenes.size()) + " scenes for " + fk::to_text(values.size()) + " values");
  std::map<int64_t, std::pair<double, int>> sums;  // scene -> (sum, count) of its finite values
  int runs = 0;
  for (size_t i = 0; i < values.size(); ++i)
    if (std::isfinite(values[i])) {
      auto& [sum, count] = sums[scenes[i]];
      sum += values[i];
      ++count;
      ++runs;
    }
  std::vector<double> means;
  for (const auto& [scene, sc] : sums) means.push_back(sc.first / sc.second);
  MeanCI r = mean_ci(means, level);
  r.runs = runs;
  return r;
}

}  // namespace nefi::bench
