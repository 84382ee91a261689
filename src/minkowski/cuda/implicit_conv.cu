// The implicit-GEMM convolution's kernels (implicit_conv.h): per-row offset
// bitmasks, the tiles' padded slot counts (conv_dataflow.h), and the
// output-stationary tiled product on f32 FMAs. Operands are widened to f32
// in shared memory (f32 accumulation); each output is written once, in the
// destination's dtype. The tensor-core product is implicit_conv_mma.cu.
#include <cstdint>

#include "fk/cuda/common.cuh"
#include "fk/cuda/launch_limits.h"
#include "minkowski/cuda/kernels.h"

namespace minkowski::cuda {

namespace {

using fk::cuda::detail::as_stream;
using fk::cuda::detail::blocks_for;
using fk::cuda::detail::check_launch;
using fk::cuda::detail::kThreads;
using fk::cuda::detail::Num;
using fk::cuda::detail::Tag;

// The offset k of pair p: the largest k with offset_begin[k] <= p (an empty
// offset shares its begin with the next one, so the search passes it).
__device__ int offset_of(int64_t p, const int64_t* offset_begin, int64_t volume) {
  int lo = 0, hi = static_cast<int>(volume);
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (offset_begin[mid] <= p)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

__global__ void row_masks_kernel(const int32_t* begin, const int32_t* pair, int64_t rows,
                                 const int64_t* offset_begin, int64_t volume, uint64_t* mask,
                                 int32_t* repeated) {
  FK_CUDA_LOOP(r, rows) {
    uint64_t m = 0;
    for (int32_t q = begin[r]; q < begin[r + 1]; ++q) {
      const uint64_t bit = uint64_t{1} << offset_of(pair[q], offset_begin, volume);
      if (m & bit) *repeated = 1;
      m |= bit;
    }
    mask[r] = m;
  }
}

__global__ void tile_slots_kernel(const uint64_t* sorted_mask, int64_t rows, int tile_rows,
                                  unsigned long long* slots) {
  const int64_t tiles = (rows + tile_rows - 1) / tile_rows;
  FK_CUDA_LOOP(t, tiles) {
    uint64_t m = 0;
    const int64_t end = min(rows, (t + 1) * tile_rows);
    for (int64_t r = t * tile_rows; r < end; ++r) m |= sorted_mask[r];
    // Integer sums: the total does not depend on the order of the adds.
    atomicAdd(slots, static_cast<unsigned long long>(__popcll(m)) * tile_rows);
  }
}

// Tile geometry: 256 threads, each accumulating kTM rows x kTN channels; BN
// channels per block (TX threads across them), BM rows (TY threads down).
constexpr int kBK = 16;  // inner channels staged per step
constexpr int kTM = 4, kTN = 4;

// Block (x, y) owns sorted rows [x BM, (x + 1) BM) and channels [y BN, (y +
// 1) BN) of dst. Thread (ty, tx) accumulates rows ty + i TY and channels tx +
// j TX, so a warp's loads of b and stores of dst are consecutive channels.
template <typename S, int BN>
__global__ void __launch_bounds__(kThreads)
    implicit_conv_kernel(const S* src, int64_t inner, const S* w, int64_t w_k, int64_t w_c,
                         int64_t w_n, int64_t cols, const int32_t* order, const uint64_t* mask,
                         const int32_t* begin, const int32_t* pair, const int32_t* other,
                         int64_t rows, S* dst) {
  constexpr int TX = BN / kTN, TY = kThreads / TX, BM = TY * kTM;
  __shared__ float a[BM][kBK + 1];  // source rows x inner channels (+1: no bank conflicts)
  __shared__ float b[kBK][BN];      // inner channels x output channels of W_k
  __shared__ int32_t row_of[BM], row_begin[BM], src_row[BM];
  __shared__ uint64_t row_mask[BM];
  __shared__ unsigned long long tile_mask;
  const int tid = static_cast<int>(threadIdx.x), tx = tid % TX, ty = tid / TX;
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * BM;
  const int64_t n0 = static_cast<int64_t>(blockIdx.y) * BN;
  if (tid == 0) tile_mask = 0;
  __syncthreads();
  for (int r = tid; r < BM; r += kThreads) {
    int32_t row = -1, b0 = 0;
    uint64_t m = 0;
    if (r0 + r < rows) {
      row = order[r0 + r];
      m = mask[row];
      b0 = begin[row];
    }
    row_of[r] = row;
    row_mask[r] = m;
    row_begin[r] = b0;
    if (m != 0) atomicOr(&tile_mask, static_cast<unsigned long long>(m));
  }
  __syncthreads();
  float acc[kTM][kTN] = {};
  // Offsets ascending, absent from the whole tile skipped.
  for (uint64_t todo = tile_mask; todo != 0; todo &= todo - 1) {
    const int k = __ffsll(static_cast<long long>(todo)) - 1;
    const uint64_t below = (uint64_t{1} << k) - 1;
    // A row's pairs ascend in offset order: its pair in offset k is the one
    // after its pairs in the offsets below k.
    for (int r = tid; r < BM; r += kThreads) {
      const uint64_t m = row_mask[r];
      src_row[r] = (m >> k) & 1 ? other[pair[row_begin[r] + __popcll(m & below)]] : -1;
    }
    __syncthreads();
    const S* wk = w + k * w_k;
    for (int64_t c0 = 0; c0 < inner; c0 += kBK) {
      for (int e = tid; e < BM * kBK; e += kThreads) {
        const int r = e / kBK, c = e % kBK;
        const int64_t i = src_row[r];
        a[r][c] = i >= 0 && c0 + c < inner ? Num<S>::load(src[i * inner + c0 + c]) : 0.0f;
      }
      for (int e = tid; e < kBK * BN; e += kThreads) {
        const int c = e / BN, n = e % BN;
        b[c][n] = c0 + c < inner && n0 + n < cols
                      ? Num<S>::load(wk[(c0 + c) * w_c + (n0 + n) * w_n])
                      : 0.0f;
      }
      __syncthreads();
#pragma unroll
      for (int c = 0; c < kBK; ++c) {
        float av[kTM], bv[kTN];
#pragma unroll
        for (int i = 0; i < kTM; ++i) av[i] = a[ty + i * TY][c];
#pragma unroll
        for (int j = 0; j < kTN; ++j) bv[j] = b[c][tx + j * TX];
#pragma unroll
        for (int i = 0; i < kTM; ++i)
#pragma unroll
          for (int j = 0; j < kTN; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
      }
      __syncthreads();
    }
  }
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const int64_t row = row_of[ty + i * TY];
    if (row < 0) continue;
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      const int64_t n = n0 + tx + j * TX;
      if (n < cols) dst[row * cols + n] = Num<S>::store(acc[i][j]);
    }
  }
}

// Calls f(Tag<S>{}) with S the storage type of an fk dtype code.
template <typename F>
void with_storage_type(int dtype, const char* where, F&& f) {
  if (dtype == fk::cuda::kF32) return f(Tag<float>{});
  if (dtype == fk::cuda::kF16) return f(Tag<__half>{});
  if (dtype == fk::cuda::kBF16) return f(Tag<__nv_bfloat16>{});
  fk::cuda::detail::unsupported(where, "f32, f16 or bf16", dtype);
}

template <typename S, int BN>
void launch_tiles(const ImplicitConvArgs& x, void* stream) {
  constexpr int BM = (kThreads / (BN / kTN)) * kTM;
  // gridDim.y (channel tiles) stops at 65535: 4,194,240 output channels.
  const char* where = "minkowski::cuda::launch_implicit_conv";
  const dim3 grid(fk::cuda::grid_dim(where, 'x', x.rows, BM, "sorted rows"),
                  fk::cuda::grid_dim(where, 'y', x.cols, BN, "output channels"));
  implicit_conv_kernel<S, BN><<<grid, kThreads, 0, as_stream(stream)>>>(
      static_cast<const S*>(x.src), x.inner, static_cast<const S*>(x.w), x.w_k, x.w_c, x.w_n,
      x.cols, x.order, x.mask, x.begin, x.pair, x.other, x.rows, static_cast<S*>(x.dst));
}

}  // namespace

void launch_row_masks(const int32_t* begin, const int32_t* pair, int64_t rows,
                      const int64_t* offset_begin, int64_t volume, uint64_t* mask,
                      int32_t* repeated, void* stream) {
  if (rows == 0) return;
  row_masks_kernel<<<blocks_for(rows), kThreads, 0, as_stream(stream)>>>(
      begin, pair, rows, offset_begin, volume, mask, repeated);
  check_launch("minkowski::cuda::launch_row_masks");
}

void launch_tile_slots(const uint64_t* sorted_mask, int64_t rows, int tile_rows,
                       unsigned long long* slots, void* stream) {
  if (rows == 0) return;
  tile_slots_kernel<<<blocks_for((rows + tile_rows - 1) / tile_rows), kThreads, 0,
                      as_stream(stream)>>>(sorted_mask, rows, tile_rows, slots);
  check_launch("minkowski::cuda::launch_tile_slots");
}

void launch_implicit_conv(int dtype, const ImplicitConvArgs& x, void* stream) {
  const char* where = "minkowski::cuda::launch_implicit_conv";
  if (x.rows == 0 || x.cols == 0) return;
  with_storage_type(dtype, where, [&](auto type) {
    using S = typename decltype(type)::type;
    // Narrow outputs take 32-channel tiles of 128 rows, so fewer lanes idle.
    if (x.cols <= 32)
      launch_tiles<S, 32>(x, stream);
    else
      launch_tiles<S, 64>(x, stream);
  });
  check_launch(where);
}

}  // namespace minkowski::cuda
