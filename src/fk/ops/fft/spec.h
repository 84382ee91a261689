#pragma once
// The description of one FFT call shared by the transform entry points
// (fft/transform.cpp), the CPU kernel (cpu/fft.cpp, FFTW) and the CUDA path
// (fft/cufft.cpp).
#include <fftw3.h>

#include <cstdint>

#include "fk/tensor.h"

namespace fk::fft_detail {

// C2C: complex -> complex; R2C: real -> half spectrum; C2R: half spectrum -> real;
// R2R: real -> real, the DCT whose FFTW kind `r2r` names it (REDFT10: II,
// REDFT01: III) along every dim; run as r2c / c2r (cpu/fft.cpp's dct_along,
// fft/cufft.cpp's on a device).
enum class Kind : uint8_t { C2C, R2C, C2R, R2R };

// What one call computes: the unnormalised transform along `dims` (the last is
// the halved one for R2C/C2R) of signals of logical lengths `n`, times `scale`.
// `pair_factor` multiplies the bins (along the last dim) that stand for two
// conjugate frequencies, 0 < k and 2k != n: for C2R on the input spectrum, for
// R2C on the output. The adjoints of the real transforms need it (0.5 / 2).
struct Spec {
  Kind kind = Kind::C2C;
  Dims dims;  // wrapped, distinct
  Dims n;
  int sign = FFTW_FORWARD;  // C2C only; R2C is always forward, C2R always backward
  double scale = 1.0;
  double pair_factor = 1.0;
  fftw_r2r_kind r2r = FFTW_REDFT10;  // R2R only
};

// The transform of `x` (any strides, on the CPU, already of the dtype the
// kind wants and resized to the signal lengths; no autograd) through FFTW,
// for R = float or double. `owned`: x may be overwritten.
template <typename R>
Tensor run_fftw(const Spec& spec, Tensor x, bool owned);
// The same on a CUDA tensor through cuFFT.
template <typename R>
Tensor run_cuda(const Spec& spec, const Tensor& x);

}  // namespace fk::fft_detail
