#pragma once
// The order every max reduction of minkowski keeps (local, global and
// quantization max pooling, on the CPU and the device): v replaces the
// running max when it is greater, or when it is a NaN and the running max is
// not. A NaN anywhere in a group is the group's max, as torch's max and
// max_pool give; `>` alone kept a NaN only in a group's first row, so the
// result hung on the row order. Ties keep the first row.

#ifdef __CUDACC__
#define MINKOWSKI_HOST_DEVICE __host__ __device__
#else
#define MINKOWSKI_HOST_DEVICE
#endif

namespace minkowski {

template <typename T>
MINKOWSKI_HOST_DEVICE inline bool replaces_max(T v, T acc) {
  return !(v <= acc) && acc == acc;
}

}  // namespace minkowski

#undef MINKOWSKI_HOST_DEVICE
