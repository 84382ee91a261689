// The loss kernels (loss_kernels.h): cellwise terms, total variation and the
// Laplacian stencil, each a value pass (fixed-order f64 partial sums, then one
// block per row over them) and a gradient pass (one thread per cell, no
// atomics). The per-cell arithmetic is loss_cells.h's.
#include <cstdint>

#include "fk/cuda/common.cuh"
#include "nefi/cuda/loss_cells.h"
#include "nefi/cuda/loss_kernels.h"

namespace nefi::cuda {
namespace {

using fk::cuda::detail::as_stream;
using fk::cuda::detail::blocks_for;
using fk::cuda::detail::check_launch;
using fk::cuda::detail::kThreads;

// Enough blocks per row to fill a GPU on one large row.
constexpr int64_t kMaxBlocksPerRow = 256;

}  // namespace

// Defined before its first use: the emulated build of this file
// (tests/cuda_emu) must bind its calls to its own copy.
int64_t loss_sum_blocks(int64_t n) {
  const int64_t b = static_cast<int64_t>(fk::cuda::detail::blocks_for(n));
  return b < kMaxBlocksPerRow ? b : kMaxBlocksPerRow;
}

namespace {

// gridDim.y's limit: the partial-sum kernels walk rows beyond it with a
// stride (the same fixed order per row, whatever the grid).
constexpr int64_t kMaxGridRows = 65535;
// The row sums' grid (gridDim.x): one block per row up to 2^20 rows, a
// stride beyond (a grid of `rows` blocks would be refused from 2^31 rows on,
// and a 32-bit cast of rows would drop rows silently from 2^32 on).
constexpr int64_t kMaxSumRowsGrid = int64_t{1} << 20;

// Tree-sums the block's kThreads pairs in shared memory (fixed shape);
// every thread returns the totals.
__device__ void block_sum2(double (*shared)[kThreads], double& a, double& b) {
  shared[0][threadIdx.x] = a;
  shared[1][threadIdx.x] = b;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) {
      shared[0][threadIdx.x] += shared[0][threadIdx.x + stride];
      shared[1][threadIdx.x] += shared[1][threadIdx.x + stride];
    }
    __syncthreads();
  }
  a = shared[0][0];
  b = shared[1][0];
  __syncthreads();  // every thread has read the totals before the next row reuses shared
}

// The rows block (blockIdx.x, blockIdx.y) sums: blockIdx.y, then every
// gridDim.y-th (uniform across the block, so its barriers are too).
#define NEFI_ROWS_OF_BLOCK(r, rows) for (int64_t r = blockIdx.y; r < (rows); r += gridDim.y)

// The cells of a row that block blockIdx.x walks: a fixed stride.
#define NEFI_ROW_LOOP(i, n)                                                            \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * kThreads)

// The term with its a, b from device memory when given.
__device__ CellwiseTerm resolved(CellwiseTerm t, const double* ab) {
  if (ab) {
    t.a = ab[0];
    t.b = ab[1];
  }
  return t;
}

template <typename T>
__global__ void cellwise_partials_kernel(CellwiseTerm term, const double* ab, const T* p,
                                         const T* y, const T* mask, int64_t rows, int64_t n,
                                         double* partials) {
  __shared__ double shared[2][kThreads];
  const CellwiseTerm t = resolved(term, ab);
  NEFI_ROWS_OF_BLOCK(r, rows) {
    const int64_t row = r * n;
    double s = 0, ws = 0;
    NEFI_ROW_LOOP(i, n) {
      const double w = mask ? static_cast<double>(mask[row + i]) : 1.0;
      const double yi = y ? static_cast<double>(y[row + i]) : 0.0;
      s += w * cell_value(t, static_cast<double>(p[row + i]), yi);
      ws += w;
    }
    block_sum2(shared, s, ws);
    if (threadIdx.x == 0) {
      double* out = partials + 2 * (r * gridDim.x + blockIdx.x);
      out[0] = s;
      out[1] = ws;
    }
  }
}

// sums[2 r + k] = the sum of partials[r, b, k] over b: one block per row,
// rows past the grid (kMaxSumRowsGrid) taken by a fixed stride (r is uniform
// across the block, so its barriers are too).
__global__ void row_sums_kernel(const double* partials, int64_t rows, int64_t blocks,
                                double* sums) {
  __shared__ double shared[2][kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const double* row = partials + 2 * blocks * r;
    double a = 0, b = 0;
    for (int64_t i = threadIdx.x; i < blocks; i += kThreads) {
      a += row[2 * i];
      b += row[2 * i + 1];
    }
    block_sum2(shared, a, b);
    if (threadIdx.x == 0) {
      sums[2 * r] = a;
      sums[2 * r + 1] = b;
    }
  }
}

