#pragma once
// Tensor factories. New tensors are C-contiguous; their memory comes from the
// device's caching allocator.
#include <complex>
#include <vector>

#include "fk/tensor.h"

namespace fk {

struct TensorOptions {
  DType dtype = DType::F32;
  Device device = kCPU;
  bool requires_grad = false;
};

Tensor empty(const Dims& shape, TensorOptions o = {});
Tensor zeros(const Dims& shape, TensorOptions o = {});
Tensor ones(const Dims& shape, TensorOptions o = {});
Tensor full(const Dims& shape, double value, TensorOptions o = {});
Tensor full(const Dims& shape, c128 value, TensorOptions o);
// arange, linspace and eye compute their values on the host (in f64) and copy
// them to o.device, so a CUDA tensor holds exactly the CPU's values (as the
// generators of fk/random.h do).
// [start, end) in steps of `step` (i64 by default, like NumPy's integer arange).
Tensor arange(double start, double end, double step = 1.0, TensorOptions o = {DType::I64});
Tensor arange(int64_t end, TensorOptions o = {DType::I64});
// `steps` points from start to end inclusive.
Tensor linspace(double start, double end, int64_t steps, TensorOptions o = {});
Tensor eye(int64_t n, TensorOptions o = {});
// A 0-dim tensor.
Tensor scalar_tensor(double value, TensorOptions o = {});

// Copies host data (row-major) into a new tensor; data.size() must equal the shape's numel.
template <typename T>
Tensor from_vector(const std::vector<T>& data, const Dims& shape, Device device = kCPU);
template <typename T>
Tensor from_vector(const std::vector<T>& data) {
  return from_vector(data, Dims{static_cast<int64_t>(data.size())});
}
// Copies n elements of type `dtype` from a host pointer.
Tensor from_blob_copy(const void* data, const Dims& shape, DType dtype, Device device = kCPU);

Tensor empty_like(const Tensor& t);
Tensor empty_like(const Tensor& t, DType dtype);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, double value);

// Fills every element of t (any layout) with value; bumps the version.
void fill_(Tensor& t, double value);
void fill_(Tensor& t, c128 value);

}  // namespace fk
