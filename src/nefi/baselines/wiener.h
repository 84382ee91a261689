#pragma once
// Wiener deconvolution, x = F^-1[ conj(H) Y / (|H|^2 + lambda) ] with a
// periodic model of the blur, lambda = 1/SNR chosen by Morozov's discrepancy
// principle: the largest lambda (most regularised) on a log grid whose
// residual RMSE ||A x - y|| / sqrt(N) stays <= tau * noise_std. With snr > 0
// given, that SNR is used as is. 2-D (or 1-D) f64 on the host.
#include "fk/tensor.h"
#include "nefi/operators/fft_convolution.h"

namespace nefi {

struct WienerResult {
  fk::Tensor x;  // f64, the measurement's shape
  double snr = 0;
  double residual_rmse = 0;
};

WienerResult wiener_deconvolve(const fk::Tensor& y, const PsfFunction& psf, const Domain& domain,
                               double noise_std, double tau = 1.0, double snr = 0.0);

}  // namespace nefi
