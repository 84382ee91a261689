#pragma once
// Launchers of minkowski's CUDA kernels: raw device pointers, sizes and a
// stream (a cudaStream_t passed as void*), no CUDA types, so the host code
// (device_kernel_map.cpp, device_conv.cpp, the *_dispatch.cpp files) is plain
// C++. T is float or double (explicitly instantiated for both). Every launch is
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
  int64_t hi[kMaxWidth] = {};  // column maxima: read by launch_lookup_coordinates only
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
// found[i] = the value of keys[i], or -1 (keys differ from kEmptyKey, as
// every key a <= 63-bit layout packs does).
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

// --- coordinate maps (coordinates.cu) ---------------------------------------
// The steps of device_coordinates.cpp's unique, strided and expanded maps.

// stats (3 x width, on the device) = per column c of coords (n x width rows):
// its minimum, its maximum, and the number of rows i >= 1 whose column c
// differs from row i - 1's (integer atomics: exact whatever the order).
void launch_column_stats(const int32_t* coords, int64_t n, int width, int64_t* stats, void* stream);
// For n ascending keys: head[s] = 1 where a run of equal keys starts (s = 0 or
// keys[s] != keys[s - 1]), else 0, for s <= n (head[n] = 0).
void launch_run_heads(const uint64_t* sorted_keys, int64_t n, int32_t* head, void* stream);
// With run = the exclusive scan of head and rows the input row of each sorted
// key: run r's first entry (row and key) in run_row[r], run_key[r], and the
// run of every input row in run_of[rows[s]].
void launch_runs(const uint64_t* sorted_keys, const int32_t* sorted_rows, const int32_t* head,
                 const int32_t* run, int64_t n, int32_t* run_row, uint64_t* run_key,
                 int32_t* run_of, void* stream);
// first[i] = 1 where input row i is the first of its run (run_row[run_of[i]]
// == i), else 0, for i <= n (first[n] = 0).
void launch_first_flags(const int32_t* run_row, const int32_t* run_of, int64_t n, int32_t* first,
                        void* stream);
// With id = the exclusive scan of first (map row of each first occurrence):
// inverse[i] = id[run_row[run_of[i]]] for every input row i; for a first
// occurrence, unique_rows[id[i]] = i and row_key[id[i]] = keys[i].
void launch_first_order(const int32_t* run_row, const int32_t* run_of, const int32_t* first,
                        const int32_t* id, const uint64_t* keys, int64_t n, int32_t* inverse,
                        int32_t* unique_rows, uint64_t* row_key, void* stream);
// out[r, :] = coords[rows[r], :] for r < m (rows of `width` int32).
void launch_gather_coordinates(const int32_t* coords, int width, const int32_t* rows, int64_t m,
                               int32_t* out, void* stream);
// out = coords (n x width) with spatial column a + 1 floored to a multiple of
// step[a] (toward -inf; step: width - 1 values on the device), the batch kept.
// The caller has checked the results fit int32.
void launch_floor_coordinates(const int32_t* coords, int64_t n, int width, const int32_t* step,
                              int32_t* out, void* stream);
// out[i * K + k, :] = coords[i, :] + (0, offsets[k, :]) for i < n, k < K
// (offsets K x (width - 1) on the device; the caller has checked the range).
void launch_expand_coordinates(const int32_t* coords, int64_t n, int width, const int32_t* offsets,
                               int64_t K, int32_t* out, void* stream);
// found[i] = the table's value for query row i (q x layout.width), or -1; a
// row outside [layout.lo, layout.hi] on some column is absent without a probe.
void launch_lookup_coordinates(HashTable t, const KeyLayout& layout, const int32_t* queries,
                               int64_t q, int32_t* found, void* stream);

// --- sorting and scans (sort.cu; CUB) ---------------------------------------

// Sorts (keys, values) by the low `bits` bits of keys (0 to the key's width;
// 0 keeps the input order), stably, into (keys_out, values_out). n < 2^31.
// i32 keys compare as signed over all 32 bits, as unsigned over fewer.
void sort_pairs_u64(const uint64_t* keys, const int32_t* values, uint64_t* keys_out,
                    int32_t* values_out, int64_t n, int bits, void* stream);
void sort_pairs_i32(const int32_t* keys, const int32_t* values, int32_t* keys_out,
                    int32_t* values_out, int64_t n, int bits, void* stream);
