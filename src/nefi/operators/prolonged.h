#pragma once
// ProlongedOperator: a model that lives on one grid, seen from a coarser
// grid of the same box: F(P x), P the piecewise-constant prolongation (each
// fine cell the area-weighted mean of the coarse cells it overlaps,
// resample.h), its transpose (N_fine / N_coarse times the area mean over
// each coarse cell) in the backward. It gives a model that cannot rebuild
// itself on other grids (a FunctionOperator) the coarse stages of a
// multiscale curriculum: the field trains coarse to fine while the model
// keeps running at its own grid, and the measurement keeps its shape.
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
  std::string host_only_reason() const override { return inner_->host_only_reason(); }
  std::string kind() const override { return inner_->kind(); }
  std::vector<fk::Tensor> parameters() const override { return inner_->parameters(); }

 private:
  std::shared_ptr<const Operator> inner_;
  fk::Dims fine_, coarse_;
};

}  // namespace nefi
