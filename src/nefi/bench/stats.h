#pragma once
// Summary statistics of a benchmark: the mean with a Student-t confidence
// interval (tables.cpp takes paired differences through the same).
//   half-width = t_{(1+level)/2, n-1} * s / sqrt(n),  s the sample std (n - 1)
// Non-finite values are dropped before counting (a failed run has no metric).
// A campaign's runs are not independent draws: the seeds of one scene share
// its data and differ only in their start (a deterministic method gives one
// value for all of them), so its intervals come from scene_mean_ci, which
// averages each scene's runs first and counts scenes, not runs. Counting
// runs made the intervals about sqrt(seeds) times too narrow.
#include <cstdint>
#include <vector>

namespace nefi::bench {

// P(T <= t) for Student's t with `df` > 0 degrees of freedom, through the
// regularized incomplete beta function: for t >= 0, 1 - I_{df/(df+t^2)}(df/2, 1/2) / 2.
double student_t_cdf(double t, double df);
// The p-quantile of Student's t (0 < p < 1), by bisection on the cdf to 1e-12.
double student_t_quantile(double p, double df);

struct MeanCI {
  int n = 0;        // finite values used (scene_mean_ci: scenes with one)
  double mean = 0;  // NaN when n == 0
  double half = 0;  // CI half-width; NaN when n < 2
  int runs = 0;     // finite values behind the mean
};
MeanCI mean_ci(const std::vector<double>& values, double level = 0.95);
// mean_ci over the scenes' means: values[i] belongs to scene scenes[i]; a
// scene's finite values are averaged, a scene without one is left out.
MeanCI scene_mean_ci(const std::vector<double>& values, const std::vector<int64_t>& scenes,
                     double level = 0.95);

}  // namespace nefi::bench
