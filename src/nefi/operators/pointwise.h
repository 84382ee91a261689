#pragma once
// Pointwise operators: Identity (y = x), Pointwise (y = w ⊙ x, a fixed weight
// map broadcast against x; at another resolution the map is area-resampled),
// and Saturation (y = s tanh(x / s), a detector that saturates at s).
#include <memory>

#include "nefi/operators/operator.h"
#include "nefi/operators/table_cache.h"

namespace nefi {

class IdentityOperator : public Operator {
 public:
  fk::Tensor apply(const fk::Tensor& x) const override { return x; }
  std::shared_ptr<Operator> at_resolution(const fk::Dims&) const override {
    return std::make_shared<IdentityOperator>(*this);
  }
  std::optional<double> homogeneity() const override { return 1.0; }
  bool batchable() const override { return true; }
  std::string kind() const override { return "identity"; }
};

class PointwiseOperator : public Operator {
 public:
  explicit PointwiseOperator(fk::Tensor weight);  // (*shape), real
  fk::Tensor apply(const fk::Tensor& x) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  std::optional<double> homogeneity() const override { return 1.0; }
  bool batchable() const override { return true; }
  std::string kind() const override { return "pointwise"; }
  void prepare_tables(fk::Device device, fk::DType dtype) const override;
  const fk::Tensor& weight() const { return weight_; }

 private:
  fk::Tensor weight_;
  std::shared_ptr<DeviceCopies> weight_on_ = std::make_shared<DeviceCopies>();
};

class SaturationOperator : public Operator {
 public:
  explicit SaturationOperator(double level);
  fk::Tensor apply(const fk::Tensor& x) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims&) const override {
    return std::make_shared<SaturationOperator>(*this);
  }
  bool batchable() const override { return true; }
  std::string kind() const override { return "saturation"; }

 private:
  double level_;
};

}  // namespace nefi