// out[i] = sum of in[0..i) (n < 2^31).
void exclusive_sum_i32(const int32_t* in, int32_t* out, int64_t n, void* stream);
// These allocate their scratch stream-ordered (cudaMallocAsync) and free it
// before returning.

// --- convolution (conv.cu; f32, f16, bf16, f64) ----------------------------
// dtype: fk::cuda's DTypeCode of the rows (kF32, kF16, kBF16 or kF64). The
// scatters' dst is the accumulator: f32 rows, f64 rows for kF64.

// staged[p, :] = src[rows[p], :] for p < n (rows of `cols` elements, src row
// stride ld); 16-, 8- or 4-byte chunks as the row width and pointers allow.
void launch_gather_rows(int dtype, const void* src, int64_t ld, const int32_t* rows, int64_t n,
                        int64_t cols, void* staged, void* stream);
// dst[rows[p], :] += staged[p, :] (staged in dtype, widened; dst the
// accumulator) with atomics (the order of the adds to one row varies run to run).
void launch_scatter_add_atomic(int dtype, const void* staged, const int32_t* rows, int64_t n,
                               int64_t cols, void* dst, void* stream);
// The same in a fixed order: for each destination row r < n_rows, its
// entries e in [begin[r], begin[r + 1]) name staged rows pair[e] (ascending);
// those in [p0, p1) are added as staged[pair[e] - p0] in that order. One
// thread per (row, chunk of channels): bitwise reproducible.
void launch_scatter_add_ordered(int dtype, const void* staged, int64_t p0, int64_t p1,
                                const int32_t* begin, const int32_t* pair, int64_t n_rows,
                                int64_t cols, void* dst, void* stream);

// --- implicit-GEMM convolution (implicit_conv.cu; f32, f16, bf16) ----------

// mask[r] = the bits k of the offsets (volume <= 64) of row r's pairs pair[e],
// e in [begin[r], begin[r + 1]) (a DeviceRowIndex; pair p is in offset k when
// offset_begin[k] <= p < offset_begin[k + 1], volume + 1 entries on the
// device); *repeated = 1 when a row has two pairs in one offset.
void launch_row_masks(const int32_t* begin, const int32_t* pair, int64_t rows,
                      const int64_t* offset_begin, int64_t volume, uint64_t* mask,
                      int32_t* repeated, void* stream);
// dst[r, n] (rows x cols, every element written) = the sum over offsets k
// ascending, then c < inner ascending, of src[other[q], c] * w[k w_k + c w_c
// + n w_n], q row r's pair in offset k (none: 0); rows taken in the tiles of
// order (rows sorted by mask, which must be launch_row_masks' with no repeat).
// f32 accumulation, one rounding to dtype per output, no atomics.
struct ImplicitConvArgs {
  const void* src;
  int64_t inner;
  const void* w;
  int64_t w_k, w_c, w_n, cols;
  const int32_t *order, *begin, *pair, *other;
  const uint64_t* mask;
  int64_t rows;
  void* dst;
  // The tensor-core kernel's: W_k^T (w_c 1, w_n inner) rather than W_k (w_c
  // cols, w_n 1); src rows (vec_src) and the weight's contiguous runs
  // (vec_w) load in 16-byte chunks: 16-byte aligned pointers, and inner
  // (src; W_k^T) or cols (W_k) a multiple of the chunk's elements.
  bool transposed = false, vec_src = false, vec_w = false;
};
void launch_implicit_conv(int dtype, const ImplicitConvArgs& args, void* stream);
// The same product on tensor cores (implicit_conv_mma.cu): f16 and bf16
// (m16n16k16), f32 as TF32 (m16n16k8), f32 accumulation, one rounding per
// output, no atomics; inner channels zero-padded to the fragment depth in
// shared memory. Needs implicit_mma_supported (sm_80 or newer).
void launch_implicit_conv_mma(int dtype, const ImplicitConvArgs& args, void* stream);
bool implicit_mma_supported(int device);
// *slots += the sum over the tiles of tile_rows consecutive rows of
// sorted_mask (the last one partial) of tile_rows x popcount(OR of the
// tile's masks): the (row, offset) products the implicit kernel runs with
// tiles of that height, present pairs or not.
void launch_tile_slots(const uint64_t* sorted_mask, int64_t rows, int tile_rows,
                       unsigned long long* slots, void* stream);

