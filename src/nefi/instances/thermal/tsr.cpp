#include "nefi/instances/thermal/tsr.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "fk/error.h"

namespace nefi::thermal {
namespace {

// d² ln f / d(ln τ)² of the slab response f(τ) = 1 + 2 Σ exp(−n² π² τ).
double slab_log_curvature(double tau) {
  const double p2 = std::numbers::pi * std::numbers::pi;
  double f = 1, f1 = 0, f2 = 0;
  for (int n = 1; n * n * p2 * tau < 60.0; ++n) {
    const double a = n * n * p2, e = 2 * std::exp(-a * tau);
    f += e;
    f1 -= a * e;
    f2 += a * a * e;
  }
  const double r1 = f1 / f;
  return tau * r1 + tau * tau * (f2 / f - r1 * r1);
}

double median(std::vector<double> v) {
  const size_t m = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + m, v.end());
  if (v.size() % 2) return v[m];
  return 0.5 * (v[m] + *std::max_element(v.begin(), v.begin() + m));
}

// Solves the symmetric positive-definite system A x = b (n ≤ 8) in place by
// Gaussian elimination with partial pivoting.
std::vector<double> solve_small(std::vector<double> a, std::vector<double> b, int n) {
  for (int c = 0; c < n; ++c) {
    int p = c;
    for (int r = c + 1; r < n; ++r)
      if (std::abs(a[r * n + c]) > std::abs(a[p * n + c])) p = r;
    for (int k = 0; k < n; ++k) std::swap(a[c * n + k], a[p * n + k]);
    std::swap(b[c], b[p]);
    FK_CHECK(std::abs(a[c * n + c]) > 1e-300, "nefi::thermal::tsr",
             "distinct frame times in every fit window", "a singular fit");
    for (int r = c + 1; r < n; ++r) {
      const double f = a[r * n + c] / a[c * n + c];
      for (int k = c; k < n; ++k) a[r * n + k] -= f * a[c * n + k];
      b[r] -= f * b[c];
    }
  }
  std::vector<double> x(n);
  for (int r = n - 1; r >= 0; --r) {
    double s = b[r];
    for (int k = r + 1; k < n; ++k) s -= a[r * n + k] * x[k];
    x[r] = s / a[r * n + r];
  }
  return x;
}

}  // namespace

double tsr_peak_fourier_number() {
  // Coarse scan in ln τ, then golden-section refinement of the bracket.
  double best = -9, bv = -1e300;
  for (double x = -9; x <= 3; x += 0.01) {
    const double v = slab_log_curvature(std::exp(x));
    if (v > bv) {
      bv = v;
      best = x;
    }
  }
  double lo = best - 0.01, hi = best + 0.01;
  const double g = 0.5 * (std::sqrt(5.0) - 1);
  for (int i = 0; i < 80; ++i) {
    const double a = hi - g * (hi - lo), b = lo + g * (hi - lo);
    if (slab_log_curvature(std::exp(a)) > slab_log_curvature(std::exp(b)))
      hi = b;
    else
      lo = a;
  }
  return std::exp(0.5 * (lo + hi));
}

TsrResult tsr(const std::vector<double>& frames, const std::vector<double>& times,
              const fk::Dims& fs, const TsrOptions& opt) {
  FK_CHECK(fs.size() == 3 && static_cast<int64_t>(frames.size()) == fs.numel() &&
               static_cast<int64_t>(times.size()) == fs[0],
           "nefi::thermal::tsr", "frames (n_obs, nx, ny) with one time per frame",
           fs.str() + " with " + fk::to_text(times.size()) + " times");
  FK_CHECK(opt.window > 0, "nefi::thermal::tsr", "a positive window", fk::to_text(opt.window));
  const int64_t nt = fs[0], npx = fs[1] * fs[2];
  std::vector<double> x(nt);
  for (int64_t n = 0; n < nt; ++n) {
    FK_CHECK(times[n] > 0 && (n == 0 || times[n] > times[n - 1]), "nefi::thermal::tsr",
             "increasing positive frame times", fk::to_text(times[n]));
    x[n] = std::log(times[n]);
  }
  const double w = opt.window, lo = x.front() + w, hi = x.back() - w;
  FK_CHECK(
      hi > lo, "nefi::thermal::tsr (config keys 'n_frames', 'first_frame', 'tsr_window')",
      "frames spanning more than two windows (2 tsr_window = " + fk::to_text(2 * w) + ") in ln t",
      "a span of " + fk::to_text(x.back() - x.front()) + " over " + fk::to_text(nt) + " frames");
  // Per evaluation point: the frames inside its window and the 3x3 normal
  // matrix of a local quadratic in (x − centre); the same for every pixel.
  constexpr int kGrid = 200;
  struct Window {
    double centre;
    int64_t first, last;
    std::vector<double> gram;
  };
  std::vector<Window> wins;
  for (int g = 0; g <= kGrid; ++g) {
    Window wd{lo + (hi - lo) * g / kGrid, 0, -1, std::vector<double>(9, 0.0)};
    for (int64_t n = 0; n < nt; ++n) {
      if (std::abs(x[n] - wd.centre) > w) continue;
      if (wd.last < 0) wd.first = n;
      wd.last = n;
      const double d = x[n] - wd.centre, v[3] = {1, d, d * d};
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) wd.gram[i * 3 + j] += v[i] * v[j];
    }
    if (wd.last - wd.first >= 3) wins.push_back(std::move(wd));
  }
  FK_CHECK(!wins.empty(), "nefi::thermal::tsr", "at least four frames per window", "fewer");
  TsrResult r;
  r.peak_time.resize(npx);
  std::vector<double> y(nt);
  for (int64_t p = 0; p < npx; ++p) {
    for (int64_t n = 0; n < nt; ++n) y[n] = std::log(std::max(frames[n * npx + p], 1e-300));
    double best = -1e300, bx = wins.front().centre;
    for (const Window& wd : wins) {
      std::vector<double> rhs(3, 0.0);
      for (int64_t n = wd.first; n <= wd.last; ++n) {
        const double d = x[n] - wd.centre;
        rhs[0] += y[n];
        rhs[1] += d * y[n];
        rhs[2] += d * d * y[n];
      }
      const double curvature = 2 * solve_small(wd.gram, rhs, 3)[2];
      if (curvature > best) {
        best = curvature;
        bx = wd.centre;
      }
    }
    r.peak_time[p] = std::exp(bx);
  }
  r.reference_time = median(r.peak_time);
  r.alpha_bulk = tsr_peak_fourier_number() * opt.thickness * opt.thickness / r.reference_time;
  r.depth.resize(npx);
  for (int64_t p = 0; p < npx; ++p)
    r.depth[p] = opt.thickness * std::sqrt(r.peak_time[p] / r.reference_time);
  const double med = median(r.depth);
  std::vector<double> dev(npx);
  for (int64_t p = 0; p < npx; ++p) dev[p] = std::abs(r.depth[p] - med);
  const double sigma = 1.4826 * median(dev);
  const double thr = std::max(opt.k * sigma, 1e-6 * opt.thickness);
  r.defect.resize(npx);
  for (int64_t p = 0; p < npx; ++p) r.defect[p] = r.depth[p] < med - thr;
  return r;
}

}  // namespace nefi::thermal
