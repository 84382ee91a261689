// The convolution's data movement (f32, f16, bf16, f64): gathering feature
// rows into a staging buffer in 16-, 8- or 4-byte chunks (4, 2 or 1 floats;
// 8, 4 or 2 halves; 2 or 1 doubles), and scatter-accumulating staged rows
// into accumulator rows (f32; f64 for f64 rows), with atomics or in a fixed
// order over a CSR of destination rows. Staged halves are widened to f32
// before they are added, so a sum over offsets rounds in f32, not in 16 bits;
// f64 rows are summed in f64 (an f32 sum would undo what f64 is asked for).
#include <cstdint>
#include <type_traits>

#include "fk/cuda/common.cuh"
#include "minkowski/cuda/kernels.h"

namespace minkowski::cuda {

namespace {

using fk::cuda::detail::as_stream;
using fk::cuda::detail::blocks_for;
using fk::cuda::detail::check_launch;
using fk::cuda::detail::kThreads;
using fk::cuda::detail::Num;
using fk::cuda::detail::Tag;

// V elements of T moved by one aligned load or store.
template <typename T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

// One chunk per thread: staged row p, chunk c (rows ld chunks apart in src).
template <typename Chunk>
__global__ void gather_kernel(const Chunk* src, int64_t ld, const int32_t* rows, int64_t n,
                              int64_t chunks_per_row, Chunk* staged) {
  FK_CUDA_LOOP(i, n * chunks_per_row) {
    const int64_t p = i / chunks_per_row, c = i - p * chunks_per_row;
    staged[p * chunks_per_row + c] = src[rows[p] * ld + c];
  }
}

// The accumulator's element type for staged rows of S.
template <typename S>
using Acc = std::conditional_t<std::is_same_v<S, double>, double, float>;

template <typename S, int V>
__global__ void scatter_atomic_kernel(const S* staged, const int32_t* rows, int64_t n,
                                      int64_t chunks_per_row, Acc<S>* dst) {
  FK_CUDA_LOOP(i, n * chunks_per_row) {
    const int64_t p = i / chunks_per_row, c = i - p * chunks_per_row;
    const Vec<S, V> v = reinterpret_cast<const Vec<S, V>*>(staged + p * chunks_per_row * V)[c];
    Acc<S>* d = dst + rows[p] * chunks_per_row * V + c * V;
#pragma unroll
    for (int e = 0; e < V; ++e) atomicAdd(d + e, static_cast<Acc<S>>(Num<S>::load(v.v[e])));
  }
}

// Thread (r, c): row r's entries in order, chunk c of the channels.
template <typename S, int V>
__global__ void scatter_ordered_kernel(const S* staged, int64_t p0, int64_t p1,
                                       const int32_t* begin, const int32_t* pair, int64_t n_rows,
                                       int64_t chunks_per_row, Acc<S>* dst) {
  FK_CUDA_LOOP(i, n_rows * chunks_per_row) {
    const int64_t r = i / chunks_per_row, c = i - r * chunks_per_row;
    const int64_t cols = chunks_per_row * V;
    Vec<Acc<S>, V> acc = reinterpret_cast<const Vec<Acc<S>, V>*>(dst + r * cols)[c];
    bool any = false;
    for (int32_t q = begin[r]; q < begin[r + 1]; ++q) {
      const int64_t p = pair[q];
      if (p < p0) continue;
      if (p >= p1) break;  // entries ascend
      const Vec<S, V> v = reinterpret_cast<const Vec<S, V>*>(staged + (p - p0) * cols)[c];
#pragma unroll
      for (int e = 0; e < V; ++e) acc.v[e] += static_cast<Acc<S>>(Num<S>::load(v.v[e]));
      any = true;
    }
    if (any) reinterpret_cast<Vec<Acc<S>, V>*>(dst + r * cols)[c] = acc;
  }
}

bool aligned(const void* p, int64_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(bytes) == 0;
}

// The widest chunk (16, 8 or 4 bytes, else one element) that divides the row
// and the row stride (elements of `esize` bytes) and keeps src and dst
// aligned, in elements.
int chunk_elements(int64_t esize, int64_t cols, int64_t ld, const void* src, const void* dst) {
  for (int64_t bytes : {16, 8, 4}) {
    const int64_t v = bytes / esize;
    if (v > 1 && cols % v == 0 && ld % v == 0 && aligned(src, bytes) && aligned(dst, bytes))
      return static_cast<int>(v);
  }
  return 1;
}

// Calls f(Tag<S>{}) with S the staged storage type of an fk dtype code.
template <typename F>
void with_staged_type(int dtype, const char* where, F&& f) {
  if (dtype == fk::cuda::kF32) return f(Tag<float>{});
  if (dtype == fk::cuda::kF16) return f(Tag<__half>{});
  if (dtype == fk::cuda::kBF16) return f(Tag<__nv_bfloat16>{});
  if (dtype == fk::cuda::kF64) return f(Tag<double>{});
  fk::cuda::detail::unsupported(where, "f32, f16, bf16 or f64", dtype);
}

// Calls f(std::integral_constant<int, V>{}) for a chunk of v elements of S
// (v as chunk_elements chose it: at most 16 bytes, so only the widths that
// fit are instantiated).
template <typename S, typename F>
void with_width(int v, F&& f) {
  if constexpr (sizeof(S) == 2) {
    if (v == 8) return f(std::integral_constant<int, 8>{});
  }
  if constexpr (sizeof(S) <= 4) {
    if (v == 4) return f(std::integral_constant<int, 4>{});
  }
  if (v == 2) return f(std::integral_constant<int, 2>{});
  return f(std::integral_constant<int, 1>{});
}

// Calls f(Tag<Chunk>{}) for a chunk of `bytes` bytes.
template <typename F>
void with_chunk_bytes(int64_t bytes, F&& f) {
  if (bytes == 16) return f(Tag<uint4>{});
  if (bytes == 8) return f(Tag<uint2>{});
  if (bytes == 4) return f(Tag<uint32_t>{});
  return f(Tag<uint16_t>{});
}

}  // namespace

void launch_gather_rows(int dtype, const void* src, int64_t ld, const int32_t* rows, int64_t n,
                        int64_t cols, void* staged, void* stream) {
  const char* where = "minkowski::cuda::launch_gather_rows";
  if (n == 0 || cols == 0) return;
  with_staged_type(dtype, where, [&](auto type) {
    constexpr int64_t esize = sizeof(typename decltype(type)::type);
    const int64_t v = chunk_elements(esize, cols, ld, src, staged);
    with_chunk_bytes(v * esize, [&](auto tag) {
      using Chunk = typename decltype(tag)::type;
      gather_kernel<Chunk><<<blocks_for(n * (cols / v)), kThreads, 0, as_stream(stream)>>>(
          static_cast<const Chunk*>(src), ld / v, rows, n, cols / v, static_cast<Chunk*>(staged));
    });
  });
  check_launch(where);
}

void launch_scatter_add_atomic(int dtype, const void* staged, const int32_t* rows, int64_t n,
                               int64_t cols, void* dst, void* stream) {
  const char* where = "minkowski::cuda::launch_scatter_add_atomic";
  if (n == 0 || cols == 0) return;
  with_staged_type(dtype, where, [&](auto type) {
    using S = typename decltype(type)::type;
    const int v = chunk_elements(sizeof(S), cols, cols, staged, staged);
    with_width<S>(v, [&](auto width) {
      constexpr int V = decltype(width)::value;
      scatter_atomic_kernel<S, V><<<blocks_for(n * (cols / V)), kThreads, 0, as_stream(stream)>>>(
          static_cast<const S*>(staged), rows, n, cols / V, static_cast<Acc<S>*>(dst));
    });
  });
  check_launch(where);
}

void launch_scatter_add_ordered(int dtype, const void* staged, int64_t p0, int64_t p1,
                                const int32_t* begin, const int32_t* pair, int64_t n_rows,
                                int64_t cols, void* dst, void* stream) {
  const char* where = "minkowski::cuda::launch_scatter_add_ordered";
  if (n_rows == 0 || cols == 0 || p1 <= p0) return;
  with_staged_type(dtype, where, [&](auto type) {
    using S = typename decltype(type)::type;
    int v = chunk_elements(sizeof(S), cols, cols, staged, staged);
    // dst moves V accumulators at a time: its rows must be V of them aligned too.
    while (v > 1 && !aligned(dst, v * static_cast<int64_t>(sizeof(Acc<S>)))) v /= 2;
    with_width<S>(v, [&](auto width) {
      constexpr int V = decltype(width)::value;
      scatter_ordered_kernel<S, V>
          <<<blocks_for(n_rows * (cols / V)), kThreads, 0, as_stream(stream)>>>(
              static_cast<const S*>(staged), p0, p1, begin, pair, n_rows, cols / V,
              static_cast<Acc<S>*>(dst));
    });
  });
  check_launch(where);
}

}  // namespace minkowski::cuda
