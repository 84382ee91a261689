#include "nefi/byop/noise_estimate.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "fk/error.h"

namespace nefi {

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
  const fk::Dims& s = data.shape();
  std::vector<double> r;
  double gain = 0;
  if (s.size() <= 1 || s[s.size() - 2] < 3 || s[s.size() - 1] < 3) {
    // Fourth differences along the last axis of every row.
    const int64_t n = s.size() == 0 ? 1 : s[s.size() - 1], rows = data.numel() / n;
    FK_CHECK(n >= 5, kWhere, "at least 5 cells along the last axis (or 3 x 3 in the last two)",
             s.str());
    static constexpr double c[5] = {1, -4, 6, -4, 1};
    for (int64_t b = 0; b < rows; ++b)
      for (int64_t i = 2; i + 2 < n; ++i) {
        double acc = 0;
        bool seen = true;
        for (int k = 0; k < 5; ++k) {
          const int64_t at = b * n + i - 2 + k;
          seen = seen && w[at] > 0;
          acc += c[k] * y[at];
        }
        if (seen) r.push_back(std::abs(acc));
      }
    gain = std::sqrt(70.0);
  } else {
    const int64_t nx = s[s.size() - 2], ny = s[s.size() - 1], slices = data.numel() / (nx * ny);
    static constexpr double c[3][3] = {{1, -2, 1}, {-2, 4, -2}, {1, -2, 1}};
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
    gain = 6.0;
  }
  FK_CHECK(!r.empty(), kWhere,
           "observed cells filling at least one stencil (else give the noise sigma)",
           "none in data of shape " + s.str());
  const auto mid = r.begin() + static_cast<std::ptrdiff_t>(r.size() / 2);
  std::nth_element(r.begin(), mid, r.end());
  return {1.4826 * *mid / gain, static_cast<int64_t>(r.size())};
}

}  // namespace nefi
