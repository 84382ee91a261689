#include "nefi/baselines/gaussian_splat.h"

#include <cmath>
#include <random>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/linalg.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"

namespace nefi {

fk::Tensor render_gaussian_splats(const fk::Tensor& coords, const fk::Tensor& centres,
                                  const fk::Tensor& log_widths, const fk::Tensor& amplitudes) {
  FK_CHECK(coords.dim() == 2 && centres.dim() == 2 && centres.shape() == log_widths.shape() &&
               coords.size(1) == centres.size(1) && amplitudes.dim() == 1 &&
               amplitudes.size(0) == centres.size(0),
           "nefi::render_gaussian_splats",
           "coords (M, d), centres and log_widths (P, d), amplitudes (P)",
           coords.shape().str() + ", " + centres.shape().str() + ", " + log_widths.shape().str() +
               ", " + amplitudes.shape().str());
  // (M, 1, d) - (1, P, d), scaled per primitive and axis -> (M, P) weights.
  const fk::Tensor u =
      (coords.unsqueeze(1) - centres.unsqueeze(0)) * fk::exp(-log_widths).unsqueeze(0);
  const fk::Tensor g = fk::exp(fk::sum(fk::square(u), {2}) * -0.5);
  return fk::matmul(g, amplitudes.unsqueeze(1)).reshape({coords.size(0)});
}

GaussianSplatField::GaussianSplatField(int ndim, HeadPtr head, int64_t n_primitives, uint64_t seed,
                                       fk::DType dtype)
    : ndim_(ndim), head_(std::move(head)), n_primitives_(n_primitives), dtype_(dtype) {
  FK_CHECK(ndim >= 1 && ndim <= 3, "nefi::GaussianSplatField", "ndim 1, 2 or 3", fk::to_text(ndim));
  FK_CHECK(head_ && head_->n_in() == 1, "nefi::GaussianSplatField", "one single-channel head",
           head_ ? fk::to_text(head_->n_in()) + " channels" : "none");
  FK_CHECK(n_primitives >= 1, "nefi::GaussianSplatField", "n_primitives >= 1",
           fk::to_text(n_primitives));
  primary_ = head_->name();
  params_.add("centres", {n_primitives, ndim});
  params_.add("log_widths", {n_primitives, ndim});
  params_.add("amplitudes", {n_primitives});
  params_.allocate(dtype);
  reset_parameters(seed);
}

void GaussianSplatField::reset_parameters(uint64_t seed) {
  fk::autograd::NoGradGuard ng;
  // A jittered lattice of m^ndim sites (m = ceil(P^(1/ndim))) covers the box
  // evenly; random uniform centres leave holes that the fit must first close.
  const auto m = static_cast<int64_t>(
      std::ceil(std::pow(static_cast<double>(n_primitives_), 1.0 / ndim_) - 1e-9));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> jitter(-0.25, 0.25);
  std::normal_distribution<double> amp(0.0, 0.01);
  const double cell = 2.0 / static_cast<double>(m);
  std::vector<double> c(n_primitives_ * ndim_), l(c.size(), std::log(cell / 2)), a(n_primitives_);
  int64_t sites = 1;
  for (int d = 0; d < ndim_; ++d) sites *= m;
  for (int64_t p = 0; p < n_primitives_; ++p)  // P of the sites, spread evenly
    for (int64_t d = 0, site = p * sites / n_primitives_; d < ndim_; ++d, site /= m)
      c[p * ndim_ + d] = -1.0 + cell * (static_cast<double>(site % m) + 0.5 + jitter(rng));
  for (double& v : a) v = amp(rng);
  params_.raw(0).copy_(fk::from_vector(c, params_.shape(0)).to(dtype_));
  params_.raw(1).copy_(fk::from_vector(l, params_.shape(1)).to(dtype_));
  params_.raw(2).copy_(fk::from_vector(a, params_.shape(2)).to(dtype_));
  params_.flat().bump_version();
}

FieldMap GaussianSplatField::forward(const Domain& domain, double progress) {
  FK_CHECK(domain.ndim() == ndim_, "nefi::GaussianSplatField",
           "a " + fk::to_text(ndim_) + "-D domain", domain.shape().str());
  const std::vector<fk::Tensor> p = params_.views();
  if (!coords_.defined() || !(coords_shape_ == domain.shape())) {
    coords_ = domain.coords(dtype_).reshape({domain.numel(), ndim_}).contiguous().to(device_);
    coords_shape_ = domain.shape();
  }
  const fk::Tensor raw = render_gaussian_splats(coords_, p[0], p[1], p[2]) + head_->init_bias()[0];
  return apply_heads({head_}, raw.unsqueeze(1), domain.shape(), progress);
}

void GaussianSplatField::to(fk::Device d) {
  fk::check_usable(d, "nefi::GaussianSplatField::to");
  params_.to(d);
  if (d != device_) coords_ = fk::Tensor();
  device_ = d;
}

bool GaussianSplatField::retarget(double) {
  return device_.is_cuda() && !heads_read_progress({head_});
}

}  // namespace nefi
