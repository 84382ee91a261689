#pragma once
// The parametric field from_forward builds for representation blobs,
// ellipses, stars, polygons, layers+blobs or layers+ellipses: the options as a
// ParametricConfig, the shapes started where the data pull the starting
// fields hardest (as the heads pass it on: not outside a known support, and
// less the mean for a zero-mean field, which starts at 0), and the
// decision's reason.
#include <memory>
#include <string>
#include <vector>

#include "nefi/byop/auto_problem.h"
#include "nefi/byop/constant_fit.h"
#include "nefi/field/parametric_field.h"
#include "nefi/operators/operator.h"

namespace nefi {

struct ParametricChoice {
  std::shared_ptr<ParametricField> field;
  std::string why;  // the representation decision's reason
};

// shape: the field's grid; heads: one per field (priors' order); k, d: the
// constant fit's fields and weighted data; c: the fitted constants.
ParametricChoice parametric_choice(const AutoOptions& o, const fk::Dims& shape,
                                   const std::vector<HeadPtr>& heads, const Operator& op,
                                   const ConstantFields& k, const Weighted& d,
                                   const std::vector<double>& c,
                                   const std::vector<PriorSpec>& priors);

}  // namespace nefi
