// Small host-side helpers shared by the device dispatch files.
#pragma once

#include <cstdint>
#include <vector>

#include "fk/factory.h"
#include "fk/tensor.h"

namespace minkowski::cuda_dispatch {

// Calls f(T{}) with T the kernels' compute type for t: double for f64,
// float otherwise (16-bit features are converted to f32 before dispatch).
template <typename F>
void with_type(const fk::Tensor& t, F&& f) {
  if (t.dtype() == fk::DType::F64)
    f(double{});
  else
    f(float{});
}

// A host vector as a 1-D tensor on `device`.
template <typename T>
fk::Tensor upload(const std::vector<T>& v, const fk::Device& device) {
  return fk::from_vector(v, fk::Dims{static_cast<int64_t>(v.size())}, device);
}

}  // namespace minkowski::cuda_dispatch
