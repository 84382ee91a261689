#pragma once
// Device buffers of the coordinate code (device_kernel_map.cpp,
// device_coordinates.cpp): 1-D i32 / u64 tensors on a CUDA device, their raw
// pointers, and a cleared hash table sized for n keys.
#include <cstdint>

#include "fk/factory.h"
#include "fk/tensor.h"
#include "minkowski/cuda/kernels.h"

namespace minkowski::cuda::buffers {

inline fk::Tensor device_i32(int64_t n, int device) {
  return fk::empty({n}, {fk::DType::I32, fk::cuda_device(device)});
}
// u64 values live in I64 tensors (fk has no unsigned 64-bit dtype).
inline fk::Tensor device_u64(int64_t n, int device) {
  return fk::empty({n}, {fk::DType::I64, fk::cuda_device(device)});
}
inline int32_t* i32(const fk::Tensor& t) {
  return t.data<int32_t>();
}
inline uint64_t* u64(const fk::Tensor& t) {
  return static_cast<uint64_t*>(t.data_ptr());
}

// The table: the smallest power of two >= 2 n slots (at least 16), cleared.
struct DeviceTable {
  fk::Tensor keys, values;
  HashTable t;
  DeviceTable(int64_t n, int device, void* stream) {
    int64_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    keys = device_u64(cap, device);
    values = device_i32(cap, device);
    t = {u64(keys), i32(values), cap};
    launch_hash_clear(t, stream);
  }
};

}  // namespace minkowski::cuda::buffers
