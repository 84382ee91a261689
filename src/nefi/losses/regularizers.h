#pragma once
// Regularisers on a named field x (means over cells, resolution-free):
//   L1                  mean |x|
//   TV(isotropic)       mean sqrt(sum_a (D_a x)^2 + eps^2)          (NeFTY Eq. 22)
//   TV(anisotropic)     mean sum_a sqrt((D_a x)^2 + eps^2)          (NeTMY Eq. 3)
//                       D_a a forward difference, divided by the physical
//                       spacing when use_spacing (the default, as in the
//                       reference: weights then hold across resolutions);
//                       periodic axes wrap, other axes have D_a = 0 on the
//                       last cell. One fused op forward and one backward.
//   Laplacian           mean (sum_a second difference / h_a^2)^2, zero-flux
//                       (replicated) edges; h_a = 1 without use_spacing
//   Tikhonov            mean x^2
//   RangePenalty(lo,hi) mean relu(lo - x)^2 + relu(x - hi)^2
//   Monotone(a, sign)   mean relu(-sign D_a x / h_a)^2 over the differences
//                       along axis a: zero on fields that never decrease
//                       (sign +1) or never increase (sign -1) along a
#include <vector>

#include "nefi/losses/loss.h"

namespace nefi {

struct TVOptions {
  bool isotropic = true;
  double eps = 1e-6;
  std::vector<int> periodic_axes;
  bool use_spacing = true;
  // Axes of the field that index components (a velocity's, say), not
  // space: no difference is taken along them (Operator::component_axes).
  std::vector<int> component_axes;
};

LossPtr l1_loss(std::string field = "x", std::string name = "l1");
LossPtr tv_loss(std::string field = "x", TVOptions opt = {}, std::string name = "tv");
// periodic_axes: grid axes whose edges wrap (the domain's length a period);
// the others keep zero flux (replicated edges). component_axes: axes that
// index components, not space (no second difference along them).
LossPtr laplacian_loss(std::string field = "x", bool use_spacing = true,
                       std::string name = "laplacian", std::vector<int> periodic_axes = {},
                       std::vector<int> component_axes = {});
LossPtr tikhonov_loss(std::string field = "x", std::string name = "tikhonov");
LossPtr range_penalty_loss(double lo, double hi, std::string field = "x",
                           std::string name = "range");
LossPtr monotone_loss(int axis, int sign = 1, std::string field = "x",
                      std::string name = "monotone");

// The fused total variation of x (shape = grid) with spacing h per axis.
fk::Tensor total_variation(const fk::Tensor& x, const std::vector<double>& h, const TVOptions& opt);
// The same for each row of x (N, *grid): (N), row b bitwise
// total_variation(x[b], h, opt). One op each way.
fk::Tensor total_variation_rows(const fk::Tensor& x, const std::vector<double>& h,
                                const TVOptions& opt);

}  // namespace nefi
