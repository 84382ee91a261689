#pragma once
// Wiener deconvolution, x = F^-1[ conj(H) Y / (|H|^2 + lambda) ] with an FFT
// model of the blur, lambda = 1/SNR chosen by Morozov's discrepancy
// principle: the largest lambda (most regularised) on a log grid whose
// residual RMSE stays <= tau * noise_std, else the one nearest to it. The
// residual is the instrument's (the blur with zero outside the box,
// FFTConvolution) over the cells whose blur stays inside the box, where it
// and the filter's model agree (where fewer than a quarter of the box's
// cells are so, the filter's own residual over the box). With snr > 0
// given, that SNR is used as is. 1-D to 3-D f64 on the host.
//
// Boundary: the data of a zero-padded blur lack what the blur carried out
// of the box, so wrapped they jump at the faces, which a filter fits only by
// amplifying noise. padded extends y to the linear blur's length n + m - 1
// per axis, each line bridged linearly from its last value back to its
// first, filters on that periodic grid and keeps the box (no jump, and room
// for what the blur spilled); reflect filters y mirrored about every face
// (2n cells per axis, a DCT-II filter; models only a PSF even along each
// axis); periodic filters y as it is. Against the former choice (reflect
// for an even PSF, else periodic) padded gained 0.7-4.5 dB on the 2-D
// smoke's smooth scene under each PSF, lost at most 0.45 dB on phantom and
// sparse_dots, and took a motion blur half the box long from -39.8 dB to
// 6.6 (a Fourier filter's limit there; the grid baseline reaches 24).
#include "fk/tensor.h"
#include "nefi/operators/fft_convolution.h"

namespace nefi {

enum class WienerBoundary { kPadded, kReflect, kPeriodic };

struct WienerResult {
  fk::Tensor x;  // f64, the measurement's shape
  double snr = 0;
  double residual_rmse = 0;  // the instrument's, over the cells the blur keeps in the box
};

WienerResult wiener_deconvolve(const fk::Tensor& y, const PsfFunction& psf, const Domain& domain,
                               double noise_std, double tau = 1.0, double snr = 0.0,
                               WienerBoundary boundary = WienerBoundary::kPadded);

}  // namespace nefi
