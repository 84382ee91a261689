// The hash-grid encoding's kernels (hash_grid_kernels.h): forward one thread
// per (point, level); the table's gradient over the points' inverse map, one
// thread per chunk of a row's contributions, then one per row and feature. The arithmetic is
// hash_grid_cells.h's; built with
// --fmad=false (CMakeLists.txt) so that every product and sum rounds as the
// CPU's loops do.
#include <cstdint>

#include "fk/cuda/common.cuh"
#include "nefi/cuda/hash_grid_cells.h"
#include "nefi/cuda/hash_grid_kernels.h"

namespace nefi::cuda {
namespace {

using fk::cuda::detail::as_stream;
using fk::cuda::detail::blocks_for;
using fk::cuda::detail::check_launch;
using fk::cuda::detail::kThreads;

// Features are summed kGroup at a time, in registers (a run-time F would put
// a whole accumulator array in local memory); each sum keeps its order.
constexpr int kGroup = 4;

template <int D>
__global__ void encode_kernel(HashGridLevels L, int64_t n, const float* coords, const float* table,
                              const float* level_weight, float* y) {
  FK_CUDA_LOOP(t, n * L.count) {
    const int64_t i = t / L.count;
    const int l = static_cast<int>(t % L.count);
    const int F = L.features;
    float* yi = y + (i * L.count + l) * F;
    const float lw = level_weight[l];
    int64_t row[1 << D] = {};
    float weight[1 << D] = {};
    if (lw != 0.0f) {
      hash_grid_corners<D>(coords + i * D, L.level[l], row, weight);
      NEFI_UNROLL
      for (int k = 0; k < (1 << D); ++k) weight[k] *= lw;
    }
    for (int f0 = 0; f0 < F; f0 += kGroup) {
      float acc[kGroup] = {};  // an inactive level stays 0
      if (lw != 0.0f) {
        NEFI_UNROLL
        for (int k = 0; k < (1 << D); ++k) {
          const float* r = table + row[k] * F + f0;
          NEFI_UNROLL
          for (int j = 0; j < kGroup; ++j)
            if (f0 + j < F) acc[j] += weight[k] * r[j];
        }
      }
      NEFI_UNROLL
      for (int j = 0; j < kGroup; ++j)
        if (f0 + j < F) yi[f0 + j] = acc[j];
    }
  }
}

template <int D>
__global__ void chunk_sum_kernel(HashGridLevels L, HashGridInverse inv, const float* coords,
                                 const float* level_weight, const float* g, float* partial) {
  FK_CUDA_LOOP(j, inv.chunks) {
    const int64_t e = inv.chunk_row[j];
    int l = 0;
    while (l + 1 < L.count && L.level[l + 1].offset <= e) ++l;
    const int F = L.features;
    const int64_t width = static_cast<int64_t>(L.count) * F;
    const float lw = level_weight[l];
    const int64_t begin = inv.start[e] + (j - inv.chunk_start[e]) * kHashGridChunk;
    const int64_t end =
        begin + kHashGridChunk < inv.start[e + 1] ? begin + kHashGridChunk : inv.start[e + 1];
    for (int f0 = 0; f0 < F; f0 += kGroup) {
      float acc[kGroup] = {};
      if (lw != 0.0f) {
        for (int64_t c = begin; c < end; ++c) {
          const int64_t i = inv.contribution[c] >> D;
          const int k = inv.contribution[c] & ((1 << D) - 1);
          int64_t base[D];
          float frac[D];
          hash_grid_cell<D>(coords + i * D, L.level[l], base, frac);
          const float w = hash_grid_vertex_weight<D>(frac, k) * lw;
          const float* gi = g + i * width + l * F + f0;
          NEFI_UNROLL
          for (int q = 0; q < kGroup; ++q)
            if (f0 + q < F) acc[q] += w * gi[q];
        }
      }
      NEFI_UNROLL
      for (int q = 0; q < kGroup; ++q)
        if (f0 + q < F) partial[j * F + f0 + q] = acc[q];
    }
  }
}

__global__ void row_sum_kernel(int F, HashGridInverse inv, const float* partial, float* out) {
  FK_CUDA_LOOP(t, inv.entries * F) {
    const int64_t e = t / F;
    const int64_t first = inv.chunk_start[e], last = inv.chunk_start[e + 1];
    const int64_t f = t % F;
    float acc = first < last ? partial[first * F + f] : 0.0f;
    for (int64_t j = first + 1; j < last; ++j) acc += partial[j * F + f];
    out[t] = acc;
  }
}

}  // namespace

void launch_hash_grid_encode(const HashGridLevels& levels, int64_t n, const float* coords,
                             const float* table, const float* level_weight, float* y,
                             void* stream) {
  const unsigned blocks = blocks_for(n * levels.count);
  if (levels.ndim == 1)
    encode_kernel<1>
        <<<blocks, kThreads, 0, as_stream(stream)>>>(levels, n, coords, table, level_weight, y);
  else if (levels.ndim == 2)
    encode_kernel<2>
        <<<blocks, kThreads, 0, as_stream(stream)>>>(levels, n, coords, table, level_weight, y);
  else
    encode_kernel<3>
        <<<blocks, kThreads, 0, as_stream(stream)>>>(levels, n, coords, table, level_weight, y);
  check_launch("nefi::cuda::hash_grid_encode");
}

void launch_hash_grid_encode_backward(const HashGridLevels& levels, const HashGridInverse& inv,
                                      const float* coords, const float* level_weight,
                                      const float* g, float* partial, float* grad_table,
                                      void* stream) {
  if (inv.chunks > 0) {
    const unsigned blocks = blocks_for(inv.chunks);
    if (levels.ndim == 1)
      chunk_sum_kernel<1><<<blocks, kThreads, 0, as_stream(stream)>>>(levels, inv, coords,
                                                                      level_weight, g, partial);
    else if (levels.ndim == 2)
      chunk_sum_kernel<2><<<blocks, kThreads, 0, as_stream(stream)>>>(levels, inv, coords,
                                                                      level_weight, g, partial);
    else
      chunk_sum_kernel<3><<<blocks, kThreads, 0, as_stream(stream)>>>(levels, inv, coords,
                                                                      level_weight, g, partial);
    check_launch("nefi::cuda::hash_grid_chunk_sum");
  }
  row_sum_kernel<<<blocks_for(inv.entries * levels.features), kThreads, 0, as_stream(stream)>>>(
      levels.features, inv, partial, grad_table);
  check_launch("nefi::cuda::hash_grid_row_sum");
}

}  // namespace nefi::cuda
