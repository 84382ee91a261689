#include "nefi/operators/intensity.h"

#include <cmath>

#include "fk/error.h"
#include "fk/ops/binary.h"
#include "fk/ops/fft.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"
#include "fk/ops/view.h"

namespace nefi {
namespace {

void check_real(const fk::Tensor& x, int rank, const char* who) {
  FK_CHECK(x.dim() >= rank, who, "a field of at least " + fk::to_text(rank) + " axes",
           x.shape().str());
  FK_CHECK(fk::is_floating(x.dtype()), who, "a real field", fk::name(x.dtype()));
}

}  // namespace

PhaseRetrievalOperator::PhaseRetrievalOperator(int rank, double oversample)
    : rank_(rank), oversample_(oversample) {
  FK_CHECK(rank >= 1 && rank <= 3, "nefi::PhaseRetrievalOperator", "a field of 1-3 axes",
           fk::to_text(rank) + " axes");
  FK_CHECK(std::isfinite(oversample) && oversample >= 1, "nefi::PhaseRetrievalOperator",
           "oversample >= 1", fk::to_text(oversample));
}

fk::Dims PhaseRetrievalOperator::output_shape(const fk::Dims& shape) const {
  FK_CHECK(shape.size() == rank_, "nefi::PhaseRetrievalOperator",
           "a field of " + fk::to_text(rank_) + " axes", shape.str());
  fk::Dims out;
  for (int64_t n : shape) out.push_back(static_cast<int64_t>(std::ceil(oversample_ * n - 1e-9)));
  return out;
}

fk::Tensor PhaseRetrievalOperator::apply(const fk::Tensor& x) const {
  check_real(x, rank_, "nefi::PhaseRetrievalOperator");
  const int lead = x.dim() - rank_;
  fk::Dims field;
  std::vector<int64_t> axes;
  for (int a = 0; a < rank_; ++a) {
    field.push_back(x.shape()[lead + a]);
    axes.push_back(lead + a);
  }
  const fk::Tensor spectrum = fk::fftn(x, output_shape(field).vec(), axes, fk::FFTNorm::Ortho);
  return fk::add(fk::square(fk::real(spectrum)), fk::square(fk::imag(spectrum)));
}

AxisIntegralOperator::AxisIntegralOperator(const fk::Dims& shape, int axis, double length)
    : shape_(shape), axis_(axis), length_(length) {
  FK_CHECK(shape.size() >= 1 && shape.size() <= 3, "nefi::AxisIntegralOperator",
           "a field of 1-3 axes", shape.str());
  FK_CHECK(axis >= 0 && axis < shape.size(), "nefi::AxisIntegralOperator",
           "an axis in 0.." + fk::to_text(shape.size() - 1), fk::to_text(axis));
  FK_CHECK(std::isfinite(length) && length > 0, "nefi::AxisIntegralOperator",
           "a cell path length > 0", fk::to_text(length));
}

std::shared_ptr<Operator> AxisIntegralOperator::at_resolution(const fk::Dims& shape) const {
  FK_CHECK(shape.size() == shape_.size(), "nefi::AxisIntegralOperator::at_resolution",
           "a grid of " + fk::to_text(shape_.size()) + " axes", shape.str());
  const double length =
      length_ * static_cast<double>(shape_[axis_]) / static_cast<double>(shape[axis_]);
  auto op = std::make_shared<AxisIntegralOperator>(shape, axis_, length);
  op->primary = primary;
  return op;
}

fk::Dims AxisIntegralOperator::output_shape(const fk::Dims& shape) const {
  // Another grid has another path length per cell: at_resolution builds it.
  FK_CHECK(shape == shape_, "nefi::AxisIntegralOperator",
           "a field on its grid " + shape_.str() + " (at_resolution for another)", shape.str());
  fk::Dims out = shape;
  out.erase(axis_);
  if (out.empty()) out.push_back(1);
  return out;
}

fk::Tensor AxisIntegralOperator::apply(const fk::Tensor& x) const {
  const int rank = shape_.size();
  check_real(x, rank, "nefi::AxisIntegralOperator");
  const int lead = x.dim() - rank;
  for (int a = 0; a < rank; ++a)
    FK_CHECK(x.shape()[lead + a] == shape_[a], "nefi::AxisIntegralOperator",
             "a field of shape (..., " + shape_.str() + ")", x.shape().str());
  fk::Tensor y = fk::mul(fk::sum(x, {lead + axis_}), length_);
  // A 1-D field integrates to one value: (..., 1), as output_shape says.
  return rank == 1 ? fk::unsqueeze(y, -1) : y;
}

BeerLambertOperator::BeerLambertOperator(OperatorPtr path, double i0)
    : path_(std::move(path)), i0_(i0) {
  FK_CHECK(path_ != nullptr, "nefi::BeerLambertOperator", "a path operator", "none");
  FK_CHECK(path_->linear(), "nefi::BeerLambertOperator",
           "a linear path operator (homogeneity 1: a projection)", path_->kind());
  FK_CHECK(std::isfinite(i0) && i0 > 0, "nefi::BeerLambertOperator", "i0 > 0", fk::to_text(i0));
  primary = path_->primary;
}

std::shared_ptr<Operator> BeerLambertOperator::at_resolution(const fk::Dims& shape) const {
  auto op = std::make_shared<BeerLambertOperator>(path_->at_resolution(shape), i0_);
  op->primary = primary;
  return op;
}

fk::Tensor BeerLambertOperator::apply(const fk::Tensor& x) const {
  return fk::mul(fk::exp(fk::neg(path_->apply(x))), i0_);
}

}  // namespace nefi
