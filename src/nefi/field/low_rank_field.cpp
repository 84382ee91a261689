#include "nefi/field/low_rank_field.h"

#include <cmath>
#include <string>

#include "fk/autograd.h"
#include "fk/device.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary/binary.h"
#include "fk/ops/linalg.h"
#include "fk/ops/reduce/sum.h"
#include "fk/random.h"
#include "nefi/resample.h"

namespace nefi {

LowRankField::LowRankField(const fk::Dims& shape, std::vector<HeadPtr> heads, int rank,
                           uint64_t seed)
    : heads_(std::move(heads)), rank_(rank) {
  FK_CHECK(!heads_.empty(), "nefi::LowRankField", "at least one head", "none");
  FK_CHECK(shape.size() >= 1 && shape.size() <= 3, "nefi::LowRankField", "a 1-, 2- or 3-D grid",
           shape.str());
  FK_CHECK(rank_ >= 1 && rank_ <= 1024, "nefi::LowRankField", "a rank in [1, 1024]",
           fk::to_text(rank_));
  for (const HeadPtr& h : heads_) n_out_ += h->n_in();
  primary_ = heads_.front()->name();
  allocate(shape);
  reset_parameters(seed);
}

void LowRankField::allocate(const fk::Dims& shape) {
  shape_ = shape;
  params_.clear();
  for (int a = 0; a < shape.size(); ++a)
    params_.add("factor" + std::to_string(a), {n_out_, rank_, shape[a]});
  params_.allocate(fk::DType::F32);
  params_.to(device_);
}

void LowRankField::to(fk::Device d) {
  fk::check_usable(d, "nefi::LowRankField::to");
  params_.to(d);
  device_ = d;
}

bool LowRankField::retarget(double) {
  return device_.is_cuda() && !heads_read_progress(heads_);
}

void LowRankField::reset_parameters(uint64_t seed) {
  fk::Generator gen(seed);
  fk::autograd::NoGradGuard ng;
  const std::vector<double> bias = output_bias(heads_);
  const int d = shape_.size();
  for (int a = 0; a < d; ++a) {
    fk::Tensor f = params_.raw(a);
    std::vector<double> v =
        fk::uniform(f.shape(), -0.1, 0.1, {fk::DType::F64}, &gen).to_vector<double>();
    const int64_t n = shape_[a];
    for (int c = 0; c < n_out_; ++c) {
      const double root = std::pow(std::abs(bias[c]), 1.0 / d);
      const double scale = std::max(root, 0.1);
      for (int r = 0; r < rank_; ++r)
        for (int64_t i = 0; i < n; ++i) {
          double& e = v[(static_cast<int64_t>(c) * rank_ + r) * n + i];
          // The first term carries the initial value; the rest start small.
          // A zero value is no start for it: all its factors at 0 are a
          // saddle it never leaves (each factor's gradient is the others'),
          // so then it starts small and random like the rest.
          e = r == 0 && root > 0 ? (a == 0 && bias[c] < 0 ? -root : root) : e * scale;
        }
    }
    f.copy_(fk::from_vector(v, f.shape()).to(fk::DType::F32));
  }
  params_.flat().bump_version();
}

void LowRankField::on_stage_start(const Domain& domain) {
  if (domain.shape() == shape_) return;
  FK_CHECK(domain.ndim() == shape_.size(), "nefi::LowRankField",
           fk::to_text(shape_.size()) + "-D grids", domain.str());
  const fk::Dims old = shape_;
  std::vector<std::vector<double>> factors;
  for (int a = 0; a < old.size(); ++a) {
    const std::vector<double> f = params_.raw(a).to_vector<double>();
    std::vector<double> out;
    const int64_t rows = static_cast<int64_t>(n_out_) * rank_;
    for (int64_t r = 0; r < rows; ++r) {
      const std::vector<double> row(f.begin() + r * old[a], f.begin() + (r + 1) * old[a]);
      const std::vector<double> res =
          area_resample(row, fk::Dims{old[a]}, fk::Dims{domain.shape()[a]});
      out.insert(out.end(), res.begin(), res.end());
    }
    factors.push_back(std::move(out));
  }
  allocate(domain.shape());
  fk::autograd::NoGradGuard ng;
  for (int a = 0; a < shape_.size(); ++a)
    params_.raw(a).copy_(
        fk::from_vector(factors[a], params_.shape(a)).to(fk::DType::F32).to(device_));
}

FieldMap LowRankField::forward(const Domain& domain, double progress) {
  FK_CHECK(domain.shape() == shape_, "nefi::LowRankField", "the grid shape " + shape_.str(),
           domain.shape().str());
  const std::vector<fk::Tensor> f = params_.views();  // (C, R, n_a) each
  const int64_t C = n_out_, R = rank_, N = shape_.numel();
  fk::Tensor raw;  // (C, N)
  if (shape_.size() == 1) {
    raw = fk::sum(f[0], {1});
  } else {
    fk::Tensor lead = f[0];  // (C, R, cells so far)
    int64_t cells = shape_[0];
    for (int a = 1; a + 1 < shape_.size(); ++a) {  // 3-D: the outer product of A and B
      lead = fk::mul(lead.unsqueeze(3), f[a].unsqueeze(2)).reshape({C, R, cells * shape_[a]});
      cells *= shape_[a];
    }
    raw = fk::bmm(lead.transpose(1, 2), f.back());  // (C, cells, n_last)
  }
  return apply_heads(heads_, raw.reshape({C, N}).t(), shape_, progress);
}

}  // namespace nefi
