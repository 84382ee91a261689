#pragma once
// Coordinate rows for the coords tests: a flat list of int32 values as an
// N x width tensor.
#include <cstdint>
#include <vector>

#include "fk/factory.h"
#include "fk/tensor.h"

namespace minkowski {

inline fk::Tensor coords(const std::vector<int32_t>& v, int width) {
  return fk::from_vector(v, fk::Dims{static_cast<int64_t>(v.size()) / width, width});
}

}  // namespace minkowski