template <typename T>
__global__ void cellwise_grad_kernel(CellwiseTerm term, const double* ab, const T* p, const T* y,
                                     const T* mask, int64_t rows, int64_t n, const double* coef,
                                     const double* bias_in, T* out) {
  const CellwiseTerm t = resolved(term, ab);
  const double bias = bias_in ? bias_in[0] : 0.0;
  FK_CUDA_LOOP(k, rows * n) {
    const double w = mask ? static_cast<double>(mask[k]) : 1.0;
    const double yi = y ? static_cast<double>(y[k]) : 0.0;
    const double d = cell_derivative(t, static_cast<double>(p[k]), yi);
    out[k] = static_cast<T>(w * (coef[k / n] * d + bias));
  }
}

template <typename T>
__global__ void row_values_kernel(const double* sums, int64_t rows, RowDenominator d, T* value,
                                  double* inv_den) {
  FK_CUDA_LOOP(r, rows) {
    const double den = row_denominator(d, sums, r);
    value[r] = static_cast<T>(sums[2 * r] / den);
    if (inv_den) inv_den[r] = 1.0 / den;
  }
}

__global__ void normalized_constants_kernel(const double* ps, const double* ys, double* c) {
  normalized_constants(ps, ys, c);
}

__global__ void normalized_bias_factor_kernel(const double* c, const double* rp, double* factor) {
  factor[0] = normalized_bias_factor(c, rp[0]);
}

template <typename T>
__global__ void tv_partials_kernel(const T* x, int64_t rows, int64_t n, StencilGrid g,
                                   bool isotropic, double e2, double* partials) {
  __shared__ double shared[2][kThreads];
  NEFI_ROWS_OF_BLOCK(r, rows) {
    const T* xr = x + r * n;
    double s = 0, unused = 0;
    NEFI_ROW_LOOP(i, n) {
      s += tv_cell_value(xr, g, i, isotropic, e2);
    }
    block_sum2(shared, s, unused);
    if (threadIdx.x == 0) {
      double* out = partials + 2 * (r * gridDim.x + blockIdx.x);
      out[0] = s;
      out[1] = 0;
    }
  }
}

template <typename T>
__global__ void tv_grad_kernel(const T* x, int64_t rows, int64_t n, StencilGrid g, bool isotropic,
                               double e2, const double* coef, T* out) {
  FK_CUDA_LOOP(k, rows * n) {
    const int64_t r = k / n, i = k - r * n;
    out[k] = static_cast<T>(coef[r] * tv_cell_gradient(x + r * n, g, i, isotropic, e2));
  }
}

template <typename In, typename Out>
__global__ void laplacian_kernel(const In* x, int64_t rows, int64_t n, StencilGrid g,
                                 const double* coef, Out* out) {
  FK_CUDA_LOOP(k, rows * n) {
    const int64_t r = k / n, i = k - r * n;
    const double s = laplacian_cell(x + r * n, g, i);
    out[k] = static_cast<Out>(coef ? coef[r] * s : s);
  }
}

// Callers return before it for 0 rows (a 0-block grid is an invalid launch).
dim3 partial_grid(int64_t rows, int64_t n) {
  return dim3(static_cast<unsigned>(loss_sum_blocks(n)),
              static_cast<unsigned>(rows < kMaxGridRows ? rows : kMaxGridRows));
}

void finish_sums(const double* partials, int64_t rows, int64_t n, double* sums, void* stream) {
  if (rows == 0) return;  // no sums; a 0-block launch is an invalid configuration
  const unsigned grid = static_cast<unsigned>(rows < kMaxSumRowsGrid ? rows : kMaxSumRowsGrid);
  row_sums_kernel<<<grid, kThreads, 0, as_stream(stream)>>>(partials, rows, loss_sum_blocks(n),
                                                            sums);
  check_launch("nefi::cuda::loss_row_sums");
}

int64_t cells(const StencilGrid& g) {
  int64_t n = 1;
  for (int a = 0; a < g.ndim; ++a) n *= g.shape[a];
  return n;
}

}  // namespace

template <typename T>
void launch_cellwise_sums(CellwiseTerm term, const double* ab, const T* p, const T* y,
                          const T* mask, int64_t rows, int64_t n, double* partials, double* sums,
                          void* stream) {
  if (rows == 0) return;
  cellwise_partials_kernel<T><<<partial_grid(rows, n), kThreads, 0, as_stream(stream)>>>(
      term, ab, p, y, mask, rows, n, partials);
  check_launch("nefi::cuda::cellwise_sums");
  finish_sums(partials, rows, n, sums, stream);
}

