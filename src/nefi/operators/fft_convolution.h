#pragma once
// FFTConvolution: y = k * x, a linear convolution with 'same' output size
// computed by zero-padding to >= n + m - 1 (no wrap-around), or a circular one
// (periodic = true). The point-spread function is a function of the grid
// spacing, sampled at each resolution and normalised to unit sum, so every
// curriculum stage sees the same physical blur. Kernel spectra are cached in a
// cache shared by all resolutions of one operator, keyed by what the spectrum
// is a function of: the padded FFT lengths, the grid spacing the kernel is
// sampled at (the PSF itself is fixed per operator), the dtype and the
// device. A device copy is made once per key, not per call; a changed grid
// or spacing is a different key.
// Per forward: rfftn, one complex multiply, irfftn, then a view (3 ops).
// Input (..., *shape) real f32/f64 (leading dims are a batch); output the same
// shape and dtype. Linear, homogeneity 1; autograd supplies the adjoint
// (correlation) through the transforms.
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "nefi/domain.h"
#include "nefi/operators/operator.h"

namespace nefi {

// Kernel sampler: given the physical spacing per axis, returns the kernel
// values (C order) and its odd size per axis; the centre is the middle cell.
struct PsfSample {
  std::vector<double> values;
  fk::Dims shape;
};
using PsfFunction = std::function<PsfSample(const std::vector<double>& spacing)>;

// Gaussian, linear-motion and disk PSFs in physical units, sampled at cell
// centres (motion: a segment of `length` at `angle_deg`, drawn with 8 samples
// per cell; disk: radius `radius`).
PsfFunction gaussian_psf(double sigma, double truncate = 4.0);
PsfFunction motion_psf(double length, double angle_deg);
PsfFunction disk_psf(double radius);

// The FFT filter both convolution-like operators share: y = crop(irfftn(H *
// rfftn(place(v)))) over the last L.size() axes, with v (..., *n) placed at
// `place_at` in a zero grid of lengths L and the output cropped back to n at
// `crop_at`; `conjugate` multiplies by conj(H) instead (the adjoint when H is
// the spectrum of a real kernel, with place_at and crop_at swapped). H is the
// half spectrum (*L[:-1], L[-1]/2 + 1), c64 for f32 input and c128 for f64,
// or carries leading dims that repeat the input's innermost leading dims (a
// filter per channel). Runs without recording autograd. v may live on a CUDA
// device: the transforms are then cuFFT's, H is copied to v's device when it
// is elsewhere, and the result stays there.
fk::Tensor spectral_filter(const fk::Tensor& v, const fk::Tensor& H, const std::vector<int64_t>& L,
                           const std::vector<int64_t>& place_at,
                           const std::vector<int64_t>& crop_at, bool conjugate);

class FFTConvolution : public Operator {
 public:
  FFTConvolution(PsfFunction psf, Domain domain, bool periodic = false);
  fk::Tensor apply(const fk::Tensor& x) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  std::optional<double> homogeneity() const override { return 1.0; }
  bool batchable() const override { return true; }
  std::string fidelity_tag() const override { return "blur-1x-float32"; }
  std::string kind() const override { return "fft_convolution"; }
  void prepare_tables(fk::Device device, fk::DType dtype) const override;
  const Domain& domain() const { return domain_; }
  // The sampled kernel at this operator's resolution (for tests and baselines).
  PsfSample kernel() const { return psf_(domain_.spacing()); }
  // Spectrum of the kernel on the padded grid, complex (f32 -> c64, f64 -> c128),
  // on `device` (cached there: the same tensor on every call with one key).
  fk::Tensor spectrum(fk::DType real_dtype, fk::Device device = fk::kCPU) const;
  // Padded FFT length per axis.
  const std::vector<int64_t>& fft_shape() const { return fft_shape_; }
  bool periodic() const { return periodic_; }

 private:
  // (padded lengths, spacing, real dtype, device) -> the spectrum there.
  using SpectrumKey = std::tuple<std::vector<int64_t>, std::vector<double>, int, std::string>;
  struct Cache {
    std::mutex mu;
    std::map<SpectrumKey, fk::Tensor> spectra;
  };
  fk::Tensor host_spectrum(fk::DType real_dtype) const;  // caller holds cache_->mu
  void prepare();  // padded lengths and kernel radii at this resolution
  PsfFunction psf_;
  std::vector<int64_t> fft_shape_, radius_;
  Domain domain_;
  bool periodic_;
  std::shared_ptr<Cache> cache_;
};

}  // namespace nefi
