#include "nefi/operators/function_operator.h"

#include <memory>
#include <string>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/profile.h"
#include "nefi/operators/prolonged.h"

namespace nefi {
namespace {

// The f64 host copy a model function receives (its own storage: the
// function may keep or modify it without touching the solve's tensors).
fk::Tensor host_f64(const fk::Tensor& t) {
  fk::Tensor c = t.to(fk::kCPU).to(fk::DType::F64).contiguous();
  return c.storage() == t.storage() ? c.clone() : c;  // copy once, only when still shared
}

// A function's output as f64 of `shape`: its shape must be `shape` up to
// axes of length 1 (a transposed or reshaped array of the right size is
// refused, never silently reordered).
fk::Tensor checked(const fk::Tensor& out, const fk::Dims& shape, const std::string& where,
                   const std::string& what) {
  FK_CHECK(out.defined(), where, what + " of shape " + shape.str(), "nothing");
  FK_CHECK(fk::is_floating(out.dtype()), where, what + " of real floating-point values",
           fk::name(out.dtype()));
  FK_CHECK(same_long_axes(out.shape(), shape), where, what + " of shape " + shape.str(),
           out.shape().str());
  return out.to(fk::kCPU).to(fk::DType::F64).contiguous().reshape(shape);
}

struct FunctionBackward : fk::autograd::Node {
  std::shared_ptr<const FunctionOperator> op;
  std::vector<fk::Tensor> xs64;  // the forward's inputs (host f64)
  std::vector<fk::DType> dtypes;
  const char* name() const override { return "FunctionOperatorBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::autograd::NoGradGuard ng;
    fk::profile::OpScope scope("function_operator_vjp");
    std::vector<fk::Tensor> out = op->call_vjp(xs64, host_f64(grads[0]));
    for (size_t i = 0; i < out.size(); ++i) out[i] = out[i].to(dtypes[i]);
    return out;
  }
  void release_saved() override {
    xs64.clear();
    Node::release_saved();
  }
};

}  // namespace

bool same_long_axes(const fk::Dims& a, const fk::Dims& b) {
  auto long_axes = [](const fk::Dims& d) {
    std::vector<int64_t> v;
    for (int64_t n : d)
      if (n != 1) v.push_back(n);
    return v;
  };
  return long_axes(a) == long_axes(b);
}

FunctionOperator::FunctionOperator(fk::Dims in_shape, fk::Dims out_shape, ForwardModel model,
                                   std::optional<double> homogeneity, std::string name,
                                   std::vector<std::string> inputs,
                                   const std::vector<fk::Tensor>& parameters)
    : in_shape_(std::move(in_shape)),
      out_shape_(std::move(out_shape)),
      model_(std::move(model)),
      homogeneity_(homogeneity),
      name_(std::move(name)),
      inputs_(std::move(inputs)) {
  FK_CHECK(in_shape_.numel() > 0 && out_shape_.numel() > 0, "nefi::FunctionOperator",
           "non-empty field and output shapes", in_shape_.str() + " -> " + out_shape_.str());
  FK_CHECK(model_.forward && model_.vjp, "nefi::FunctionOperator",
           "a forward function and its vector-Jacobian product",
           model_.forward ? "no vjp" : "no forward");
  FK_CHECK(!inputs_.empty(), "nefi::FunctionOperator", "at least one input field", "none");
  primary = inputs_.front();
  for (const fk::Tensor& p : parameters) {
    FK_CHECK(p.defined() && p.numel() > 0 && fk::is_floating(p.dtype()), "nefi::FunctionOperator",
             "real, non-empty parameters", p.defined() ? fk::name(p.dtype()) : "none");
    fk::Tensor leaf = p.detach().to(fk::kCPU).to(fk::DType::F32).contiguous().clone();
    leaf.set_requires_grad(true);
    params_.push_back(leaf);
  }
}

fk::Tensor FunctionOperator::call_forward(const std::vector<fk::Tensor>& xs64) const {
  return checked(model_.forward(xs64), out_shape_, "forward model '" + name_ + "'", "an output");
}

std::vector<fk::Tensor> FunctionOperator::call_vjp(const std::vector<fk::Tensor>& xs64,
                                                   const fk::Tensor& g64) const {
  const std::string where = "vjp of forward model '" + name_ + "'";
  std::vector<fk::Tensor> out = model_.vjp(xs64, g64);
  FK_CHECK(out.size() == inputs_.size() + params_.size(), where,
           fk::to_text(inputs_.size() + params_.size()) +
               (params_.empty() ? " gradients (one per field)"
                                : " gradients (one per field, then one per parameter)"),
           fk::to_text(out.size()));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = i < inputs_.size()
                 ? checked(out[i], in_shape_, where, "a gradient of field '" + inputs_[i] + "'")
                 : checked(out[i], params_[i - inputs_.size()].shape(), where,
                           "a gradient of parameter " + std::to_string(i - inputs_.size()));
  return out;
}

fk::Tensor FunctionOperator::apply_fields(const std::vector<fk::Tensor>& xs) const {
  const std::string where = "forward model '" + name_ + "'";
  FK_CHECK(xs.size() == inputs_.size(), where, fk::to_text(inputs_.size()) + " fields",
           fk::to_text(xs.size()));
  std::vector<fk::Tensor> xs64;
  std::vector<fk::DType> dtypes;
  for (size_t i = 0; i < xs.size(); ++i) {
    FK_CHECK(xs[i].shape() == in_shape_, where,
             "field '" + inputs_[i] + "' of shape " + in_shape_.str(), xs[i].shape().str());
    FK_CHECK(xs[i].device().is_cpu(), where, "fields on the cpu", xs[i].device().str());
    // Detached: the node keeps values, not the graph of their copies.
    xs64.push_back(host_f64(xs[i].detach()));
    dtypes.push_back(xs[i].dtype());
  }
  std::vector<fk::Tensor> inputs = xs;
  for (const fk::Tensor& p : params_) {
    xs64.push_back(host_f64(p.detach()));
    dtypes.push_back(p.dtype());
    inputs.push_back(p);
  }
  fk::Tensor y;
  {
    fk::autograd::NoGradGuard ng;
    fk::profile::OpScope scope("function_operator_forward");
    y = call_forward(xs64).to(xs.front().dtype());
  }
  if (fk::autograd::any_needs_grad(inputs)) {
    auto node = std::make_shared<FunctionBackward>();
    node->op = shared_from_this();
    node->xs64 = std::move(xs64);
    node->dtypes = std::move(dtypes);
    fk::autograd::record(node, inputs, y);
  }
  return y;
}

fk::Tensor FunctionOperator::forward(const FieldMap& fields) const {
  std::vector<fk::Tensor> xs;
  for (const std::string& n : inputs_) {
    const auto it = fields.find(n);
    FK_CHECK(
        it != fields.end(), "forward model '" + name_ + "'", "a field named '" + n + "'",
        fields.empty() ? std::string("no fields") : "fields " + fields.begin()->first + ", ...");
    xs.push_back(it->second);
  }
  return apply_fields(xs);
}

fk::Tensor FunctionOperator::apply(const fk::Tensor& x) const {
  FK_CHECK(inputs_.size() == 1, "forward model '" + name_ + "'",
           "fields by name (it reads " + fk::to_text(inputs_.size()) + ")", "one tensor");
  return apply_fields({x});
}

fk::Tensor FunctionOperator::vjp(const fk::Tensor& x, const fk::Tensor& g) const {
  const std::string where = "vjp of forward model '" + name_ + "'";
  FK_CHECK(inputs_.size() == 1, where, "one field", fk::to_text(inputs_.size()) + " fields");
  FK_CHECK(x.shape() == in_shape_, where, "a field of shape " + in_shape_.str(), x.shape().str());
  FK_CHECK(g.shape() == out_shape_, where, "a cotangent of shape " + out_shape_.str(),
           g.shape().str());
  fk::autograd::NoGradGuard ng;
  std::vector<fk::Tensor> xs64{host_f64(x)};
  for (const fk::Tensor& p : params_) xs64.push_back(host_f64(p));
  return call_vjp(xs64, host_f64(g)).front().to(x.dtype());
}

std::shared_ptr<Operator> FunctionOperator::at_resolution(const fk::Dims& shape) const {
  if (shape == in_shape_) return std::const_pointer_cast<FunctionOperator>(shared_from_this());
  bool coarser = shape.size() == in_shape_.size();
  for (int a = 0; coarser && a < shape.size(); ++a)
    coarser = shape[a] >= 1 && shape[a] <= in_shape_[a];
  FK_CHECK(coarser, "forward model '" + name_ + "'",
           "its own grid " + in_shape_.str() + " or a coarser one (seen through a prolongation)",
           shape.str());
  return std::make_shared<ProlongedOperator>(shared_from_this(), in_shape_, shape);
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
