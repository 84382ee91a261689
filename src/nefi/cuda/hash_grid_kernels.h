#pragma once
// Launchers of the hash-grid encoding's kernels (hash_grid.cu), on device
// buffers with a stream (a cudaStream_t as void*), no CUDA types. Points are
// (n, ndim) f32 coordinates, the table (entries, F) f32, the encoding
// (n, levels F) f32; level_weight holds one f32 per level on the device (the
// annealing window: a level at 0 gives zeros forward and no gradient, as on
// the CPU). The forward gives the CPU's bits (field/hash_grid_field.cpp), and
// so does the gradient of a row of at most kHashGridChunk contributions
// (longer rows sum in chunks): the arithmetic is hash_grid_cells.h's, each
// sum in the CPU's order, no atomics and no fused multiply-adds
// (--fmad=false).
#include <cstdint>

#include "nefi/cuda/hash_grid_cells.h"

namespace nefi::cuda {

// A layout's levels (field/hash_grid_field.h's HashGridLayout), by value.
struct HashGridLevels {
  HashGridLevel level[kHashGridMaxLevels];
  int count = 0;     // levels
  int features = 0;  // F
  int ndim = 0;      // 1, 2 or 3
};

// y[i, l F + f] = sum over the 2^ndim vertices k of point i's cell at level l
// of (weight_k level_weight[l]) table[row_k, f], k ascending. One thread per
// (point, level).
void launch_hash_grid_encode(const HashGridLevels& levels, int64_t n, const float* coords,
                             const float* table, const float* level_weight, float* y, void* stream);

// Contributions summed by one thread of the table's gradient: a row with
// more (a coarse level's vertex is in thousands of cells' corners) is
// summed in chunks, then the chunks' sums in order.
constexpr int64_t kHashGridChunk = 64;

// The points' inverse map on the device: table row e's contributions are
// [start[e], start[e + 1]), each (i << ndim) | k for vertex k of point i's
// cell, in (point, vertex) order; its chunks (kHashGridChunk contributions,
// the last one shorter) are [chunk_start[e], chunk_start[e + 1]), chunk j
// of row chunk_row[j].
struct HashGridInverse {
  const int64_t* start = nullptr;
  const int32_t* contribution = nullptr;
  const int64_t* chunk_start = nullptr;
  const int32_t* chunk_row = nullptr;
  int64_t entries = 0, chunks = 0;
};

// The table's gradient from g (n, levels F) into grad_table (entries, F),
// deterministic: each chunk sums (weight_k level_weight[l]) g[i, l F + f]
// in its order into partial (chunks, F), one thread per chunk; then each
// row sums its chunks in order, one thread per row and feature (zero where nothing
// reaches it). A row of one chunk is the CPU backward's sum, bit for bit.
void launch_hash_grid_encode_backward(const HashGridLevels& levels, const HashGridInverse& inv,
                                      const float* coords, const float* level_weight,
                                      const float* g, float* partial, float* grad_table,
                                      void* stream);

}  // namespace nefi::cuda
