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

// Gaussian-filtered image (separable, normalised over the in-bounds window).
std::vector<double> blur(const std::vector<double>& v, int64_t rows, int64_t cols) {
  constexpr int kR = 5;
  double w[2 * kR + 1];
  for (int i = -kR; i <= kR; ++i) w[i + kR] = std::exp(-0.5 * i * i / (1.5 * 1.5));
  auto pass = [&](const std::vector<double>& in, bool along_cols) {
    std::vector<double> out(in.size());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        double s = 0, ws = 0;
        for (int k = -kR; k <= kR; ++k) {
          const int64_t rr = along_cols ? r : r + k, cc = along_cols ? c + k : c;
          if (rr < 0 || rr >= rows || cc < 0 || cc >= cols) continue;
          s += w[k + kR] * in[rr * cols + cc];
          ws += w[k + kR];
        }
        out[r * cols + c] = s / ws;
      }
    return out;
  };
  std::vector<double> o = pass(v, true);
  return rows > 1 ? pass(o, false) : o;
}

double ssim_plane(const std::vector<double>& x, const std::vector<double>& y, int64_t rows,
                  int64_t cols, double range) {
  const double c1 = std::pow(0.01 * range, 2), c2 = std::pow(0.03 * range, 2);
  std::vector<double> xx(x.size()), yy(x.size()), xy(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    xx[i] = x[i] * x[i];
    yy[i] = y[i] * y[i];
    xy[i] = x[i] * y[i];
  }
  auto mx = blur(x, rows, cols), my = blur(y, rows, cols);
  auto sxx = blur(xx, rows, cols), syy = blur(yy, rows, cols), sxy = blur(xy, rows, cols);
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double vx = sxx[i] - mx[i] * mx[i], vy = syy[i] - my[i] * my[i],
                 cxy = sxy[i] - mx[i] * my[i];
    s += ((2 * mx[i] * my[i] + c1) * (2 * cxy + c2)) /
         ((mx[i] * mx[i] + my[i] * my[i] + c1) * (vx + vy + c2));
  }
  return s / static_cast<double>(x.size());
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

double ssim(const fk::Tensor& x, const fk::Tensor& gt) {
  check(x, gt, "nefi::ssim");
  auto a = x.to_vector<double>(), b = gt.to_vector<double>();
  const double r = range_of(b);
  const int d = gt.dim();
  const int64_t cols = gt.size(d - 1), rows = d >= 2 ? gt.size(d - 2) : 1;
  const int64_t plane = rows * cols, planes = gt.numel() / plane;
  double s = 0;
  for (int64_t p = 0; p < planes; ++p) {
    std::vector<double> xa(a.begin() + p * plane, a.begin() + (p + 1) * plane);
    std::vector<double> xb(b.begin() + p * plane, b.begin() + (p + 1) * plane);
    s += ssim_plane(xa, xb, rows, cols, r);
  }
  return s / static_cast<double>(planes);
}

}  // namespace nefi
