// cuBLAS GEMM (see blas.h). Host code only: compiled by the host compiler.
// One cublasGemmEx / cublasGemmStridedBatchedEx call covers every dtype fk
// multiplies on the device: f32 (FP32, or TF32 tensor cores with
// CUBLAS_COMPUTE_32F_FAST_TF32), f16 and bf16 (tensor cores, f32 accumulation),
// f64, c64 and c128, with cuBLAS choosing the kernel. fk calls no cuBLASLt API
// (libcublas loads libcublasLt for itself; fk opens libcublas at its first
// GEMM, cublas_library.h): what that API adds, epilogue fusion
// (bias, activation) and explicit algorithm selection, fk does not use.
#include "fk/cuda/blas.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "fk/cuda/blas_layout.h"
#include "fk/cuda/blas_stream.h"
#include "fk/cuda/capture_marks.h"
#include "fk/cuda/cublas_library.h"
#include "fk/cuda/device_guard.h"
#include "fk/cuda/graph.h"
#include "fk/cuda/kernels.h"
#include "fk/error.h"

namespace fk::cuda {
namespace {

using detail::check_cuda;
using detail::DeviceGuard;

constexpr int kMaxDevices = 64;
constexpr size_t kWorkspaceBytes = size_t{32} << 20;  // cuBLAS's recommendation for Hopper

void check_blas(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS) {
    throw Error(what, "CUBLAS_STATUS_SUCCESS",
                std::string(cublas_library().status_name(st)) + " (" +
                    cublas_library().status_string(st) + ")");
  }
}

struct Handle {
  cublasHandle_t handle = nullptr;
  void* workspace = nullptr;
  StreamKey stream;  // bound to, when `bound`
  bool bound = false;
};

std::mutex g_mu;
Handle g_handles[kMaxDevices];

// Binds the device's existing handle to `stream` (see blas_stream.h for when
// it moves and when it refuses; `where` names the call a refusal blames).
// cublasSetStream resets the workspace to cuBLAS's own pool, so fk's is set
// again after it. The caller holds g_mu: calls on one device are serialized
// here.
void bind(Handle& h, int device, cudaStream_t stream, bool capture, const char* where) {
  const StreamKey key = stream_key(stream, capture);
  switch (blas_stream_step(h.bound, h.stream, key, capture)) {
    case BlasStreamStep::kKeep:
      return;
    case BlasStreamStep::kRefuse:
      throw Error(std::string(where) + " inside a CUDA graph capture",
                  "cuBLAS bound to the captured stream before the capture (an eager call on it "
                  "first)",
                  std::string(h.bound ? "a move of cuBLAS to another stream (a device wait)"
                                      : "the first cuBLAS call (an allocation)") +
                      " on cuda:" + fk::to_text(device) + " while a capture runs");
    case BlasStreamStep::kSyncThenBind:
      check_cuda(cudaDeviceSynchronize(),
                 (std::string(where) + " (moving cuBLAS to another stream)").c_str());
      break;
    case BlasStreamStep::kBind:
      break;
  }
  check_blas(cublas_library().set_stream(h.handle, stream), "cublasSetStream");
  check_blas(cublas_library().set_workspace(h.handle, h.workspace, kWorkspaceBytes),
             "cublasSetWorkspace");
  h.stream = key;
  h.bound = true;
}

Handle& handle_of(int device) {
  FK_CHECK(device >= 0 && device < kMaxDevices, "cuda::gemm", "a device index 0..63",
           fk::to_text(device));
  return g_handles[device];
}

// The device's handle bound to `stream`, created on first use. A GEMM queued
// inside a capture marks the graph as one whose replays use the workspace
// (blas_follow_replay). The caller holds g_mu.
cublasHandle_t bound_handle(int device, cudaStream_t stream) {
  Handle& h = handle_of(device);
  const bool capture = capture_running_on(device, stream);
  if (h.handle == nullptr) {
    // Refused inside a capture by bind, before anything is allocated.
    if (capture) bind(h, device, stream, capture, "cuda::gemm");
    const CublasLibrary& lib = cublas_library();  // opened here, at the first GEMM
    check_cuda(cudaMalloc(&h.workspace, kWorkspaceBytes), "cuda::gemm workspace");
    cublasHandle_t made = nullptr;
    cublasStatus_t st = lib.create(&made);
    // f16/bf16 products with a 16-bit C keep f32 sums throughout (blas.h):
    // by default cuBLAS may add split-K partial sums in the output type.
    if (st == CUBLAS_STATUS_SUCCESS)
      st = lib.set_math_mode(made, CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
    if (st != CUBLAS_STATUS_SUCCESS) {
      if (made != nullptr) lib.destroy(made);
      cudaFree(h.workspace);
      h = Handle{};
      check_blas(st, "cublasCreate (f32 reductions)");
    }
    h.handle = made;
  }
  bind(h, device, stream, capture, "cuda::gemm");
  if (capture) capture_marks().note_library_work(device, stream);
  return h.handle;
}

// The cuBLAS data/compute types and scalars for an fk dtype.
struct GemmTypes {
  cudaDataType_t data;
  cublasComputeType_t compute;
  // alpha/beta in the compute type's scalar format (up to two doubles).
  alignas(16) unsigned char alpha[16];
  alignas(16) unsigned char beta[16];
};

GemmTypes types_for(int dtype, double alpha, double beta, bool allow_tf32) {
  GemmTypes t{};
  auto put = [](unsigned char* dst, auto v) { std::memcpy(dst, &v, sizeof(v)); };
  switch (dtype) {
    case kF32:
    case kF16:
    case kBF16:
      t.data = dtype == kF32 ? CUDA_R_32F : (dtype == kF16 ? CUDA_R_16F : CUDA_R_16BF);
      t.compute = dtype == kF32 && allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
      put(t.alpha, static_cast<float>(alpha));
      put(t.beta, static_cast<float>(beta));
      break;
    case kF64:
      t.data = CUDA_R_64F;
      t.compute = CUBLAS_COMPUTE_64F;
      put(t.alpha, alpha);
      put(t.beta, beta);
      break;
    case kC64: {
      t.data = CUDA_C_32F;
      t.compute = CUBLAS_COMPUTE_32F;
      float a[2] = {static_cast<float>(alpha), 0.f}, b[2] = {static_cast<float>(beta), 0.f};
      std::memcpy(t.alpha, a, sizeof(a));
      std::memcpy(t.beta, b, sizeof(b));
      break;
    }
    case kC128: {
      t.data = CUDA_C_64F;
      t.compute = CUBLAS_COMPUTE_64F;
      double a[2] = {alpha, 0.0}, b[2] = {beta, 0.0};
      std::memcpy(t.alpha, a, sizeof(a));
      std::memcpy(t.beta, b, sizeof(b));
      break;
    }
    default:
      throw Error("cuda::gemm", "dtype f32, f16, bf16, f64, c64 or c128",
                  "dtype code " + fk::to_text(dtype));
  }
  return t;
}

cublasOperation_t op(bool trans) {
  return trans ? CUBLAS_OP_T : CUBLAS_OP_N;
}

// cuBLAS's rule for its grouped call with 16-bit inputs or a FAST (TF32)
// compute type, whose kernels read operands in vectors: when k's bytes are a
// multiple of 16 (of 4), every A, B and C pointer is 16-byte (4-byte)
// aligned. The grouped call cannot check pointers it reads on the device.
bool grouped_alignment_holds(int dtype, bool tf32, const GemmList& l) {
  const bool half = dtype == kF16 || dtype == kBF16;
  if (!half && !(dtype == kF32 && tf32)) return true;
  const int64_t esize = half ? 2 : 4;
  for (size_t i = 0; i < l.size(); ++i) {
    const int64_t bytes = l.shapes[i].k * esize;
    const uintptr_t align = bytes % 16 == 0 ? 16 : bytes % 4 == 0 ? 4 : 1;
    for (const void* p : {l.a[i], l.b[i], static_cast<const void*>(l.c[i])})
      if (reinterpret_cast<uintptr_t>(p) % align != 0) return false;
  }
  return true;
}

}  // namespace

void gemm_strided_batched(int device, int dtype, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                          double alpha, const void* a, int64_t lda, int64_t stride_a, const void* b,
                          int64_t ldb, int64_t stride_b, double beta, void* c, int64_t ldc,
                          int64_t stride_c, int64_t batch, void* stream, bool allow_tf32) {
  const ColumnMajorGemm g = column_major_gemm(ta, tb, m, n, k, lda, ldb, ldc);
  FK_CHECK(batch >= 0, "cuda::gemm", "a non-negative batch", fk::to_text(batch));
  if (m == 0 || n == 0 || batch == 0) return;
  GemmTypes t = types_for(dtype, alpha, beta, allow_tf32);
  DeviceGuard guard(device);
  std::lock_guard<std::mutex> lock(g_mu);
  cublasHandle_t h = bound_handle(device, static_cast<cudaStream_t>(stream));
  // Column-major (blas_layout.h): B first, A second.
  if (batch == 1) {
    check_blas(cublas_library().gemm(h, op(g.trans_first), op(g.trans_second), g.m, g.n, g.k,
                                     t.alpha, b, t.data, g.ld_first, a, t.data, g.ld_second, t.beta,
                                     c, t.data, g.ldc, t.compute, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx");
  } else {
    check_blas(cublas_library().gemm_strided_batched(
                   h, op(g.trans_first), op(g.trans_second), g.m, g.n, g.k, t.alpha, b, t.data,
                   g.ld_first, stride_b, a, t.data, g.ld_second, stride_a, t.beta, c, t.data, g.ldc,
                   stride_c, batch, t.compute, CUBLAS_GEMM_DEFAULT),
               "cublasGemmStridedBatchedEx");
  }
}

void gemm(int device, int dtype, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
          const void* a, int64_t lda, const void* b, int64_t ldb, double beta, void* c, int64_t ldc,
          void* stream, bool allow_tf32) {
  gemm_strided_batched(device, dtype, ta, tb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0,
                       1, stream, allow_tf32);
}

bool gemm_grouped(int device, int dtype, const GemmList& list, void* stream, bool allow_tf32) {
  if (dtype != kF32 && dtype != kF16 && dtype != kBF16 && dtype != kF64) return false;
  const std::vector<GemmShape>& shapes = list.shapes;
  const size_t count = shapes.size();
  FK_CHECK(list.a.size() == count && list.b.size() == count && list.c.size() == count,
           "cuda::gemm_grouped", "one A, B and C pointer per product (" + fk::to_text(count) + ")",
           fk::to_text(list.a.size()) + ", " + fk::to_text(list.b.size()) + " and " +
               fk::to_text(list.c.size()));
  if (count == 0) return true;
  if (!grouped_alignment_holds(dtype, allow_tf32, list)) return false;
  // Per group (= per product): the column-major call, as gemm's (blas_layout.h).
  std::vector<cublasOperation_t> op_first(count), op_second(count);
  std::vector<int64_t> m(count), n(count), k(count), ld_first(count), ld_second(count);
  std::vector<int64_t> ldc(count), size(count, 1);
  for (size_t i = 0; i < count; ++i) {
    const GemmShape& s = shapes[i];
    FK_CHECK(s.m > 0 && s.n > 0, "cuda::gemm_grouped", "products with m, n > 0",
             "product " + fk::to_text(i) + " of " + fk::to_text(s.m) + " x " + fk::to_text(s.n));
    const ColumnMajorGemm g = column_major_gemm(s.ta, s.tb, s.m, s.n, s.k, s.lda, s.ldb, s.ldc);
    op_first[i] = op(g.trans_first);
    op_second[i] = op(g.trans_second);
    m[i] = g.m;
    n[i] = g.n;
    k[i] = g.k;
    ld_first[i] = g.ld_first;
    ld_second[i] = g.ld_second;
    ldc[i] = g.ldc;
  }
  const GemmTypes t = types_for(dtype, 1.0, 0.0, allow_tf32);
  // alpha and beta per group, in the compute type's scalar format.
  const size_t scale = dtype == kF64 ? sizeof(double) : sizeof(float);
  std::vector<unsigned char> alpha(count * scale), beta(count * scale);
  for (size_t i = 0; i < count; ++i) {
    std::memcpy(alpha.data() + i * scale, t.alpha, scale);
    std::memcpy(beta.data() + i * scale, t.beta, scale);
  }
  // The pointer arrays, column-major's order: fk's Bs are cuBLAS's first
  // operands, its As the second, then the Cs.
  std::vector<const void*> table(list.b);
  table.insert(table.end(), list.a.begin(), list.a.end());
  table.insert(table.end(), list.c.begin(), list.c.end());
  const size_t bytes = table.size() * sizeof(void*);
  DeviceGuard guard(device);
  const auto s = static_cast<cudaStream_t>(stream);
  if (capture_running_on(device, stream)) return false;
  std::lock_guard<std::mutex> lock(g_mu);
  cublasHandle_t h = bound_handle(device, s);
  void* on_device = nullptr;
  check_cuda(cudaMallocAsync(&on_device, bytes, s), "cuda::gemm_grouped (pointer arrays)");
  const auto* ptrs = static_cast<const void* const*>(on_device);
  const cudaError_t copied =
      cudaMemcpyAsync(on_device, table.data(), bytes, cudaMemcpyHostToDevice, s);
  cublasStatus_t st = CUBLAS_STATUS_EXECUTION_FAILED;
  if (copied == cudaSuccess)
    st = cublas_library().gemm_grouped_batched(
        h, op_first.data(), op_second.data(), m.data(), n.data(), k.data(), alpha.data(), ptrs,
        t.data, ld_first.data(), ptrs + count, t.data, ld_second.data(), beta.data(),
        const_cast<void* const*>(ptrs + 2 * count), t.data, ldc.data(), static_cast<int64_t>(count),
        size.data(), t.compute);
  // Freed in the stream's order: after the call has read the arrays.
  cudaFreeAsync(on_device, s);
  check_cuda(copied, "cuda::gemm_grouped (pointer arrays)");
  if (st == CUBLAS_STATUS_NOT_SUPPORTED) return false;
  check_blas(st, "cublasGemmGroupedBatchedEx");
  return true;
}

int64_t gemm_list(int device, int dtype, const GemmList& list, bool grouped, void* stream,
                  bool allow_tf32) {
  if (grouped && list.size() > 1 && gemm_grouped(device, dtype, list, stream, allow_tf32)) return 1;
  for (size_t i = 0; i < list.size(); ++i) {
    const GemmShape& s = list.shapes[i];
    gemm(device, dtype, s.ta, s.tb, s.m, s.n, s.k, 1.0, list.a[i], s.lda, list.b[i], s.ldb, 0.0,
         list.c[i], s.ldc, stream, allow_tf32);
  }
  return static_cast<int64_t>(list.size());
}

void gemm_f32_out(int device, int in_dtype, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                  double alpha, const void* a, int64_t lda, const void* b, int64_t ldb, double beta,
                  float* c, int64_t ldc, void* stream, bool allow_tf32) {
  FK_CHECK(in_dtype == kF32 || in_dtype == kF16 || in_dtype == kBF16, "cuda::gemm_f32_out",
           "operands of dtype f32, f16 or bf16", "dtype code " + fk::to_text(in_dtype));
  const ColumnMajorGemm g = column_major_gemm(ta, tb, m, n, k, lda, ldb, ldc);
  if (m == 0 || n == 0) return;
  GemmTypes t = types_for(in_dtype, alpha, beta, allow_tf32);
  DeviceGuard guard(device);
  std::lock_guard<std::mutex> lock(g_mu);
  cublasHandle_t h = bound_handle(device, static_cast<cudaStream_t>(stream));
  check_blas(cublas_library().gemm(h, op(g.trans_first), op(g.trans_second), g.m, g.n, g.k, t.alpha,
                                   b, t.data, g.ld_first, a, t.data, g.ld_second, t.beta, c,
                                   CUDA_R_32F, g.ldc, t.compute, CUBLAS_GEMM_DEFAULT),
             "cublasGemmEx (f32 result)");
}

void blas_follow_replay(int device, void* stream, const std::function<void()>& launch) {
  DeviceGuard guard(device);
  std::lock_guard<std::mutex> lock(g_mu);
  Handle& h = handle_of(device);
  if (h.handle != nullptr)  // else released since the capture: no GEMM can be queued
    bind(h, device, static_cast<cudaStream_t>(stream), capture_running_on(device, stream),
         "CUDA graph launch (its GEMMs)");
  launch();
}

void blas_release() {
  const int64_t graphs = live_library_graphs();
  FK_CHECK(graphs == 0, "cuda::blas_release",
           "no live CUDA graph holding GEMMs or FFTs (its replays use the workspace)",
           fk::to_text(graphs) + " such graph(s)");
  std::lock_guard<std::mutex> lock(g_mu);
  for (int d = 0; d < kMaxDevices; ++d) {
    Handle& h = g_handles[d];
    if (h.handle == nullptr) continue;
    DeviceGuard guard(d);
    cublas_library().destroy(h.handle);
    cudaFree(h.workspace);
    h = Handle{};
  }
}

}  // namespace fk::cuda
