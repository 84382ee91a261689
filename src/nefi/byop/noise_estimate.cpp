#include "nefi/byop/noise_estimate.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "fk/error.h"

namespace nefi {
namespace {

// sigma from the |filtered| values of white noise through a stencil of this
// gain: 1.4826 median / gain (none when no stencil fit).
NoiseEstimate robust_sigma(std::vector<double> r, double gain) {
  if (r.empty()) return {0, 0};
  const auto mid = r.begin() + static_cast<std::ptrdiff_t>(r.size() / 2);
  std::nth_element(r.begin(), mid, r.end());
  return {1.4826 * *mid / gain, static_cast<int64_t>(r.size())};
}

// Fourth differences along `axis` of every line of the data: a cubic passes,
// white noise gains sqrt(70).
NoiseEstimate along_axis(const std::vector<double>& y, const std::vector<double>& w,
                         const fk::Dims& s, int axis) {
  const int64_t n = s[axis];
  int64_t inner = 1;
  for (int a = axis + 1; a < s.size(); ++a) inner *= s[a];
  const int64_t outer = static_cast<int64_t>(y.size()) / (n * inner);
  static constexpr double c[5] = {1, -4, 6, -4, 1};
  std::vector<double> r;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in)
      for (int64_t i = 2; i + 2 < n; ++i) {
        double acc = 0;
        bool seen = true;
        for (int k = 0; k < 5; ++k) {
          const int64_t at = (o * n + i - 2 + k) * inner + in;
          seen = seen && w[at] > 0;
          acc += c[k] * y[at];
        }
        if (seen) r.push_back(std::abs(acc));
      }
  return robust_sigma(std::move(r), std::sqrt(70.0));
}

// Immerkaer's mask over the last two axes of every slice: a
// bilinear-plus-quadratic surface passes, white noise gains 6.
NoiseEstimate last_two_axes(const std::vector<double>& y, const std::vector<double>& w,
                            const fk::Dims& s) {
  const int64_t nx = s[s.size() - 2], ny = s[s.size() - 1];
  const int64_t slices = static_cast<int64_t>(y.size()) / (nx * ny);
  static constexpr double c[3][3] = {{1, -2, 1}, {-2, 4, -2}, {1, -2, 1}};
  std::vector<double> r;
  for (int64_t b = 0; b < slices; ++b)
    for (int64_t i = 1; i + 1 < nx; ++i)
      for (int64_t j = 1; j + 1 < ny; ++j) {
        double acc = 0;
        bool seen = true;
        for (int di = -1; di <= 1; ++di)
          for (int dj = -1; dj <= 1; ++dj) {
            const int64_t at = (b * nx + i + di) * ny + j + dj;
            seen = seen && w[at] > 0;
            acc += c[di + 1][dj + 1] * y[at];
          }
        if (seen) r.push_back(std::abs(acc));
      }
  return robust_sigma(std::move(r), 6.0);
}

}  // namespace

NoiseEstimate estimate_noise(const fk::Tensor& data, const fk::Tensor& mask) {
  constexpr const char* kWhere = "nefi::estimate_noise";
  FK_CHECK(data.defined() && fk::is_floating(data.dtype()), kWhere, "real data",
           data.defined() ? fk::name(data.dtype()) : "none");
  FK_CHECK(!mask.defined() || mask.shape() == data.shape(), kWhere,
           "a mask of the data's shape " + data.shape().str(),
           mask.defined() ? mask.shape().str() : "");
  const std::vector<double> y = data.to_vector<double>();
  const std::vector<double> w =
      mask.defined() ? mask.to_vector<double>() : std::vector<double>(y.size(), 1.0);
  const fk::Dims s = data.shape().size() == 0 ? fk::Dims{1} : data.shape();
  const int d = s.size();
  const bool plane = d >= 2 && s[d - 2] >= 3 && s[d - 1] >= 3;
  FK_CHECK(plane || s[d - 1] >= 5, kWhere,
           "at least 5 cells along the last axis (or 3 x 3 in the last two)", data.shape().str());
  // The 2-D stencil (the 1-D one without a plane); an axis's fourth
  // differences replace it only when clearly lower: structure the stencils do
  // not cancel only raises an estimate (a sinogram of few views is rough
  // across them, smooth along the detector), while on white noise the least
  // of three would read about 2-7 % low.
  constexpr double kClearlyLower = 0.8;
  NoiseEstimate best = plane ? last_two_axes(y, w, s) : along_axis(y, w, s, d - 1);
  if (plane)
    for (int axis = d - 2; axis < d; ++axis) {
      if (s[axis] < 5) continue;
      const NoiseEstimate e = along_axis(y, w, s, axis);
      if (e.stencils > 0 && (best.stencils == 0 || e.sigma < kClearlyLower * best.sigma)) best = e;
    }
  FK_CHECK(best.stencils > 0, kWhere,
           "observed cells filling at least one stencil (else give the noise sigma)",
           "none in data of shape " + s.str());
  return best;
}

}  // namespace nefi
