#include "nefi/operators/operator.h"

#include "fk/autograd.h"
#include "fk/error.h"

namespace nefi {

fk::Tensor Operator::forward(const FieldMap& fields) const {
  auto it = fields.find(primary);
  FK_CHECK(it != fields.end(), "nefi::" + kind(), "a field named '" + primary + "'",
           fields.empty() ? std::string("no fields") : "fields " + fields.begin()->first + ", ...");
  return apply(it->second);
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

}  // namespace nefi
