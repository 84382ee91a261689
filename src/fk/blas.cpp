#include "fk/blas.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <complex>
#include <string>

#include "fk/amp.h"
#include "fk/cuda/blas.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/parallel.h"
#include "fk/profile.h"

namespace fk {

void blas_set_num_threads(int n) {
  openblas_set_num_threads(n);
}

const char* blas_config() {
  return openblas_get_config();
}

namespace {

// Below this many rows per thread, and for K,N at most kSkinny, our own row
// split beats OpenBLAS's (measured: ../shared/reference/machine.md).
constexpr int64_t kSkinny = 256;
constexpr int64_t kMinRowsPerThread = 2048;
// Below this many multiply-adds a GEMM runs on the calling thread: a second
// thread saves at most tens of microseconds and waking a team can cost
// milliseconds on a busy VM (measured in nefi's 32x32 deconvolution: 64 ms/step
// with 2 OpenBLAS threads against 2 ms with one).
constexpr double kSmallGemm = 1 << 24;

void gemm_serial(DType dtype, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
                 const void* a, int64_t lda, const void* b, int64_t ldb, double beta, void* c,
                 int64_t ldc) {
  auto TA = ta ? CblasTrans : CblasNoTrans, TB = tb ? CblasTrans : CblasNoTrans;
  int M = static_cast<int>(m), N = static_cast<int>(n), K = static_cast<int>(k);
  int LDA = static_cast<int>(lda), LDB = static_cast<int>(ldb), LDC = static_cast<int>(ldc);
  switch (dtype) {
    case DType::F32:
      cblas_sgemm(CblasRowMajor, TA, TB, M, N, K, static_cast<float>(alpha),
                  static_cast<const float*>(a), LDA, static_cast<const float*>(b), LDB,
                  static_cast<float>(beta), static_cast<float*>(c), LDC);
      break;
    case DType::F64:
      cblas_dgemm(CblasRowMajor, TA, TB, M, N, K, alpha, static_cast<const double*>(a), LDA,
                  static_cast<const double*>(b), LDB, beta, static_cast<double*>(c), LDC);
      break;
    case DType::C64: {
      c64 al(static_cast<float>(alpha)), be(static_cast<float>(beta));
      cblas_cgemm(CblasRowMajor, TA, TB, M, N, K, &al, a, LDA, b, LDB, &be, c, LDC);
      break;
    }
    case DType::C128: {
      c128 al(alpha), be(beta);
      cblas_zgemm(CblasRowMajor, TA, TB, M, N, K, &al, a, LDA, b, LDB, &be, c, LDC);
      break;
    }
    default:
      throw Error("gemm", "dtype f32, f64, c64 or c128", name(dtype));
  }
}

}  // namespace

void gemm(DType dtype, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
          const void* a, int64_t lda, const void* b, int64_t ldb, double beta, void* c,
          int64_t ldc) {
  if (m == 0 || n == 0) return;
  // OpenBLAS's CBLAS takes 32-bit ints: a larger size would wrap to a
  // negative or unrelated one.
  FK_CHECK(std::max({m, n, k, lda, ldb, ldc}) <= INT_MAX, "fk::gemm",
           "sizes and leading dimensions up to 2^31 - 1 (OpenBLAS's 32-bit ints)",
           "m " + fk::to_text(m) + ", n " + fk::to_text(n) + ", k " + fk::to_text(k) + ", lda " +
               fk::to_text(lda) + ", ldb " + fk::to_text(ldb) + ", ldc " + fk::to_text(ldc));
  profile::count_launch();
  bool skinny = !ta && k <= kSkinny && n <= kSkinny && m >= kMinRowsPerThread * 2;
  if (!skinny) {
    if (omp_in_parallel()) {  // OpenBLAS runs single-threaded inside a region
      gemm_serial(dtype, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      return;
    }
    // OpenBLAS (OpenMP build) sizes its team from omp_get_max_threads(), a
    // per-thread setting: set for this call to one thread below the cutoff (no
    // team wake-up), else to fk's count, which a thread other than
    // set_num_threads' caller (a std::thread, a Python thread) does not have:
    // it kept the environment's, and the same fk count gave other bits there.
    const bool small =
        static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) < kSmallGemm;
    const int want = small ? 1 : get_num_threads(), prev = omp_get_max_threads();
    if (want != prev) omp_set_num_threads(want);
    gemm_serial(dtype, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    if (want != prev) omp_set_num_threads(prev);
    return;
  }
  // Fixed row blocks, whatever the thread count: each block is always the same
  // single-threaded call, so the result does not depend on how many threads run.
  // At one fk thread parallel_for runs the blocks inline, outside any region,
  // where OpenBLAS would size a team from the caller's OpenMP setting (a
  // std::thread's is the environment's): pinned to one for the call, as above.
  size_t es = itemsize(dtype);
  int64_t blocks = (m + kMinRowsPerThread - 1) / kMinRowsPerThread;
  const int prev = omp_get_max_threads();
  const bool pin = !omp_in_parallel() && prev != 1;
  if (pin) omp_set_num_threads(1);
  parallel_for(0, blocks, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t blk = lo; blk < hi; ++blk) {
      int64_t r0 = blk * kMinRowsPerThread, r1 = std::min(m, r0 + kMinRowsPerThread);
      gemm_serial(dtype, ta, tb, r1 - r0, n, k, alpha, static_cast<const char*>(a) + r0 * lda * es,
                  lda, b, ldb, beta, static_cast<char*>(c) + r0 * ldc * es, ldc);
    }
  });
  if (pin) omp_set_num_threads(prev);
}

