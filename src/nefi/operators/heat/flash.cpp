// flash_cell_averages: the Gaussian flash is separable, so each cell's average
// is the product of three 1-D averages, each an erf difference:
//   (1/h) ∫_a^b exp(−(s−c)²/2w²) ds = w √(π/2) [erf((b−c)/√2w) − erf((a−c)/√2w)] / h.
// Laterally periodised by summing the images c + mL until they are > 12 widths away.
#include <cmath>
#include <numbers>

#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/operators/heat/heat_operator.h"

namespace nefi {
namespace {

// Averages over the n cells [i h, (i+1) h) of a Gaussian centred at c.
std::vector<double> axis_averages(int64_t n, double length, double c, double w, bool periodic) {
  const double h = length / n, s = std::sqrt(2.0) * w;
  const double scale = w * std::sqrt(std::numbers::pi / 2) / h;
  const int64_t images = periodic ? static_cast<int64_t>(std::ceil(12.0 * w / length)) + 1 : 0;
  std::vector<double> out(n, 0.0);
  for (int64_t m = -images; m <= images; ++m) {
    const double cm = c + m * length;
    for (int64_t i = 0; i < n; ++i)
      out[i] += scale * (std::erf((h * (i + 1) - cm) / s) - std::erf((h * i - cm) / s));
  }
  return out;
}

}  // namespace

fk::Tensor flash_cell_averages(const GaussianFlash& flash, const fk::Dims& shape,
                               const std::vector<double>& extent) {
  FK_CHECK(shape.size() == 3 && shape[0] > 0 && shape[1] > 0 && shape[2] > 0,
           "nefi::flash_cell_averages", "shape (nx, ny, nz) with positive sizes", shape.str());
  FK_CHECK(extent.size() == 3 && extent[0] > 0 && extent[1] > 0 && extent[2] > 0,
           "nefi::flash_cell_averages", "3 positive extents",
           fk::to_text(extent.size()) + " entries");
  FK_CHECK(flash.width_xy > 0 && flash.width_z > 0, "nefi::flash_cell_averages",
           "positive flash widths",
           fk::to_text(flash.width_xy) + ", " + fk::to_text(flash.width_z));
  const double cx = flash.center ? (*flash.center)[0] : extent[0] / 2;
  const double cy = flash.center ? (*flash.center)[1] : extent[1] / 2;
  auto lateral = [&](int64_t n, double length, double c) {
    return flash.uniform ? std::vector<double>(n, 1.0)
                         : axis_averages(n, length, c, flash.width_xy, flash.periodic);
  };
  const auto gx = lateral(shape[0], extent[0], cx);
  const auto gy = lateral(shape[1], extent[1], cy);
  const auto gz = axis_averages(shape[2], extent[2], 0.0, flash.width_z, false);
  fk::Tensor t = fk::empty(shape, {fk::DType::F64});
  double* p = t.data<double>();
  for (int64_t i = 0; i < shape[0]; ++i)
    for (int64_t j = 0; j < shape[1]; ++j)
      for (int64_t k = 0; k < shape[2]; ++k) *p++ = flash.amplitude * gx[i] * gy[j] * gz[k];
  return t;
}

}  // namespace nefi
