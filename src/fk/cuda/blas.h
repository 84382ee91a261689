#pragma once
// GEMM on CUDA devices through cuBLAS, on row-major data (fk's layout). Plain
// C++ signatures (device pointers, a cudaStream_t as void*), so fk's .cpp files
// call it without CUDA headers; runtime_stub.cpp throws in CPU-only builds.
//
// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, so cuBLAS is
// called with the operands (and m, n) swapped and no data is moved.
// dtype (fk::DType code): f32 (FP32, or TF32 tensor cores when allow_tf32),
// f16 and bf16 (stored 16-bit, f32 accumulation on tensor cores, split-K
// partial sums included; C is 16-bit too), f64, c64, c128 (transposes are
// plain, not conjugating, as fk::gemm). The operand swap: cuda/blas_layout.h.
// One cuBLAS handle per device, created on first use with a fixed 32 MiB
// workspace (so no allocation happens inside a call and results do not depend
// on what memory cuBLAS could get), bound to `stream` for each call; a call on
// another stream than the previous call's first waits for the device (the
// streams share the workspace). Inside a CUDA graph capture the handle must
// be bound to the captured stream already (an eager call on it first): a
// first call or a move there is an fk::Error (blas_stream.h). So is a call
// from another thread, on its own stream, that would move the handle while a
// capture runs on the device: the move's device wait would break the capture,
// and the workspace is the capture's until it ends.
// Determinism: cuBLAS GEMM is bitwise reproducible for a given GPU model,
// library version, shapes and stream setup (no split-K atomics are used by
// cublasGemmEx's default algorithms on one stream); TF32 changes the results
// (10-bit mantissa inputs) but stays reproducible.
#include <cstdint>
#include <functional>
#include <vector>

namespace fk::cuda {

// C[m,n] = alpha * op(A) op(B) + beta * C; op(A) is [m,k], op(B) is [k,n];
// lda/ldb/ldc are row strides in elements (>= the row length of the stored matrix).
void gemm(int device, int dtype, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
          const void* a, int64_t lda, const void* b, int64_t ldb, double beta, void* c, int64_t ldc,
          void* stream, bool allow_tf32);

// `batch` independent GEMMs; matrix i starts stride_a * i (etc.) elements after
// the first (stride 0 broadcasts one operand over the batch).
void gemm_strided_batched(int device, int dtype, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                          double alpha, const void* a, int64_t lda, int64_t stride_a, const void* b,
                          int64_t ldb, int64_t stride_b, double beta, void* c, int64_t ldc,
                          int64_t stride_c, int64_t batch, void* stream, bool allow_tf32);

// One product of a GemmList: row-major C[m,n] = op(A) op(B), as gemm's.
struct GemmShape {
  bool ta = false, tb = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 1, ldb = 1, ldc = 1;
};

// Independent products C_i = op(A_i) op(B_i) (alpha 1, beta 0): product i's
// shape and device pointers.
struct GemmList {
  std::vector<GemmShape> shapes;
  std::vector<const void*> a, b;
  std::vector<void*> c;

  void add(const GemmShape& s, const void* pa, const void* pb, void* pc) {
    shapes.push_back(s);
    a.push_back(pa);
    b.push_back(pb);
    c.push_back(pc);
  }
  size_t size() const { return shapes.size(); }
};

// The list's products in one cuBLAS call (cublasGemmGroupedBatchedEx_64, each
// product a group of its own), on `stream`. cuBLAS reads pointer arrays from
// device memory: they are copied there on `stream` (from pageable memory,
// which the copy stages at the call; no host wait) into a block freed in the
// stream's order after the call. Every m, n > 0. dtype f32 (or TF32), f16
// and bf16 (16-bit C, f32 accumulation) or f64. False, having multiplied
// nothing, for any other dtype, inside a capture of `stream` (a pageable
// copy cannot be captured), for pointers that break cuBLAS's alignment rule
// for 16-bit or TF32 grouped products (when k's bytes are a multiple of 16,
// or of 4, every pointer aligned to as many bytes), or when cuBLAS does not
// run this combination grouped. Unlike a gemm of one product, cuBLAS's
// grouped kernels do not split k across blocks: a few products with small
// m x n and a long k keep few of the device's SMs busy.
bool gemm_grouped(int device, int dtype, const GemmList& list, void* stream, bool allow_tf32);

// The list's products: one gemm_grouped call when `grouped`, the list has two
// or more products and gemm_grouped takes them, else one gemm each. Returns
// the cuBLAS calls made.
int64_t gemm_list(int device, int dtype, const GemmList& list, bool grouped, void* stream,
                  bool allow_tf32);

// C (f32) = alpha * op(A) op(B) + beta * C with A and B stored in in_dtype
// (f16 or bf16: tensor cores with f32 accumulation; f32: as gemm, TF32 when
// allow_tf32): the product of an autocast layer whose activations stay f32,
// without a 16-bit C rounded and widened again.
void gemm_f32_out(int device, int in_dtype, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                  double alpha, const void* a, int64_t lda, const void* b, int64_t ldb, double beta,
                  float* c, int64_t ldc, void* stream, bool allow_tf32);

// Before a CUDA graph holding GEMMs is launched on `stream` (graph.h's
// launch_graph): the replay's GEMMs use the device's one workspace, so the
// handle follows the replay to its stream as it follows an eager call, after
// a wait for the device when it was bound to another stream. Later calls on
// other streams then wait for the replay, and a replay on another stream
// waits for them. Then runs `launch` (the graph's launch) with the handle's
// lock still held, so that no other thread's GEMM on its own stream slips in
// between the move and the launch. fk::Error when that wait would break a
// capture running on the device; no move when the device has no handle.
void blas_follow_replay(int device, void* stream, const std::function<void()>& launch);

// Destroys the cuBLAS handles (tests, shutdown); later calls recreate them.
// fk::Error, with nothing destroyed, while a graph holding library work lives
// (graph.h's live_library_graphs: its replays would use the freed workspace).
void blas_release();

}  // namespace fk::cuda
