#include "nefi/field/grid_field.h"

#include <algorithm>

#include "fk/autograd.h"
#include "fk/device.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/resample.h"

namespace nefi {
namespace {

// Separable linear interpolation of a C-ordered grid to `to` with cell-centred
// samples (source position (i + 0.5) old/new - 0.5, clamped to the edge
// cells; PyTorch's align_corners=False convention).
std::vector<double> linear_resample(std::vector<double> v, const fk::Dims& from,
                                    const fk::Dims& to) {
  fk::Dims cur = from;
  for (int a = 0; a < from.size(); ++a) {
    if (cur[a] == to[a]) continue;
    int64_t outer = 1, inner = 1;
    for (int b = 0; b < a; ++b) outer *= cur[b];
    for (int b = a + 1; b < cur.size(); ++b) inner *= cur[b];
    const int64_t n = cur[a], m = to[a];
    std::vector<double> out(outer * m * inner);
    const double scale = static_cast<double>(n) / static_cast<double>(m);
    for (int64_t j = 0; j < m; ++j) {
      const double src = std::max(0.0, (j + 0.5) * scale - 0.5);
      const int64_t i0 = std::min(static_cast<int64_t>(src), n - 1), i1 = std::min(i0 + 1, n - 1);
      const double t = src - static_cast<double>(i0);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t k = 0; k < inner; ++k)
          out[(o * m + j) * inner + k] =
              (1 - t) * v[(o * n + i0) * inner + k] + t * v[(o * n + i1) * inner + k];
    }
    v = std::move(out);
    cur[a] = m;
  }
  return v;
}

}  // namespace

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
  params_.to(device_);
}

void GridField::to(fk::Device d) {
  fk::check_usable(d, "nefi::GridField::to");
  params_.to(d);
  device_ = d;
}

bool GridField::retarget(double) {
  return device_.is_cuda() && !heads_read_progress(heads_);
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
  // The reference's rule: area means when no axis grows, else linear interpolation.
  bool coarsening = true;
  for (int a = 0; a < old.size(); ++a) coarsening = coarsening && old[a] >= domain.shape()[a];
  std::vector<double> out;
  for (int c = 0; c < n_out_; ++c) {
    std::vector<double> ch(vals.begin() + c * n_old, vals.begin() + (c + 1) * n_old);
    std::vector<double> r = coarsening ? area_resample(ch, old, domain.shape())
                                       : linear_resample(ch, old, domain.shape());
    out.insert(out.end(), r.begin(), r.end());
  }
  allocate(domain.shape());
  fk::autograd::NoGradGuard ng;
  params_.raw(0).copy_(fk::from_vector(out, params_.shape(0)).to(device_));
}

FieldMap GridField::forward(const Domain& domain, double progress) {
  FK_CHECK(domain.shape() == shape_, "nefi::GridField", "the grid shape " + shape_.str(),
           domain.shape().str());
  fk::Tensor v = params_.views()[0];
  // (C, *shape) -> (N, C): a transposed view, no copy.
  return apply_heads(heads_, v.reshape({n_out_, shape_.numel()}).t(), shape_, progress);
}

}  // namespace nefi