// --- pooling (pooling.cu) ----------------------------------------------------
// mode: static_cast<int>(minkowski::PoolingMode) (Max 0, Average 1, Sum 2).
// One thread per (row, channel) walks its row's pairs in pair (offset) order,
// as the CPU's pooling does, so the results are bitwise the CPU's.

// Local pooling forward: output row o < n_out reduces src[in_rows[p]] over
// its pairs p = out_pair[e], e in [out_begin[o], out_begin[o + 1]) (a
// DeviceKernelMap's by_out). Max keeps max_order.h's order (a NaN wins, the
// first of equal values holds) and writes the arg-max input row (argmax: Max
// only); a row without pairs gets 0 (-1).
template <typename T>
void launch_pool_forward(int mode, const T* src, int64_t cols, const int32_t* out_begin,
                         const int32_t* out_pair, const int32_t* in_rows, int64_t n_out, T* dst,
                         int32_t* argmax, void* stream);
// Its backward: input row i < n_in sums, over its pairs (by_in), what the
// pair's output o = out_rows[p] sends back: grad[o] (Sum), grad[o] / its pair
// count (Average, from out_begin), grad[o, c] where argmax[o, c] == i (Max).
template <typename T>
void launch_pool_backward(int mode, const T* grad, int64_t cols, const int32_t* in_begin,
                          const int32_t* in_pair, const int32_t* out_rows, const int32_t* out_begin,
                          const int32_t* argmax, int64_t n_in, T* dst, void* stream);

// Global pooling (global_pooling.h's blocked order): rows[job_begin[j] ..
// job_begin[j + 1]) are job j's rows (at most kGlobalBlock of one group);
// part[j] = their reduction in row order (with b: the sum of a[i] * b[i],
// Sum only), part_arg[j] the arg-max row (Max only).
template <typename T>
void launch_group_partials(int mode, const T* a, const T* b, int64_t cols, const int32_t* rows,
                           const int64_t* job_begin, int64_t jobs, T* part, int32_t* part_arg,
                           void* stream);
// out[g] = the partials of jobs [first[g], first[g + 1]) combined in order;
// Average divides by the group's rows (begin[g + 1] - begin[g]); a group
// without jobs gets 0 (arg-max -1).
template <typename T>
void launch_group_combine(int mode, const T* part, const int32_t* part_arg, const int64_t* first,
                          const int64_t* begin, int64_t groups, int64_t cols, T* out,
                          int32_t* argmax, void* stream);
// dst[i] = what row i's group g = group[i] sends back: grad[g] (Sum),
// grad[g] / its rows (Average), grad[g, c] where argmax[g, c] == i (Max).
template <typename T>
void launch_group_backward(int mode, const T* grad, int64_t cols, const int32_t* group,
                           const int64_t* begin, const int32_t* argmax, int64_t n, T* dst,
                           void* stream);

// --- segment normalization (normalization.cu) -------------------------------
// normalization.cpp's blocked sums in f64: part (blocks x K x S x cols with
// S = segments, blocks of block_rows rows; every entry written) gets, per
// block, the sums over its rows i of segment seg[i] of
//   kind 0: x[i]                          (K = 1)
//   kind 1: (x[i] - mean[s])^2            (K = 1)
//   kind 2: g[i] and g[i] * xhat[i]       (K = 2; xhat = (x - mean[s]) invstd[s])
// one thread per (block, channel), rows in order.
template <typename T>
void launch_segment_sums(int kind, const T* x, const T* g, int64_t n, int64_t cols,
                         const int32_t* seg, int64_t segments, int64_t block_rows,
                         const double* mean, const double* invstd, double* part, void* stream);
// out[j] = sum over blocks b, in order, of part[b * width + j].
void launch_sum_blocks(const double* part, int64_t blocks, int64_t width, double* out,
                       void* stream);
// With k = seg[i] * cols + c and coefficient rows m, r, s, u, v (coef_stride
// apart; v read only with g):
//   g == nullptr: y = (x - m - r) s + u                 (the forward)
//   else:         y = g s - (x - m - r) u - v           (the input gradient)
template <typename T>
void launch_segment_affine(const T* x, const T* g, int64_t n, int64_t cols, const int32_t* seg,
                           const T* coef, int64_t coef_stride, T* y, void* stream);
