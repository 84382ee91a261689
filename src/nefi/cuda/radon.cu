// The Radon kernel (radon_kernels.h): one sparse-row gather, used for the
// projection and, through the transposed matrix, its adjoint. One thread per
// output element; the arithmetic is radon_cells.h's.
#include <cstdint>

#include "fk/cuda/common.cuh"
#include "nefi/cuda/radon_cells.h"
#include "nefi/cuda/radon_kernels.h"

namespace nefi::cuda {
namespace {

using fk::cuda::detail::as_stream;
using fk::cuda::detail::blocks_for;
using fk::cuda::detail::check_launch;
using fk::cuda::detail::kThreads;

template <typename T>
__global__ void sparse_gather_kernel(GatherGeometry g, const int64_t* row_start, const int32_t* col,
                                     const double* weight, const T* src, T* out) {
  FK_CUDA_LOOP(k, g.batch * g.rows * g.inner) {
    out[k] = static_cast<T>(gathered_value(g, row_start, col, weight, src, k));
  }
}

}  // namespace

template <typename T>
void launch_sparse_gather(const GatherGeometry& g, const int64_t* row_start, const int32_t* col,
                          const double* weight, const T* src, T* out, void* stream) {
  sparse_gather_kernel<T><<<blocks_for(g.out_numel()), kThreads, 0, as_stream(stream)>>>(
      g, row_start, col, weight, src, out);
  check_launch("nefi::cuda::sparse_gather");
}

template void launch_sparse_gather<float>(const GatherGeometry&, const int64_t*, const int32_t*,
                                          const double*, const float*, float*, void*);
template void launch_sparse_gather<double>(const GatherGeometry&, const int64_t*, const int32_t*,
                                           const double*, const double*, double*, void*);

}  // namespace nefi::cuda
