#pragma once
// What a device solve of WaveOperator reads that does not depend on the
// velocity, on one device in one dtype: the step coefficients q2, b, a_dt2,
// ∂k/∂κ (and, PML, alpha and ∂beta/∂κ per axis) of step_coefficients, the
// source and receiver stencils as CSR and the wavelet per step. Uploaded
// once per (geometry, device, dtype), by prepare_tables at a stage start or
// on the operator's first device apply, and shared by the operator's copies and
// autograd nodes (WaveOperator::tables_on), so nothing crosses from the
// host during a solve or its capture. Memory: (3 + 2 n_ψ) S of T and
// (1 + n_ψ) S of f64, S the stored cells of one shot, plus the stencils (the
// receivers' twice: by receiver for sampling, by cell for the injection).
#include <array>

#include "fk/device.h"
#include "fk/dtype.h"
#include "fk/tensor.h"
#include "nefi/operators/wave/wave_propagation.h"

namespace nefi::wave {

struct WaveDeviceTables {
  fk::Device device;
  fk::DType dtype = fk::DType::F32;
  fk::Tensor q2, b, a_dt2;                                     // (S,) dtype
  fk::Tensor k_per_kappa;                                      // (S,) f64
  std::array<fk::Tensor, 3> alpha;                             // by slot, PML only: (S,) dtype
  std::array<fk::Tensor, 3> beta_per_kappa;                    // by slot, PML only: (S,) f64
  fk::Tensor source_start, source_index, source_weight;        // CSR: i64, i64, f64
  fk::Tensor receiver_start, receiver_index, receiver_weight;  // CSR: i64, i64, f64
  // The receivers by the cell they touch (nefi/cuda/wave_cell_layout.h's
  // stencils_by_cell), for the adjoint's trace injection: i64, i64, i64, f64.
  fk::Tensor injection_start, injection_cell, injection_receiver, injection_weight;
  fk::Tensor wavelet;  // (N,) f64, undefined without sources
};

// WaveInitialConditionOperator's tables: its velocity is known, so k and
// beta are uploaded too, with the start's ½ dt² κ and the sensor's low-pass.
struct WaveInitialDeviceTables {
  WaveDeviceTables base;           // q2, b, a_dt2, alpha, the receivers (no sources)
  fk::Tensor k;                    // (S,) dtype
  std::array<fk::Tensor, 3> beta;  // by slot, PML only: (S,) dtype
  fk::Tensor start_k;  // (S,) dtype: ½ dt² κ rounded as add_scaled_laplacian rounds it
  fk::Tensor lowpass;  // (2 half + 1,) f64; undefined without the sensor filter
  int64_t half = 0;
};

// The tables of geo in `dtype` (f32 or f64) on `device`.
WaveDeviceTables upload_wave_tables(const ShotGeometry& geo, fk::Device device, fk::DType dtype);

}  // namespace nefi::wave