template <typename T>
void launch_cellwise_grad(CellwiseTerm term, const double* ab, const T* p, const T* y,
                          const T* mask, int64_t rows, int64_t n, const double* coef,
                          const double* bias, T* out, void* stream) {
  cellwise_grad_kernel<T><<<blocks_for(rows * n), kThreads, 0, as_stream(stream)>>>(
      term, ab, p, y, mask, rows, n, coef, bias, out);
  check_launch("nefi::cuda::cellwise_grad");
}

template <typename T>
void launch_row_values(const double* sums, int64_t rows, const RowDenominator& den, T* value,
                       double* inv_den, void* stream) {
  row_values_kernel<T>
      <<<blocks_for(rows), kThreads, 0, as_stream(stream)>>>(sums, rows, den, value, inv_den);
  check_launch("nefi::cuda::row_values");
}

void launch_normalized_constants(const double* p_sums, const double* y_sums, double* c,
                                 void* stream) {
  normalized_constants_kernel<<<1, 1, 0, as_stream(stream)>>>(p_sums, y_sums, c);
  check_launch("nefi::cuda::normalized_constants");
}

void launch_normalized_bias_factor(const double* c, const double* rp, double* factor,
                                   void* stream) {
  normalized_bias_factor_kernel<<<1, 1, 0, as_stream(stream)>>>(c, rp, factor);
  check_launch("nefi::cuda::normalized_bias_factor");
}

template <typename T>
void launch_tv_sums(const T* x, int64_t rows, const StencilGrid& g, bool isotropic, double eps,
                    double* partials, double* sums, void* stream) {
  const int64_t n = cells(g);
  if (rows == 0) return;
  tv_partials_kernel<T><<<partial_grid(rows, n), kThreads, 0, as_stream(stream)>>>(
      x, rows, n, g, isotropic, eps * eps, partials);
  check_launch("nefi::cuda::tv_sums");
  finish_sums(partials, rows, n, sums, stream);
}

template <typename T>
void launch_tv_grad(const T* x, int64_t rows, const StencilGrid& g, bool isotropic, double eps,
                    const double* coef, T* out, void* stream) {
  const int64_t n = cells(g);
  tv_grad_kernel<T><<<blocks_for(rows * n), kThreads, 0, as_stream(stream)>>>(
      x, rows, n, g, isotropic, eps * eps, coef, out);
  check_launch("nefi::cuda::tv_grad");
}

template <typename In, typename Out>
void launch_laplacian(const In* x, int64_t rows, const StencilGrid& g, const double* coef, Out* out,
                      void* stream) {
  const int64_t n = cells(g);
  laplacian_kernel<In, Out>
      <<<blocks_for(rows * n), kThreads, 0, as_stream(stream)>>>(x, rows, n, g, coef, out);
  check_launch("nefi::cuda::laplacian");
}

#define NEFI_LOSS_INSTANTIATE(T)                                                                   \
  template void launch_cellwise_sums<T>(CellwiseTerm, const double*, const T*, const T*, const T*, \
                                        int64_t, int64_t, double*, double*, void*);                \
  template void launch_cellwise_grad<T>(CellwiseTerm, const double*, const T*, const T*, const T*, \
                                        int64_t, int64_t, const double*, const double*, T*,        \
                                        void*);                                                    \
  template void launch_row_values<T>(const double*, int64_t, const RowDenominator&, T*, double*,   \
                                     void*);                                                       \
  template void launch_tv_sums<T>(const T*, int64_t, const StencilGrid&, bool, double, double*,    \
                                  double*, void*);                                                 \
  template void launch_tv_grad<T>(const T*, int64_t, const StencilGrid&, bool, double,             \
                                  const double*, T*, void*);
NEFI_LOSS_INSTANTIATE(float)
NEFI_LOSS_INSTANTIATE(double)
// The Laplacian reads the field (T) into f64, and its f64 result back into T.
template void launch_laplacian<float, double>(const float*, int64_t, const StencilGrid&,
                                              const double*, double*, void*);
template void launch_laplacian<double, double>(const double*, int64_t, const StencilGrid&,
                                               const double*, double*, void*);
template void launch_laplacian<double, float>(const double*, int64_t, const StencilGrid&,
                                              const double*, float*, void*);

}  // namespace nefi::cuda
