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

// n rows (batch, x, y, z) from a fixed LCG: batch 0 or 1, x and y in
// [-half, half), z in [0, 16). Duplicates are left in (the map merges them).
inline std::vector<int32_t> lcg_cloud(int n, uint32_t seed, int32_t half) {
  std::vector<int32_t> v;
  uint32_t s = seed;
  const uint32_t span = static_cast<uint32_t>(2 * half);
  for (int i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    v.insert(v.end(),
             {static_cast<int32_t>(s >> 31), static_cast<int32_t>((s >> 4) % span) - half,
              static_cast<int32_t>((s >> 12) % span) - half, static_cast<int32_t>((s >> 20) % 16)});
  }
  return v;
}

}  // namespace minkowski
