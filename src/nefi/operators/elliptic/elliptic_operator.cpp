#include "nefi/operators/elliptic/elliptic_operator.h"

#include "fk/error.h"
#include "fk/ops/linalg.h"
#include "fk/ops/unary.h"

namespace nefi {
namespace {

constexpr const char* kWhere = "nefi::EllipticOperator";

}  // namespace

EllipticOperator::EllipticOperator(Domain domain, GridFunction rhs, GridFunction observe,
                                   EllipticOperatorOptions options, GridFunction kappa)
    : domain_(std::move(domain)),
      rhs_fn_(std::move(rhs)),
      observe_fn_(std::move(observe)),
      kappa_fn_(std::move(kappa)),
      options_(std::move(options)) {
  FK_CHECK(options_.sigma_transform == "identity" || options_.sigma_transform == "exp", kWhere,
           "sigma_transform identity | exp", "'" + options_.sigma_transform + "'");
  FK_CHECK(static_cast<bool>(rhs_fn_), kWhere, "a right-hand side function", "none");
  prepare();
}

void EllipticOperator::prepare() {
  grid_.shape = domain_.shape();
  grid_.spacing = domain_.spacing();
  grid_.boundary = elliptic::parse_boundary(options_.boundary, domain_.ndim());
  grid_.face_mean = options_.face_mean;
  grid_.validate();
  const int64_t n = grid_.numel();
  rhs_ = rhs_fn_(domain_).to(fk::DType::F64).contiguous();
  FK_CHECK(rhs_.dim() == domain_.ndim() + 1 && rhs_.numel() == rhs_.size(0) * n, kWhere,
           "right-hand sides of shape (P, " + domain_.shape().str() + ")", rhs_.shape().str());
  observe_ = observe_fn_ ? observe_fn_(domain_).to(fk::DType::F64).contiguous() : fk::Tensor();
  const int64_t p = rhs_.size(0);
  FK_CHECK(!observe_.defined() || (observe_.dim() == 2 && observe_.size(1) == n) ||
               (observe_.dim() == 3 && observe_.size(0) == p && observe_.size(2) == n),
           kWhere,
           "an observation matrix of shape (M, " + fk::to_text(n) + ") or (" + fk::to_text(p) +
               ", M, " + fk::to_text(n) + ")",
           observe_.defined() ? observe_.shape().str() : "");
  kappa_ = kappa_fn_ ? kappa_fn_(domain_).to(fk::DType::F64).contiguous() : fk::Tensor();
  warm_ = std::make_shared<elliptic::WarmStart>();
  warm_->enabled = options_.warm_start;
  tables_ = std::make_shared<TableCache<Tables>>();
}

EllipticOperator::Tables EllipticOperator::tables(fk::Device device, fk::DType dtype) const {
  return tables_->get(device, dtype, [this](fk::Device d, fk::DType dt) {
    return Tables{table_on(rhs_, d, dt), table_on(observe_, d, dt), table_on(kappa_, d, dt)};
  });
}

void EllipticOperator::prepare_tables(fk::Device device, fk::DType dtype) const {
  if (device.is_cuda() && (dtype == fk::DType::F32 || dtype == fk::DType::F64))
    tables(device, dtype);
}

fk::Tensor EllipticOperator::solve(const fk::Tensor& x) const {
  FK_CHECK(x.shape() == domain_.shape(), kWhere, "a field of shape " + domain_.shape().str(),
           x.shape().str());
  FK_CHECK(x.dtype() == fk::DType::F32 || x.dtype() == fk::DType::F64, kWhere,
           "a real f32/f64 field", fk::name(x.dtype()));
  const fk::Tensor sigma = options_.sigma_transform == "exp" ? fk::exp(x) : x;
  const Tables t = tables(x.device(), x.dtype());
  return elliptic::solve_elliptic(sigma, t.rhs, t.kappa, grid_, options_.solve, warm_);
}

fk::Tensor EllipticOperator::apply(const fk::Tensor& x) const {
  const fk::Tensor u = solve(x);
  if (!observe_.defined()) return u;
  const int64_t p = rhs_.size(0), n = grid_.numel();
  const fk::Tensor w = tables(x.device(), x.dtype()).observe;
  if (w.dim() == 2) return fk::matmul(u.reshape({p, n}), w.t());
  return fk::bmm(u.reshape({p, 1, n}), w.transpose(1, 2)).reshape({p, w.size(1)});
}

fk::Dims EllipticOperator::output_shape(const fk::Dims& shape) const {
  if (observe_.defined()) return {rhs_.size(0), observe_.size(observe_.dim() - 2)};
  std::vector<int64_t> d{rhs_.size(0)};
  for (int64_t s : shape) d.push_back(s);
  return fk::Dims(d);
}

std::shared_ptr<Operator> EllipticOperator::at_resolution(const fk::Dims& shape) const {
  auto op = std::make_shared<EllipticOperator>(*this);
  op->domain_ = domain_.at(shape);
  op->prepare();
  return op;
}

}  // namespace nefi
