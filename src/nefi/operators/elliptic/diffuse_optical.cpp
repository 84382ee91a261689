#include "nefi/operators/elliptic/diffuse_optical.h"

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/linalg.h"

namespace nefi {
namespace {

constexpr const char* kWhere = "nefi::DiffuseOpticalOperator";

}  // namespace

DiffuseOpticalOperator::DiffuseOpticalOperator(Domain domain, GridFunction rhs, GridFunction sink,
                                               GridFunction observe, DiffuseOpticalOptions options)
    : domain_(std::move(domain)),
      rhs_fn_(std::move(rhs)),
      sink_fn_(std::move(sink)),
      observe_fn_(std::move(observe)),
      options_(std::move(options)) {
  FK_CHECK(options_.diffusion > 0, kWhere, "a diffusion coefficient D > 0",
           fk::to_text(options_.diffusion));
  FK_CHECK(rhs_fn_ && sink_fn_ && observe_fn_, kWhere,
           "right-hand side, sink and observation functions", "a missing one");
  prepare();
}

void DiffuseOpticalOperator::prepare() {
  grid_.shape = domain_.shape();
  grid_.spacing = domain_.spacing();
  grid_.boundary = elliptic::parse_boundary(options_.elliptic.boundary, domain_.ndim());
  grid_.face_mean = options_.elliptic.face_mean;
  grid_.validate();
  const int64_t n = grid_.numel();
  rhs_ = rhs_fn_(domain_).to(fk::DType::F64).contiguous();
  FK_CHECK(rhs_.dim() == domain_.ndim() + 1 && rhs_.numel() == rhs_.size(0) * n, kWhere,
           "right-hand sides of shape (P, " + domain_.shape().str() + ")", rhs_.shape().str());
  sink_ = sink_fn_(domain_).to(fk::DType::F64).contiguous();
  FK_CHECK(sink_.shape() == domain_.shape(), kWhere, "a sink of shape " + domain_.shape().str(),
           sink_.shape().str());
  observe_ = observe_fn_(domain_).to(fk::DType::F64).contiguous();
  FK_CHECK(observe_.dim() == 2 && observe_.size(1) == n, kWhere,
           "an observation matrix of shape (M, " + fk::to_text(n) + ")", observe_.shape().str());
  FK_CHECK(
      options_.detector_shape.size() == 0 || options_.detector_shape.numel() == observe_.size(0),
      kWhere, "a detector shape of " + fk::to_text(observe_.size(0)) + " detectors",
      options_.detector_shape.str());
  tables_ = std::make_shared<TableCache<Tables>>();
  warm_ = std::make_shared<elliptic::WarmStart>();
  warm_->enabled = options_.elliptic.warm_start;
  inv_reference_ = fk::Tensor();
  if (options_.reference_absorption > 0) {
    // The homogeneous medium's response, solved tightly in f64 without a graph.
    elliptic::SolveOptions tight = options_.elliptic.solve;
    tight.cg.tol = 1e-10;
    tight.grad_mode = elliptic::GradMode::kNone;
    const fk::Tensor ref = observe(
        solve_fluence(fk::full(domain_.shape(), options_.reference_absorption, {fk::DType::F64}),
                      tight, nullptr));
    for (double r : ref.to_vector<double>())
      FK_CHECK(r > 0, kWhere,
               "a positive homogeneous response at every detector (0: no light reaches one; the "
               "medium absorbs or scatters too strongly for the box)",
               fk::to_text(r));
    inv_reference_ = fk::div(fk::ones(ref.shape(), {fk::DType::F64}), ref);
    tables_ = std::make_shared<TableCache<Tables>>();  // with the reference
  }
}

DiffuseOpticalOperator::Tables DiffuseOpticalOperator::tables(fk::Device device,
                                                              fk::DType dtype) const {
  return tables_->get(device, dtype, [this](fk::Device d, fk::DType dt) {
    return Tables{table_on(rhs_, d, dt), table_on(sink_, d, dt), table_on(observe_, d, dt),
                  table_on(inv_reference_, d, dt),
                  fk::full(domain_.shape(), options_.diffusion, {dt, d})};
  });
}

void DiffuseOpticalOperator::prepare_tables(fk::Device device, fk::DType dtype) const {
  if (device.is_cuda() && (dtype == fk::DType::F32 || dtype == fk::DType::F64))
    tables(device, dtype);
}

fk::Tensor DiffuseOpticalOperator::fluence(const fk::Tensor& x) const {
  return solve_fluence(x, options_.elliptic.solve, warm_);
}

fk::Tensor DiffuseOpticalOperator::solve_fluence(
    const fk::Tensor& x, const elliptic::SolveOptions& solve,
    const std::shared_ptr<elliptic::WarmStart>& warm) const {
  FK_CHECK(x.shape() == domain_.shape(), kWhere, "a field of shape " + domain_.shape().str(),
           x.shape().str());
  FK_CHECK(x.dtype() == fk::DType::F32 || x.dtype() == fk::DType::F64, kWhere,
           "a real f32/f64 field", fk::name(x.dtype()));
  const Tables t = tables(x.device(), x.dtype());
  return elliptic::solve_elliptic(t.diffusion, t.rhs, x + t.sink, grid_, solve, warm);
}

fk::Tensor DiffuseOpticalOperator::observe(const fk::Tensor& phi) const {
  const int64_t p = rhs_.size(0), n = grid_.numel();
  return fk::matmul(phi.reshape({p, n}), tables(phi.device(), phi.dtype()).observe.t());
}

fk::Tensor DiffuseOpticalOperator::apply(const fk::Tensor& x) const {
  const fk::Tensor y = observe(fluence(x));
  const fk::Tensor z =
      inv_reference_.defined() ? y * tables(x.device(), x.dtype()).inv_reference : y;
  return z.reshape(output_shape(x.shape()));
}

fk::Dims DiffuseOpticalOperator::output_shape(const fk::Dims& shape) const {
  (void)shape;
  std::vector<int64_t> d{rhs_.size(0)};
  if (options_.detector_shape.size() == 0) d.push_back(observe_.size(0));
  for (int64_t s : options_.detector_shape) d.push_back(s);
  return fk::Dims(d);
}

std::shared_ptr<Operator> DiffuseOpticalOperator::at_resolution(const fk::Dims& shape) const {
  auto op = std::make_shared<DiffuseOpticalOperator>(*this);
  op->domain_ = domain_.at(shape);
  op->prepare();
  return op;
}

}  // namespace nefi
