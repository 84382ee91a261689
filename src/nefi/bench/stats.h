#pragma once
// Summary statistics of a benchmark: the mean with a Student-t confidence
// interval, and the same over paired differences.
//   half-width = t_{(1+level)/2, n-1} * s / sqrt(n),  s the sample std (n - 1)
// Non-finite values are dropped before counting (a failed run has no metric).
#include <vector>

namespace nefi::bench {

// P(T <= t) for Student's t with `df` > 0 degrees of freedom, through the
// regularized incomplete beta function: for t >= 0, 1 - I_{df/(df+t^2)}(df/2, 1/2) / 2.
double student_t_cdf(double t, double df);
// The p-quantile of Student's t (0 < p < 1), by bisection on the cdf to 1e-12.
double student_t_quantile(double p, double df);

struct MeanCI {
  int n = 0;        // finite values used
  double mean = 0;  // NaN when n == 0
  double half = 0;  // CI half-width; NaN when n < 2
};
MeanCI mean_ci(const std::vector<double>& values, double level = 0.95);

// b[i] - a[i] over the pairs where both are finite.
std::vector<double> paired_differences(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace nefi::bench
