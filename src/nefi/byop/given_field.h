#pragma once
// The field from_forward builds for a representation that takes nothing
// from the data: hash, lowrank, spectral, layers or grid (neural's network
// follows the grid's size, in auto_problem.cpp; the parametric shapes start
// where the data pull, in parametric_choice.h). The decision's reason comes
// with it.
#include <memory>
#include <string>
#include <vector>

#include "nefi/byop/auto_problem.h"
#include "nefi/field/field.h"
#include "nefi/field/heads.h"

namespace nefi {

struct GivenField {
  std::shared_ptr<Field> field;
  std::string why;  // the representation decision's reason
};

// Throws fk::Error naming the option unless o.representation is one
// from_forward knows and its options (rank, modes, smoothness, shapes,
// harmonics, layers, layer_axis, vertices) suit a field of `shape`.
void check_representation_options(const AutoOptions& o, const fk::Dims& shape);

// heads: one per field (the priors' order); o.representation one of those
// five (auto_problem checks it).
GivenField given_field(const AutoOptions& o, const Domain& domain,
                       const std::vector<HeadPtr>& heads);

}  // namespace nefi
