#pragma once
// An independent SSIM for nefi's metric tests: plain loops, no shared code
// with src/nefi.
#include <cmath>
#include <cstdint>
#include <vector>

namespace nefi::test {

// SSIM with plain loops: every window position where the whole window fits,
// weights the product of normalised 1-D Gaussians (sigma 1.5), the local
// moments summed directly; each position counts with the weight of `mask`
// at the window's centre (all ones when `mask` is empty). rows = 1 is a 1-D
// signal (window along columns).
inline double ssim_loops(const std::vector<double>& x, const std::vector<double>& y, int64_t rows,
                         int64_t cols, int win, double range,
                         const std::vector<double>& mask = {}) {
  std::vector<double> g(win);
  double gs = 0;
  for (int i = 0; i < win; ++i) gs += g[i] = std::exp(-std::pow(i - (win - 1) / 2.0, 2) / 4.5);
  const int wr = rows == 1 ? 1 : win;
  const double c1 = std::pow(0.01 * range, 2), c2 = std::pow(0.03 * range, 2);
  double total = 0, weight = 0;
  for (int64_t r = 0; r + wr <= rows; ++r)
    for (int64_t c = 0; c + win <= cols; ++c) {
      double mx = 0, my = 0, sxx = 0, syy = 0, sxy = 0;
      for (int a = 0; a < wr; ++a)
        for (int b = 0; b < win; ++b) {
          const double w = (wr == 1 ? 1.0 : g[a] / gs) * g[b] / gs;
          const double u = x[(r + a) * cols + c + b], v = y[(r + a) * cols + c + b];
          mx += w * u;
          my += w * v;
          sxx += w * u * u;
          syy += w * v * v;
          sxy += w * u * v;
        }
      const double vx = sxx - mx * mx, vy = syy - my * my, cv = sxy - mx * my;
      const double m = mask.empty() ? 1.0 : mask[(r + wr / 2) * cols + c + win / 2];
      total += m * (2 * mx * my + c1) * (2 * cv + c2) / ((mx * mx + my * my + c1) * (vx + vy + c2));
      weight += m;
    }
  return total / weight;
}

}  // namespace nefi::test
