// cuBLAS on the emulated device: the handle calls and the GEMMs fieldkit
// makes (cublasGemmEx_64, cublasGemmStridedBatchedEx_64,
// cublasGemmGroupedBatchedEx_64; cublasGemmEx, fk_cuda_bench's reference),
// with CUDA 13's
// symbol names, linked in place of libcublas. Device memory is host memory,
// so a GEMM is a host loop, run in the handle's stream order through
// fkemu::submit (the emulated runtime may defer it or record it in a graph).
//
// Validation follows cuBLAS's documentation for cublasGemmEx: a handle not
// made by cublasCreate (or destroyed) is CUBLAS_STATUS_NOT_INITIALIZED;
// negative m, n, k, batch, an unknown operation, a leading dimension below
// the stored matrix's rows, null alpha/beta are CUBLAS_STATUS_INVALID_VALUE;
// a (Atype, Btype, Ctype, computeType) outside cuBLAS's GemmEx table (or an
// unknown algo) is CUBLAS_STATUS_NOT_SUPPORTED. Stricter than cuBLAS, which
// documents the results as undefined: a strided batch whose C matrices
// overlap is CUBLAS_STATUS_INVALID_VALUE here. The grouped call validates
// each group as GemmEx does, with its own narrower type table
// (resolve_grouped_kind); its pointer arrays are read when it runs, and a
// pointer that breaks the documented alignment for 16-bit or TF32 products
// aborts the process (on the device, a fault).
//
// Arithmetic, as the device's kernels do it: products accumulated in the
// compute type in k order (cuBLAS's kernels sum in another order; tests
// compare with a tolerance). 16F/16BF inputs are widened exactly, the result
// rounded to C's type once. TF32 (CUBLAS_COMPUTE_32F_FAST_TF32, or
// CUBLAS_COMPUTE_32F on a handle in CUBLAS_TF32_TENSOR_OP_MATH) rounds every
// A and B element to 10 mantissa bits first, as tensor cores read them;
// FAST_16F / FAST_16BF round them to half / bfloat16. beta == 0 never reads
// C (a NaN there does not propagate), as cuBLAS guarantees. Pointer mode is
// host: alpha and beta are read at the call, in the scale type (float for
// 32F compute, double for 64F, their complex pairs for complex types).
//
// Not modelled: COMPUTE_16F and COMPUTE_32I (and 8-bit inputs), which
// fieldkit never asks for (CUBLAS_STATUS_NOT_SUPPORTED here, though cuBLAS
// runs them); device pointer mode; split-K reductions in a 16-bit output
// type (fieldkit disallows them); the workspace's use (only its alignment
// and size are checked: a user workspace under 16 KiB fails GEMMs with
// CUBLAS_STATUS_ALLOC_FAILED, see kMinWorkspaceBytes).
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "cuda_emu/emulated_device.h"