// The statistics between those passes, formed on the device as
// normalization.cpp forms them on the host (f64, products rounded on their
// own). moments: 4 rows of sc = S x cols, mean, var (biased), invstd, n_s.
//   stage 0: mean = sums / n_s, and row 3 = n_s (rows[s], or single_rows
//            when rows is null)
//   stage 1: var = sums / n_s, invstd = 1 / sqrt(var + eps)
//   stage 2: invstd = 1 / sqrt(var + eps) from the var row as given
void launch_norm_moments(int stage, const double* sums, const int64_t* rows, int64_t single_rows,
                         double eps, double* moments, int64_t sc, int64_t cols, void* stream);
// The forward's coefficient rows m, r, s, u (launch_segment_affine, stride
// sc): m = mean rounded to T, r = the rest, s = invstd w[c], u = b[c]; w and
// b null: 1 and 0.
template <typename T>
void launch_norm_forward_coefficients(const double* moments, int64_t sc, int64_t cols, const T* w,
                                      const T* b, T* coef, void* stream);
// The input gradient's rows m, r, s, u, v from sums (2 rows of sc: sum g,
// sum g xhat): s = w[c] invstd, u = s invstd mean(g xhat), v = s mean(g)
// (u = v = 0 without batch statistics); and dw[c], db[c] (f64, cols) the
// sums of the g xhat and g rows over the segments, in segment order.
template <typename T>
void launch_norm_backward_coefficients(const double* sums, const double* moments, int64_t sc,
                                       int64_t cols, int64_t segments, const T* w, bool batch_stats,
                                       T* coef, double* dw, double* db, void* stream);
// Running statistics (cols values of S, one segment's moments):
// mean = (1 - m) mean + m batch mean, var = (1 - m) var + m batch var unbias.
template <typename S>
void launch_norm_running_update(const double* moments, int64_t cols, double m, double unbias,
                                S* running_mean, S* running_var, void* stream);

// --- coordinate-list products (spmm.cu) -------------------------------------
// Products rounded before their adds (rounding.cuh), terms in the CPU's order.

// out[r, c] (rows x cols, every element written) = the sum over e in
// [begin[r], begin[r + 1]), in order, of v[entry[e]] * in[src[e], c]: spmm.h's
// rows grouped by a stable counting sort, one thread per (row, channel).
template <typename T>
void launch_csr_rows(const int64_t* begin, const int64_t* entry, const int64_t* src, const T* v,
                     const T* in, int64_t cols, int64_t rows, T* out, void* stream);
// out[p] = the sum over c, ascending, of a[a_row[p], c] * b[b_row[p], c], p < n.
template <typename T>
void launch_row_dots(const int64_t* a_row, const int64_t* b_row, const T* a, const T* b,
                     int64_t cols, int64_t n, T* out, void* stream);

// --- channelwise convolution (channelwise.cu) -------------------------------
// Pair p belongs to offset k when offset_begin[k] <= p < offset_begin[k + 1]
// (volume + 1 entries, on the device).

// dst[r, c] (rows x cols, every element written) = the sum over row r's pairs
// q = pair[e], e in [begin[r], begin[r + 1]) (a DeviceRowIndex), in order, of
// src[other[q], c] * w[k(q), c]: the forward (by_out, other = in_rows) and the
// input gradient (by_in, other = out_rows, src = the output gradient).
template <typename T>
void launch_channelwise_rows(const T* src, const T* w, int64_t cols, const int32_t* begin,
                             const int32_t* pair, const int32_t* other, const int64_t* offset_begin,
                             int64_t volume, int64_t rows, T* dst, void* stream);
// part[j, c] = the sum over pairs p in [job_begin[j], job_begin[j + 1]), in
// order, of f[in_rows[p], c] * g[out_rows[p], c]: the weight gradient's
// per-job partials (launch_group_combine sums them per offset).
template <typename T>
void launch_pair_product_partials(const T* f, const T* g, int64_t cols, const int32_t* in_rows,
                                  const int32_t* out_rows, const int64_t* job_begin, int64_t jobs,
                                  T* part, void* stream);

}  // namespace minkowski::cuda
