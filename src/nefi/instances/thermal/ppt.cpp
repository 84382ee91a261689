#include "nefi/instances/thermal/ppt.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "fk/error.h"

namespace nefi::thermal {
namespace {

double median(std::vector<double> v) {
  const size_t m = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + m, v.end());
  if (v.size() % 2) return v[m];
  return 0.5 * (v[m] + *std::max_element(v.begin(), v.begin() + m));
}

// Wraps a phase difference into (−π, π].
double wrap(double a) {
  return std::remainder(a, 2 * std::numbers::pi);
}

}  // namespace

PptResult ppt(const std::vector<double>& frames, double dt, const fk::Dims& fs,
              const PptOptions& opt) {
  FK_CHECK(fs.size() == 3 && static_cast<int64_t>(frames.size()) == fs.numel() && fs[0] >= 4,
           "nefi::thermal::ppt", "at least 4 frames (n_obs, nx, ny)", fs.str());
  FK_CHECK(dt > 0 && opt.alpha > 0, "nefi::thermal::ppt", "dt > 0 and alpha > 0",
           fk::to_text(dt) + ", " + fk::to_text(opt.alpha));
  const int64_t nt = fs[0], npx = fs[1] * fs[2], nf = nt / 2;
  // phase[k - 1][p]: the DFT phase of pixel p at f_k.
  std::vector<std::vector<double>> phase(nf, std::vector<double>(npx));
  // The record is truncated while still cooling: the DFT's implied jump
  // from the last frame back to the first leaks into every frequency and
  // differs between defect and sound pixels. Subtracting the line through
  // the first and last frames removes the jump.
  std::vector<double> y(nt);
  for (int64_t p = 0; p < npx; ++p) {
    const double y0 = frames[p], y1 = frames[(nt - 1) * npx + p];
    for (int64_t n = 0; n < nt; ++n)
      y[n] = frames[n * npx + p] - (y0 + (y1 - y0) * static_cast<double>(n) / (nt - 1));
    for (int64_t k = 1; k <= nf; ++k) {
      double re = 0, im = 0;
      for (int64_t n = 0; n < nt; ++n) {
        const double a = -2 * std::numbers::pi * static_cast<double>(k * n) / nt;
        re += y[n] * std::cos(a);
        im += y[n] * std::sin(a);
      }
      phase[k - 1][p] = std::atan2(im, re);
    }
  }
  // Contrast against the median pixel, visible above the MAD rule and floor.
  std::vector<std::vector<bool>> visible(nf, std::vector<bool>(npx));
  for (int64_t k = 0; k < nf; ++k) {
    const double ref = median(phase[k]);
    std::vector<double> c(npx), dev(npx);
    for (int64_t p = 0; p < npx; ++p) c[p] = wrap(phase[k][p] - ref);
    const double mc = median(c);
    for (int64_t p = 0; p < npx; ++p) dev[p] = std::abs(c[p] - mc);
    const double thr = std::max(opt.k * 1.4826 * median(dev), opt.min_contrast);
    for (int64_t p = 0; p < npx; ++p) visible[k][p] = std::abs(c[p] - mc) > thr;
  }
  PptResult r;
  r.blind_frequency.assign(npx, 0.0);
  r.depth.assign(npx, opt.thickness);
  r.defect.assign(npx, false);
  const double df = 1.0 / (static_cast<double>(nt) * dt);
  for (int64_t p = 0; p < npx; ++p) {
    int64_t kb = 0;
    while (kb < nf && visible[kb][p]) ++kb;
    if (kb == 0) continue;
    r.defect[p] = true;
    r.blind_frequency[p] = static_cast<double>(kb) * df;
    r.depth[p] = std::min(
        opt.thickness, opt.c1 * std::sqrt(opt.alpha / (std::numbers::pi * r.blind_frequency[p])));
  }
  return r;
}

}  // namespace nefi::thermal
