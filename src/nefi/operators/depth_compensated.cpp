#include "nefi/operators/depth_compensated.h"

#include <cmath>
#include <random>
#include <string>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "nefi/params.h"

namespace nefi {

DepthCompensatedOperator::DepthCompensatedOperator(OperatorPtr inner, const fk::Dims& shape,
                                                   DepthCompensation options)
    : inner_(std::move(inner)), shape_(shape), options_(std::move(options)) {
  FK_CHECK(inner_ != nullptr, "nefi::DepthCompensatedOperator", "an inner operator", "null");
  const DepthCompensation& o = options_;
  FK_CHECK(o.gamma >= 0 && std::isfinite(o.gamma), "nefi::DepthCompensatedOperator", "gamma >= 0",
           Params::render(o.gamma));
  FK_CHECK(o.probes >= 1, "nefi::DepthCompensatedOperator", "at least one probe",
           fk::to_text(o.probes));
  const int nd = static_cast<int>(shape_.size());
  const int axis = o.axis < 0 ? o.axis + nd : o.axis;
  FK_CHECK(axis >= 0 && axis < nd, "nefi::DepthCompensatedOperator",
           "an axis of the grid " + shape_.str(), fk::to_text(o.axis));
  const fk::Dims out = inner_->output_shape(shape_);
  FK_CHECK(!o.mask.defined() || o.mask.shape() == out, "nefi::DepthCompensatedOperator",
           "a mask of the output's shape " + out.str(),
           o.mask.defined() ? o.mask.shape().str() : "");
  primary = inner_->primary;

  // diag(J^T J) ~ mean_p (J^T z_p)^2 over Rademacher z_p on the kept rows,
  // summed per layer.
  const std::vector<double> keep =
      o.mask.defined() ? o.mask.to_vector<double>() : std::vector<double>(out.numel(), 1.0);
  const fk::Tensor x0 = fk::full(shape_, o.x0);
  int64_t inner_stride = 1;
  for (int a = axis + 1; a < nd; ++a) inner_stride *= shape_[a];
  const int64_t layers = shape_[axis];
  sensitivity_.assign(layers, 0.0);
  std::mt19937_64 rng(o.seed ^ 0x6a09e667f3bcc909ull);
  for (int p = 0; p < o.probes; ++p) {
    std::vector<double> z(keep.size());
    for (size_t i = 0; i < z.size(); ++i) z[i] = ((rng() >> 63) ? 1.0 : -1.0) * keep[i];
    const auto g = inner_->vjp(x0, fk::from_vector(z, out)).to_vector<double>();
    for (size_t i = 0; i < g.size(); ++i)
      sensitivity_[(static_cast<int64_t>(i) / inner_stride) % layers] += g[i] * g[i];
  }
  const double per_layer = static_cast<double>(shape_.numel() / layers) * o.probes;
  double total = 0, weighted = 0;
  weights_.resize(layers);
  for (int64_t k = 0; k < layers; ++k) {
    sensitivity_[k] /= per_layer;
    FK_CHECK(sensitivity_[k] > 0, "nefi::DepthCompensatedOperator",
             "a layer the data see (sensitivity > 0)", "layer " + fk::to_text(k));
    weights_[k] = std::pow(sensitivity_[k], -0.5 * o.gamma);
    total += sensitivity_[k];
    weighted += sensitivity_[k] * weights_[k] * weights_[k];
  }
  for (double& w : weights_) w *= std::sqrt(total / weighted);
  std::vector<double> cells(shape_.numel());
  for (size_t i = 0; i < cells.size(); ++i)
    cells[i] = weights_[(static_cast<int64_t>(i) / inner_stride) % layers];
  cell_weights64_ = fk::from_vector(cells, shape_);
  weights_on_ = std::make_shared<DeviceCopies>();
}

// held + w (x - held) with held = stop_gradient(x): x's value, w times its
// gradient.
fk::Tensor DepthCompensatedOperator::apply(const fk::Tensor& x) const {
  if (!fk::autograd::needs_grad(x)) return inner_->apply(x);
  const fk::Tensor held = x.detach();
  const fk::Tensor w = cell_weights_on(x.dtype(), x.device());
  return inner_->apply(fk::add(held, fk::mul(fk::sub(x, held), w)));
}

// The weights are built on the host; each (dtype, device) copy is made once.
fk::Tensor DepthCompensatedOperator::cell_weights_on(fk::DType dtype, fk::Device device) const {
  return weights_on_->get(cell_weights64_, dtype, device);
}

void DepthCompensatedOperator::prepare_tables(fk::Device device, fk::DType dtype) const {
  if (device.is_cuda()) cell_weights_on(dtype, device);
  inner_->prepare_tables(device, dtype);
}

fk::Tensor DepthCompensatedOperator::vjp(const fk::Tensor& x, const fk::Tensor& g) const {
  return inner_->vjp(x, g);
}

std::shared_ptr<Operator> DepthCompensatedOperator::at_resolution(const fk::Dims& shape) const {
  return std::make_shared<DepthCompensatedOperator>(inner_->at_resolution(shape), shape, options_);
}

}  // namespace nefi
