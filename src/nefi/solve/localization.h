#pragma once
// Localisation metrics for point-source scenes (NeTMY App. E.3), host f64:
//   hungarian_assignment  the minimum-cost assignment of a rows x cols cost
//                         matrix (Kuhn-Munkres with potentials, O(n^2 m));
//                         every row of the smaller side is assigned
//   peak_positions        local maxima of a 2-D map (8-neighbourhood) above
//                         threshold * max; on a plateau only the first cell
//                         in C order counts
//   hungarian_f1          peaks of the reconstruction matched one-to-one to
//                         the true source pixels by minimum total distance;
//                         a pair within `radius` pixels is a true positive;
//                         F1 = 2 TP / (n_pred + n_true) (1 when both empty)
//   gmsd                  gradient magnitude similarity deviation (Xue et
//                         al. 2014): Prewitt magnitudes m1, m2 of the two
//                         maps (each scaled to max 1), GMS = (2 m1 m2 + c) /
//                         (m1^2 + m2^2 + c), GMSD = std(GMS); 0 is identical
//   sliced_wasserstein    the two maps as mass distributions (negative
//                         values clipped, each scaled to unit mass) over
//                         pixel centres in units of the longer side, the
//                         root mean square of their 1-D Wasserstein-2
//                         distances along n_proj evenly spaced directions
//                         theta_k = pi (k + 1/2) / n_proj
#include <cstdint>
#include <utility>
#include <vector>

#include "fk/shape.h"

namespace nefi {

// cost: rows x cols, C order. Returns, for each row, its column (-1 when the
// row is unassigned because rows > cols).
std::vector<int64_t> hungarian_assignment(const std::vector<double>& cost, int64_t rows,
                                          int64_t cols);

// (row, col) of the peaks of `map` (H, W), strongest first.
std::vector<std::pair<int64_t, int64_t>> peak_positions(const std::vector<double>& map,
                                                        const fk::Dims& shape, double threshold);

struct PeakMatch {
  int64_t true_positives = 0, n_pred = 0, n_true = 0;
  double f1 = 0;
  // Mean distance of the true positives (px); NaN without one (a method that
  // matched nothing is not closest).
  double mean_distance = 0;
};
PeakMatch hungarian_f1(const std::vector<std::pair<int64_t, int64_t>>& pred,
                       const std::vector<std::pair<int64_t, int64_t>>& truth, double radius);

double gmsd(const std::vector<double>& x, const std::vector<double>& ref, const fk::Dims& shape,
            double c = 0.0026);
double sliced_wasserstein(const std::vector<double>& x, const std::vector<double>& ref,
                          const fk::Dims& shape, int n_proj = 128);

}  // namespace nefi
