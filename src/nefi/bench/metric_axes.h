#pragma once
// How a benchmark figure shows a metric: the values it can take (an
// interval drawn from two or three runs never reaches past them: an MSE
// below 0, an SSIM above 1) and its axis label with the unit.
#include <cmath>
#include <string>

namespace nefi::bench {

struct MetricBounds {
  double lo = -INFINITY, hi = INFINITY;
};
MetricBounds metric_bounds(const std::string& metric);
std::string metric_axis_label(const std::string& metric);  // "psnr (dB)", "wall time (s)"

}  // namespace nefi::bench
