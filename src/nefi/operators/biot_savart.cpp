#include "nefi/operators/biot_savart.h"

#include <cmath>
#include <numbers>

#include "fk/error.h"
#include "fk/parallel.h"

namespace nefi {

std::vector<double> MagneticField::along(const std::array<double, 3>& axis) const {
  const double norm = std::sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]);
  FK_CHECK(norm > 0, "nefi::MagneticField::along", "a non-zero axis", "(0, 0, 0)");
  std::vector<double> v(bz.size());
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = (axis[0] * b0[i] + axis[1] * b1[i] + axis[2] * bz[i]) / norm;
  return v;
}

SheetCurrent curl_of_stream(const std::vector<double>& g, const Domain& grid) {
  FK_CHECK(grid.ndim() == 2 && static_cast<int64_t>(g.size()) == grid.numel(),
           "nefi::curl_of_stream", "a stream function on a 2-D grid of " + grid.shape().str(),
           fk::to_text(g.size()) + " values on " + grid.str());
  const int64_t m0 = grid.shape()[0], m1 = grid.shape()[1];
  const auto h = grid.spacing();
  auto at = [&](int64_t i, int64_t j) {
    return i < 0 || i >= m0 || j < 0 || j >= m1 ? 0.0 : g[i * m1 + j];
  };
  SheetCurrent k{std::vector<double>(g.size()), std::vector<double>(g.size())};
  for (int64_t i = 0; i < m0; ++i)
    for (int64_t j = 0; j < m1; ++j) {
      k.k0[i * m1 + j] = (at(i, j + 1) - at(i, j - 1)) / (2 * h[1]);
      k.k1[i * m1 + j] = -(at(i + 1, j) - at(i - 1, j)) / (2 * h[0]);
    }
  return k;
}

MagneticField biot_savart_sheet(const SheetCurrent& k, const Domain& sources, const Domain& sensors,
                                double z0, double mu0, double layer_thickness, int layer_samples) {
  const char* who = "nefi::biot_savart_sheet";
  FK_CHECK(sources.ndim() == 2 && sensors.ndim() == 2 && sources.extent() == sensors.extent(), who,
           "2-D source and sensor grids over one box", sources.str() + ", " + sensors.str());
  FK_CHECK(static_cast<int64_t>(k.k0.size()) == sources.numel() && k.k1.size() == k.k0.size(), who,
           fk::to_text(sources.numel()) + " values per current component",
           fk::to_text(k.k0.size()) + " and " + fk::to_text(k.k1.size()));
  FK_CHECK(
      z0 > 0 && layer_thickness >= 0 && layer_samples >= 1, who,
      "z0 > 0, a layer thickness >= 0 and >= 1 layer sample",
      fk::to_text(z0) + ", " + fk::to_text(layer_thickness) + ", " + fk::to_text(layer_samples));
  const int64_t m0 = sources.shape()[0], m1 = sources.shape()[1];
  const int64_t n0 = sensors.shape()[0], n1 = sensors.shape()[1];
  const auto hs = sources.spacing(), ho = sensors.spacing();
  const double scale = mu0 / (4 * std::numbers::pi) * hs[0] * hs[1] / layer_samples;
  std::vector<double> zs;
  for (int s = 0; s < layer_samples; ++s)
    zs.push_back(z0 + layer_thickness * (s + 0.5) / layer_samples);
  MagneticField B{std::vector<double>(n0 * n1), std::vector<double>(n0 * n1),
                  std::vector<double>(n0 * n1)};
  fk::parallel_for(0, n0, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t a = lo; a < hi; ++a)
      for (int64_t b = 0; b < n1; ++b) {
        const double x0 = (a + 0.5) * ho[0], x1 = (b + 0.5) * ho[1];
        double s0 = 0, s1 = 0, sz = 0;
        for (double z : zs)
          for (int64_t i = 0; i < m0; ++i) {
            const double d0 = x0 - (i + 0.5) * hs[0];
            for (int64_t j = 0; j < m1; ++j) {
              const double d1 = x1 - (j + 0.5) * hs[1];
              const double r2 = d0 * d0 + d1 * d1 + z * z;
              const double inv_r3 = 1.0 / (r2 * std::sqrt(r2));
              const double K0 = k.k0[i * m1 + j], K1 = k.k1[i * m1 + j];
              // K x R with R = (d0, d1, z) and K in the plane.
              s0 += K1 * z * inv_r3;
              s1 -= K0 * z * inv_r3;
              sz += (K0 * d1 - K1 * d0) * inv_r3;
            }
          }
        B.b0[a * n1 + b] = scale * s0;
        B.b1[a * n1 + b] = scale * s1;
        B.bz[a * n1 + b] = scale * sz;
      }
  });
  return B;
}

}  // namespace nefi
