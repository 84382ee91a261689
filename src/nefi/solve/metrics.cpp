#include "nefi/solve/metrics.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "fk/error.h"

namespace nefi {
namespace {

void check(const fk::Tensor& x, const fk::Tensor& gt, const char* where) {
  FK_CHECK(x.defined() && gt.defined() && x.shape() == gt.shape(), where, "two fields of one shape",
           x.defined() ? x.shape().str() : "undefined");
}

double range_of(const std::vector<double>& g) {
  auto [lo, hi] = std::minmax_element(g.begin(), g.end());
  const double r = *hi - *lo;
  return r > 0 ? r : 1.0;
}

// Gaussian filter (sigma 1.5, `win` taps normalised to unit sum) of a (rows,
// cols) plane at the 'valid' positions only; along the rows too when
// `both_axes` (2-D), otherwise only along the columns (1-D signals, rows = 1).
std::vector<double> gauss_valid(const std::vector<double>& v, int64_t rows, int64_t cols, int win,
                                bool both_axes) {
  std::vector<double> w(win);
  double sum = 0;
  for (int i = 0; i < win; ++i) {
    const double t = i - 0.5 * (win - 1);
    sum += w[i] = std::exp(-0.5 * t * t / (1.5 * 1.5));
  }
  for (double& x : w) x /= sum;
  const int64_t vc = cols - win + 1, vr = both_axes ? rows - win + 1 : rows;
  std::vector<double> tmp(rows * vc), out(vr * vc);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < vc; ++c) {
      double s = 0;
      for (int k = 0; k < win; ++k) s += w[k] * v[r * cols + c + k];
      tmp[r * vc + c] = s;
    }
  if (!both_axes) return tmp;
  for (int64_t r = 0; r < vr; ++r)
    for (int64_t c = 0; c < vc; ++c) {
      double s = 0;
      for (int k = 0; k < win; ++k) s += w[k] * tmp[(r + k) * vc + c];
      out[r * vc + c] = s;
    }
  return out;
}

double ssim_plane(const std::vector<double>& x, const std::vector<double>& y, int64_t rows,
                  int64_t cols, int win, bool both_axes, double range) {
  const double c1 = std::pow(0.01 * range, 2), c2 = std::pow(0.03 * range, 2);
  const size_t n = x.size();
  std::vector<double> xx(n), yy(n), xy(n);
  for (size_t i = 0; i < n; ++i) {
    xx[i] = x[i] * x[i];
    yy[i] = y[i] * y[i];
    xy[i] = x[i] * y[i];
  }
  auto f = [&](const std::vector<double>& v) { return gauss_valid(v, rows, cols, win, both_axes); };
  const auto mx = f(x), my = f(y), sxx = f(xx), syy = f(yy), sxy = f(xy);
  double s = 0;
  for (size_t i = 0; i < mx.size(); ++i) {
    const double vx = sxx[i] - mx[i] * mx[i], vy = syy[i] - my[i] * my[i];
    const double cxy = sxy[i] - mx[i] * my[i];
    s += ((2 * mx[i] * my[i] + c1) * (2 * cxy + c2)) /
         ((mx[i] * mx[i] + my[i] * my[i] + c1) * (vx + vy + c2));
  }
  return s / static_cast<double>(mx.size());
}

}  // namespace

double mse(const fk::Tensor& x, const fk::Tensor& gt) {
  check(x, gt, "nefi::mse");
  auto a = x.to_vector<double>(), b = gt.to_vector<double>();
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  return s / static_cast<double>(a.size());
}

double psnr(const fk::Tensor& x, const fk::Tensor& gt) {
  const double m = mse(x, gt);
  const double r = range_of(gt.to_vector<double>());
  return m > 0 ? 10.0 * std::log10(r * r / m) : 99.0;
}

double iou(const fk::Tensor& x, const fk::Tensor& gt, double fraction) {
  check(x, gt, "nefi::iou");
  const auto b = gt.to_vector<double>();
  return iou_above(x, gt, fraction * *std::max_element(b.begin(), b.end()));
}

double iou_above(const fk::Tensor& x, const fk::Tensor& gt, double tau) {
  check(x, gt, "nefi::iou_above");
  const auto a = x.to_vector<double>(), b = gt.to_vector<double>();
  int64_t inter = 0, uni = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    inter += a[i] > tau && b[i] > tau;
    uni += a[i] > tau || b[i] > tau;
  }
  return uni ? static_cast<double>(inter) / static_cast<double>(uni) : 1.0;
}

double relative_error(const fk::Tensor& x, const fk::Tensor& gt) {
  check(x, gt, "nefi::relative_error");
  auto a = x.to_vector<double>(), b = gt.to_vector<double>();
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

double ssim(const fk::Tensor& x, const fk::Tensor& gt, std::optional<double> data_range) {
  check(x, gt, "nefi::ssim");
  return ssim(x.to_vector<double>(), gt.to_vector<double>(), gt.shape(), data_range);
}

double ssim(const std::vector<double>& x, const std::vector<double>& gt, const fk::Dims& shape,
            std::optional<double> data_range) {
  const int d = shape.size();
  FK_CHECK(d >= 1 && d <= 3, "nefi::ssim", "a 1-D, 2-D or 3-D grid", shape.str());
  FK_CHECK(
      static_cast<int64_t>(x.size()) == shape.numel() && x.size() == gt.size() && shape.numel() > 0,
      "nefi::ssim", "two non-empty grids of shape " + shape.str(),
      std::to_string(x.size()) + " and " + std::to_string(gt.size()) + " values");
  const double r = data_range ? *data_range : range_of(gt);
  FK_CHECK(r > 0, "nefi::ssim", "a positive data range", std::to_string(r));
  int64_t win = std::min<int64_t>(7, shape[0]);
  if (d >= 2) win = std::min(win, shape[1]);
  if (win % 2 == 0) --win;
  if (d == 1) return ssim_plane(x, gt, 1, shape[0], static_cast<int>(win), false, r);
  if (d == 2) return ssim_plane(x, gt, shape[0], shape[1], static_cast<int>(win), true, r);
  // 3-D: slices along the last axis, each an (n0, n1) plane.
  const int64_t n0 = shape[0], n1 = shape[1], nz = shape[2];
  std::vector<double> a(n0 * n1), b(n0 * n1);
  double total = 0;
  for (int64_t k = 0; k < nz; ++k) {
    for (int64_t p = 0; p < n0 * n1; ++p) {
      a[p] = x[p * nz + k];
      b[p] = gt[p * nz + k];
    }
    total += ssim_plane(a, b, n0, n1, static_cast<int>(win), true, r);
  }
  return total / static_cast<double>(nz);
}

}  // namespace nefi
