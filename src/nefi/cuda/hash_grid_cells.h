#pragma once
// The per-point arithmetic of the hash-grid encoding: one level's cell of a
// point, its 2^D vertices' table rows and multilinear weights. Host and
// device functions alike: the CPU's encode and inverse map
// (field/hash_grid_field.cpp) and the device kernels (hash_grid.cu, built
// with --fmad=false) compute the same float roundings from this one code.
#include <cstdint>

#include "nefi/cuda/host_device.h"

namespace nefi::cuda {

// The most levels a layout has (hash_grid_layout checks it).
constexpr int kHashGridMaxLevels = 32;

// One level's constants.
struct HashGridLevel {
  float res = 0;
  int64_t last = 0;                          // res - 1: the last cell
  int64_t row_stride = 0, plane_stride = 0;  // dense vertex strides along axes 1 and 2
  int64_t offset = 0;                        // first table row
  uint32_t table = 0;                        // rows
  bool hashed = false;
};

// Instant-NGP's primes; the first axis is not multiplied (coherent rows).
NEFI_HOST_DEVICE inline uint32_t hash_grid_prime(int axis) {
  return axis == 0 ? 1u : axis == 1 ? 2654435761u : 805459861u;
}

// Point x's cell at level c: its lower vertex base and the fractions along
// each axis, the position clamp((x + 1) / 2, 0, 1) res spelled as std::clamp
// and std::min compare.
template <int D>
NEFI_HOST_DEVICE inline void hash_grid_cell(const float* x, const HashGridLevel& c, int64_t* base,
                                            float* frac) {
  for (int a = 0; a < D; ++a) {
    const float u = (x[a] + 1.0f) * 0.5f;
    const float p = (u < 0.0f ? 0.0f : 1.0f < u ? 1.0f : u) * c.res;
    const auto cell = static_cast<int64_t>(p);
    base[a] = c.last < cell ? c.last : cell;
    frac[a] = p - static_cast<float>(base[a]);
  }
}

// Vertex k's multilinear weight (axis a on its upper side where bit a of k
// is set): the product in axis order.
template <int D>
NEFI_HOST_DEVICE inline float hash_grid_vertex_weight(const float* frac, int k) {
  float w = 1;
  for (int a = 0; a < D; ++a) w *= (k >> a) & 1 ? frac[a] : 1 - frac[a];
  return w;
}

// Point x's cell at level c: vertex k is table row row[k] with weight weight[k].
template <int D>
NEFI_HOST_DEVICE inline void hash_grid_corners(const float* x, const HashGridLevel& c, int64_t* row,
                                               float* weight) {
  int64_t base[D];
  float frac[D];
  hash_grid_cell<D>(x, c, base, frac);
  for (int k = 0; k < (1 << D); ++k) {
    uint32_t h = 0;
    int64_t dense = 0;
    for (int a = 0; a < D; ++a) {
      const int64_t v = base[a] + ((k >> a) & 1);
      h ^= static_cast<uint32_t>(v) * hash_grid_prime(a);
      dense += v * (a == 0 ? 1 : a == 1 ? c.row_stride : c.plane_stride);
    }
    row[k] = c.offset + (c.hashed ? static_cast<int64_t>(h % c.table) : dense);
    weight[k] = hash_grid_vertex_weight<D>(frac, k);
  }
}

}  // namespace nefi::cuda
