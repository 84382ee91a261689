#pragma once
// Thermographic signal reconstruction (TSR, Shepard 2003), the classical
// per-pixel baseline of flash thermography: smooth ln T as a function of
// ln t and take the time t* at which the second logarithmic derivative
// d² ln T / d(ln t)² peaks. TSR's one global polynomial (order 5-7) put the
// peak at the window's ends on these 30-100 frame records (its curvature is
// an edge artefact there), so the curvature here comes from local quadratic
// least-squares fits over a sliding window of ±`window` in ln t, evaluated
// on 201 points that keep a full window inside the record. In 1-D, an adiabatic
// boundary at depth d gives t* = τ₂ d² / α with one universal Fourier number
// τ₂ (computed here from the slab's series solution, not tabulated). Sound
// pixels peak at the back wall (depth H), so with t*_ref their median
//   depth d(x, y) = H sqrt(t*(x, y) / t*_ref)   (no α needed), and
//   bulk α̂ = τ₂ H² / t*_ref.
// Defect pixels: depth below the median by more than k σ̂ (σ̂ = 1.4826 MAD of
// the depth map). depth_volume.h turns the map into an α volume.
#include <vector>

#include "fk/shape.h"

namespace nefi::thermal {

struct TsrOptions {
  double window = 0.35;    // half-width in ln t of the local fits
  double thickness = 1.0;  // H
  double k = 2.0;          // MAD rule
};

struct TsrResult {
  std::vector<double> peak_time;  // t* per pixel (nx, ny)
  std::vector<double> depth;      // d per pixel
  std::vector<bool> defect;       // defect pixels
  double reference_time = 0;      // t*_ref (the median)
  double alpha_bulk = 0;          // τ₂ H² / t*_ref
};

// τ₂: the Fourier number α t / L² at which d² ln T / d(ln t)² of the front
// face of an adiabatic 1-D slab after a surface pulse peaks.
double tsr_peak_fourier_number();

// frames (n_obs, nx, ny) at times `times` (> 0), C order.
TsrResult tsr(const std::vector<double>& frames, const std::vector<double>& times,
              const fk::Dims& frame_shape, const TsrOptions& opt);

}  // namespace nefi::thermal
