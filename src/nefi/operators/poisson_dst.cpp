#include "nefi/operators/poisson_dst.h"

#include <cmath>
#include <numbers>

#include "fk/autograd.h"
#include "fk/blas.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "nefi/cuda/poisson_dst_cells.h"
#include "nefi/operators/poisson_dst_device.h"

namespace nefi {
namespace {

// v <- M v along `axis` of a C-ordered (outer, n, inner) block; M is n x n,
// transposed when `transpose`. One f64 GEMM per outer slice: M (n x n) times
// the slice (n x inner).
void transform_axis(std::vector<double>& v, const fk::Dims& shape, int axis,
                    const std::vector<double>& M, bool transpose) {
  const int64_t n = shape[axis];
  int64_t outer = 1, inner = 1;
  for (int a = 0; a < axis; ++a) outer *= shape[a];
  for (int a = axis + 1; a < shape.size(); ++a) inner *= shape[a];
  std::vector<double> out(v.size());
  if (inner == 1) {  // the last axis: all slices at once, (outer x n) M^T
    fk::gemm(fk::DType::F64, false, !transpose, outer, n, n, 1.0, v.data(), n, M.data(), n, 0.0,
             out.data(), n);
  } else {
    for (int64_t o = 0; o < outer; ++o)
      fk::gemm(fk::DType::F64, transpose, false, n, inner, n, 1.0, M.data(), n,
               v.data() + o * n * inner, inner, 0.0, out.data() + o * n * inner, inner);
  }
  v.swap(out);
}

fk::Tensor apply_poisson(const PoissonOperator& op, const fk::Tensor& x) {
  fk::autograd::NoGradGuard ng;
  fk::profile::OpScope scope("poisson_dst");
  const int64_t m = op.domain().numel();
  std::vector<double> u = op.solve(x.to_vector<double>(), x.numel() / m);
  return fk::from_vector(u, x.shape()).to(x.dtype());
}

struct PoissonBackward : fk::autograd::Node {
  std::shared_ptr<const PoissonOperator> op;  // A is symmetric: A^T g = A g
  const char* name() const override { return "PoissonBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    return {apply_poisson(*op, grads[0])};
  }
};

}  // namespace

std::vector<double> dst2_matrix(int64_t n) {
  std::vector<double> S(n * n);
  const double scale = std::sqrt(2.0 / static_cast<double>(n));
  for (int64_t k = 0; k < n; ++k)
    for (int64_t i = 0; i < n; ++i)
      S[k * n + i] = scale * (k == n - 1 ? std::numbers::sqrt2 / 2 : 1.0) *
                     std::sin(std::numbers::pi * (k + 1) * (i + 0.5) / static_cast<double>(n));
  return S;
}

PoissonOperator::PoissonOperator(Domain domain, PoissonSpectrum spectrum, double conductivity)
    : domain_(std::move(domain)), spectrum_(spectrum), kappa_(conductivity) {
  FK_CHECK(kappa_ > 0 && std::isfinite(kappa_), "nefi::PoissonOperator", "a conductivity > 0",
           fk::to_text(kappa_));
  FK_CHECK(domain_.ndim() >= 1 && domain_.ndim() <= 3, "nefi::PoissonOperator", "a 1-3 D domain",
           domain_.shape().str());
  prepare();
}

void PoissonOperator::prepare() {
  const fk::Dims& s = domain_.shape();
  const std::vector<double> h = domain_.spacing();
  dst_.clear();
  for (int a = 0; a < s.size(); ++a) dst_.push_back(dst2_matrix(s[a]));
  // Per-axis eigenvalues, summed over the C-ordered mode grid.
  std::vector<std::vector<double>> axis_lambda(s.size());
  for (int a = 0; a < s.size(); ++a)
    for (int64_t k = 0; k < s[a]; ++k) {
      const double L = domain_.extent()[a];
      const double kk = (k + 1) * std::numbers::pi / static_cast<double>(s[a]);
      axis_lambda[a].push_back(spectrum_ == PoissonSpectrum::kContinuous
                                   ? std::pow((k + 1) * std::numbers::pi / L, 2)
                                   : 4.0 / (h[a] * h[a]) * std::pow(std::sin(kk / 2), 2));
    }
  lambda_.assign(s.numel(), 0.0);
  for (int64_t p = 0; p < s.numel(); ++p) {
    int64_t rem = p;
    for (int a = s.size() - 1; a >= 0; --a) {
      lambda_[p] += kappa_ * axis_lambda[a][rem % s[a]];
      rem /= s[a];
    }
  }
  device_cache_ = std::make_shared<DeviceCache>();
}

std::vector<double> PoissonOperator::extended_inverse_eigenvalues() const {
  cuda::OddExtension g;
  g.ndim = static_cast<int>(domain_.ndim());
  for (int a = 0; a < g.ndim; ++a) g.n[a] = domain_.shape()[a];
  std::vector<double> inv(static_cast<size_t>(g.extended_cells()), 0.0);
  for (int64_t p = 0; p < g.extended_cells(); ++p) {
    const int64_t mode = cuda::extended_mode(g, p);
    if (mode >= 0) inv[p] = 1.0 / lambda_[mode];
  }
  return inv;
}

fk::Tensor PoissonOperator::extended_inverse_eigenvalues_on(fk::Device device) const {
  std::lock_guard<std::mutex> lock(device_cache_->mu);
  auto it = device_cache_->by_device.find(device.str());
  if (it != device_cache_->by_device.end()) return it->second;
  std::vector<int64_t> shape;
  for (int64_t n : domain_.shape()) shape.push_back(2 * n);
  fk::Tensor t = fk::from_vector(extended_inverse_eigenvalues(), fk::Dims(shape), device);
  device_cache_->by_device[device.str()] = t;
  return t;
}

// The eigenvalues serve every dtype (f64).
void PoissonOperator::prepare_tables(fk::Device device, fk::DType) const {
  if (device.is_cuda()) extended_inverse_eigenvalues_on(device);
}

std::string PoissonOperator::fidelity_tag() const {
  return spectrum_ == PoissonSpectrum::kContinuous ? "poisson-dst-continuous-1x"
                                                   : "poisson-dst-fd-1x";
}

std::shared_ptr<Operator> PoissonOperator::at_resolution(const fk::Dims& shape) const {
  auto op = std::make_shared<PoissonOperator>(*this);
  op->domain_ = domain_.at(shape);
  op->prepare();
  return op;
}

std::vector<double> PoissonOperator::solve(const std::vector<double>& f, int64_t batch) const {
  std::vector<int64_t> dims{batch};
  for (int64_t n : domain_.shape()) dims.push_back(n);
  const fk::Dims full(dims);
  std::vector<double> v = f;
  const int d = domain_.ndim();
  for (int a = 0; a < d; ++a) transform_axis(v, full, a + 1, dst_[a], false);
  const int64_t m = domain_.numel();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t p = 0; p < m; ++p) v[b * m + p] /= lambda_[p];
  for (int a = 0; a < d; ++a) transform_axis(v, full, a + 1, dst_[a], true);
  return v;
}

fk::Tensor PoissonOperator::apply(const fk::Tensor& x) const {
  const int d = domain_.ndim();
  bool ok = x.dim() >= d;
  for (int a = 0; ok && a < d; ++a) ok = x.size(x.dim() - d + a) == domain_.shape()[a];
  FK_CHECK(ok, "nefi::PoissonOperator", "a field of shape (..., " + domain_.shape().str() + ")",
           x.shape().str());
  FK_CHECK(x.dtype() == fk::DType::F32 || x.dtype() == fk::DType::F64, "nefi::PoissonOperator",
           "a real f32/f64 field", fk::name(x.dtype()));
  if (!x.device().is_cpu()) return poisson_device(*this, x);
  fk::Tensor u = apply_poisson(*this, x.detach());
  if (fk::autograd::needs_grad(x)) {
    auto node = std::make_shared<PoissonBackward>();
    node->op = std::make_shared<const PoissonOperator>(*this);
    fk::autograd::record(node, {x}, u);
  }
  return u;
}

}  // namespace nefi
