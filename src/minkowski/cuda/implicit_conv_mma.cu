// The implicit-GEMM convolution on tensor cores (implicit_conv.h): the tiles
// of implicit_conv.cu (sorted rows x destination channels, looping over the
// offsets present in the tile), multiplied with WMMA fragments instead of
// f32 FMAs. f16 and bf16 operands: m16n16k16 with f32 accumulation; f32
// operands: TF32 (m16n16k8, inputs rounded to TF32 in the fragment, f32
// accumulation), only when the caller allows TF32. sm_80 and newer.
//
// A block of 8 warps owns BM sorted rows x BN channels (BN 32: 128 x 32; BN
// 64: 64 x 64); each warp a 16 x 32 sub-tile (two accumulator fragments).
// Per step (a present offset k, and a 64-byte slice of inner channels: 32
// halves or 16 floats) it stages its rows' source rows (gathered through
// the map; zero where a row has no pair in k or past the inner channels)
// and the slice of W_k (or W_k^T) in shared memory, double buffered: the next step's 16-byte chunks
// are issued with cp.async (zero-filled when absent) while this step's
// fragments multiply. Rows or channels not a multiple of the 16-byte chunk
// (8 halves, 4 floats), or unaligned operands, take plain loads instead.
// Results go through shared memory and are written once per output in the
// destination's dtype: no atomics, and a fixed order of offsets, slices and
// fragment products, so results repeat bit for bit.
#include <mma.h>

#include <cstdint>
#include <mutex>
#include <type_traits>
#include <unordered_map>

#include "fk/cuda/common.cuh"
#include "fk/cuda/device_guard.h"
#include "fk/cuda/launch_limits.h"
#include "minkowski/cuda/kernels.h"
// By its bare name: see cp_async.cuh.
#include "cp_async.cuh"

