// Coordinate-map kernels: column statistics, the run bookkeeping of a
// deduplication (which rows open a run of equal keys, and in which order the
// map lists them), gathering, flooring and expanding rows, and lookups of
// arbitrary rows. Every result is a function of the inputs alone: no float
// math, integer atomics only where their order cannot show.
#include <climits>
#include <cstdint>

#include "fk/cuda/common.cuh"
#include "minkowski/cuda/hash_table.cuh"
#include "minkowski/cuda/kernels.h"

namespace minkowski::cuda {

namespace {

using fk::cuda::detail::as_stream;
using fk::cuda::detail::blocks_for;
using fk::cuda::detail::check_launch;
using fk::cuda::detail::kThreads;

__global__ void stats_init_kernel(int width, long long* stats) {
  const int c = threadIdx.x;
  if (c < width) {
    stats[c] = LLONG_MAX;
    stats[width + c] = LLONG_MIN;
    stats[2 * width + c] = 0;
  }
}

// Each thread folds its grid-stride rows, a warp combines its threads by
// shuffles, and lane 0 adds the warp's part with one atomic per statistic.
// Every loop over columns runs to kMaxWidth, unrolled, and skips columns past
// width: constant indices keep lo, hi and changes in registers (a loop to
// width would index them at run time and put them in a 192-byte local-memory
// stack frame). Integer min, max and sum: the order is invisible.
__global__ void column_stats_kernel(const int32_t* coords, int64_t n, int width, long long* stats) {
  long long lo[kMaxWidth], hi[kMaxWidth], changes[kMaxWidth];
#pragma unroll
  for (int c = 0; c < kMaxWidth; ++c) {
    lo[c] = LLONG_MAX;
    hi[c] = LLONG_MIN;
    changes[c] = 0;
  }
  FK_CUDA_LOOP(i, n) {
#pragma unroll
    for (int c = 0; c < kMaxWidth; ++c) {
      if (c >= width) break;
      const long long v = coords[i * width + c];
      lo[c] = v < lo[c] ? v : lo[c];
      hi[c] = v > hi[c] ? v : hi[c];
      if (i > 0) changes[c] += v != coords[(i - 1) * width + c];
    }
  }
#pragma unroll
  for (int c = 0; c < kMaxWidth; ++c) {
    if (c >= width) break;
    for (int step = 16; step > 0; step /= 2) {
      const long long l = __shfl_down_sync(0xffffffffu, lo[c], step);
      const long long h = __shfl_down_sync(0xffffffffu, hi[c], step);
      lo[c] = l < lo[c] ? l : lo[c];
      hi[c] = h > hi[c] ? h : hi[c];
      changes[c] += __shfl_down_sync(0xffffffffu, changes[c], step);
    }
    if (threadIdx.x % 32 == 0) {
      atomicMin(stats + c, lo[c]);
      atomicMax(stats + width + c, hi[c]);
      atomicAdd(reinterpret_cast<unsigned long long*>(stats + 2 * width + c),
                static_cast<unsigned long long>(changes[c]));
    }
  }
}

__global__ void run_heads_kernel(const uint64_t* keys, int64_t n, int32_t* head) {
  FK_CUDA_LOOP(s, n + 1) head[s] = s < n && (s == 0 || keys[s] != keys[s - 1]);
}

__global__ void runs_kernel(const uint64_t* keys, const int32_t* rows, const int32_t* head,
                            const int32_t* run, int64_t n, int32_t* run_row, uint64_t* run_key,
                            int32_t* run_of) {
  FK_CUDA_LOOP(s, n) {
    const int32_t r = run[s] + head[s] - 1;  // the run holding s
    if (head[s]) {
      run_row[r] = rows[s];
      run_key[r] = keys[s];
    }
    run_of[rows[s]] = r;
  }
}

__global__ void first_flags_kernel(const int32_t* run_row, const int32_t* run_of, int64_t n,
                                   int32_t* first) {
  FK_CUDA_LOOP(i, n + 1) first[i] = i < n && run_row[run_of[i]] == i;
}

__global__ void first_order_kernel(const int32_t* run_row, const int32_t* run_of,
                                   const int32_t* first, const int32_t* id, const uint64_t* keys,
                                   int64_t n, int32_t* inverse, int32_t* unique_rows,
                                   uint64_t* row_key) {
  FK_CUDA_LOOP(i, n) {
    inverse[i] = id[run_row[run_of[i]]];
    if (first[i]) {
      unique_rows[id[i]] = static_cast<int32_t>(i);
      row_key[id[i]] = keys[i];
    }
  }
}

__global__ void gather_coordinates_kernel(const int32_t* coords, int width, const int32_t* rows,
                                          int64_t m, int32_t* out) {
  FK_CUDA_LOOP(e, m * width) {
    const int64_t r = e / width;
    out[e] = coords[int64_t{rows[r]} * width + (e - r * width)];
  }
}

__global__ void floor_coordinates_kernel(const int32_t* coords, int64_t n, int width,
                                         const int32_t* step, int32_t* out) {
  FK_CUDA_LOOP(e, n * width) {
    const int c = static_cast<int>(e % width);
    const int64_t v = coords[e];
    if (c == 0) {
      out[e] = static_cast<int32_t>(v);
    } else {
      const int64_t t = step[c - 1];
      const int64_t q = v >= 0 ? v / t : -((-v + t - 1) / t);  // floor(v / t)
      out[e] = static_cast<int32_t>(q * t);
    }
  }
}

__global__ void expand_coordinates_kernel(const int32_t* coords, int64_t n, int width,
                                          const int32_t* offsets, int64_t K, int32_t* out) {
  const int d = width - 1;
  FK_CUDA_LOOP(e, n * K * width) {
    const int64_t row = e / width;  // i * K + k
    const int c = static_cast<int>(e - row * width);
    const int64_t i = row / K, k = row - i * K;
    const int32_t v = coords[i * width + c];
    out[e] = c == 0 ? v : v + offsets[k * d + c - 1];
  }
}

__global__ void lookup_coordinates_kernel(HashTable t, KeyLayout l, const int32_t* queries,
                                          int64_t q, int32_t* found) {
  FK_CUDA_LOOP(i, q) {
    uint64_t k = 0;
    bool inside = true;
    for (int c = 0; c < l.width; ++c) {
      const int64_t v = queries[i * l.width + c];
      inside = inside && v >= l.lo[c] && v <= l.hi[c];
      k |= static_cast<uint64_t>(v - l.lo[c]) << l.shift[c];
    }
    found[i] = inside ? hash_find(t, k) : -1;
  }
}

}  // namespace

void launch_column_stats(const int32_t* coords, int64_t n, int width, int64_t* stats,
                         void* stream) {
  auto* s = reinterpret_cast<long long*>(stats);
  stats_init_kernel<<<1, kMaxWidth, 0, as_stream(stream)>>>(width, s);
  if (n > 0)
    column_stats_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(coords, n, width, s);
  check_launch("minkowski::cuda::launch_column_stats");
}

void launch_run_heads(const uint64_t* sorted_keys, int64_t n, int32_t* head, void* stream) {
  run_heads_kernel<<<blocks_for(n + 1), kThreads, 0, as_stream(stream)>>>(sorted_keys, n, head);
  check_launch("minkowski::cuda::launch_run_heads");
}

void launch_runs(const uint64_t* sorted_keys, const int32_t* sorted_rows, const int32_t* head,
                 const int32_t* run, int64_t n, int32_t* run_row, uint64_t* run_key,
                 int32_t* run_of, void* stream) {
  if (n == 0) return;
  runs_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(sorted_keys, sorted_rows, head,
                                                                 run, n, run_row, run_key, run_of);
  check_launch("minkowski::cuda::launch_runs");
}

void launch_first_flags(const int32_t* run_row, const int32_t* run_of, int64_t n, int32_t* first,
                        void* stream) {
  first_flags_kernel<<<blocks_for(n + 1), kThreads, 0, as_stream(stream)>>>(run_row, run_of, n,
                                                                            first);
  check_launch("minkowski::cuda::launch_first_flags");
}

void launch_first_order(const int32_t* run_row, const int32_t* run_of, const int32_t* first,
                        const int32_t* id, const uint64_t* keys, int64_t n, int32_t* inverse,
                        int32_t* unique_rows, uint64_t* row_key, void* stream) {
  if (n == 0) return;
  first_order_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(
      run_row, run_of, first, id, keys, n, inverse, unique_rows, row_key);
  check_launch("minkowski::cuda::launch_first_order");
}

void launch_gather_coordinates(const int32_t* coords, int width, const int32_t* rows, int64_t m,
                               int32_t* out, void* stream) {
  if (m == 0) return;
  gather_coordinates_kernel<<<blocks_for(m * width), kThreads, 0, as_stream(stream)>>>(
      coords, width, rows, m, out);
  check_launch("minkowski::cuda::launch_gather_coordinates");
}

void launch_floor_coordinates(const int32_t* coords, int64_t n, int width, const int32_t* step,
                              int32_t* out, void* stream) {
  if (n == 0) return;
  floor_coordinates_kernel<<<blocks_for(n * width), kThreads, 0, as_stream(stream)>>>(
      coords, n, width, step, out);
  check_launch("minkowski::cuda::launch_floor_coordinates");
}

void launch_expand_coordinates(const int32_t* coords, int64_t n, int width, const int32_t* offsets,
                               int64_t K, int32_t* out, void* stream) {
  if (n * K == 0) return;
  expand_coordinates_kernel<<<blocks_for(n * K * width), kThreads, 0, as_stream(stream)>>>(
      coords, n, width, offsets, K, out);
  check_launch("minkowski::cuda::launch_expand_coordinates");
}

void launch_lookup_coordinates(HashTable t, const KeyLayout& layout, const int32_t* queries,
                               int64_t q, int32_t* found, void* stream) {
  if (q == 0) return;
  lookup_coordinates_kernel<<<blocks_for(q), kThreads, 0, as_stream(stream)>>>(t, layout, queries,
                                                                               q, found);
  check_launch("minkowski::cuda::launch_lookup_coordinates");
}

}  // namespace minkowski::cuda
