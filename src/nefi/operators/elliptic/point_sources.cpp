#include "nefi/operators/elliptic/point_sources.h"

#include <algorithm>
#include <cmath>

#include "fk/error.h"

namespace nefi::elliptic {

std::vector<double> point_source_rhs(const EllipticGrid& g,
                                     const std::vector<PointSource>& sources) {
  g.validate();
  const int d = g.ndim();
  double volume = 1;
  for (int a = 0; a < d; ++a) volume *= g.spacing[a];
  std::vector<double> rhs(g.numel(), 0.0);
  for (const PointSource& s : sources) {
    FK_CHECK(static_cast<int>(s.position.size()) == d, "nefi::elliptic::point_source_rhs",
             "a position of " + fk::to_text(d) + " coordinates", fk::to_text(s.position.size()));
    int64_t lo[3] = {0, 0, 0};
    double frac[3] = {0, 0, 0};
    for (int a = 0; a < d; ++a) {
      const double len = g.shape[a] * g.spacing[a], x = s.position[a];
      FK_CHECK(x >= 0 && x <= len, "nefi::elliptic::point_source_rhs",
               "a position inside [0, " + fk::to_text(len) + "] on axis " + fk::to_text(a),
               fk::to_text(x));
      // In units of cells from the first centre, clamped to the centres' range.
      const double c = std::clamp(x / g.spacing[a] - 0.5, 0.0, double(g.shape[a] - 1));
      lo[a] = std::min<int64_t>(static_cast<int64_t>(std::floor(c)),
                                std::max<int64_t>(g.shape[a] - 2, 0));
      frac[a] = g.shape[a] > 1 ? c - lo[a] : 0.0;
    }
    for (int corner = 0; corner < (1 << d); ++corner) {
      double w = s.strength / volume;
      int64_t idx = 0;
      for (int a = 0; a < d; ++a) {
        const int bit = (corner >> a) & 1;
        if (bit && g.shape[a] == 1) w = 0;
        w *= bit ? frac[a] : 1.0 - frac[a];
        idx += (lo[a] + bit) * g.stride(a);
      }
      if (w != 0) rhs[idx] += w;
    }
  }
  return rhs;
}

}  // namespace nefi::elliptic
