#include "nefi/bench/metric_axes.h"

namespace nefi::bench {

MetricBounds metric_bounds(const std::string& m) {
  auto has = [&m](const char* part) { return m.find(part) != std::string::npos; };
  if (has("ssim") || has("iou") || has("dice") || has("f1") || has("accuracy") || has("delta"))
    return {has("ssim") ? -1.0 : 0.0, 1.0};
  if (m == "time_s" || has("mse") || has("mae") || has("rmse") || has("relative_error") ||
      has("abs_rel") || has("gmsd") || has("wasserstein") || has("swd"))
    return {0.0, INFINITY};
  return {};
}

std::string metric_axis_label(const std::string& m) {
  if (m == "time_s") return "wall time (s)";
  if (m.find("psnr") != std::string::npos) return m + " (dB)";
  return m;
}

}  // namespace nefi::bench
