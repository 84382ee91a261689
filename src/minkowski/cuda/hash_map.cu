// Coordinate kernels: packed keys, an open-addressing hash table of keys
// (insert, lookup) and the kernel-map search and layout over it.
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

__global__ void pack_keys_kernel(const int32_t* coords, int64_t n, KeyLayout l, uint64_t* keys,
                                 int32_t* rows) {
  FK_CUDA_LOOP(i, n) {
    uint64_t k = 0;
    for (int c = 0; c < l.width; ++c)
      k |= static_cast<uint64_t>(static_cast<int64_t>(coords[i * l.width + c]) - l.lo[c])
           << l.shift[c];
    keys[i] = k;
    rows[i] = static_cast<int32_t>(i);
  }
}

__global__ void iota_kernel(int32_t* out, int64_t n) {
  FK_CUDA_LOOP(i, n) out[i] = static_cast<int32_t>(i);
}

__global__ void hash_clear_kernel(HashTable t) {
  FK_CUDA_LOOP(i, t.capacity) {
    t.keys[i] = kEmptyKey;
    t.values[i] = INT32_MAX;
  }
}

__global__ void hash_insert_kernel(HashTable t, const uint64_t* keys, int64_t n) {
  const uint64_t mask = static_cast<uint64_t>(t.capacity) - 1;
  FK_CUDA_LOOP(i, n) {
    const unsigned long long key = keys[i];
    uint64_t s = hash_slot_mix(key) & mask;
    for (;;) {
      auto* slot = reinterpret_cast<unsigned long long*>(t.keys + s);
      const unsigned long long seen = atomicCAS(slot, kEmptyKey, key);
      if (seen == kEmptyKey || seen == key) {
        atomicMin(t.values + s, static_cast<int32_t>(i));
        break;
      }
      s = (s + 1) & mask;
    }
  }
}

__global__ void hash_lookup_kernel(HashTable t, const uint64_t* keys, int64_t n, int32_t* found) {
  FK_CUDA_LOOP(i, n) found[i] = hash_find(t, keys[i]);
}

__global__ void search_kernel(HashTable t, const uint64_t* out_keys, int64_t n_out,
                              const uint64_t* deltas, int64_t K, int32_t* hit, int32_t* flag) {
  FK_CUDA_LOOP(s, n_out * K) {
    const int64_t k = s / n_out, j = s - k * n_out;
    const int32_t r = hash_find(t, out_keys[j] + deltas[k]);
    hit[s] = r;
    flag[s] = r >= 0;
  }
}

__global__ void pairs_kernel(const int32_t* hit, const int32_t* pos, const int32_t* flag,
                             const int32_t* out_order, int64_t n_out, int64_t K, int32_t* in_rows,
                             int32_t* out_rows, int32_t* offset_begin) {
  const int64_t slots = n_out * K;
  FK_CUDA_LOOP(s, slots) {
    const int32_t r = hit[s];
    const int64_t j = s % n_out;
    if (r >= 0 && in_rows != nullptr) {
      in_rows[pos[s]] = r;
      out_rows[pos[s]] = out_order[j];
    }
    if (j == 0) offset_begin[s / n_out] = pos[s];
    if (s == slots - 1) offset_begin[K] = pos[s] + flag[s];
  }
}

__global__ void row_begin_kernel(const int32_t* sorted_rows, int64_t n, int64_t rows,
                                 int32_t* begin) {
  FK_CUDA_LOOP(r, rows + 1) {
    int64_t lo = 0, hi = n;  // first position with sorted_rows >= r
    while (lo < hi) {
      const int64_t mid = (lo + hi) / 2;
      if (sorted_rows[mid] < r)
        lo = mid + 1;
      else
        hi = mid;
    }
    begin[r] = static_cast<int32_t>(lo);
  }
}

}  // namespace

void launch_pack_keys(const int32_t* coords, int64_t n, const KeyLayout& layout, uint64_t* keys,
                      int32_t* rows, void* stream) {
  if (n == 0) return;
  pack_keys_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(coords, n, layout, keys,
                                                                      rows);
  check_launch("minkowski::cuda::launch_pack_keys");
}

void launch_iota(int32_t* out, int64_t n, void* stream) {
  if (n == 0) return;
  iota_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(out, n);
  check_launch("minkowski::cuda::launch_iota");
}

void launch_hash_clear(HashTable t, void* stream) {
  hash_clear_kernel<<<blocks_for(t.capacity), kThreads, 0, as_stream(stream)>>>(t);
  check_launch("minkowski::cuda::launch_hash_clear");
}

void launch_hash_insert(HashTable t, const uint64_t* keys, int64_t n, void* stream) {
  if (n == 0) return;
  hash_insert_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(t, keys, n);
  check_launch("minkowski::cuda::launch_hash_insert");
}

void launch_hash_lookup(HashTable t, const uint64_t* keys, int64_t n, int32_t* found,
                        void* stream) {
  if (n == 0) return;
  hash_lookup_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(t, keys, n, found);
  check_launch("minkowski::cuda::launch_hash_lookup");
}

void launch_kernel_map_search(HashTable in_table, const uint64_t* out_keys, int64_t n_out,
                              const uint64_t* deltas, int64_t K, int32_t* hit, int32_t* flag,
                              void* stream) {
  if (n_out * K == 0) return;
  search_kernel<<<blocks_for(n_out * K), kThreads, 0, as_stream(stream)>>>(
      in_table, out_keys, n_out, deltas, K, hit, flag);
  check_launch("minkowski::cuda::launch_kernel_map_search");
}

void launch_kernel_map_pairs(const int32_t* hit, const int32_t* pos, const int32_t* flag,
                             const int32_t* out_order, int64_t n_out, int64_t K, int32_t* in_rows,
                             int32_t* out_rows, int32_t* offset_begin, void* stream) {
  if (n_out * K == 0) return;
  pairs_kernel<<<blocks_for(n_out * K), kThreads, 0, as_stream(stream)>>>(
      hit, pos, flag, out_order, n_out, K, in_rows, out_rows, offset_begin);
  check_launch("minkowski::cuda::launch_kernel_map_pairs");
}

void launch_row_begin(const int32_t* sorted_rows, int64_t n, int64_t rows, int32_t* begin,
                      void* stream) {
  row_begin_kernel<<<blocks_for(rows + 1), kThreads, 0, as_stream(stream)>>>(sorted_rows, n, rows,
                                                                             begin);
  check_launch("minkowski::cuda::launch_row_begin");
}

}  // namespace minkowski::cuda
