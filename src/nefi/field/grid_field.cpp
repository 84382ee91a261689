#include "nefi/field/grid_field.h"

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/resample.h"

namespace nefi {

GridField::GridField(const fk::Dims& shape, std::vector<HeadPtr> heads) : heads_(std::move(heads)) {
  FK_CHECK(!heads_.empty(), "nefi::GridField", "at least one head", "none");
  for (const HeadPtr& h : heads_) n_out_ += h->n_in();
  primary_ = heads_.front()->name();
  allocate(shape);
  reset_parameters(0);
}

void GridField::allocate(const fk::Dims& shape) {
  shape_ = shape;
  params_.clear();
  fk::Dims s = shape;
  s.insert(0, n_out_);
  params_.add("values", s);
  params_.allocate(fk::DType::F32);
}

void GridField::reset_parameters(uint64_t) {
  fk::autograd::NoGradGuard ng;
  fk::Tensor v = params_.raw(0);
  int c = 0;
  for (const HeadPtr& h : heads_)
    for (double b : h->init_bias()) {
      fk::Tensor ch = v.select(0, c++);
      fill_(ch, b);
    }
  params_.flat().bump_version();
}

void GridField::on_stage_start(const Domain& domain) {
  if (domain.shape() == shape_) return;
  const fk::Dims old = shape_;
  std::vector<double> vals = params_.raw(0).to_vector<double>();
  const int64_t n_old = old.numel();
  std::vector<double> out;
  for (int c = 0; c < n_out_; ++c) {
    std::vector<double> ch(vals.begin() + c * n_old, vals.begin() + (c + 1) * n_old);
    std::vector<double> r = area_resample(ch, old, domain.shape());
    out.insert(out.end(), r.begin(), r.end());
  }
  allocate(domain.shape());
  fk::autograd::NoGradGuard ng;
  params_.raw(0).copy_(fk::from_vector(out, params_.shape(0)));
}

FieldMap GridField::forward(const Domain& domain, double) {
  FK_CHECK(domain.shape() == shape_, "nefi::GridField", "the grid shape " + shape_.str(),
           domain.shape().str());
  fk::Tensor v = params_.views()[0];
  // (C, *shape) -> (N, C): a transposed view, no copy.
  return apply_heads(heads_, v.reshape({n_out_, shape_.numel()}).t(), shape_);
}

}  // namespace nefi
