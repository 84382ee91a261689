#pragma once
// Pulsed phase thermography (PPT, Maldague & Marinetti 1996), the classical
// frequency-domain baseline of flash thermography. Per pixel, the phase of
// the discrete Fourier transform of the cooling curve T(t_1..t_N) (uniform
// frames, minus the line through its end points: the record is truncated
// while cooling, and the implied jump would leak into every frequency) at f_k = k / (N Δt), k
// = 1..N/2; the phase contrast against the pixel median at each frequency, with σ̂_k = 1.4826 MAD
// over pixels.
//   visible          |Δφ_k| > max(k σ̂_k, min_contrast): without noise the
//                    contrast never vanishes, so a detection floor in
//                    radians stands in for the camera's noise
//   defect pixel     visible at f_1 (the lowest frequency sees deepest)
//   blind frequency  f_b = the highest f_k of the contiguous band from f_1
//                    in which the pixel is visible
//   depth            z = c1 sqrt(α / (π f_b)), c1 = 1.82 (Ibarra-Castanedo
//                    & Maldague 2004), α the bulk diffusivity (PPT needs it)
#include <vector>

#include "fk/shape.h"

namespace nefi::thermal {

struct PptOptions {
  double alpha = 0.15;  // bulk diffusivity assumed by the depth inversion
  double c1 = 1.82;
  double k = 2.0;              // MAD rule
  double min_contrast = 0.03;  // radians
  double thickness = 1.0;
};

struct PptResult {
  std::vector<double> blind_frequency;  // (nx, ny); 0 for sound pixels
  std::vector<double> depth;            // (nx, ny); thickness for sound pixels
  std::vector<bool> defect;
};

// frames (n_obs, nx, ny) sampled every dt, C order.
PptResult ppt(const std::vector<double>& frames, double dt, const fk::Dims& frame_shape,
              const PptOptions& opt);

}  // namespace nefi::thermal