struct cublasContext {
  cudaStream_t stream = nullptr;  // the legacy default stream until set
  int math_mode = CUBLAS_DEFAULT_MATH;
  bool own_workspace = false;  // cublasSetWorkspace's, until cublasSetStream
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

namespace {

// cuBLAS documents that a user workspace of at least 16 KiB prevents
// CUBLAS_STATUS_ALLOC_FAILED, and that a smaller one may cause it: here a
// smaller one always does.
constexpr size_t kMinWorkspaceBytes = size_t{16} << 10;

std::mutex g_mu;
std::unordered_set<cublasContext*> g_handles;  // the live ones

// The handle's state, or nullptr when `h` is not a live handle.
cublasContext* live(cublasHandle_t h) {
  return g_handles.count(h) ? h : nullptr;
}

// How A and B elements are read before they are multiplied.
enum class InputRounding { kNone, kTf32, kHalf, kBfloat16 };

float round_input(float v, InputRounding r) {
  switch (r) {
    case InputRounding::kNone:
      return v;
    case InputRounding::kHalf:
      return __half2float(__float2half_rn(v));
    case InputRounding::kBfloat16:
      return __bfloat162float(__float2bfloat16_rn(v));
    case InputRounding::kTf32: {
      // Round to nearest (ties away), as cvt.rna.tf32.f32: keep 10 of the 23
      // mantissa bits. Inf and NaN pass unchanged.
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      if ((bits & 0x7f800000u) != 0x7f800000u) bits = (bits + 0x1000u) & ~0x1fffu;
      std::memcpy(&v, &bits, 4);
      return v;
    }
  }
  return v;
}

// The scalar type a GEMM runs in: its accumulator, alpha and beta.
enum class Scale { kF32, kF64, kC32, kC64 };

// One supported combination of cuBLAS's GemmEx table, resolved.
struct GemmKind {
  Scale scale;
  cudaDataType_t in, out;
  InputRounding rounding;
};

bool is_32f_compute(cublasComputeType_t c) {
  return c == CUBLAS_COMPUTE_32F || c == CUBLAS_COMPUTE_32F_PEDANTIC ||
         c == CUBLAS_COMPUTE_32F_FAST_16F || c == CUBLAS_COMPUTE_32F_FAST_16BF ||
         c == CUBLAS_COMPUTE_32F_FAST_TF32 || c == CUBLAS_COMPUTE_32F_EMULATED_16BFX9;
}
bool is_64f_compute(cublasComputeType_t c) {
  return c == CUBLAS_COMPUTE_64F || c == CUBLAS_COMPUTE_64F_PEDANTIC ||
         c == CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT;
}
bool is_known_compute(cublasComputeType_t c) {
  return is_32f_compute(c) || is_64f_compute(c) || c == CUBLAS_COMPUTE_16F ||
         c == CUBLAS_COMPUTE_16F_PEDANTIC || c == CUBLAS_COMPUTE_32I ||
         c == CUBLAS_COMPUTE_32I_PEDANTIC;
}

bool is_known_algo(cublasGemmAlgo_t a) {
  return (a >= CUBLAS_GEMM_DEFAULT && a <= CUBLAS_GEMM_ALGO23) ||
         (a >= CUBLAS_GEMM_DEFAULT_TENSOR_OP && a <= CUBLAS_GEMM_ALGO15_TENSOR_OP);
}

// cuBLAS's GemmEx table (the rows fieldkit can reach): false when the
// combination is not one of them.
bool resolve_kind(cudaDataType_t a, cudaDataType_t b, cudaDataType_t c, cublasComputeType_t compute,
                  int math_mode, GemmKind* kind) {
  if (a != b) return false;
  if (is_64f_compute(compute)) {
    if (a == CUDA_R_64F && c == CUDA_R_64F) return *kind = {Scale::kF64, a, c, {}}, true;
    if (a == CUDA_C_64F && c == CUDA_C_64F) return *kind = {Scale::kC64, a, c, {}}, true;
    return false;
  }
  if (!is_32f_compute(compute)) return false;
  // The FAST and EMULATED compute types take f32 (or c32) in and out only.
  const bool plain = compute == CUBLAS_COMPUTE_32F || compute == CUBLAS_COMPUTE_32F_PEDANTIC;
  InputRounding r = InputRounding::kNone;
  if (compute == CUBLAS_COMPUTE_32F_FAST_TF32 ||
      (compute == CUBLAS_COMPUTE_32F && (math_mode & 0xf) == CUBLAS_TF32_TENSOR_OP_MATH)) {
    r = InputRounding::kTf32;
  } else if (compute == CUBLAS_COMPUTE_32F_FAST_16F) {
    r = InputRounding::kHalf;
  } else if (compute == CUBLAS_COMPUTE_32F_FAST_16BF) {
    r = InputRounding::kBfloat16;
  }
  if (a == CUDA_R_32F && c == CUDA_R_32F) return *kind = {Scale::kF32, a, c, r}, true;
  if (a == CUDA_C_32F && c == CUDA_C_32F) return *kind = {Scale::kC32, a, c, r}, true;
  if (!plain) return false;
  if ((a == CUDA_R_16F || a == CUDA_R_16BF) && (c == a || c == CUDA_R_32F)) {
    return *kind = {Scale::kF32, a, c, InputRounding::kNone}, true;
  }
  return false;
}

// Element i of a typed array as the compute type reads it.
template <typename Acc>
Acc load(const void* p, cudaDataType_t t, int64_t i, InputRounding r) {
  if constexpr (std::is_same_v<Acc, float>) {
    switch (t) {
      case CUDA_R_16F:
        return __half2float(static_cast<const __half*>(p)[i]);
      case CUDA_R_16BF:
        return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
      default:
        return round_input(static_cast<const float*>(p)[i], r);
    }
  } else if constexpr (std::is_same_v<Acc, std::complex<float>>) {
    const float* f = static_cast<const float*>(p) + 2 * i;
    return {round_input(f[0], r), round_input(f[1], r)};
  } else {
    return static_cast<const Acc*>(p)[i];
  }
}

template <typename Acc>
void store(void* p, cudaDataType_t t, int64_t i, Acc v) {
  if constexpr (std::is_same_v<Acc, float>) {
    if (t == CUDA_R_16F) {
      static_cast<__half*>(p)[i] = __float2half_rn(v);
    } else if (t == CUDA_R_16BF) {
      static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
    } else {
      static_cast<float*>(p)[i] = v;
    }
  } else {
    static_cast<Acc*>(p)[i] = v;
  }
}

size_t element_bytes(cudaDataType_t t) {
  switch (t) {
    case CUDA_R_16F:
    case CUDA_R_16BF:
      return 2;
    case CUDA_R_32F:
      return 4;
    case CUDA_R_64F:
    case CUDA_C_32F:
      return 8;
    default:
      return 16;
  }
}

// Everything a GEMM needs once it runs, copied at the call (the stream may
// run it later).
struct GemmCall {
  cublasOperation_t ta, tb;
  int64_t m, n, k;
  const void* a;
  int64_t lda, stride_a;
  const void* b;
  int64_t ldb, stride_b;
  void* c;
  int64_t ldc, stride_c, batch;
  GemmKind kind;
  alignas(16) unsigned char alpha[16], beta[16];
};

template <typename Acc>
Acc conj_if(Acc v, bool conjugate) {
  if constexpr (std::is_same_v<Acc, float> || std::is_same_v<Acc, double>) {
    return v;
  } else {
    return conjugate ? std::conj(v) : v;
  }
}

// A and B are read once per matrix into the compute type (rounded,
// conjugated), A as k rows of m and B as n columns of k, so that the inner
// loop runs over contiguous rows of A with one B element: every C element
// is still its own sum in k order, the same additions as a plain triple
// loop, and the real loop over rows vectorises (the emulated device tests'
// GEMMs were most of their time).
template <typename Acc>
void run_gemm(const GemmCall& g) {
  Acc alpha, beta;
  std::memcpy(&alpha, g.alpha, sizeof(Acc));
  std::memcpy(&beta, g.beta, sizeof(Acc));
  const bool read_c = beta != Acc(0);
  const InputRounding r = g.kind.rounding;
  const size_t in_bytes = element_bytes(g.kind.in), out_bytes = element_bytes(g.kind.out);
  std::vector<Acc> ap(static_cast<size_t>(g.m * g.k)), bp(static_cast<size_t>(g.k * g.n)),
      sum(static_cast<size_t>(g.m));
  for (int64_t q = 0; q < g.batch; ++q) {
    const void* a = static_cast<const char*>(g.a) + q * g.stride_a * in_bytes;
    const void* b = static_cast<const char*>(g.b) + q * g.stride_b * in_bytes;
    void* c = static_cast<char*>(g.c) + q * g.stride_c * out_bytes;
    for (int64_t l = 0; l < g.k; ++l)
      for (int64_t i = 0; i < g.m; ++i) {
        const int64_t ai = g.ta == CUBLAS_OP_N ? i + l * g.lda : l + i * g.lda;
        ap[l * g.m + i] = conj_if(load<Acc>(a, g.kind.in, ai, r), g.ta == CUBLAS_OP_C);
      }
    for (int64_t j = 0; j < g.n; ++j)
      for (int64_t l = 0; l < g.k; ++l) {
        const int64_t bi = g.tb == CUBLAS_OP_N ? l + j * g.ldb : j + l * g.ldb;
        bp[j * g.k + l] = conj_if(load<Acc>(b, g.kind.in, bi, r), g.tb == CUBLAS_OP_C);
      }
    for (int64_t j = 0; j < g.n; ++j) {
      std::fill(sum.begin(), sum.end(), Acc(0));
      for (int64_t l = 0; l < g.k; ++l) {
        const Acc blj = bp[j * g.k + l];
        const Acc* arow = ap.data() + l * g.m;
        for (int64_t i = 0; i < g.m; ++i) sum[i] += arow[i] * blj;
      }
      for (int64_t i = 0; i < g.m; ++i) {
        const int64_t ci = i + j * g.ldc;
        Acc out = alpha * sum[i];
        if (read_c) out += beta * load<Acc>(c, g.kind.out, ci, InputRounding::kNone);
        store<Acc>(c, g.kind.out, ci, out);
      }
    }
  }
}

void run(const GemmCall& g) {
  switch (g.kind.scale) {
    case Scale::kF32:
      return run_gemm<float>(g);
    case Scale::kF64:
      return run_gemm<double>(g);
    case Scale::kC32:
      return run_gemm<std::complex<float>>(g);
    case Scale::kC64:
      return run_gemm<std::complex<double>>(g);
  }
}

size_t scale_bytes(Scale s) {
  return s == Scale::kF32 ? 4 : s == Scale::kC64 ? 16 : 8;
}

bool valid_op(cublasOperation_t op) {
  return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}

// Both GEMMs: the single one is a batch of one.
cublasStatus_t gemm(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                    int64_t n, int64_t k, const void* alpha, const void* a, cudaDataType_t atype,
                    int64_t lda, int64_t stride_a, const void* b, cudaDataType_t btype, int64_t ldb,
                    int64_t stride_b, const void* beta, void* c, cudaDataType_t ctype, int64_t ldc,
                    int64_t stride_c, int64_t batch, cublasComputeType_t compute,
                    cublasGemmAlgo_t algo) {
  std::unique_lock<std::mutex> lock(g_mu);
  const cublasContext* h = live(handle);
  if (h == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const int64_t a_rows = ta == CUBLAS_OP_N ? m : k, b_rows = tb == CUBLAS_OP_N ? k : n;
  if (m < 0 || n < 0 || k < 0 || batch < 0 || !valid_op(ta) || !valid_op(tb) ||
      lda < std::max<int64_t>(1, a_rows) || ldb < std::max<int64_t>(1, b_rows) ||
      ldc < std::max<int64_t>(1, m) || alpha == nullptr || beta == nullptr ||
      !is_known_compute(compute)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  GemmKind kind;
  if (!is_known_algo(algo) || !resolve_kind(atype, btype, ctype, compute, h->math_mode, &kind)) {
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  // C matrices of a batch that share elements: undefined on the device.
  if (batch > 1 && m > 0 && n > 0 && std::abs(stride_c) < ldc * (n - 1) + m) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  if (h->own_workspace && h->workspace_bytes < kMinWorkspaceBytes) {
    return CUBLAS_STATUS_ALLOC_FAILED;
  }
  GemmCall call{ta,  tb,       m, n,   k,        a,     lda,  stride_a, b,
                ldb, stride_b, c, ldc, stride_c, batch, kind, {},       {}};
  std::memcpy(call.alpha, alpha, scale_bytes(kind.scale));
  std::memcpy(call.beta, beta, scale_bytes(kind.scale));
  const cudaStream_t stream = h->stream;
  // Unlocked: the stream model may run queued work of its own first.
  lock.unlock();
  ::fkemu::submit(stream, [call] { run(call); });
  return CUBLAS_STATUS_SUCCESS;
}

// cublasGemmGroupedBatchedEx's type table (narrower than GemmEx's): f32 in
// and out with 32F or 32F_FAST_TF32 compute, f16 or bf16 in and out with 32F
// compute, f64 with 64F compute.
bool resolve_grouped_kind(cudaDataType_t a, cudaDataType_t b, cudaDataType_t c,
                          cublasComputeType_t compute, int math_mode, GemmKind* kind) {
  if (a != b || a != c) return false;
  const bool ok = (a == CUDA_R_32F &&
                   (compute == CUBLAS_COMPUTE_32F || compute == CUBLAS_COMPUTE_32F_FAST_TF32)) ||
                  ((a == CUDA_R_16F || a == CUDA_R_16BF) && compute == CUBLAS_COMPUTE_32F) ||
                  (a == CUDA_R_64F && compute == CUBLAS_COMPUTE_64F);
  return ok && resolve_kind(a, b, c, compute, math_mode, kind);
}

// Groups of products, each group's shape, scalars and size copied at the
// call; the pointer arrays are device memory, read when the call runs.
cublasStatus_t gemm_grouped(cublasHandle_t handle, const cublasOperation_t* ta,
                            const cublasOperation_t* tb, const int64_t* m, const int64_t* n,
                            const int64_t* k, const void* alpha, const void* const* a,
                            cudaDataType_t atype, const int64_t* lda, const void* const* b,
                            cudaDataType_t btype, const int64_t* ldb, const void* beta,
                            void* const* c, cudaDataType_t ctype, const int64_t* ldc,
                            int64_t group_count, const int64_t* group_size,
                            cublasComputeType_t compute) {
  std::unique_lock<std::mutex> lock(g_mu);
  const cublasContext* h = live(handle);
  if (h == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (group_count < 0 || !is_known_compute(compute)) return CUBLAS_STATUS_INVALID_VALUE;
  if (group_count == 0) return CUBLAS_STATUS_SUCCESS;
  if (ta == nullptr || tb == nullptr || m == nullptr || n == nullptr || k == nullptr ||
      lda == nullptr || ldb == nullptr || ldc == nullptr || alpha == nullptr || beta == nullptr ||
      group_size == nullptr) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  GemmKind kind;
  if (!resolve_grouped_kind(atype, btype, ctype, compute, h->math_mode, &kind)) {
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  const size_t sb = scale_bytes(kind.scale);
  std::vector<GemmCall> groups;
  std::vector<int64_t> sizes;
  int64_t problems = 0;
  for (int64_t g = 0; g < group_count; ++g) {
    const int64_t a_rows = ta[g] == CUBLAS_OP_N ? m[g] : k[g];
    const int64_t b_rows = tb[g] == CUBLAS_OP_N ? k[g] : n[g];
    if (m[g] < 0 || n[g] < 0 || k[g] < 0 || group_size[g] < 0 || !valid_op(ta[g]) ||
        !valid_op(tb[g]) || lda[g] < std::max<int64_t>(1, a_rows) ||
        ldb[g] < std::max<int64_t>(1, b_rows) || ldc[g] < std::max<int64_t>(1, m[g])) {
      return CUBLAS_STATUS_INVALID_VALUE;
    }
    GemmCall call{ta[g],  tb[g], m[g],    n[g],   k[g], nullptr, lda[g], 0,  nullptr,
                  ldb[g], 0,     nullptr, ldc[g], 0,    1,       kind,   {}, {}};
    std::memcpy(call.alpha, static_cast<const char*>(alpha) + g * sb, sb);
    std::memcpy(call.beta, static_cast<const char*>(beta) + g * sb, sb);
    groups.push_back(call);
    sizes.push_back(group_size[g]);
    problems += group_size[g];
  }
  if (problems == 0) return CUBLAS_STATUS_SUCCESS;
  if (a == nullptr || b == nullptr || c == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (h->own_workspace && h->workspace_bytes < kMinWorkspaceBytes) {
    return CUBLAS_STATUS_ALLOC_FAILED;
  }
  // Vector loads (16-bit inputs, TF32): the pointers' alignment that
  // cuBLAS's documentation requires when k's bytes are a multiple of 16 (4).
  const bool vectors =
      kind.in == CUDA_R_16F || kind.in == CUDA_R_16BF || compute == CUBLAS_COMPUTE_32F_FAST_TF32;
  const int64_t in_bytes = static_cast<int64_t>(element_bytes(kind.in));
  const cudaStream_t stream = h->stream;
  lock.unlock();
  ::fkemu::submit(stream, [groups, sizes, a, b, c, vectors, in_bytes] {
    int64_t p = 0;
    for (size_t g = 0; g < groups.size(); ++g) {
      for (int64_t j = 0; j < sizes[g]; ++j, ++p) {
        GemmCall call = groups[g];
        if (call.m == 0 || call.n == 0) continue;
        call.a = a[p];
        call.b = b[p];
        call.c = c[p];
        const int64_t k_bytes = call.k * in_bytes;
        const uintptr_t align = !vectors ? 1 : k_bytes % 16 == 0 ? 16 : k_bytes % 4 == 0 ? 4 : 1;
        for (const void* q : {call.a, call.b, static_cast<const void*>(call.c)}) {
          if (reinterpret_cast<uintptr_t>(q) % align != 0) {
            // A misaligned vector load faults the device: end here, loudly.
            std::fprintf(stderr,
                         "emulated cublasGemmGroupedBatchedEx: product %lld's pointer %p is not "
                         "%zu-byte aligned (k = %lld)\n",
                         static_cast<long long>(p), q, static_cast<size_t>(align),
                         static_cast<long long>(call.k));
            std::abort();
          }
        }
        run(call);
      }
    }
  });
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(g_mu);
  *handle = new cublasContext();
  g_handles.insert(*handle);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (live(handle) == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  g_handles.erase(handle);
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(g_mu);
  cublasContext* h = live(handle);
  if (h == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  h->stream = stream;
  // cuBLAS documents that setting the stream resets the workspace to its own pool.
  h->own_workspace = false;
  h->workspace = nullptr;
  h->workspace_bytes = 0;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t bytes) {
  std::lock_guard<std::mutex> lock(g_mu);
  cublasContext* h = live(handle);
  if (h == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  // cuBLAS requires a workspace aligned to at least 256 bytes (as cudaMalloc's are).
  if (reinterpret_cast<uintptr_t>(workspace) % 256 != 0) return CUBLAS_STATUS_INVALID_VALUE;
  h->own_workspace = true;
  h->workspace = workspace;
  h->workspace_bytes = bytes;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  std::lock_guard<std::mutex> lock(g_mu);
  cublasContext* h = live(handle);
  if (h == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  // One base mode, optionally with the reduction flag.
  const int base = mode & ~CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
  if (base != CUBLAS_DEFAULT_MATH && base != CUBLAS_TENSOR_OP_MATH &&
      base != CUBLAS_PEDANTIC_MATH && base != CUBLAS_TF32_TENSOR_OP_MATH &&
      base != CUBLAS_FP32_EMULATED_BF16X9_MATH && base != CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  h->math_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "unrecognized status";
}

// The descriptions libcublasLt 13 carries for each status.
const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "an unsupported value or parameter was passed to the function";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "the function requires an architectural feature absent from the device";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "the function failed to launch on the GPU";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "the requested functionality is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "the license check failed";
  }
  return "unknown error";
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void* alpha,
                            const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                            cublasGemmAlgo_t algo) {
  return gemm(handle, transa, transb, m, n, k, alpha, A, Atype, lda, 0, B, Btype, ldb, 0, beta, C,
              Ctype, ldc, 0, 1, computeType, algo);
}

cublasStatus_t cublasGemmEx_64(cublasHandle_t handle, cublasOperation_t transa,
                               cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                               const void* alpha, const void* A, cudaDataType Atype, int64_t lda,
                               const void* B, cudaDataType Btype, int64_t ldb, const void* beta,
                               void* C, cudaDataType Ctype, int64_t ldc,
                               cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return gemm(handle, transa, transb, m, n, k, alpha, A, Atype, lda, 0, B, Btype, ldb, 0, beta, C,
              Ctype, ldc, 0, 1, computeType, algo);
}

cublasStatus_t cublasGemmStridedBatchedEx_64(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m, int64_t n,
    int64_t k, const void* alpha, const void* A, cudaDataType Atype, int64_t lda,
    long long int strideA, const void* B, cudaDataType Btype, int64_t ldb, long long int strideB,
    const void* beta, void* C, cudaDataType Ctype, int64_t ldc, long long int strideC,
    int64_t batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return gemm(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb,
              strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType, algo);
}

cublasStatus_t cublasGemmGroupedBatchedEx_64(
    cublasHandle_t handle, const cublasOperation_t transa_array[],
    const cublasOperation_t transb_array[], const int64_t m_array[], const int64_t n_array[],
    const int64_t k_array[], const void* alpha_array, const void* const Aarray[],
    cudaDataType_t Atype, const int64_t lda_array[], const void* const Barray[],
    cudaDataType_t Btype, const int64_t ldb_array[], const void* beta_array, void* const Carray[],
    cudaDataType_t Ctype, const int64_t ldc_array[], int64_t group_count,
    const int64_t group_size[], cublasComputeType_t computeType) {
  return gemm_grouped(handle, transa_array, transb_array, m_array, n_array, k_array, alpha_array,
                      Aarray, Atype, lda_array, Barray, Btype, ldb_array, beta_array, Carray, Ctype,
                      ldc_array, group_count, group_size, computeType);
}

}  // extern "C"
