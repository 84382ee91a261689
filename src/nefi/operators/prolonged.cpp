#include "nefi/operators/prolonged.h"

#include <string>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "nefi/resample.h"

namespace nefi {
namespace {

struct ProlongBackward : fk::autograd::Node {
  fk::Dims coarse, fine;
  fk::DType dtype = fk::DType::F32;
  const char* name() const override { return "ProlongBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::autograd::NoGradGuard ng;
    fk::profile::OpScope scope("prolong_backward");
    std::vector<double> g =
        area_resample(grads[0].to(fk::DType::F64).contiguous().to_vector<double>(), fine, coarse);
    const double ratio = static_cast<double>(fine.numel()) / static_cast<double>(coarse.numel());
    for (double& v : g) v *= ratio;
    return {fk::from_vector(g, coarse).to(dtype)};
  }
};

}  // namespace

fk::Tensor prolong(const fk::Tensor& x, const fk::Dims& fine) {
  const fk::Dims coarse = x.shape();
  FK_CHECK(coarse.size() == fine.size() && x.device().is_cpu() && fk::is_floating(x.dtype()),
           "nefi::prolong", "a real CPU field with " + fk::to_text(fine.size()) + " axes",
           std::string(fk::name(x.dtype())) + " " + coarse.str() + " on " + x.device().str());
  for (int a = 0; a < fine.size(); ++a)
    FK_CHECK(coarse[a] <= fine[a], "nefi::prolong", "a grid no finer than " + fine.str(),
             coarse.str());
  fk::Tensor y;
  {
    fk::autograd::NoGradGuard ng;
    fk::profile::OpScope scope("prolong");
    y = fk::from_vector(
            area_resample(x.to(fk::DType::F64).contiguous().to_vector<double>(), coarse, fine),
            fine)
            .to(x.dtype());
  }
  if (fk::autograd::needs_grad(x)) {
    auto node = std::make_shared<ProlongBackward>();
    node->coarse = coarse;
    node->fine = fine;
    node->dtype = x.dtype();
    fk::autograd::record(node, {x}, y);
  }
  return y;
}

ProlongedOperator::ProlongedOperator(std::shared_ptr<const Operator> inner, fk::Dims fine,
                                     fk::Dims coarse)
    : inner_(std::move(inner)), fine_(std::move(fine)), coarse_(std::move(coarse)) {
  FK_CHECK(inner_ != nullptr, "nefi::ProlongedOperator", "an inner model", "none");
  FK_CHECK(coarse_.size() == fine_.size(), "nefi::ProlongedOperator",
           "a coarse grid with " + fk::to_text(fine_.size()) + " axes", coarse_.str());
  for (int a = 0; a < fine_.size(); ++a)
    FK_CHECK(coarse_[a] >= 1 && coarse_[a] <= fine_[a], "nefi::ProlongedOperator",
             "a grid no finer than " + fine_.str(), coarse_.str());
  primary = inner_->primary;
}

fk::Tensor ProlongedOperator::forward(const FieldMap& fields) const {
  FieldMap fine;
  for (const auto& [name, t] : fields) fine[name] = t.shape() == coarse_ ? prolong(t, fine_) : t;
  return inner_->forward(fine);
}

fk::Tensor ProlongedOperator::apply(const fk::Tensor& x) const {
  return inner_->apply(prolong(x, fine_));
}

std::shared_ptr<Operator> ProlongedOperator::at_resolution(const fk::Dims& shape) const {
  return inner_->at_resolution(shape);  // the inner model decides (its own grid or coarser)
}

fk::Dims ProlongedOperator::output_shape(const fk::Dims& shape) const {
  FK_CHECK(shape == coarse_, "nefi::ProlongedOperator", "fields on " + coarse_.str(), shape.str());
  return inner_->output_shape(fine_);
}

GridKeptOperator::GridKeptOperator(std::shared_ptr<Operator> inner, fk::Dims grid)
    : inner_(std::move(inner)), grid_(std::move(grid)) {
  FK_CHECK(inner_ != nullptr, "nefi::GridKeptOperator", "an inner model", "none");
  primary = inner_->primary;
}

std::shared_ptr<Operator> GridKeptOperator::at_resolution(const fk::Dims& shape) const {
  if (shape == grid_) return std::const_pointer_cast<GridKeptOperator>(shared_from_this());
  return std::make_shared<ProlongedOperator>(shared_from_this(), grid_, shape);
}

fk::Dims GridKeptOperator::output_shape(const fk::Dims& shape) const {
  FK_CHECK(shape == grid_, "model '" + inner_->kind() + "'", "a field of shape " + grid_.str(),
           shape.str());
  return inner_->output_shape(shape);
}

}  // namespace nefi
