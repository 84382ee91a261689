#pragma once
// Wiener deconvolution, x = F^-1[ conj(H) Y / (|H|^2 + lambda) ] with an FFT
// model of the blur, lambda = 1/SNR chosen by Morozov's discrepancy
// principle: the largest lambda (most regularised) on a log grid whose
// residual RMSE ||A x - y|| / sqrt(N) stays <= tau * noise_std. With snr > 0
// given, that SNR is used as is. 1-D to 3-D f64 on the host.
//
// Boundary: periodic filters y as it is (the blur wraps around the box);
// reflect filters y mirrored about every face (half-sample symmetric, 2n
// cells per axis) and keeps the first n, i.e. the blur of a field mirrored
// outside the box (a DCT-II Wiener filter; needs a symmetric PSF). Data
// from a zero-padded blur of objects near a face have a jump at that face
// when wrapped, whose high-frequency content a periodic filter can fit only
// by amplifying noise, so the discrepancy then picks a tiny lambda; their
// mirror image has no jump.
#include "fk/tensor.h"
#include "nefi/operators/fft_convolution.h"

namespace nefi {

enum class WienerBoundary { kPeriodic, kReflect };

struct WienerResult {
  fk::Tensor x;  // f64, the measurement's shape
  double snr = 0;
  double residual_rmse = 0;  // of the filter's own blur model, over the box
};

WienerResult wiener_deconvolve(const fk::Tensor& y, const PsfFunction& psf, const Domain& domain,
                               double noise_std, double tau = 1.0, double snr = 0.0,
                               WienerBoundary boundary = WienerBoundary::kPeriodic);

}  // namespace nefi
