#pragma once
// The reference's parameter groups on fieldkit's flat buffers: each named
// parameter's learning-rate multiplier from OptimConfig::lr_mult (the
// longest matching prefix; 1 when none matches) and 0 where a prefix of the
// stage's freeze list matches, as LrSegment runs of the solver's parameter
// buffers (the field's flat buffer, then each operator parameter).
//   names  "field.<name>" per FlatParams entry (field.layer0.weight,
//          field.out.bias, field.table, field.values, ...), "operator.<k>"
//          for the k-th operator parameter
// A prefix (lr_mult's or freeze's) that matches no name of this problem nor
// of another field kind (field.values, field.table, field.layer*,
// field.out*, operator.*) is an fk::Error listing the names, so a typo never
// silently trains everything; one written for another method's field trains
// nothing here. The Solver checks every stage's before the first step.
#include <string>
#include <vector>

#include "nefi/field/field.h"
#include "nefi/operators/operator.h"
#include "nefi/solve/curriculum.h"
#include "nefi/solve/fused_optimizer.h"

namespace nefi {

// The solver's parameter names, in buffer order (field entries, then operator parameters).
std::vector<std::string> parameter_names(const Field& field, const Operator& op);

// Throws fk::Error naming the first prefix (optim.lr_mult's, then each
// stage's freeze) that is a typo by the rule above.
void check_lr_groups(const Field& field, const Operator& op, const OptimConfig& optim,
                     const std::vector<Stage>& stages);

// One segment list per buffer of {field.params().flat(), op.parameters()...};
// all empty when every multiplier is 1 (the plain step).
std::vector<std::vector<LrSegment>> lr_segments(const Field& field, const Operator& op,
                                                const OptimConfig& optim, const Stage& stage);

}  // namespace nefi
