#pragma once
// Small helpers shared by the join tests.
#include <string>
#include <vector>

#include "fk/fk.h"

namespace fk::join_test {

inline Tensor vec(const std::vector<double>& v, const Dims& shape) {
  return from_vector(v, shape);
}

}  // namespace fk::join_test
