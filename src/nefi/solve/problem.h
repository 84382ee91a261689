#pragma once
// InverseProblem: what a solve needs — the domain, the field (the prior), the
// operator (the physics), the losses and the measurement.
#include <memory>
#include <string>
#include <vector>

#include "nefi/domain.h"
#include "nefi/field/field.h"
#include "nefi/losses/loss.h"
#include "nefi/measurement.h"
#include "nefi/operators/operator.h"
#include "nefi/solve/postprocess.h"

namespace nefi {

struct InverseProblem {
  std::string name;
  Domain domain;
  std::shared_ptr<Field> field;
  OperatorPtr op;
  LossSet losses;
  Measurement measurement;
  std::vector<PostprocessPtr> postprocess;  // run in order on the final fields
};

}  // namespace nefi
