#pragma once
// Where a bring-your-own problem's heads start and what they span
// (auto_problem.h's head): the constants that best explain the data under
// each field's head range, by a closed form for one field of known
// homogeneity, else a search over a grid of constants one field at a time;
// and how far a data-only fit departs from them. The model runs on
// host f64 constants; outputs that are not finite mark a constant the model
// cannot take.
#include <string>
#include <vector>

#include "fk/tensor.h"
#include "nefi/byop/prior.h"
#include "nefi/operators/operator.h"

namespace nefi {

// Mask-weighted mean of (a - b)^2 and inner products, on host vectors.
struct Weighted {
  std::vector<double> y, w;
  double wsum = 0;
  double misfit(const std::vector<double>& p) const;
  double dot(const std::vector<double>& a, const std::vector<double>& b) const;
};

// The fields the constant fit tries: field i is c inside its known support
// (everywhere without one) and its fill outside.
struct ConstantFields {
  fk::Dims shape;
  std::vector<std::string> names;
  std::vector<fk::Tensor> support;  // f64; undefined: none
  std::vector<double> fill;
  fk::Tensor make(size_t i, double c) const;
};

struct ConstantFit {
  std::vector<double> c;  // one per field
  double misfit = 0;
  std::string how;
};

// The constant fields that best explain the data under the heads' ranges:
// for one field of known homogeneity in closed form, else a search over
// each field's grid in turn, the others held (one sweep from the neutral
// starts). A conserved field's constant is its total over its cells.
// Throws fk::Error naming `model` when no constant gives finite outputs.
ConstantFit fit_constants(const Operator& op, const ConstantFields& k, const Weighted& d,
                          const std::vector<PriorSpec>& priors, const std::string& model);

// The misfit's gradient in each field (f64 maps of k.shape, by autograd
// through the model, grad mode on whatever the caller's; no .grad is
// touched) at the constant fields c: where the data first pull each field
// up (negative) or down (positive); 0 where it is not finite, and for a
// field the model does not read. A parametric field starts its shapes at
// the strongest extrema.
std::vector<fk::Tensor> misfit_gradient_at(const Operator& op, const ConstantFields& k,
                                           const Weighted& d, const std::vector<double>& c);

// How far each field departs from its constant c[i] to explain the data
// (auto_problem.h's head scale), in its head's output z (the field is
// c + M z under a known support M, c + z without): the largest |z| of a
// data-only fit from c. For a linear model (homogeneity 1 and additive:
// F(a + b) = F(a) + F(b)), CGLS on the mask-weighted least squares over
// the scaled fields jointly (the others held), stopped at the noise floor
// (misfit <= sigma^2, 0 when c is already there) or after
// kDepartureIterations; otherwise one steepest-descent step of field i
// alone (the others held), the best of a log grid of step sizes (1e-8 to
// 1e4, stopping once the misfit rises past its best). A field of zero
// mean, or of sparse spikes, departs from its best constant by far more
// than |c|. 0 where no step lowers the misfit, and for fields whose head
// takes no scale (`scaled` false); all 0 with `failure` set (the
// fk::Error's text) when the model fails on an iterate or its gradient.
constexpr int kDepartureIterations = 10;
struct Departures {
  std::vector<double> values;
  std::string failure;
};
// nonnegative[i] (empty: none): field i's prior keeps it >= 0, and the
// nonlinear model's steps are clipped there (a model defined only on the
// prior's values was called below 0, refused, and the scale fell).
Departures departure_scales(const Operator& op, const ConstantFields& k, const Weighted& d,
                            const std::vector<double>& c, double sigma,
                            const std::vector<bool>& scaled,
                            const std::vector<bool>& nonnegative = {});

// What each field's head spans (auto_problem.h's head): the prior's
// scale(v), else `given` (a batch's shared start; empty: none), else the
// larger of |c[i]| and its departure (1 where both are 0). why[i]: the
// reason, empty for a head that takes no scale (ranged, positive or
// conserved: its scale is |c[i]| or the prior's, unused).
struct HeadScales {
  std::vector<double> scales;
  std::vector<std::string> why;
};
HeadScales head_scales(const Operator& op, const ConstantFields& k, const Weighted& d,
                       const std::vector<double>& c, double sigma,
                       const std::vector<PriorSpec>& priors, const std::vector<double>& given);

}  // namespace nefi
