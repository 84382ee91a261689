#pragma once
// Small helpers shared by the indexing tests.
#include <string>
#include <vector>

#include "fk/fk.h"

namespace fk::index_test {

inline Tensor idx64(const std::vector<int64_t>& v, const Dims& shape) {
  return from_vector(v, shape);
}
inline Tensor idx32(const std::vector<int32_t>& v, const Dims& shape) {
  return from_vector(v, shape);
}

// Row-major flat offset of a 3-D coordinate.
inline int64_t at3(const Dims& s, int64_t i, int64_t j, int64_t k) {
  return (i * s[1] + j) * s[2] + k;
}

}  // namespace fk::index_test
