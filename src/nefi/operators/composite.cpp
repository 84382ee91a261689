#include "nefi/operators/composite.h"

#include <cmath>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/join.h"
#include "fk/ops/unary.h"
#include "fk/ops/view.h"

namespace nefi {

std::string inner_host_only_reason(const std::vector<OperatorPtr>& inner) {
  for (const auto& op : inner)
    if (const std::string r = op->host_only_reason(); !r.empty())
      return "inner operator " + op->kind() + ": " + r;
  return "";
}

std::string inner_not_capturable_reason(const std::vector<OperatorPtr>& inner) {
  for (const auto& op : inner)
    if (!op->graph_capturable())
      return "inner operator " + op->kind() + ": " + op->not_capturable_reason();
  return "";
}

std::string inner_device_note(const std::vector<OperatorPtr>& inner) {
  for (const auto& op : inner)
    if (const std::string n = op->device_note(); !n.empty())
      return "inner operator " + op->kind() + ": " + n;
  return "";
}

bool inner_parameters_follow_device(const std::vector<OperatorPtr>& inner) {
  bool any = false;
  for (const auto& op : inner) {
    if (op->parameters_follow_device())
      any = true;
    else if (!op->parameters().empty())
      return false;
  }
  return any;
}

void inner_parameters_to(const std::vector<OperatorPtr>& inner, fk::Device device) {
  // A part listed twice (Sum({a, a})) is moved once.
  for (size_t i = 0; i < inner.size(); ++i) {
    bool seen = false;
    for (size_t j = 0; j < i && !seen; ++j) seen = inner[j] == inner[i];
    if (!seen) inner[i]->parameters_to(device);
  }
}

NuisanceOperator::NuisanceOperator(OperatorPtr inner, double gain, double offset, bool tg, bool to)
    : inner_(std::move(inner)),
      leaves_(std::make_shared<Leaves>()),
      train_gain_(tg),
      train_offset_(to) {
  FK_CHECK(inner_ != nullptr, "nefi::NuisanceOperator", "an inner operator", "none");
  FK_CHECK(gain > 0, "nefi::NuisanceOperator", "a positive gain", fk::to_text(gain));
  primary = inner_->primary;
  leaves_->log_gain = fk::scalar_tensor(std::log(gain), {fk::DType::F32});
  leaves_->offset = fk::scalar_tensor(offset, {fk::DType::F32});
  if (tg) leaves_->log_gain.set_requires_grad(true);
  if (to) leaves_->offset.set_requires_grad(true);
}

double NuisanceOperator::gain() const {
  return std::exp(leaves_->log_gain.item());
}
double NuisanceOperator::offset() const {
  return leaves_->offset.item();
}

std::optional<double> NuisanceOperator::homogeneity() const {
  // A trained offset is not read: its leaf may be on a device.
  if (train_offset_ || offset() != 0.0) return std::nullopt;
  return inner_->homogeneity();
}

std::string NuisanceOperator::host_only_reason() const {
  return inner_host_only_reason({inner_});
}

std::vector<fk::Tensor> NuisanceOperator::parameters() const {
  std::vector<fk::Tensor> p = inner_->parameters();
  if (train_gain_) p.push_back(leaves_->log_gain);
  if (train_offset_) p.push_back(leaves_->offset);
  return p;
}

bool NuisanceOperator::parameters_follow_device() const {
  if (!inner_->parameters().empty() && !inner_->parameters_follow_device()) return false;
  return train_gain_ || train_offset_ || inner_->parameters_follow_device();
}

void NuisanceOperator::parameters_to(fk::Device device) {
  if (inner_->parameters_follow_device()) inner_->parameters_to(device);
  // New leaves on `device`, values kept (the optimizer's state is made for
  // the leaves it is given at the solve's start).
  auto move = [&](fk::Tensor& leaf, bool trained) {
    if (!trained || leaf.device() == device) return;
    fk::autograd::NoGradGuard ng;
    leaf = leaf.detach().to(device);
    leaf.set_requires_grad(true);
  };
  move(leaves_->log_gain, train_gain_);
  move(leaves_->offset, train_offset_);
}

fk::Tensor NuisanceOperator::finish(const fk::Tensor& y) const {
  fk::Tensor out = train_gain_ ? fk::mul(y, fk::exp(leaves_->log_gain).to(y.dtype()))
                               : (gain() == 1.0 ? y : fk::mul(y, gain()));
  if (train_offset_) return fk::add(out, leaves_->offset.to(y.dtype()));
  return offset() == 0.0 ? out : fk::add(out, offset());
}

fk::Tensor NuisanceOperator::forward(const FieldMap& f) const {
  return finish(inner_->forward(f));
}
fk::Tensor NuisanceOperator::apply(const fk::Tensor& x) const {
  return finish(inner_->apply(x));
}

std::shared_ptr<Operator> NuisanceOperator::at_resolution(const fk::Dims& shape) const {
  auto op = std::make_shared<NuisanceOperator>(*this);  // the leaves are shared handles
  op->inner_ = inner_->at_resolution(shape);
  return op;
}

SequentialOperator::SequentialOperator(std::vector<OperatorPtr> ops) : ops_(std::move(ops)) {
  FK_CHECK(!ops_.empty(), "nefi::SequentialOperator", "at least one operator", "none");
  primary = ops_.front()->primary;
}

fk::Tensor SequentialOperator::forward(const FieldMap& f) const {
  fk::Tensor y = ops_.front()->forward(f);
  for (size_t i = 1; i < ops_.size(); ++i) y = ops_[i]->apply(y);
  return y;
}

fk::Tensor SequentialOperator::apply(const fk::Tensor& x) const {
  fk::Tensor y = x;
  for (const auto& op : ops_) y = op->apply(y);
  return y;
}

std::shared_ptr<Operator> SequentialOperator::at_resolution(const fk::Dims& shape) const {
  std::vector<OperatorPtr> ops;
  fk::Dims s = shape;
  for (const auto& op : ops_) {
    ops.push_back(op->at_resolution(s));
    s = op->output_shape(s);
  }
  return std::make_shared<SequentialOperator>(ops);
}

fk::Dims SequentialOperator::output_shape(const fk::Dims& shape) const {
  fk::Dims s = shape;
  for (const auto& op : ops_) s = op->output_shape(s);
  return s;
}

std::optional<double> SequentialOperator::homogeneity() const {
  double p = 1;
  for (const auto& op : ops_) {
    auto h = op->homogeneity();
    if (!h) return std::nullopt;
    p *= *h;
  }
  return p;
}

bool SequentialOperator::batchable() const {
  for (const auto& op : ops_)
    if (!op->batchable()) return false;
  return true;
}
std::string SequentialOperator::host_only_reason() const {
  return inner_host_only_reason(ops_);
}
// Every part sees the real dtype the first one is given (the parts keep it).
void SequentialOperator::prepare_tables(fk::Device device, fk::DType dtype) const {
  for (const auto& op : ops_) op->prepare_tables(device, dtype);
}

bool SequentialOperator::graph_capturable() const {
  for (const auto& op : ops_)
    if (!op->graph_capturable()) return false;
  return true;
}
std::string SequentialOperator::fidelity_tag() const {
  std::string t;
  for (const auto& op : ops_) {
    const std::string tag = op->fidelity_tag();
    if (tag.empty()) continue;
    if (!t.empty()) t.push_back('+');
    t.append(tag);
  }
  return t;
}
std::vector<fk::Tensor> SequentialOperator::parameters() const {
  std::vector<fk::Tensor> p;
  for (const auto& op : ops_)
    for (auto& t : op->parameters()) p.push_back(t);
  return p;
}

SumOperator::SumOperator(std::vector<OperatorPtr> ops) : ops_(std::move(ops)) {
  FK_CHECK(!ops_.empty(), "nefi::SumOperator", "at least one operator", "none");
  primary = ops_.front()->primary;
}

fk::Tensor SumOperator::apply(const fk::Tensor& x) const {
  fk::Tensor y = ops_.front()->apply(x);
  for (size_t i = 1; i < ops_.size(); ++i) y = fk::add(y, ops_[i]->apply(x));
  return y;
}

std::shared_ptr<Operator> SumOperator::at_resolution(const fk::Dims& shape) const {
  std::vector<OperatorPtr> ops;
  for (const auto& op : ops_) ops.push_back(op->at_resolution(shape));
  return std::make_shared<SumOperator>(ops);
}

std::optional<double> SumOperator::homogeneity() const {
  std::optional<double> p = ops_.front()->homogeneity();
  for (const auto& op : ops_)
    if (!p || op->homogeneity() != p) return std::nullopt;
  return p;
}
bool SumOperator::batchable() const {
  for (const auto& op : ops_)
    if (!op->batchable()) return false;
  return true;
}
std::string SumOperator::host_only_reason() const {
  return inner_host_only_reason(ops_);
}
void SumOperator::prepare_tables(fk::Device device, fk::DType dtype) const {
  for (const auto& op : ops_) op->prepare_tables(device, dtype);
}

bool SumOperator::graph_capturable() const {
  for (const auto& op : ops_)
    if (!op->graph_capturable()) return false;
  return true;
}
std::vector<fk::Tensor> SumOperator::parameters() const {
  std::vector<fk::Tensor> p;
  for (const auto& op : ops_)
    for (auto& t : op->parameters()) p.push_back(t);
  return p;
}

StackOperator::StackOperator(std::vector<OperatorPtr> ops, const fk::Dims& shape)
    : SumOperator(std::move(ops)), shape_(shape) {
  for (const auto& op : ops_) (void)op->output_shape(shape_);  // each takes the grid
}

fk::Tensor StackOperator::apply(const fk::Tensor& x) const {
  const int lead = x.dim() - shape_.size();
  FK_CHECK(lead >= 0, "nefi::StackOperator", "a field of shape (..., " + shape_.str() + ")",
           x.shape().str());
  fk::Dims flat;
  for (int a = 0; a < lead; ++a) flat.push_back(x.shape()[a]);
  flat.push_back(-1);
  std::vector<fk::Tensor> parts;
  for (const auto& op : ops_) parts.push_back(fk::reshape(op->apply(x), flat));
  return fk::cat(parts, lead);
}

std::shared_ptr<Operator> StackOperator::at_resolution(const fk::Dims& shape) const {
  std::vector<OperatorPtr> ops;
  for (const auto& op : ops_) ops.push_back(op->at_resolution(shape));
  return std::make_shared<StackOperator>(ops, shape);
}

fk::Dims StackOperator::output_shape(const fk::Dims& shape) const {
  FK_CHECK(shape == shape_, "nefi::StackOperator",
           "a field on its grid " + shape_.str() + " (at_resolution for another)", shape.str());
  int64_t n = 0;
  for (const auto& op : ops_) n += op->output_shape(shape).numel();
  return {n};
}

}  // namespace nefi
