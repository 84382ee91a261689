#include "nefi/operators/operator.h"

#include <string>

#include "fk/autograd.h"
#include "fk/error.h"

namespace nefi {

fk::Tensor Operator::forward(const FieldMap& fields) const {
  auto it = fields.find(primary);
  FK_CHECK(it != fields.end(), "nefi::" + kind(), "a field named '" + primary + "'",
           fields.empty() ? std::string("no fields") : "fields " + fields.begin()->first + ", ...");
  return apply(it->second);
}

std::string Operator::not_capturable_reason() const {
  return graph_capturable() ? "" : "host reads or data-dependent work";
}

fk::Tensor Operator::vjp(const fk::Tensor& x, const fk::Tensor& g) const {
  fk::autograd::EnableGradGuard eg;
  fk::Tensor xin = x.detach();
  xin.set_requires_grad(true);
  fk::Tensor y = apply(xin);
  FK_CHECK(y.shape() == g.shape(), "nefi::Operator::vjp", "a cotangent of shape " + y.shape().str(),
           g.shape().str());
  return fk::autograd::grad({y}, {g.to(y.dtype())}, {xin})[0];
}

std::string device_solve_refusal(const Operator& op, fk::Device device) {
  if (device.is_cpu()) return "";
  const std::string host_only = op.host_only_reason();
  if (!host_only.empty())
    return "operator " + op.kind() + " on " + device.str() + ": " + host_only +
           " (run it on the CPU)";
  if (!op.parameters().empty() && !op.parameters_follow_device())
    return "operator " + op.kind() + " on " + device.str() + ": " +
           std::to_string(op.parameters().size()) +
           " trainable operator parameter(s) (they train on the CPU; freeze them or run on cpu)";
  return "";
}

}  // namespace nefi
