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

// The SSIM of each 'valid' window position of a (rows, cols) plane, C order
// over (rows - win + 1, or rows when 1-D) x (cols - win + 1).
std::vector<double> ssim_map_plane(const std::vector<double>& x, const std::vector<double>& y,
                                   int64_t rows, int64_t cols, int win, bool both_axes,
                                   double range) {
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
  std::vector<double> s(mx.size());
  for (size_t i = 0; i < mx.size(); ++i) {
    const double vx = sxx[i] - mx[i] * mx[i], vy = syy[i] - my[i] * my[i];
    const double cxy = sxy[i] - mx[i] * my[i];
    s[i] = ((2 * mx[i] * my[i] + c1) * (2 * cxy + c2)) /
           ((mx[i] * mx[i] + my[i] * my[i] + c1) * (vx + vy + c2));
  }
  return s;
}

// A grid as SSIM sees it: 1-D one (1, n) row, 2-D one plane, 3-D one (n0,
// n1) plane per index of the last axis; the window of ssim_window.
struct Planes {
  int64_t count, rows, cols;
  int win;
  bool both_axes;
};

Planes planes_of(const fk::Dims& shape, size_t nx, size_t ngt, const char* where) {
  const int d = shape.size();
  FK_CHECK(d >= 1 && d <= 3, where, "a 1-D, 2-D or 3-D grid", shape.str());
  FK_CHECK(static_cast<int64_t>(nx) == shape.numel() && nx == ngt && shape.numel() > 0, where,
           "two non-empty grids of shape " + shape.str(),
           fk::to_text(nx) + " and " + fk::to_text(ngt) + " values");
  const int win = ssim_window(shape);
  if (d == 1) return {1, 1, shape[0], win, false};
  return {d == 3 ? shape[2] : 1, shape[0], shape[1], win, true};
}

// Plane k of C-ordered values on the grid of `g`.
std::vector<double> plane(const std::vector<double>& v, const Planes& g, int64_t k) {
  if (g.count == 1) return v;
  std::vector<double> out(g.rows * g.cols);
  for (int64_t p = 0; p < g.rows * g.cols; ++p) out[p] = v[p * g.count + k];
  return out;
}

double data_range_of(const std::vector<double>& gt, std::optional<double> data_range,
                     const char* where) {
  const double r = data_range ? *data_range : range_of(gt);
  FK_CHECK(r > 0, where, "a positive data range", fk::to_text(r));
  return r;
}

}  // namespace

int ssim_window(const fk::Dims& shape) {
  FK_CHECK(shape.size() >= 1 && shape.numel() > 0, "nefi::ssim_window", "a non-empty grid",
           shape.str());
  int64_t win = std::min<int64_t>(7, shape[0]);
  if (shape.size() >= 2) win = std::min(win, shape[1]);
  if (win % 2 == 0) --win;
  return static_cast<int>(win);
}

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
  // A NaN field scores NaN, never the cap for an exact match.
  if (std::isnan(m)) return m;
  return m > 0 ? std::min(kPsnrCap, 10.0 * std::log10(r * r / m)) : kPsnrCap;
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
  const Planes g = planes_of(shape, x.size(), gt.size(), "nefi::ssim");
  const double r = data_range_of(gt, data_range, "nefi::ssim");
  double total = 0;
  for (int64_t k = 0; k < g.count; ++k) {
    const auto map =
        ssim_map_plane(plane(x, g, k), plane(gt, g, k), g.rows, g.cols, g.win, g.both_axes, r);
    double s = 0;
    for (double v : map) s += v;
    total += s / static_cast<double>(map.size());
  }
  return total / static_cast<double>(g.count);
}

double masked_ssim(const fk::Tensor& x, const fk::Tensor& gt, const fk::Tensor& mask,
                   std::optional<double> data_range) {
  check(x, gt, "nefi::masked_ssim");
  FK_CHECK(mask.defined() && mask.shape() == gt.shape(), "nefi::masked_ssim",
           "a mask of the fields' shape " + gt.shape().str(),
           mask.defined() ? mask.shape().str() : "undefined");
  return masked_ssim(x.to_vector<double>(), gt.to_vector<double>(), mask.to_vector<double>(),
                     gt.shape(), data_range);
}

double masked_ssim(const std::vector<double>& x, const std::vector<double>& gt,
                   const std::vector<double>& mask, const fk::Dims& shape,
                   std::optional<double> data_range) {
  const Planes g = planes_of(shape, x.size(), gt.size(), "nefi::masked_ssim");
  FK_CHECK(mask.size() == gt.size(), "nefi::masked_ssim", fk::to_text(gt.size()) + " mask weights",
           fk::to_text(mask.size()));
  for (double w : mask)
    FK_CHECK(w >= 0 && std::isfinite(w), "nefi::masked_ssim", "finite mask weights >= 0",
             fk::to_text(w));
  const double r = data_range_of(gt, data_range, "nefi::masked_ssim");
  const int64_t half = g.win / 2, vr = g.both_axes ? g.rows - g.win + 1 : g.rows;
  const int64_t vc = g.cols - g.win + 1, dr = g.both_axes ? half : 0;
  double num = 0, den = 0;
  for (int64_t k = 0; k < g.count; ++k) {
    const auto map =
        ssim_map_plane(plane(x, g, k), plane(gt, g, k), g.rows, g.cols, g.win, g.both_axes, r);
    const auto w = plane(mask, g, k);
    for (int64_t i = 0; i < vr; ++i)
      for (int64_t j = 0; j < vc; ++j) {
        const double wc = w[(i + dr) * g.cols + j + half];  // the window's centre
        num += wc * map[i * vc + j];
        den += wc;
      }
  }
  FK_CHECK(den > 0, "nefi::masked_ssim",
           "a mask with weight at a pixel at least " + fk::to_text(half) +
               " cells from every edge (a whole window's centre)",
           "none there");
  return num / den;
}

}  // namespace nefi
