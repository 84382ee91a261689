// The convolution's data movement (f32): gathering feature rows into a
// staging buffer in 16-, 8- or 4-byte chunks, and scatter-accumulating staged
// rows back, with atomics or in a fixed order over a CSR of destination rows.
#include <cstdint>

#include "fk/cuda/common.cuh"
#include "minkowski/cuda/kernels.h"

namespace minkowski::cuda {

namespace {

using fk::cuda::detail::as_stream;
using fk::cuda::detail::blocks_for;
using fk::cuda::detail::check_launch;
using fk::cuda::detail::kThreads;

// One chunk of V floats per thread: staged row p, chunk c.
template <typename Chunk>
__global__ void gather_kernel(const float* src, int64_t ld, const int32_t* rows, int64_t n,
                              int64_t chunks_per_row, float* staged) {
  constexpr int V = sizeof(Chunk) / sizeof(float);
  FK_CUDA_LOOP(i, n * chunks_per_row) {
    const int64_t p = i / chunks_per_row, c = i - p * chunks_per_row;
    const Chunk* s = reinterpret_cast<const Chunk*>(src + rows[p] * ld) + c;
    reinterpret_cast<Chunk*>(staged + p * chunks_per_row * V)[c] = *s;
  }
}

template <typename Chunk>
__global__ void scatter_atomic_kernel(const float* staged, const int32_t* rows, int64_t n,
                                      int64_t chunks_per_row, float* dst) {
  constexpr int V = sizeof(Chunk) / sizeof(float);
  FK_CUDA_LOOP(i, n * chunks_per_row) {
    const int64_t p = i / chunks_per_row, c = i - p * chunks_per_row;
    const Chunk v = reinterpret_cast<const Chunk*>(staged + p * chunks_per_row * V)[c];
    const float* f = reinterpret_cast<const float*>(&v);
    float* d = dst + rows[p] * chunks_per_row * V + c * V;
#pragma unroll
    for (int e = 0; e < V; ++e) atomicAdd(d + e, f[e]);
  }
}

// Thread (r, c): row r's entries in order, chunk c of the channels.
template <typename Chunk>
__global__ void scatter_ordered_kernel(const float* staged, int64_t p0, int64_t p1,
                                       const int32_t* begin, const int32_t* pair, int64_t n_rows,
                                       int64_t chunks_per_row, float* dst) {
  constexpr int V = sizeof(Chunk) / sizeof(float);
  FK_CUDA_LOOP(i, n_rows * chunks_per_row) {
    const int64_t r = i / chunks_per_row, c = i - r * chunks_per_row;
    const int64_t cols = chunks_per_row * V;
    float acc[V];
    const Chunk d0 = reinterpret_cast<const Chunk*>(dst + r * cols)[c];
    const float* d0f = reinterpret_cast<const float*>(&d0);
#pragma unroll
    for (int e = 0; e < V; ++e) acc[e] = d0f[e];
    bool any = false;
    for (int32_t q = begin[r]; q < begin[r + 1]; ++q) {
      const int64_t p = pair[q];
      if (p < p0) continue;
      if (p >= p1) break;  // entries ascend
      const Chunk v = reinterpret_cast<const Chunk*>(staged + (p - p0) * cols)[c];
      const float* f = reinterpret_cast<const float*>(&v);
#pragma unroll
      for (int e = 0; e < V; ++e) acc[e] += f[e];
      any = true;
    }
    if (any) {
      Chunk out;
      float* o = reinterpret_cast<float*>(&out);
#pragma unroll
      for (int e = 0; e < V; ++e) o[e] = acc[e];
      reinterpret_cast<Chunk*>(dst + r * cols)[c] = out;
    }
  }
}

bool aligned(const void* p, int64_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(bytes) == 0;
}

// The widest chunk (floats) that divides the row and keeps every pointer aligned.
int chunk_floats(int64_t cols, int64_t ld, const void* a, const void* b) {
  for (int v : {4, 2}) {
    if (cols % v == 0 && ld % v == 0 && aligned(a, v * 4) && aligned(b, v * 4)) return v;
  }
  return 1;
}

// Calls f(Tag<Chunk>) for a chunk of v floats.
template <typename F>
void with_chunk(int v, F&& f) {
  using fk::cuda::detail::Tag;
  if (v == 4) return f(Tag<float4>{});
  if (v == 2) return f(Tag<float2>{});
  return f(Tag<float>{});
}

}  // namespace

void launch_gather_rows(const float* src, int64_t ld, const int32_t* rows, int64_t n, int64_t cols,
                        float* staged, void* stream) {
  if (n == 0 || cols == 0) return;
  const int v = chunk_floats(cols, ld, src, staged);
  with_chunk(v, [&](auto tag) {
    using Chunk = typename decltype(tag)::type;
    gather_kernel<Chunk><<<blocks_for(n * (cols / v)), kThreads, 0, as_stream(stream)>>>(
        src, ld, rows, n, cols / v, staged);
  });
  check_launch("minkowski::cuda::launch_gather_rows");
}

void launch_scatter_add_atomic(const float* staged, const int32_t* rows, int64_t n, int64_t cols,
                               float* dst, void* stream) {
  if (n == 0 || cols == 0) return;
  const int v = chunk_floats(cols, cols, staged, staged);
  with_chunk(v, [&](auto tag) {
    using Chunk = typename decltype(tag)::type;
    scatter_atomic_kernel<Chunk><<<blocks_for(n * (cols / v)), kThreads, 0, as_stream(stream)>>>(
        staged, rows, n, cols / v, dst);
  });
  check_launch("minkowski::cuda::launch_scatter_add_atomic");
}

void launch_scatter_add_ordered(const float* staged, int64_t p0, int64_t p1, const int32_t* begin,
                                const int32_t* pair, int64_t n_rows, int64_t cols, float* dst,
                                void* stream) {
  if (n_rows == 0 || cols == 0 || p1 <= p0) return;
  const int v = chunk_floats(cols, cols, staged, dst);
  with_chunk(v, [&](auto tag) {
    using Chunk = typename decltype(tag)::type;
    scatter_ordered_kernel<Chunk>
        <<<blocks_for(n_rows * (cols / v)), kThreads, 0, as_stream(stream)>>>(
            staged, p0, p1, begin, pair, n_rows, cols / v, dst);
  });
  check_launch("minkowski::cuda::launch_scatter_add_ordered");
}

}  // namespace minkowski::cuda
