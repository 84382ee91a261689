#include "nefi/resample.h"

#include <algorithm>

#include "fk/error.h"

namespace nefi {
namespace {

// Resamples axis `axis` of a C-ordered block (outer, n, inner) to length m.
std::vector<double> resample_axis(const std::vector<double>& v, const fk::Dims& shape, int axis,
                                  int64_t m) {
  const int64_t n = shape[axis];
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= shape[i];
  for (int i = axis + 1; i < shape.size(); ++i) inner *= shape[i];
  std::vector<double> out(static_cast<size_t>(outer * m * inner), 0.0);
  // Output cell j covers [j/m, (j+1)/m); input cell i covers [i/n, (i+1)/n).
  for (int64_t j = 0; j < m; ++j) {
    const double lo = static_cast<double>(j) / m, hi = static_cast<double>(j + 1) / m;
    const int64_t i0 = static_cast<int64_t>(lo * n),
                  i1 = std::min(n - 1, static_cast<int64_t>(hi * n));
    for (int64_t i = i0; i <= i1; ++i) {
      const double a = std::max(lo, static_cast<double>(i) / n);
      const double b = std::min(hi, static_cast<double>(i + 1) / n);
      if (b <= a) continue;
      const double w = (b - a) * m;  // fraction of the output cell
      for (int64_t o = 0; o < outer; ++o) {
        const double* src = v.data() + (o * n + i) * inner;
        double* dst = out.data() + (o * m + j) * inner;
        for (int64_t k = 0; k < inner; ++k) dst[k] += w * src[k];
      }
    }
  }
  return out;
}

}  // namespace

std::vector<double> area_resample(const std::vector<double>& values, const fk::Dims& shape,
                                  const fk::Dims& new_shape) {
  FK_CHECK(shape.size() == new_shape.size(), "nefi::area_resample", shape.str() + " rank",
           new_shape.str());
  FK_CHECK(static_cast<int64_t>(values.size()) == shape.numel(), "nefi::area_resample",
           fk::to_text(shape.numel()) + " values", fk::to_text(values.size()));
  std::vector<double> v = values;
  fk::Dims cur = shape;
  for (int a = 0; a < shape.size(); ++a) {
    FK_CHECK(new_shape[a] > 0, "nefi::area_resample", "positive sizes", new_shape.str());
    if (new_shape[a] == cur[a]) continue;
    v = resample_axis(v, cur, a, new_shape[a]);
    cur[a] = new_shape[a];
  }
  return v;
}

}  // namespace nefi
