#pragma once
// The hash-grid encoding on a CUDA device (cuda/hash_grid_device.cpp,
// kernels in cuda/hash_grid.cu); CPU-only builds refuse it
// (hash_grid_device_stub.cpp). HashGridField::forward comes here when its
// table lives on a device.
#include <cstdint>
#include <memory>

#include "fk/device.h"
#include "fk/tensor.h"
#include "nefi/field/hash_grid_field.h"

namespace nefi {

// A point set on a device with its inverse map: for each table row, which
// (point, vertex) pairs reach it, in the CPU backward's order of sums (the
// layout of cuda::HashGridInverse). Built on the host once per point set (a
// stage's grid) from the same cell arithmetic as the encoding. Memory, on
// the host while it is built and on the device: 4 bytes per (point, level,
// vertex) (a 256^2 grid of 12 levels: 12.6 MB; 128^3: 805 MB), 16 per table
// row and 4 per chunk of kHashGridChunk contributions.
struct HashGridPoints {
  fk::Tensor coords;                  // (N, ndim) f32
  fk::Tensor start, contribution;     // (entries + 1) i64, (N levels 2^ndim) i32
  fk::Tensor chunk_start, chunk_row;  // (entries + 1) i64, (chunks) i32
  int64_t chunks = 0;
};

// coords (N, ndim) f32 on the host, (N << ndim) below 2^31.
std::shared_ptr<const HashGridPoints> hash_grid_points(const fk::Tensor& coords,
                                                       const HashGridLayout& layout,
                                                       fk::Device device);

// hash_grid_encode for the points on their device: table (entries, F) f32
// there, level_weight (levels) f32 there (read by the kernels when they
// run: rewriting it in place retargets a captured graph). Forward gives the
// CPU's bits; the table's gradient is deterministic, the CPU's bits for a
// row with at most cuda::kHashGridChunk contributions (a longer row sums in
// chunks, then the chunks in order).
fk::Tensor hash_grid_encode_device(std::shared_ptr<const HashGridPoints> points,
                                   const fk::Tensor& table, const HashGridLayout& layout,
                                   const fk::Tensor& level_weight);

}  // namespace nefi
