#pragma once
// Launchers of the loss kernels (loss_kernels.cu): raw device pointers, a
// stream (a cudaStream_t as void*), no CUDA types, so loss_device.cpp is plain
// C++. T is float or double (explicitly instantiated for both). Tensors are
// `rows` contiguous rows of n cells; one row per problem (a single loss is
// one row). Launches are asynchronous; a failed launch throws fk::Error.
// No atomics: every sum is a fixed strided walk per thread, a fixed-shape
// tree per block and one block per row over the partials, all in f64, so
// results are bitwise reproducible run to run.
#include <cstdint>

namespace nefi::cuda {

// Blocks per row of the partial sums (and so partials per row) for n cells.
int64_t loss_sum_blocks(int64_t n);

// == The cellwise terms f(p, y) of the losses (y unused where not named):
enum CellwiseKind : int {
  kCellIdentity = 0,        // p
  kCellAbs = 1,             // |p|                         (L1)
  kCellSquare = 2,          // p^2                         (Tikhonov)
  kCellRange = 3,           // relu(a - p)^2 + relu(p - b)^2
  kCellSquaredError = 4,    // (a p - b y)^2               (MSE: a = b = 1)
  kCellHuber = 5,           // r = |p - y|: r < a ? r^2 / 2 : a (r - a / 2)
  kCellPoissonNll = 6,      // p - y log(p + a), a quadratic below 0 (loss_cells.h)
  kCellLogError = 7,        // (log(relu(p) a + b) - log(relu(y) a + b))^2
  kCellResidualTimesP = 8,  // (a p - b y) p (NormalizedMSE's gradient through mean p)
};
struct CellwiseTerm {
  int kind = kCellIdentity;
  double a = 1, b = 1;
};

// sums[2 r] = sum_i w_i f(p_i, y_i) and sums[2 r + 1] = sum_i w_i over row r,
// w = mask or 1 (mask, y nullable). partials holds rows · loss_sum_blocks(n)
// · 2 doubles of scratch. `ab` (nullable): the term's a and b read from
// device memory instead of term.a, term.b (constants a step computes on the
// device, e.g. NormalizedMSE's 1 / mean p, without a host read).
template <typename T>
void launch_cellwise_sums(CellwiseTerm term, const double* ab, const T* p, const T* y,
                          const T* mask, int64_t rows, int64_t n, double* partials, double* sums,
                          void* stream);

// out_i = w_i (coef[r] f'(p_i, y_i) + bias[0]) over row r (f' = df/dp; the
// derivative of relu and |.| is 0 at 0, as fk's backward gives it; ab as
// above; bias nullable: 0).
template <typename T>
void launch_cellwise_grad(CellwiseTerm term, const double* ab, const T* p, const T* y,
                          const T* mask, int64_t rows, int64_t n, const double* coef,
                          const double* bias, T* out, void* stream);

// A row's denominator, all in device memory or by value (no host read):
// values[r · stride] when values is given, else `constant` when > 0, else the
// row's weight sum sums[2 r + 1] times row_scale[r] (nullable: scale).
struct RowDenominator {
  const double* values = nullptr;
  int64_t stride = 1;
  double constant = 0;
  const double* row_scale = nullptr;
  double scale = 1;
};
// value[r] = T(sums[2 r] / den_r) and inv_den[r] = 1 / den_r (inv_den
// nullable). A zero denominator (an all-zero mask) gives a NaN or inf value,
// which the step's one read-back meets as a non-finite loss.
template <typename T>
void launch_row_values(const double* sums, int64_t rows, const RowDenominator& den, T* value,
                       double* inv_den, void* stream);

// NormalizedMSE's constants from the weighted sums {sum w p, W} and
// {sum w y, W}: c = {1 / mp, 1 / ym, W, mp} with mp = sum w p / W + 1e-12,
// ym = sum w y / W (one thread; the host loop's arithmetic).
void launch_normalized_constants(const double* p_sums, const double* y_sums, double* c,
                                 void* stream);
// factor[0] = -2 rp[0] / (W^2 mp^2): the gradient through mean p per unit
// upstream gradient (rp: the sums of the residual-times-p term).
void launch_normalized_bias_factor(const double* c, const double* rp, double* factor, void* stream);

// A row's grid for the stencil terms: up to 8 axes, C order.
inline constexpr int kMaxStencilAxes = 8;
struct StencilGrid {
  int ndim = 0;
  int64_t shape[kMaxStencilAxes] = {};
  int64_t stride[kMaxStencilAxes] = {};
  bool periodic[kMaxStencilAxes] = {};  // the axis wraps (TV and Laplacian)
  double scale[kMaxStencilAxes] = {};   // TV: 1 / h_a; Laplacian: 1 / h_a^2 (0: axis skipped)
};

// Total variation (regularizers.h) of every row: sums[r] = sum over cells of
// sqrt(sum_a (D_a x)^2 + eps^2) (isotropic) or sum_a sqrt((D_a x)^2 + eps^2),
// D_a x = (x[next_a] - x) scale_a, 0 where no neighbour.
template <typename T>
void launch_tv_sums(const T* x, int64_t rows, const StencilGrid& g, bool isotropic, double eps,
                    double* partials, double* sums, void* stream);
// out = coef[r] · dTV/dx, each cell gathering the terms of its own
// differences and of those it ends (no scatter).
template <typename T>
void launch_tv_grad(const T* x, int64_t rows, const StencilGrid& g, bool isotropic, double eps,
                    const double* coef, T* out, void* stream);

// out = coef[r] · L x (coef nullable: 1), L = sum_a scale_a · (second
// difference along a, replicated edges or wrapped on periodic axes): a
// symmetric operator either way, so the
// Laplacian loss's gradient is L applied twice.
template <typename In, typename Out>
void launch_laplacian(const In* x, int64_t rows, const StencilGrid& g, const double* coef, Out* out,
                      void* stream);

}  // namespace nefi::cuda
