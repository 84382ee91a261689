#pragma once
// Launchers of minkowski's CUDA kernels: raw device pointers, sizes and a
// stream (a cudaStream_t passed as void*), no CUDA types, so the host code
// (device_kernel_map.cpp, conv.cpp) is plain C++. Every launch is
// asynchronous on `stream`; a failed launch throws fk::Error. Results are
// bitwise reproducible run to run except launch_scatter_add_atomic (float
// atomics).
#include <cstdint>

namespace minkowski::cuda {

// A packed-key layout (kernel_map.h's KernelMapKeyLayout) by value, for kernels.
inline constexpr int kMaxWidth = 8;  // 1 + D, D <= 7
struct KeyLayout {
  int width = 0;
  int64_t lo[kMaxWidth] = {};
  int shift[kMaxWidth] = {};
};

// --- coordinates (hash_map.cu) ----------------------------------------------

// keys[i] = the packed key of row i of coords (n x layout.width int32);
// rows[i] = i.
void launch_pack_keys(const int32_t* coords, int64_t n, const KeyLayout& layout, uint64_t* keys,
                      int32_t* rows, void* stream);

// out[i] = i for i < n.
void launch_iota(int32_t* out, int64_t n, void* stream);

// An open-addressing hash table of `capacity` slots (a power of two): keys
// (empty = kEmptyKey) and values (int32). Linear probing from a 64-bit
// finalizer hash.
inline constexpr uint64_t kEmptyKey = ~uint64_t{0};
struct HashTable {
  uint64_t* keys = nullptr;
  int32_t* values = nullptr;
  int64_t capacity = 0;
};
// Every slot empty (keys kEmptyKey, values INT32_MAX).
void launch_hash_clear(HashTable t, void* stream);
// Inserts (keys[i], i) for i < n; a key inserted twice keeps the smallest i
// (the first occurrence, whatever the thread order). Keys must differ from
// kEmptyKey; the table must have more slots than distinct keys.
void launch_hash_insert(HashTable t, const uint64_t* keys, int64_t n, void* stream);
// found[i] = the value of keys[i], or -1.
void launch_hash_lookup(HashTable t, const uint64_t* keys, int64_t n, int32_t* found, void* stream);

// Kernel-map search: for offset k < K and output position j < n_out (outputs
// in ascending key order), hit[k * n_out + j] = the input row at
// out_keys[j] + deltas[k] (two's complement key offsets), or -1; flag = hit >= 0.
void launch_kernel_map_search(HashTable in_table, const uint64_t* out_keys, int64_t n_out,
                              const uint64_t* deltas, int64_t K, int32_t* hit, int32_t* flag,
                              void* stream);
// Pairs from the search: for every slot s = k * n_out + j with hit[s] >= 0,
// in_rows[pos[s]] = hit[s], out_rows[pos[s]] = out_order[j] (pos: the
// exclusive scan of the flags). offset_begin[k] = pos[k * n_out] for k < K,
// offset_begin[K] = total (pos and flag of the last slot). With in_rows
// nullptr only offset_begin is written (to size the pair arrays).
void launch_kernel_map_pairs(const int32_t* hit, const int32_t* pos, const int32_t* flag,
                             const int32_t* out_order, int64_t n_out, int64_t K, int32_t* in_rows,
                             int32_t* out_rows, int32_t* offset_begin, void* stream);
// begin[r] = the first position of sorted_rows (ascending, n entries) holding
// a row >= r, for r in [0, rows] (begin[rows] = n): a CSR over rows.
void launch_row_begin(const int32_t* sorted_rows, int64_t n, int64_t rows, int32_t* begin,
                      void* stream);

// --- sorting and scans (sort.cu; CUB) ---------------------------------------

// Sorts (keys, values) by the low `bits` bits of keys, stably, into
// (keys_out, values_out). n < 2^31.
void sort_pairs_u64(const uint64_t* keys, const int32_t* values, uint64_t* keys_out,
                    int32_t* values_out, int64_t n, int bits, void* stream);
void sort_pairs_i32(const int32_t* keys, const int32_t* values, int32_t* keys_out,
                    int32_t* values_out, int64_t n, int bits, void* stream);
// out[i] = sum of in[0..i) (n < 2^31).
void exclusive_sum_i32(const int32_t* in, int32_t* out, int64_t n, void* stream);
// These allocate their scratch stream-ordered (cudaMallocAsync) and free it
// before returning.

// --- convolution (conv.cu; f32) ---------------------------------------------

// staged[p, :] = src[rows[p], :] for p < n (rows of `cols` floats, src row
// stride ld); 16-, 8- or 4-byte chunks as the row width and pointers allow.
void launch_gather_rows(const float* src, int64_t ld, const int32_t* rows, int64_t n, int64_t cols,
                        float* staged, void* stream);
// dst[rows[p], :] += staged[p, :] with float atomics (the order of the adds
// to one row varies run to run).
void launch_scatter_add_atomic(const float* staged, const int32_t* rows, int64_t n, int64_t cols,
                               float* dst, void* stream);
// The same in a fixed order: for each destination row r < n_rows, its
// entries e in [begin[r], begin[r + 1]) name staged rows pair[e] (ascending);
// those in [p0, p1) are added as staged[pair[e] - p0] in that order. One
// thread per (row, chunk of channels): bitwise reproducible.
void launch_scatter_add_ordered(const float* staged, int64_t p0, int64_t p1, const int32_t* begin,
                                const int32_t* pair, int64_t n_rows, int64_t cols, float* dst,
                                void* stream);

}  // namespace minkowski::cuda
