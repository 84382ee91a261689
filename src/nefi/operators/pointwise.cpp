#include "nefi/operators/pointwise.h"

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/unary.h"
#include "nefi/resample.h"

namespace nefi {

PointwiseOperator::PointwiseOperator(fk::Tensor weight) : weight_(std::move(weight)) {
  FK_CHECK(weight_.defined(), "nefi::PointwiseOperator", "a weight map", "none");
}

fk::Tensor PointwiseOperator::apply(const fk::Tensor& x) const {
  fk::Tensor w = weight_.dtype() == x.dtype() ? weight_ : weight_.to(x.dtype());
  if (w.device() != x.device()) w = w.to(x.device());  // the map is built on the host
  return fk::mul(x, w);
}

std::shared_ptr<Operator> PointwiseOperator::at_resolution(const fk::Dims& shape) const {
  if (shape == weight_.shape()) return std::make_shared<PointwiseOperator>(*this);
  auto v = area_resample(weight_.to_vector<double>(), weight_.shape(), shape);
  auto op = std::make_shared<PointwiseOperator>(fk::from_vector(v, shape).to(weight_.dtype()));
  op->primary = primary;
  return op;
}

SaturationOperator::SaturationOperator(double level) : level_(level) {
  FK_CHECK(level > 0, "nefi::SaturationOperator", "a positive level", std::to_string(level));
}

fk::Tensor SaturationOperator::apply(const fk::Tensor& x) const {
  return fk::mul(fk::tanh(fk::mul(x, 1.0 / level_)), level_);
}

}  // namespace nefi
