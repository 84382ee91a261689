#pragma once
// ProlongedOperator: a model that lives on one grid, seen from a coarser
// grid of the same box: F(P x), P the piecewise-constant prolongation (each
// fine cell the area-weighted mean of the coarse cells it overlaps,
// resample.h), its transpose (N_fine / N_coarse times the area mean over
// each coarse cell) in the backward. It gives a model that cannot rebuild
// itself on other grids (a FunctionOperator) the coarse stages of a
// multiscale curriculum: the field trains coarse to fine while the model
// keeps running at its own grid, and the measurement keeps its shape.
// GridKeptOperator gives any operator (a built-in one, which would rebuild
// itself on a coarse grid and have its data resampled with it) the same
// coarse stages.
#include <memory>

#include "nefi/operators/operator.h"

namespace nefi {

// x: (*coarse) real -> (*fine), differentiable (one op each way).
fk::Tensor prolong(const fk::Tensor& x, const fk::Dims& fine);

class ProlongedOperator : public Operator {
 public:
  // inner: the model at `fine`; coarse: every axis at most fine's.
  ProlongedOperator(std::shared_ptr<const Operator> inner, fk::Dims fine, fk::Dims coarse);
  fk::Tensor forward(const FieldMap& fields) const override;
  fk::Tensor apply(const fk::Tensor& x) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  fk::Dims output_shape(const fk::Dims& shape) const override;
  std::optional<double> homogeneity() const override { return inner_->homogeneity(); }
  bool graph_capturable() const override { return inner_->graph_capturable(); }
  std::string not_capturable_reason() const override { return inner_->not_capturable_reason(); }
  // The prolongation resamples on host vectors (resample.h).
  std::string host_only_reason() const override {
    return "the prolongation of a coarse stage's field to the model's grid runs on the host";
  }
  std::string kind() const override { return inner_->kind(); }
  std::vector<fk::Tensor> parameters() const override { return inner_->parameters(); }

 private:
  std::shared_ptr<const Operator> inner_;
  fk::Dims fine_, coarse_;
};

// `inner` kept on `grid`: at a coarser grid it is seen through the
// prolongation, as a FunctionOperator is; every other call is the inner
// operator's (its kind, adjoint, parameters, device tables).
class GridKeptOperator : public Operator, public std::enable_shared_from_this<GridKeptOperator> {
 public:
  GridKeptOperator(std::shared_ptr<Operator> inner, fk::Dims grid);
  fk::Tensor forward(const FieldMap& fields) const override { return inner_->forward(fields); }
  fk::Tensor apply(const fk::Tensor& x) const override { return inner_->apply(x); }
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  fk::Dims output_shape(const fk::Dims& shape) const override;
  std::optional<double> homogeneity() const override { return inner_->homogeneity(); }
  bool linear() const override { return inner_->linear(); }
  bool batchable() const override { return inner_->batchable(); }
  bool graph_capturable() const override { return inner_->graph_capturable(); }
  std::string not_capturable_reason() const override { return inner_->not_capturable_reason(); }
  std::string host_only_reason() const override { return inner_->host_only_reason(); }
  std::string device_note() const override { return inner_->device_note(); }
  std::string fidelity_tag() const override { return inner_->fidelity_tag(); }
  std::string kind() const override { return inner_->kind(); }
  void prepare_tables(fk::Device device, fk::DType dtype) const override {
    inner_->prepare_tables(device, dtype);
  }
  std::vector<fk::Tensor> parameters() const override { return inner_->parameters(); }
  bool parameters_follow_device() const override { return inner_->parameters_follow_device(); }
  void parameters_to(fk::Device device) override { inner_->parameters_to(device); }
  fk::Tensor vjp(const fk::Tensor& x, const fk::Tensor& g) const override {
    return inner_->vjp(x, g);
  }

 private:
  std::shared_ptr<Operator> inner_;
  fk::Dims grid_;
};

}  // namespace nefi
