#pragma once
// What the convolution kernel files share (internal): conv_kernel.cpp (the
// entry points, forward and input gradient), conv_weight_grad.cpp and
// conv_channelwise.cpp. The constants are fixed so that results do not depend
// on the thread count (conv_kernel.h, determinism).
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "fk/dtype.h"
#include "fk/parallel.h"
#include "fk/tensor.h"
#include "minkowski/coords/kernel_map.h"

namespace minkowski::conv_detail {

// Pairs per weight-gradient partial on the blocked (BLAS) path.
constexpr int64_t kWeightBlock = 4096;
// OpenBLAS runs a GEMM on one thread below this m*n*k (its SMP threshold) and
// always inside an active OpenMP region; above it, outside a region, it may
// split the work and round differently. So big jobs always run in our team.
constexpr double kBlasSerialMnk = 262144.0;
// Rows per block of the row-walking tile paths: the least (wide matrices and
// rows with few pairs get multiples of it: conv_row_stationary.cpp,
// conv_weight_grad.cpp).
constexpr int64_t kRowTile = 128;

// Whether a job of `work` multiply-adds over `items` independent items is
// worth a thread team.
inline bool parallel_worth(double work, int64_t items) {
  return items > 1 && work >= 4.0 * kBlasSerialMnk && fk::get_num_threads() > 1 &&
         !omp_in_parallel();
}

template <typename T>
inline void add_row(T* __restrict dst, const T* __restrict src, int64_t width) {
  for (int64_t c = 0; c < width; ++c) dst[c] += src[c];
}

// out[k] = w[k]^T for each of K matrices (C_in x C_out -> C_out x C_in), in
// 32 x 32 blocks: a plain element loop writes every element to a different
// cache line (at C = 256, ~1.8M scattered writes: a tenth of a strided input
// gradient's time).
template <typename T>
void transpose_offsets(const T* w, int64_t K, int64_t cin, int64_t cout, T* out) {
  constexpr int64_t kB = 32;
  for (int64_t k = 0; k < K; ++k) {
    const T* src = w + k * cin * cout;
    T* dst = out + k * cin * cout;
    for (int64_t a0 = 0; a0 < cin; a0 += kB)
      for (int64_t b0 = 0; b0 < cout; b0 += kB)
        for (int64_t b = b0; b < std::min(cout, b0 + kB); ++b)
          for (int64_t a = a0; a < std::min(cin, a0 + kB); ++a)
            dst[b * cin + a] = src[a * cout + b];
  }
}

template <typename T>
constexpr fk::DType dtype_of_t() {
  return std::is_same_v<T, float> ? fk::DType::F32 : fk::DType::F64;
}

// The checks every conv entry point makes on features, weight and map: on
// any device, both on one (check_operands), or on the CPU (check_common).
void check_operands(const char* where, const fk::Tensor& f, const fk::Tensor& w,
                    const KernelMap& m);
void check_common(const char* where, const fk::Tensor& f, const fk::Tensor& w, const KernelMap& m);

// gw (K x C_in x C_out, zeroed) = the weight gradient. `tiles`: the f32
// register tiles (C_out a multiple of 8 on an AVX2 CPU), else BLAS over
// gathered blocks of pairs; the two differ in rounding (conv_kernel.h).
// The row-stationary tiles (conv_row_stationary.cpp): dst[r] (N x cols_out
// f32, written whole) = sum over row r's pairs in `plan` (the map's row
// blocks of dst's side), offsets ascending, of src[other] . mats[k]. f32:
// mats K x rows_in x cols_out (gather_gemm.h); bf16: src bf16 words, mats K x
// rows_in / 2 x cols_out channel pairs (gather_gemm_bf16.h).
void row_stationary_f32(const RowBlocks& plan, const float* src, const float* mats, int64_t rows_in,
                        int64_t cols_out, float* dst);
void row_stationary_bf16(const RowBlocks& plan, const uint16_t* src, const uint32_t* mats,
                         int64_t rows_in, int64_t cols_out, float* dst);

// The bf16 tiles' passes (conv_kernel_bf16.cpp; gather_gemm_bf16_supported
// on the pass's (C_in, C_out), identity maps included): bf16 words in, f32
// results written whole. F N_in x C_in, W K x C_in x C_out, G N_out x C_out.
void forward_bf16(const uint16_t* F, int64_t cin, const uint16_t* W, int64_t cout,
                  const KernelMap& m, float* out);
void input_grad_bf16(const uint16_t* G, int64_t cin, const uint16_t* W, int64_t cout,
                     const KernelMap& m, float* gin);
// gw (K x C_in x C_out f32, zeroed) = the weight gradient from bf16 F and G
// (conv_weight_grad.cpp: the f32 tiles' row walk, outer_accumulate_bf16);
// false (nothing done) on an identity map or when the partials would not fit.
bool weight_grad_bf16(const uint16_t* F, const uint16_t* G, int64_t cin, int64_t cout,
                      const KernelMap& m, float* gw);

template <typename T>
void weight_grad(const T* F, const T* G, int64_t cin, int64_t cout, const KernelMap& m, T* gw,
                 bool tiles);

}  // namespace minkowski::conv_detail
