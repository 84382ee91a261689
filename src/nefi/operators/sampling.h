#pragma once
// Linear measurements that keep part of the field or of its spectrum:
//   Sampling(mask)          y = the field's values where mask > 0, in C order:
//                           inpainting, scattered sensors
//   FourierSampling(mask)   y = (Re, Im) of the orthonormal DFT over the
//                           field's axes at the frequencies where mask > 0
//                           (the mask in numpy.fft order, DC first): MRI
//   Downsample(factors)     y = the mean over each block of factors[a] cells
//                           along axis a: a detector that bins pixels
// Inputs (..., *shape) real, leading dims a batch; outputs (..., m),
// (..., 2, m) and (..., shape / factors), in the input's dtype and on its
// device. Each is linear (homogeneity 1) with autograd's adjoint: scatter
// into zeros, the zero-filled inverse DFT, and spreading each mean back over
// its block. A sampling pattern belongs to one grid: at_resolution to
// another refuses (and from_forward refuses multiscale with any built-in
// operator).
#include <optional>
#include <string>
#include <vector>

#include "nefi/operators/operator.h"
#include "nefi/operators/table_cache.h"

namespace nefi {

// A noise sigma read off sampled data, with how it was read (a report's
// reason).
struct SampledNoise {
  double sigma = 0;
  std::string why;
};

// What both mask-driven operators share: the mask's grid, the flat C
// positions it keeps, and their copies on devices.
class MaskSampled : public Operator {
 public:
  std::optional<double> homogeneity() const override { return 1.0; }
  bool batchable() const override { return true; }
  void prepare_tables(fk::Device device, fk::DType dtype) const override;
  const fk::Dims& shape() const { return shape_; }
  int64_t samples() const { return index_.numel(); }

 protected:
  // mask: real, the field's shape (1-3 axes); at least one cell > 0.
  MaskSampled(const fk::Tensor& mask, const char* who);
  // v (..., *shape) at the kept positions: (..., m).
  fk::Tensor kept(const fk::Tensor& v, const fk::Dims& batch) const;
  // Refuses another grid than the mask's (at_resolution, output_shape).
  void check_grid(const fk::Dims& shape, const char* who) const;

  fk::Dims shape_;
  fk::Tensor index_;  // (m) i64
  std::shared_ptr<DeviceCopies> index_on_ = std::make_shared<DeviceCopies>();
};

class SamplingOperator : public MaskSampled {
 public:
  explicit SamplingOperator(const fk::Tensor& mask);
  fk::Tensor apply(const fk::Tensor& x) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  fk::Dims output_shape(const fk::Dims& shape) const override;
  std::string kind() const override { return "sampling"; }
  // The noise sigma of sampled data y (m), from kept cells that are grid
  // neighbours: 1.4826 median |y_o - 2 y_p + y_q| / sqrt(6) over runs of
  // three along an axis (a slope cancels), or 1.4826 median |y_p - y_q| /
  // sqrt(2) over pairs when fewer than 32 runs exist. A stencil over the
  // sample list would read the field's variation between far-apart cells as
  // noise. Edges bias it up. mask: the data's weights (samples at 0 are left
  // out). Throws fk::Error when fewer than 8 pairs are neighbours.
  SampledNoise estimate_noise(const fk::Tensor& y, const fk::Tensor& mask = {}) const;
};

class FourierSamplingOperator : public MaskSampled {
 public:
  // mask: the k-space grid, DC at index 0.
  explicit FourierSamplingOperator(const fk::Tensor& mask);
  fk::Tensor apply(const fk::Tensor& x) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  fk::Dims output_shape(const fk::Dims& shape) const override;
  std::string kind() const override { return "fourier_sampling"; }
  // The noise sigma of each real and imaginary part of measured k-space
  // data y (2, m). A real field's spectrum has y(-k) = conj(y(k)), so where
  // both k and -k are sampled, y(k) - conj(y(-k)) is noise alone: 1.4826
  // median of its parts' magnitudes / sqrt(2), exact whatever the image.
  // With fewer than 8 such pairs, 1.4826 median |y| over the outer quarter
  // of the sampled frequencies by radius (|k_a| / (n_a / 2) over the axes),
  // which signal left there (sharp edges) biases up. mask: the data's
  // weights (samples at 0 left out). Throws fk::Error when neither has 8.
  SampledNoise estimate_noise(const fk::Tensor& y, const fk::Tensor& mask = {}) const;

 private:
  std::vector<double> radius_;  // (m) each kept frequency's normalised radius
};

// The noise sigma of data measured through `op` when it is a Sampling or a
// FourierSampling operator (their estimate_noise, mask: the data's weights,
// 0 where unobserved); none for any other operator (the data-space
// estimate applies).
std::optional<SampledNoise> sampled_noise(const Operator& op, const fk::Tensor& y,
                                          const fk::Tensor& mask = {});

class DownsampleOperator : public Operator {
 public:
  // factors: one per field axis, each >= 1.
  explicit DownsampleOperator(std::vector<int64_t> factors);
  fk::Tensor apply(const fk::Tensor& x) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims&) const override {
    return std::make_shared<DownsampleOperator>(*this);
  }
  // Throws fk::Error unless every axis is a multiple of its factor.
  fk::Dims output_shape(const fk::Dims& shape) const override;
  std::optional<double> homogeneity() const override { return 1.0; }
  bool batchable() const override { return true; }
  std::string kind() const override { return "downsample"; }
  const std::vector<int64_t>& factors() const { return factors_; }

 private:
  std::vector<int64_t> factors_;
};

}  // namespace nefi
