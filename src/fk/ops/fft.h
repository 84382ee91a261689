#pragma once
// Discrete Fourier transforms with numpy.fft / torch.fft semantics, on the CPU
// through FFTW3 (fftw3 for f64/c128, fftw3f for f32/c64), differentiable.
//
// Shapes: `n` / `s` give the signal length along each transformed dim; the
// input is zero-padded or truncated to it (irfft/irfftn: `n` / `s` are the
// OUTPUT lengths and the input's last transformed dim is resized to n/2+1;
// their default last length is 2*(m-1) for an input of m bins). rfft/rfftn
// keep n/2+1 bins along the last of `dims`. `dims` may be negative; duplicates
// are an error. fftn-family defaults: every dim, or the last len(s) dims.
// Dtypes: real input to fft/ifft/fftn/ifftn is promoted to complex (f32 -> c64,
// f64 -> c128, f16/bf16/integers -> computed in f32 -> c64); rfft* need real
// input, irfft* return real (c64 -> f32, c128 -> f64). Devices: CPU (FFTW) and
// CUDA (cuFFT through the plan cache of fk/cuda/fft.h: the transformed dims
// are moved last and made contiguous, up to 3 per cuFFT call; multi-dim irfft
// runs as the inverse DFT along the leading dims then a 1-D C2R, as below).
// Norm (as numpy): Backward = no scaling forward, 1/N on the inverse; Forward =
// the reverse; Ortho = 1/sqrt(N) both ways, N = product of the signal lengths.
// Multi-dim irfft follows numpy: inverse DFT along the leading dims, then a
// real inverse along the last, so the imaginary parts of the last dim's DC
// (and, for even n, Nyquist) bins never reach the output.
//
// Plans: FFTW guru plans over any strides, every non-transformed dim a batch
// ("howmany") dim, cached by geometry, dtype, kind and pointer alignment; the
// planner (estimate by default, FK_FFTW_PLANNER=measure) is behind a mutex.
// Plans are single-threaded and execution is deterministic.
// Memory: the output, plus a scratch copy of the half spectrum for the inverse
// real transforms (FFTW's complex-to-real transforms destroy their input), plus
// a padded copy of the input when `n`/`s` pad; dct per dim a reordered copy,
// a half spectrum and its output.
//
// Autograd (grad = dL/dRe + i dL/dIm): the adjoint of an unnormalised DFT is
// the opposite-sign DFT, so each backward is the opposite transform with the
// same scale; rfft's adjoint halves the bins that stand for two conjugate
// frequencies before the real inverse, irfft's doubles them after the real
// forward; padding and truncation are undone on the gradient. No tensor is
// saved for backward (the transforms are linear).
#include <cstdint>
#include <vector>

#include "fk/tensor.h"

namespace fk {

enum class FFTNorm { Backward, Forward, Ortho };

// The CPU FFT library and its version, e.g. "fftw-3.3.10-sse2-avx".
const char* fft_backend();

Tensor fft(const Tensor& x, int64_t n = -1, int64_t dim = -1, FFTNorm norm = FFTNorm::Backward);
Tensor ifft(const Tensor& x, int64_t n = -1, int64_t dim = -1, FFTNorm norm = FFTNorm::Backward);
Tensor rfft(const Tensor& x, int64_t n = -1, int64_t dim = -1, FFTNorm norm = FFTNorm::Backward);
Tensor irfft(const Tensor& x, int64_t n = -1, int64_t dim = -1, FFTNorm norm = FFTNorm::Backward);

Tensor fftn(const Tensor& x, const std::vector<int64_t>& s = {},
            const std::vector<int64_t>& dims = {}, FFTNorm norm = FFTNorm::Backward);
Tensor ifftn(const Tensor& x, const std::vector<int64_t>& s = {},
             const std::vector<int64_t>& dims = {}, FFTNorm norm = FFTNorm::Backward);
Tensor rfftn(const Tensor& x, const std::vector<int64_t>& s = {},
             const std::vector<int64_t>& dims = {}, FFTNorm norm = FFTNorm::Backward);
Tensor irfftn(const Tensor& x, const std::vector<int64_t>& s = {},
              const std::vector<int64_t>& dims = {}, FFTNorm norm = FFTNorm::Backward);

// Over the last two dims (or the given two).
Tensor fft2(const Tensor& x, const std::vector<int64_t>& s = {},
            const std::vector<int64_t>& dims = {-2, -1}, FFTNorm norm = FFTNorm::Backward);
Tensor ifft2(const Tensor& x, const std::vector<int64_t>& s = {},
             const std::vector<int64_t>& dims = {-2, -1}, FFTNorm norm = FFTNorm::Backward);
Tensor rfft2(const Tensor& x, const std::vector<int64_t>& s = {},
             const std::vector<int64_t>& dims = {-2, -1}, FFTNorm norm = FFTNorm::Backward);
Tensor irfft2(const Tensor& x, const std::vector<int64_t>& s = {},
              const std::vector<int64_t>& dims = {-2, -1}, FFTNorm norm = FFTNorm::Backward);

// The unnormalised discrete cosine transforms FFTW calls REDFT10 / REDFT01,
// along `dims` (every dim when empty), the input zero-padded or truncated to
// `s` as fftn's:
//   II  (REDFT10): y_k = 2 sum_j x_j cos(pi k (j + 1/2) / n)
//   III (REDFT01): y_k = x_0 + 2 sum_{j >= 1} x_j cos(pi j (k + 1/2) / n)
// per dim; III undoes II up to a factor 2 n per dim. Each dim runs as one
// real FFT of length n (Makhoul's reordering, cpu/fft.cpp), on a CUDA device
// through cuFFT with a pass each side (three launches per dim of a
// contiguous input). Real input (f64 stays f64, anything else runs in f32).
// Differentiable:
// the adjoint of II is III with the first entry along each dim doubled first,
// of III it is II with it halved after.
enum class DctType : uint8_t { II, III };
Tensor dct(const Tensor& x, DctType type, const std::vector<int64_t>& s = {},
           const std::vector<int64_t>& dims = {});

// The transform an entry point computes: fftn and fft2 are Fft over several
// dims, and likewise for the others.
enum class FFTKind : uint8_t { Fft, Ifft, Rfft, Irfft };
// The pure backward of every transform above (the adjoint transform; nothing
// is saved, the transforms are linear): the gradient w.r.t. the input, of
// shape x_shape and dtype x_dtype, of kind(x, s, dims, norm) from the gradient
// g of its output (of that output's shape). s and dims as fftn's (the 1-D
// forms: s = {n}, dims = {dim}; fft2's: dims = {-2, -1}). An integer x_dtype
// gets a real gradient in g's precision.
Tensor fft_backward(FFTKind kind, const Tensor& g, const Dims& x_shape, DType x_dtype,
                    const std::vector<int64_t>& s, const std::vector<int64_t>& dims,
                    FFTNorm norm = FFTNorm::Backward);

// Number of FFTW plans in the cache (for tests and diagnostics).
int64_t fft_plan_cache_size();
// Destroys every cached plan.
void fft_clear_plan_cache();

}  // namespace fk
