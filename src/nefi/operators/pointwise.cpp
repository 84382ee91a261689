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
  // The map is built on the host: its copy in x's dtype and device is made once.
  return fk::mul(x, weight_on_->get(weight_, x.dtype(), x.device()));
}

void PointwiseOperator::prepare_tables(fk::Device device, fk::DType dtype) const {
  if (device.is_cuda()) weight_on_->get(weight_, dtype, device);
}

std::shared_ptr<Operator> PointwiseOperator::at_resolution(const fk::Dims& shape) const {
  if (shape == weight_.shape()) return std::make_shared<PointwiseOperator>(*this);
  auto v = area_resample(weight_.to_vector<double>(), weight_.shape(), shape);
  auto op = std::make_shared<PointwiseOperator>(fk::from_vector(v, shape).to(weight_.dtype()));
  op->primary = primary;
  return op;
}

SaturationOperator::SaturationOperator(double level) : level_(level) {
  FK_CHECK(level > 0, "nefi::SaturationOperator", "a positive level", fk::to_text(level));
}

fk::Tensor SaturationOperator::apply(const fk::Tensor& x) const {
  return fk::mul(fk::tanh(fk::mul(x, 1.0 / level_)), level_);
}

}  // namespace nefi
