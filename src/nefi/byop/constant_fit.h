#pragma once
// The constant field a bring-your-own problem starts at (auto_problem.h's
// head scale): the constants that best explain the data under each field's
// head range, by a closed form for one field of known homogeneity, else a
// search over a grid of constants one field at a time. The model runs on
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

}  // namespace nefi
