#pragma once
// The losses of data_losses.h and regularizers.h on CUDA device tensors
// (cuda/loss_device.cpp, kernels in cuda/loss_kernels.cu); CPU-only builds
// refuse them (loss_device_stub.cpp). Each is one fused op forward and one
// backward, the value summed in f64 in a fixed order (no atomics: bitwise
// reproducible run to run) and divided on the device exactly as the CPU loop
// divides it. Nothing is read back to the host: the value stays a device
// tensor and the gradient reads the upstream gradient and the normalisation
// from device memory, so a solver step using these can be captured as one
// CUDA graph. Data-dependent failures (an all-zero mask, zero-energy or
// zero-mean observations) therefore do not throw here: they give a non-finite
// value, which the step's one read-back meets; every solver (Solver and
// batch_invert) checks the observations once per stage on the host
// (LossSet::check_observations: the mask, and each loss's own refusals). Inputs are f32/f64; y and
// mask are converted to p's dtype and device. `rows`: p is (N, ...) and the result (N), one value
// per row as forward_rows gives it; otherwise one 0-dim value over all of p.
#include <vector>

#include "fk/tensor.h"
#include "nefi/losses/regularizers.h"

namespace nefi {

// The cellwise term f(p, y) of a loss, with its parameters (as in
// cuda/loss_kernels.h): mean_w f over the observed cells.
enum class CellTerm { Abs, Square, Range, SquaredError, Huber, PoissonNll, LogError };
struct CellLoss {
  CellLoss(CellTerm t = CellTerm::Square, double a_ = 1, double b_ = 1) : term(t), a(a_), b(b_) {}
  CellTerm term;
  double a, b;  // Range: lo, hi; Huber: delta; PoissonNll: eps; LogError: 1/s, eps
  // When defined: {a, b} as (2) f64 on p's device, used instead of a and b
  // (LogMSE's 1/s computed on the device, never read back).
  fk::Tensor ab;
};

// How a row's sum of w f becomes its value: divided by the sum of row r of
// `denominator_sums` (cellwise_sums_device's (2 rows) f64 on p's device;
// RelativeMSE) when given, else by the row's weight sum (sum of the mask, or
// its cell count) times scale[r] (scale empty: 1; scales that differ by row
// are uploaded by the first call that meets them and kept, so a solver's
// eager warm-up step makes them and its captured steps find them).
struct RowNormalisation {
  std::vector<double> scale;
  fk::Tensor denominator_sums;
};

fk::Tensor cellwise_loss_device(const CellLoss& loss, const fk::Tensor& p, const fk::Tensor& y,
                                const fk::Tensor& mask, bool rows, const RowNormalisation& norm);
// The per-row sums {sum w f, sum w} of a term without a graph (RelativeMSE's
// denominators), left on the device: (2 rows) f64, flat [2 r], [2 r + 1].
fk::Tensor cellwise_sums_device(const CellLoss& loss, const fk::Tensor& p, const fk::Tensor& y,
                                const fk::Tensor& mask, bool rows);
// NormalizedMSE: mean_w (p / (mean_w p + 1e-12) - y / mean_w y)^2, with the
// gradient through mean_w p.
fk::Tensor normalized_mse_device(const fk::Tensor& p, const fk::Tensor& y, const fk::Tensor& mask);

// total_variation (rows: total_variation_rows) of a device field; inv_h = 1 / h per grid axis.
fk::Tensor total_variation_device(const fk::Tensor& x, const std::vector<double>& inv_h,
                                  const TVOptions& opt, bool rows);
// The Laplacian loss mean (sum_a D2_a x / h_a^2)^2 of a device field, with
// wrapped edges on the grid's periodic axes.
fk::Tensor laplacian_loss_device(const fk::Tensor& x, const std::vector<double>& h, bool rows,
                                 const std::vector<int>& periodic_axes = {});

}  // namespace nefi