namespace minkowski::cuda {

namespace {

namespace wmma = nvcuda::wmma;
using fk::cuda::detail::as_stream;
using fk::cuda::detail::check_launch;
using fk::cuda::detail::kThreads;
using fk::cuda::detail::Num;

// Fragment element type, k-depth of one product, and the shared-memory row
// padding (16 bytes: rows stay 16-byte aligned for cp.async and 32-byte
// aligned every 16 rows, as WMMA loads need, and banks rotate between rows).
template <typename S>
struct Mma {
  using Frag = S;
  static constexpr int kK = 16;
  static constexpr int kPad = 8;
};
template <>
struct Mma<float> {
  // Declared by <mma.h> for host code and sm_80+ only; the kernel's body is
  // compiled for those alone (implicit_mma_kernel).
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  using Frag = wmma::precision::tf32;
#endif
  static constexpr int kK = 8;
  static constexpr int kPad = 4;
};

constexpr int kWarps = kThreads / 32;
constexpr int kChunkBytes = 16;

template <typename S, int BN, bool kTransposedW>
struct Tile {
  static constexpr int kK = Mma<S>::kK;
  static constexpr int kBK = 2 * kK;  // inner channels per step: two products
  static constexpr int kVec = kChunkBytes / static_cast<int>(sizeof(S));
  static constexpr int kWarpsN = BN / 32, kWarpsM = kWarps / kWarpsN, BM = 16 * kWarpsM;
  static constexpr int kLdA = kBK + Mma<S>::kPad;  // A: BM x kBK, row-major
  static constexpr int kLdB = BN + Mma<S>::kPad;   // W_k slice: kBK x BN, row-major
  // W_k^T slice stored column-major (BN rows of kBK), contiguous as W_k is.
  static constexpr int kStageA = BM * kLdA;
  static constexpr int kStageB = kTransposedW ? BN * kLdA : kBK * kLdB;
  static constexpr int kLdC = BN + 4;  // f32 results
  static constexpr int kStageBytes = 2 * (kStageA + kStageB) * static_cast<int>(sizeof(S));
  static constexpr int kResultBytes = BM * kLdC * static_cast<int>(sizeof(float));
  static constexpr int kSharedBytes = kStageBytes > kResultBytes ? kStageBytes : kResultBytes;
  // Static shared memory stops at 48 KiB (with the rows' indices and masks).
  // Also the sizes' one use where the kernel's body is not compiled (below
  // sm_80), which nvcc would otherwise flag as unreferenced.
  static_assert(kSharedBytes + BM * 16 + 8 <= 48 * 1024);
  // WMMA's rules, which a different padding or tile would silently break:
  // ldm a multiple of 16 bytes, fragment pointers 32-byte aligned (buffer
  // bases, 16-row blocks, k steps of kK), cp.async rows 16-byte aligned.
  static constexpr int kS = static_cast<int>(sizeof(S));
  static_assert(kLdA * kS % 16 == 0 && kLdB * kS % 16 == 0 && kLdC * 4 % 16 == 0);
  static_assert(kStageA * kS % 32 == 0 && kStageB * kS % 32 == 0);
  static_assert(16 * kLdA * kS % 32 == 0 && kK * kS % 32 == 0 && kK * kLdB * kS % 32 == 0);
  static_assert(16 * kLdC * 4 % 32 == 0 && kVec * kS == kChunkBytes);
};

// A chunk of n <= kVec consecutive elements: by cp.async when whole and
// aligned (vec), else element by element (zeros past `valid`).
template <typename S, int kVec>
__device__ void stage_chunk(S* shared, const S* global, int valid, bool vec, int64_t stride) {
  if (vec) {
    copy_16_bytes(shared, global, valid > 0);
    return;
  }
  const S zero = Num<S>::store(0.0f);
#pragma unroll
  for (int v = 0; v < kVec; ++v) shared[v] = v < valid ? global[v * stride] : zero;
}

template <typename S, int BN, bool kTransposedW>
__device__ void implicit_mma_tiles(const ImplicitConvArgs& x) {
  using T = Tile<S, BN, kTransposedW>;
  using FragA =
      wmma::fragment<wmma::matrix_a, 16, 16, T::kK, typename Mma<S>::Frag, wmma::row_major>;
  using LayoutB = typename std::conditional<kTransposedW, wmma::col_major, wmma::row_major>::type;
  using FragB = wmma::fragment<wmma::matrix_b, 16, 16, T::kK, typename Mma<S>::Frag, LayoutB>;
  using FragC = wmma::fragment<wmma::accumulator, 16, 16, T::kK, float>;
  constexpr int BM = T::BM, kBK = T::kBK, kVec = T::kVec;

  __shared__ __align__(128) unsigned char smem[T::kSharedBytes];
  __shared__ int32_t row_of[BM], row_begin[BM];
  __shared__ uint64_t row_mask[BM];
  __shared__ unsigned long long tile_mask;
  S* const stage_a = reinterpret_cast<S*>(smem);
  S* const stage_b = stage_a + 2 * T::kStageA;
  float* const result = reinterpret_cast<float*>(smem);  // after the last product

  const S* src = static_cast<const S*>(x.src);
  const S* w = static_cast<const S*>(x.w);
  const int64_t inner = x.inner, cols = x.cols;
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32;
  const int wm = warp % T::kWarpsM, wn = warp / T::kWarpsM;
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * BM;
  const int64_t n0 = static_cast<int64_t>(blockIdx.y) * BN;

  if (tid == 0) tile_mask = 0;
  __syncthreads();
  for (int r = tid; r < BM; r += kThreads) {
    int32_t row = -1, b0 = 0;
    uint64_t m = 0;
    if (r0 + r < x.rows) {
      row = x.order[r0 + r];
      m = x.mask[row];
      b0 = x.begin[row];
    }
    row_of[r] = row;
    row_mask[r] = m;
    row_begin[r] = b0;
    if (m != 0) atomicOr(&tile_mask, static_cast<unsigned long long>(m));
  }
  __syncthreads();

  // A thread stages the same chunks (rows) of A every step: their source
  // rows are looked up once per offset, when its first slice is staged.
  constexpr int kChunksA = BM * kBK / kVec, kChunksPerThread = kChunksA / kThreads;
  static_assert(kChunksA % kThreads == 0, "whole chunks per thread");
  int64_t source[kChunksPerThread];
  // Step s stages offset k's source rows and W_k for inner channels
  // [c0, c0 + kBK) into buffer s & 1.
  auto stage = [&](int buf, int k, int64_t c0) {
    S* a = stage_a + buf * T::kStageA;
#pragma unroll
    for (int j = 0; j < kChunksPerThread; ++j) {
      const int e = tid + j * kThreads;
      const int r = e / (kBK / kVec), c = (e % (kBK / kVec)) * kVec;
      if (c0 == 0) {
        const uint64_t m = row_mask[r], below = (uint64_t{1} << k) - 1;
        // A row's pair in offset k follows its pairs in the offsets below k.
        source[j] =
            (m >> k) & 1 ? x.other[x.pair[row_begin[r] + __popcll(m & below)]] : int64_t{-1};
      }
      const int64_t i = source[j];
      const int64_t left = inner - (c0 + c);
      const int valid = i < 0 ? 0 : static_cast<int>(left < kVec ? (left < 0 ? 0 : left) : kVec);
      stage_chunk<S, kVec>(a + r * T::kLdA + c, i < 0 ? src : src + i * inner + c0 + c, valid,
                           x.vec_src, 1);
    }
    S* b = stage_b + buf * T::kStageB;
    const S* wk = w + k * x.w_k;
    constexpr int kChunksB = kBK * BN / kVec;
    for (int e = tid; e < kChunksB; e += kThreads) {
      if (kTransposedW) {
        // Shared (n, c) = W_k[n0 + n, c0 + c]: contiguous along c.
        const int n = e / (kBK / kVec), c = (e % (kBK / kVec)) * kVec;
        const int64_t left = inner - (c0 + c);
        const int valid =
            n0 + n < cols ? static_cast<int>(left < kVec ? (left < 0 ? 0 : left) : kVec) : 0;
        stage_chunk<S, kVec>(b + n * T::kLdA + c, valid > 0 ? wk + (n0 + n) * x.w_n + c0 + c : w,
                             valid, x.vec_w, x.w_c);
      } else {
        // Shared (c, n) = W_k[c0 + c, n0 + n]: contiguous along n.
        const int c = e / (BN / kVec), n = (e % (BN / kVec)) * kVec;
        const int64_t left = cols - (n0 + n);
        const int valid =
            c0 + c < inner ? static_cast<int>(left < kVec ? (left < 0 ? 0 : left) : kVec) : 0;
        stage_chunk<S, kVec>(b + c * T::kLdB + n, valid > 0 ? wk + (c0 + c) * x.w_c + n0 + n : w,
                             valid, x.vec_w, x.w_n);
      }
    }
  };

  FragC acc[2];
  wmma::fill_fragment(acc[0], 0.0f);
  wmma::fill_fragment(acc[1], 0.0f);
  const int64_t slices = (inner + kBK - 1) / kBK;
  const int64_t steps = __popcll(tile_mask) * slices;
  // The loader's cursor runs one step ahead of the products'.
  uint64_t todo = tile_mask;
  int64_t load_c0 = 0, mul_c0 = 0;
  auto advance = [&] {
    load_c0 += kBK;
    if (load_c0 >= inner) {
      load_c0 = 0;
      todo &= todo - 1;
    }
  };
  if (steps > 0) {
    stage(0, __ffsll(static_cast<long long>(todo)) - 1, load_c0);
    advance();
  }
  commit_copies();
  for (int64_t s = 0; s < steps; ++s) {
    if (s + 1 < steps) {
      stage(static_cast<int>((s + 1) & 1), __ffsll(static_cast<long long>(todo)) - 1, load_c0);
      advance();
      commit_copies();
      wait_copies<1>();
    } else {
      wait_copies<0>();
    }
    __syncthreads();
    const S* a = stage_a + (s & 1) * T::kStageA;
    const S* b = stage_b + (s & 1) * T::kStageB;
    // Products wholly past the inner channels (zeros) are skipped.
    const int64_t left = inner - mul_c0;
    const int products = left >= kBK ? 2 : static_cast<int>((left + T::kK - 1) / T::kK);
    for (int p = 0; p < products; ++p) {
      FragA fa;
      wmma::load_matrix_sync(fa, a + wm * 16 * T::kLdA + p * T::kK, T::kLdA);
      if constexpr (sizeof(S) == 4)
        for (int t = 0; t < fa.num_elements; ++t) fa.x[t] = wmma::__float_to_tf32(fa.x[t]);
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int n = wn * 32 + j * 16;
        FragB fb;
        if (kTransposedW)
          wmma::load_matrix_sync(fb, b + n * T::kLdA + p * T::kK, T::kLdA);
        else
          wmma::load_matrix_sync(fb, b + p * T::kK * T::kLdB + n, T::kLdB);
        if constexpr (sizeof(S) == 4)
          for (int t = 0; t < fb.num_elements; ++t) fb.x[t] = wmma::__float_to_tf32(fb.x[t]);
        wmma::mma_sync(acc[j], fa, fb, acc[j]);
      }
    }
    mul_c0 = mul_c0 + kBK >= inner ? 0 : mul_c0 + kBK;
    __syncthreads();  // the buffer is refilled next step
  }
  // The staging buffers are free: results through shared memory, one write
  // per output, consecutive channels per warp.
#pragma unroll
  for (int j = 0; j < 2; ++j)
    wmma::store_matrix_sync(result + wm * 16 * T::kLdC + wn * 32 + j * 16, acc[j], T::kLdC,
                            wmma::mem_row_major);
  __syncthreads();
  S* dst = static_cast<S*>(x.dst);
  for (int e = tid; e < BM * BN; e += kThreads) {
    const int r = e / BN, n = e % BN;
    const int64_t row = row_of[r];
    if (row >= 0 && n0 + n < cols)
      dst[row * cols + n0 + n] = Num<S>::store(result[r * T::kLdC + n]);
  }
}

template <typename S, int BN, bool kTransposedW>
__global__ void __launch_bounds__(kThreads) implicit_mma_kernel(const ImplicitConvArgs x) {
// The emulated device (tests/cuda_emu) leaves __CUDA_ARCH__ undefined, as
// CUDA's headers expect of host code, and names its architecture in
// FKEMU_CUDA_ARCH.
#if (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800) || \
    (defined(FKEMU_CUDA_ARCH) && FKEMU_CUDA_ARCH >= 800)
  implicit_mma_tiles<S, BN, kTransposedW>(x);
#else
  (void)x;  // not launched below sm_80 (implicit_mma_supported)
#endif
}

template <typename S, int BN, bool kTransposedW>
void launch_tiles(const ImplicitConvArgs& x, void* stream) {
  constexpr int BM = Tile<S, BN, kTransposedW>::BM;
  // gridDim.y (channel tiles) stops at 65535: 4,194,240 output channels.
  const char* where = "minkowski::cuda::launch_implicit_conv_mma";
  const dim3 grid(fk::cuda::grid_dim(where, 'x', x.rows, BM, "sorted rows"),
                  fk::cuda::grid_dim(where, 'y', x.cols, BN, "output channels"));
  implicit_mma_kernel<S, BN, kTransposedW><<<grid, kThreads, 0, as_stream(stream)>>>(x);
}

template <typename S>
void launch_for_type(const ImplicitConvArgs& x, void* stream) {
  // Narrow outputs take 32-channel tiles of 128 rows, so fewer lanes idle.
  if (x.cols <= 32)
    x.transposed ? launch_tiles<S, 32, true>(x, stream) : launch_tiles<S, 32, false>(x, stream);
  else
    x.transposed ? launch_tiles<S, 64, true>(x, stream) : launch_tiles<S, 64, false>(x, stream);
}

}  // namespace

