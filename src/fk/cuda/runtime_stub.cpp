// The CUDA host interface for builds without nvcc: no devices, and a clear error
// for anything that would need one. Every function declared in runtime.h,
// graph.h, kernels.h, blas.h and fft.h is defined here, so fk's op files call the CUDA
// launchers without #ifdefs (they are only reached with a CUDA tensor, which a
// CPU-only build cannot make).
#include "fk/cuda/blas.h"
#include "fk/cuda/fft.h"
#include "fk/cuda/graph.h"
#include "fk/cuda/kernels.h"
#include "fk/cuda/runtime.h"
#include "fk/cuda/versions.h"
#include "fk/error.h"

namespace fk::cuda {
namespace {
[[noreturn]] void no_cuda(const char* what) {
  throw Error(what, "a build with the CUDA backend (nvcc found at configure time)",
              "a CPU-only build");
}
}  // namespace

int device_count() {
  return 0;
}
const char* no_device_reason() {
  return "fieldkit was built without the CUDA backend";
}
bool built_with_cuda() {
  return false;
}
const char* archs() {
  return "none";
}
Versions versions() {
  return {};  // -1: no CUDA in this build
}
void* pool_allocate(int, size_t) {
  no_cuda("CUDA allocation");
}
void check_out_of_memory_retry(int, size_t) {}  // nothing captures without CUDA
void pool_deallocate(int, void*, size_t) {
  no_cuda("CUDA deallocation");
}
PoolStats pool_stats(int) {
  return {};
}
void pool_reset_peak(int) {}
int64_t* index_check_record(int, int) {
  return nullptr;
}
void pool_trim(int) {}
void* current_stream(int) {
  return nullptr;
}
void set_current_stream(int, void*) {
  no_cuda("set_current_stream");
}
void synchronize(int) {}
void synchronize_in_destructor(int, const char*) noexcept {}
void after_op(int) {}
void copy_bytes(void*, int, const void*, int, size_t) {
  no_cuda("CUDA copy");
}

// graph.h
void* create_stream(int) {
  no_cuda("cuda::create_stream");
}
void destroy_stream(int, void*) {}
void* pinned_allocate(size_t) {
  no_cuda("cuda::pinned_allocate");
}
void pinned_free(void*) {}
void copy_to_pinned_async(void*, const void*, int, size_t) {
  no_cuda("cuda::copy_to_pinned_async");
}
void copy_from_pinned_async(void*, int, const void*, size_t) {
  no_cuda("cuda::copy_from_pinned_async");
}
bool capturing(int) {
  return false;
}
void begin_capture(int) {
  no_cuda("CUDA graph capture");
}
GraphExec end_capture(int) {
  no_cuda("CUDA graph capture");
}
void abort_capture(int) {}
void launch_graph(GraphExec&) {
  no_cuda("CUDA graph launch");
}
int64_t kept_blocks(const GraphExec&) {
  return 0;
}
void destroy_graph(GraphExec& g) {
  g = GraphExec{};
}
int64_t live_graphs() {
  return 0;
}
int64_t live_library_graphs() {
  return 0;
}

// kernels.h
void launch_unary(int, int, const void*, void*, int64_t, double, double, void*) {
  no_cuda("cuda::launch_unary");
}
void launch_unary_strided(int, int, const void*, void*, int, const int64_t*, const int64_t*,
                          const int64_t*, double, double, void*) {
  no_cuda("cuda::launch_unary_strided");
}
void launch_unary_backward(int, int, const void*, const void*, void*, int64_t, double, double,
                           void*) {
  no_cuda("cuda::launch_unary_backward");
}
void launch_binary(int, int, const void*, const void*, void*, int, const int64_t*, const int64_t*,
                   const int64_t*, const int64_t*, double, double, void*) {
  no_cuda("cuda::launch_binary");
}
void launch_scale(int, void*, int64_t, double, void*) {
  no_cuda("cuda::launch_scale");
}
void launch_fft_bin_weights(int, const void*, void*, int64_t, int64_t, double, double, bool,
                            void*) {
  no_cuda("cuda::launch_fft_bin_weights");
}
void launch_dct_pack(int, bool, const void*, void*, int64_t, int64_t, int64_t, void*) {
  no_cuda("cuda::launch_dct_pack");
}
void launch_dct_unpack(int, bool, const void*, void*, int64_t, int64_t, int64_t, void*) {
  no_cuda("cuda::launch_dct_unpack");
}
void launch_where(int, const void*, const void*, const void*, void*, int, const int64_t*,
                  const int64_t*, const int64_t*, const int64_t*, void*) {
  no_cuda("cuda::launch_where");
}
void launch_fill(int, void*, int64_t, double, double, void*) {
  no_cuda("cuda::launch_fill");
}
void launch_fill_strided(int, void*, int, const int64_t*, const int64_t*, double, double, void*) {
  no_cuda("cuda::launch_fill_strided");
}
void launch_copy_strided(int, const void*, const int64_t*, int, void*, const int64_t*, int,
                         const int64_t*, void*) {
  no_cuda("cuda::launch_copy_strided");
}
void launch_convert(int, const void*, int, void*, int64_t, void*) {
  no_cuda("cuda::launch_convert");
}
void launch_reduce_lastdim(int, int, const void*, void*, int64_t, int64_t, void*) {
  no_cuda("cuda::launch_reduce_lastdim");
}
int reduce_out_dtype(int op, int dtype) {
  const bool integral = dtype == kBool || dtype == kI32 || dtype == kI64;
  return integral && (op == kReduceSum || op == kReduceProd) ? kI64 : dtype;
}
void launch_argreduce_lastdim(bool, int, const void*, int64_t*, int64_t, int64_t, void*) {
  no_cuda("cuda::launch_argreduce_lastdim");
}
void launch_softmax_lastdim(int, const void*, void*, int64_t, int64_t, bool, void*) {
  no_cuda("cuda::launch_softmax_lastdim");
}
void launch_softmax_backward_lastdim(int, const void*, const void*, void*, int64_t, int64_t, bool,
                                     void*) {
  no_cuda("cuda::launch_softmax_backward_lastdim");
}
void launch_prod_backward_lastdim(int, const void*, const void*, void*, int64_t, int64_t, void*) {
  no_cuda("cuda::launch_prod_backward_lastdim");
}
void launch_index_select(int, const void*, const int64_t*, void*, int64_t, int64_t, int64_t,
                         int64_t, IndexCheck, void*) {
  no_cuda("cuda::launch_index_select");
}
void launch_gather(int, const void*, const int64_t*, int64_t, const int64_t*, const int64_t*, void*,
                   const int64_t*, int, const int64_t*, int, IndexCheck, void*) {
  no_cuda("cuda::launch_gather");
}
void launch_scatter_add(int, void*, const int64_t*, int64_t, const void*, const int64_t*,
                        const int64_t*, const int64_t*, int, const int64_t*, int, bool, IndexCheck,
                        void*) {
  no_cuda("cuda::launch_scatter_add");
}

// blas.h
void gemm(int, int, bool, bool, int64_t, int64_t, int64_t, double, const void*, int64_t,
          const void*, int64_t, double, void*, int64_t, void*, bool) {
  no_cuda("cuda::gemm");
}
void gemm_strided_batched(int, int, bool, bool, int64_t, int64_t, int64_t, double, const void*,
                          int64_t, int64_t, const void*, int64_t, int64_t, double, void*, int64_t,
                          int64_t, int64_t, void*, bool) {
  no_cuda("cuda::gemm_strided_batched");
}
bool gemm_grouped(int, int, const GemmList&, void*, bool) {
  no_cuda("cuda::gemm_grouped");
}
int64_t gemm_list(int, int, const GemmList&, bool, void*, bool) {
  no_cuda("cuda::gemm_list");
}
void gemm_f32_out(int, int, bool, bool, int64_t, int64_t, int64_t, double, const void*, int64_t,
                  const void*, int64_t, double, float*, int64_t, void*, bool) {
  no_cuda("cuda::gemm_f32_out");
}
void blas_follow_replay(int, void*, const std::function<void()>&) {
  no_cuda("cuda::blas_follow_replay");
}
void blas_release() {}

// fft.h
void fft_execute(int, int, int, bool, const FftLayout&, void*, void*, void*) {
  no_cuda("cuda::fft_execute");
}
void fft_follow_replay(int, void*, const std::function<void()>&) {
  no_cuda("cuda::fft_follow_replay");
}
void fft_unpin_plans() {}
int64_t fft_plan_cache_size() {
  return 0;
}
int64_t fft_pinned_plans() {
  return 0;
}
void fft_plan_cache_clear() {}

}  // namespace fk::cuda
