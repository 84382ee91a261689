#include "nefi/operators/function_operator.h"

#include <memory>
#include <string>

#include "fk/autograd.h"
#include "fk/error.h"

namespace nefi {
namespace {

// The f64 host copy a model function receives (its own storage: the
// function may keep or modify it without touching the solve's tensors).
fk::Tensor host_f64(const fk::Tensor& t) {
  return t.to(fk::kCPU).to(fk::DType::F64).contiguous().clone();
}

fk::Tensor checked(const fk::Tensor& out, const fk::Dims& shape, const std::string& where,
                   const std::string& what) {
  FK_CHECK(out.defined(), where, what + " of shape " + shape.str(), "nothing");
  FK_CHECK(fk::is_floating(out.dtype()), where, what + " of real floating-point values",
           fk::name(out.dtype()));
  FK_CHECK(out.numel() == shape.numel(), where, what + " of shape " + shape.str(),
           out.shape().str());
  return out.to(fk::kCPU).to(fk::DType::F64).contiguous().reshape(shape);
}

struct FunctionBackward : fk::autograd::Node {
  std::shared_ptr<const FunctionOperator> op;
  fk::Tensor x64;  // the forward's input (host f64)
  fk::DType dtype = fk::DType::F32;
  const char* name() const override { return "FunctionOperatorBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::autograd::NoGradGuard ng;
    return {op->call_vjp(x64, host_f64(grads[0])).to(dtype)};
  }
};

}  // namespace

FunctionOperator::FunctionOperator(fk::Dims in_shape, fk::Dims out_shape, ForwardModel model,
                                   std::optional<double> homogeneity, std::string name)
    : in_shape_(std::move(in_shape)),
      out_shape_(std::move(out_shape)),
      model_(std::move(model)),
      homogeneity_(homogeneity),
      name_(std::move(name)) {
  FK_CHECK(in_shape_.numel() > 0 && out_shape_.numel() > 0, "nefi::FunctionOperator",
           "non-empty field and output shapes", in_shape_.str() + " -> " + out_shape_.str());
  FK_CHECK(model_.forward && model_.vjp, "nefi::FunctionOperator",
           "a forward function and its vector-Jacobian product",
           model_.forward ? "no vjp" : "no forward");
}

fk::Tensor FunctionOperator::call_forward(const fk::Tensor& x64) const {
  return checked(model_.forward(x64), out_shape_, "forward model '" + name_ + "'", "an output");
}

fk::Tensor FunctionOperator::call_vjp(const fk::Tensor& x64, const fk::Tensor& g64) const {
  return checked(model_.vjp(x64, g64), in_shape_, "vjp of forward model '" + name_ + "'",
                 "a field gradient");
}

fk::Tensor FunctionOperator::apply(const fk::Tensor& x) const {
  FK_CHECK(x.shape() == in_shape_, "forward model '" + name_ + "'",
           "a field of shape " + in_shape_.str(), x.shape().str());
  FK_CHECK(x.device().is_cpu(), "forward model '" + name_ + "'", "a field on the cpu",
           x.device().str());
  fk::Tensor x64 = host_f64(x);
  fk::Tensor y;
  {
    fk::autograd::NoGradGuard ng;
    y = call_forward(x64).to(x.dtype());
  }
  if (fk::autograd::needs_grad(x)) {
    auto node = std::make_shared<FunctionBackward>();
    node->op = shared_from_this();
    node->x64 = x64;
    node->dtype = x.dtype();
    fk::autograd::record(node, {x}, y);
  }
  return y;
}

fk::Tensor FunctionOperator::vjp(const fk::Tensor& x, const fk::Tensor& g) const {
  FK_CHECK(x.shape() == in_shape_, "vjp of forward model '" + name_ + "'",
           "a field of shape " + in_shape_.str(), x.shape().str());
  FK_CHECK(g.shape() == out_shape_, "vjp of forward model '" + name_ + "'",
           "a cotangent of shape " + out_shape_.str(), g.shape().str());
  fk::autograd::NoGradGuard ng;
  return call_vjp(host_f64(x), host_f64(g)).to(x.dtype());
}

std::shared_ptr<Operator> FunctionOperator::at_resolution(const fk::Dims& shape) const {
  FK_CHECK(shape == in_shape_, "forward model '" + name_ + "'",
           "its own grid " + in_shape_.str() +
               " (a function cannot rebuild itself on another grid: give the curriculum "
               "one stage at the native shape)",
           shape.str());
  return std::const_pointer_cast<FunctionOperator>(shared_from_this());
}

fk::Dims FunctionOperator::output_shape(const fk::Dims& shape) const {
  FK_CHECK(shape == in_shape_, "forward model '" + name_ + "'",
           "a field of shape " + in_shape_.str(), shape.str());
  return out_shape_;
}

std::string FunctionOperator::not_capturable_reason() const {
  return "forward model '" + name_ + "' calls host functions";
}

std::string FunctionOperator::host_only_reason() const {
  return "forward model '" + name_ + "' is a host function on f64 arrays";
}

}  // namespace nefi