bool implicit_mma_supported(int device) {
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  if (major < 8) return false;
  // The device must also run code compiled for sm_80+: with FK_CUDA_ARCHS
  // below 80 it JIT-compiles older PTX, whose kernel body is empty (above)
  // and would leave the result unwritten. ptxVersion: the virtual
  // architecture the loaded code came from (80 for compute_80); asked once
  // per device (this runs on every implicit call).
  static std::mutex mu;
  static std::unordered_map<int, bool> code_for_sm80;
  std::lock_guard<std::mutex> lock(mu);
  auto [it, fresh] = code_for_sm80.try_emplace(device, false);
  if (fresh) {
    fk::cuda::detail::DeviceGuard guard(device);
    cudaFuncAttributes attr{};
    if (cudaFuncGetAttributes(&attr, implicit_mma_kernel<__half, 32, false>) == cudaSuccess)
      it->second = attr.ptxVersion >= 80;
    else
      cudaGetLastError();
  }
  return it->second;
}

void launch_implicit_conv_mma(int dtype, const ImplicitConvArgs& x, void* stream) {
  const char* where = "minkowski::cuda::launch_implicit_conv_mma";
  if (x.rows == 0 || x.cols == 0) return;
  if (dtype == fk::cuda::kF32)
    launch_for_type<float>(x, stream);
  else if (dtype == fk::cuda::kF16)
    launch_for_type<__half>(x, stream);
  else if (dtype == fk::cuda::kBF16)
    launch_for_type<__nv_bfloat16>(x, stream);
  else
    fk::cuda::detail::unsupported(where, "f32 (TF32), f16 or bf16", dtype);
  check_launch(where);
}

}  // namespace minkowski::cuda
