#pragma once
// Detectors that record an intensity, not the field's linear image:
//   PhaseRetrieval(oversample)  y = |DFT(x zero-padded to ceil(oversample n)
//                               per axis)|^2, orthonormal: a far-field
//                               diffraction pattern (coherent imaging,
//                               crystallography); homogeneity 2. Its
//                               ambiguities (a shift inside the padded grid,
//                               the point reflection, the sign) are the
//                               prior's to fix (a known support, nonnegative)
//   AxisIntegral(axis, length)  y = sum along `axis` of x times the cell's
//                               path length: a parallel projection; linear
//   BeerLambert(path, i0)       y = i0 exp(-path(x)): the transmitted
//                               intensity through an attenuation map x along
//                               the linear projection `path` (AxisIntegral,
//                               or a Radon transform for transmission CT)
// Inputs (..., *shape) real, leading dims a batch; outputs in the input's
// dtype on its device, gradients by autograd.
#include <string>
#include <vector>

#include "nefi/operators/operator.h"

namespace nefi {

class PhaseRetrievalOperator : public Operator {
 public:
  // rank: the field's axes (1-3), the last dims of an input; oversample
  // >= 1 (the measured grid's cells over the field's, per axis).
  explicit PhaseRetrievalOperator(int rank, double oversample = 2.0);
  fk::Tensor apply(const fk::Tensor& x) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims&) const override {
    return std::make_shared<PhaseRetrievalOperator>(*this);
  }
  fk::Dims output_shape(const fk::Dims& shape) const override;
  std::optional<double> homogeneity() const override { return 2.0; }
  bool batchable() const override { return true; }
  std::string kind() const override { return "phase_retrieval"; }
  double oversample() const { return oversample_; }

 private:
  int rank_;
  double oversample_;
};

class AxisIntegralOperator : public Operator {
 public:
  // shape: the field's grid; axis: one of its axes; length: the path length
  // of one cell along it (> 0). at_resolution keeps the physical path (the
  // length scales by old / new cells along the axis).
  AxisIntegralOperator(const fk::Dims& shape, int axis, double length = 1.0);
  fk::Tensor apply(const fk::Tensor& x) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  fk::Dims output_shape(const fk::Dims& shape) const override;
  std::optional<double> homogeneity() const override { return 1.0; }
  bool batchable() const override { return true; }
  std::string kind() const override { return "axis_integral"; }

 private:
  fk::Dims shape_;
  int axis_;
  double length_;
};

class BeerLambertOperator : public Operator {
 public:
  // path: a linear operator (homogeneity 1); i0 > 0, the unattenuated intensity.
  BeerLambertOperator(OperatorPtr path, double i0 = 1.0);
  fk::Tensor apply(const fk::Tensor& x) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  fk::Dims output_shape(const fk::Dims& shape) const override { return path_->output_shape(shape); }
  bool batchable() const override { return path_->batchable(); }
  bool graph_capturable() const override { return path_->graph_capturable(); }
  std::string not_capturable_reason() const override { return path_->not_capturable_reason(); }
  std::string host_only_reason() const override { return path_->host_only_reason(); }
  std::string device_note() const override { return path_->device_note(); }
  std::string fidelity_tag() const override { return path_->fidelity_tag(); }
  std::string kind() const override { return "beer_lambert"; }
  void prepare_tables(fk::Device device, fk::DType dtype) const override {
    path_->prepare_tables(device, dtype);
  }
  std::vector<fk::Tensor> parameters() const override { return path_->parameters(); }
  bool parameters_follow_device() const override { return path_->parameters_follow_device(); }
  void parameters_to(fk::Device device) override { path_->parameters_to(device); }
  const Operator& path() const { return *path_; }

 private:
  OperatorPtr path_;
  double i0_;
};

}  // namespace nefi
