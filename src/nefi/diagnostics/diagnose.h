#pragma once
// diagnose: what the data can tell about a field at x (nefi.md §2.9, §3.6) —
// the leading singular values of the forward operator linearized at x
// (lanczos.h), the Hutchinson sensitivity map and null-space probes
// (probes.h), whether the data see the field's mean (a constant offset that
// leaves the data unchanged is a gauge, the reference's detect_gauges
// first check), and the data misfit against the noise level (the discrepancy
// principle: an RMS residual / sigma near 1 fits the data to the noise; well
// below 1 fits the noise; well above leaves signal unexplained) and, on
// request, the training loss's Hessian spectrum (hessian.h). Reports are
// written by report.h.
#include <optional>
#include <string>
#include <vector>

#include "fk/device.h"
#include "fk/tensor.h"
#include "nefi/diagnostics/hessian.h"
#include "nefi/diagnostics/lanczos.h"
#include "nefi/diagnostics/probes.h"
#include "nefi/measurement.h"
#include "nefi/operators/operator.h"

namespace nefi::diagnostics {

// The constant direction's visibility below which it is reported a gauge.
inline constexpr double kGaugeVisibility = 1e-3;

// --exact-sensitivity costs one operator product a cell: up to 64^3.
inline constexpr int64_t kMaxExactCells = 262144;

struct DiagnoseOptions {
  int probes = 32;                 // Hutchinson and null-space probes
  int k = 8;                       // singular values reported
  int n_iter = 24;                 // bidiagonalisation steps (>= k)
  bool exact_sensitivity = false;  // every column's norm (one J product a cell)
  uint64_t seed = 0;
  // > 0: also the training loss's Hessian in the field's parameters, its
  // hessian_k extreme eigenvalues by hessian_iter Lanczos steps (hessian.h;
  // filled by diagnose_instance, which holds the problem).
  int hessian_k = 0;
  int hessian_iter = 30;
  // Where the operator's products (F, J v, J^T u) run: a CUDA device moves
  // the field there and makes the operator's device tables first (an
  // operator without a device path, or with trainable parameters, is refused
  // by name); the Lanczos and probe arithmetic stays on the host in f64, each
  // product's vectors crossing between them (a central difference's two
  // evaluations, two each way). The Hessian's gradients (hessian_k) run
  // there too (hessian.h), its Lanczos arithmetic on the host.
  fk::Device device = fk::kCPU;
};

struct Diagnostics {
  // What was diagnosed (filled by the caller: instance, method, seed, where).
  std::string instance, method, at = "initialization";
  uint64_t seed = 0;
  DiagnoseOptions options;
  // The linearization.
  std::string jvp_mode;
  fk::Dims field_shape, data_shape;
  Spectrum spectrum;
  double condition = 0;  // s1 / s_k over the values found (inf when s_k is 0)
  ProbeReport probes;
  // The constant direction (every cell alike, unit norm) as the data see
  // it: |J 1| / (sigma_1 |1|). Below kGaugeVisibility it is a gauge: the
  // data do not fix the field's mean, and only the prior can (zero_mean, a
  // known support or a known value).
  double constant_visibility = 0;
  // The data fit at x: mask-weighted RMS of F(x) - y, the noise std (< 0:
  // unknown) and their ratio (NaN when the noise is unknown).
  double residual_rms = 0, noise_std = -1, misfit_ratio = 0;
  bool noise_estimated = false;  // sigma came from the data (a fit's verdict band widens)
  // With options.hessian_k > 0: the loss Hessian's extreme eigenvalues at
  // the same point, in the field's parameters.
  std::optional<HessianSpectrum> hessian;
};

// The mask-weighted RMS of prediction - y, y resampled to the prediction's
// grid when it differs (NaN when no cell is observed).
double residual_rms(const fk::Tensor& prediction, const Measurement& y);

// The options' own checks (counts in range; exact sensitivity within
// kMaxExactCells of a field of `field_cells`), an fk::Error naming the
// option: diagnose runs them first, and a caller with work before it (a
// solve) can run them before that.
void check_diagnose_options(const DiagnoseOptions& o, int64_t field_cells);

// `x` the field (the operator's input) and `y` the measurement (resampled to
// the operator's output grid when it differs). The spectrum, sensitivity,
// probes and constant visibility are those of sqrt(mask) J, the map the
// fit's mask-weighted residual sees: cells only unobserved data see are blind.
Diagnostics diagnose(const Operator& op, const fk::Tensor& x, const Measurement& y,
                     const DiagnoseOptions& options);

}  // namespace nefi::diagnostics