void gemm_on(Device device, DType dtype, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
             double alpha, const void* a, int64_t lda, const void* b, int64_t ldb, double beta,
             void* c, int64_t ldc) {
  if (device.is_cpu()) return gemm(dtype, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (m == 0 || n == 0) return;
  cuda::gemm(device.index, static_cast<int>(dtype), ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c,
             ldc, cuda::current_stream(device.index), amp::allow_tf32());
  profile::count_launch();
  cuda::after_op(device.index);
}

void gemm_f32_out_on(Device device, DType in_dtype, bool ta, bool tb, int64_t m, int64_t n,
                     int64_t k, double alpha, const void* a, int64_t lda, const void* b,
                     int64_t ldb, double beta, float* c, int64_t ldc) {
  FK_CHECK(device.is_cuda(), "fk::gemm_f32_out_on", "a CUDA device (the host has no 16-bit GEMM)",
           device.str());
  if (m == 0 || n == 0) return;
  cuda::gemm_f32_out(device.index, static_cast<int>(in_dtype), ta, tb, m, n, k, alpha, a, lda, b,
                     ldb, beta, c, ldc, cuda::current_stream(device.index), amp::allow_tf32());
  profile::count_launch();
  cuda::after_op(device.index);
}

void gemm_strided_batched_on(Device device, DType dtype, bool ta, bool tb, int64_t m, int64_t n,
                             int64_t k, double alpha, const void* a, int64_t lda, int64_t stride_a,
                             const void* b, int64_t ldb, int64_t stride_b, double beta, void* c,
                             int64_t ldc, int64_t stride_c, int64_t batch) {
  FK_CHECK(batch >= 0 && stride_a >= 0 && stride_b >= 0 && stride_c >= 0,
           "fk::gemm_strided_batched_on", "a non-negative batch and strides",
           "batch " + fk::to_text(batch) + ", strides " + fk::to_text(stride_a) + ", " +
               fk::to_text(stride_b) + ", " + fk::to_text(stride_c));
  if (device.is_cpu()) {
    const size_t es = itemsize(dtype);
    for (int64_t i = 0; i < batch; ++i)
      gemm(dtype, ta, tb, m, n, k, alpha, static_cast<const char*>(a) + i * stride_a * es, lda,
           static_cast<const char*>(b) + i * stride_b * es, ldb, beta,
           static_cast<char*>(c) + i * stride_c * es, ldc);
    return;
  }
  if (m == 0 || n == 0 || batch == 0) return;
  cuda::gemm_strided_batched(device.index, static_cast<int>(dtype), ta, tb, m, n, k, alpha, a, lda,
                             stride_a, b, ldb, stride_b, beta, c, ldc, stride_c, batch,
                             cuda::current_stream(device.index), amp::allow_tf32());
  profile::count_launch();
  cuda::after_op(device.index);
}

}  // namespace fk
