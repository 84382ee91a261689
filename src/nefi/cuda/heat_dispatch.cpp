// The device paths of heat_device.h: a StepSolver over DeviceFlatSweeper
// (sweeper_step_solver.h; the system, the Chebyshev weights and the iterate
// all built and kept on the device) and the adjoint's face sums and gradient
// as one kernel each.
#include <cstdint>
#include <string>
#include <utility>

#include "fk/autograd.h"
#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "nefi/cuda/device_sweeper.h"
#include "nefi/cuda/kernels.h"
#include "nefi/operators/heat/heat_device.h"
#include "nefi/operators/heat/sweeper_step_solver.h"
#include "nefi/real_dispatch.h"

namespace nefi::heat {
namespace {

void check_on(const fk::Tensor& t, const fk::Device& d, int64_t numel, fk::DType dt,
              const char* where, const char* what) {
  FK_CHECK(t.device() == d && t.dtype() == dt && t.numel() == numel && t.is_contiguous(), where,
           std::string(what) + ": contiguous, " + fk::to_text(numel) + " " + fk::name(dt) +
               " elements on " + d.str(),
           t.shape().str() + " " + fk::name(t.dtype()) + " on " + t.device().str());
}

// The kernels index cells in 32 bits (kernels.h); DeviceFlatSweeper checks
// the same for the rollouts, these entry points are public on their own.
void check_grid_size(const StepGeometry& g, const char* where) {
  FK_CHECK((cuda::Grid{g.nx, g.ny, g.nz}.indexable()), where,
           "a grid with every axis >= 1 and fewer than 2^31 cells", g.shape().str());
}

}  // namespace

std::unique_ptr<StepSolver> make_device_step_solver(const fk::Tensor& alpha, const StepGeometry& g,
                                                    bool flat, const SolverOptions& o) {
  FK_CHECK(flat && (o.solver == "jacobi" || o.solver == "chebyshev"), "nefi::heat (CUDA alpha)",
           "the flat stencil with solver jacobi or chebyshev on a CUDA device",
           std::string(flat ? "flat" : "roll") + " stencil, solver " + o.solver);
  DeviceFlatSweeper sweeper(alpha, g, o.solver == "chebyshev" ? o.iters : 0);
  fk::Tensor omega = sweeper.chebyshev_weights();
  return std::make_unique<SweeperStepSolver<DeviceFlatSweeper>>(std::move(sweeper), o,
                                                                std::move(omega));
}

void device_face_products(fk::Tensor& sums, const fk::Tensor& mu, const fk::Tensor& t,
                          const StepGeometry& g) {
  fk::profile::OpScope scope("heat_device_face_products");
  const char* where = "nefi::heat::accumulate_face_products";
  const fk::Device d = mu.device();
  check_grid_size(g, where);
  check_on(mu, d, g.numel(), mu.dtype(), where, "mu");
  check_on(t, d, g.numel(), mu.dtype(), where, "T");
  check_on(sums, d, 3 * g.numel(), mu.dtype(), where, "sums");
  fk::cuda::detail::DeviceGuard guard(d.index);
  dispatch_real(mu.dtype(), [&](auto tag) {
    using T = decltype(tag);
    cuda::launch_face_products<T>(sums.data<T>(), mu.data<T>(), t.data<T>(), {g.nx, g.ny, g.nz},
                                  g.lateral_neumann, fk::cuda::current_stream(d.index));
  });
  sums.bump_version();
  fk::profile::count_launch();
  fk::cuda::after_op(d.index);
}

fk::Tensor device_alpha_gradient(const fk::Tensor& sums, const fk::Tensor& alpha_in,
                                 const StepGeometry& g) {
  fk::profile::OpScope scope("heat_device_alpha_gradient");
  const char* where = "nefi::heat::alpha_gradient";
  const fk::Device d = alpha_in.device();
  check_grid_size(g, where);
  fk::autograd::NoGradGuard ng;
  const fk::Tensor alpha = alpha_in.is_contiguous() ? alpha_in.detach() : alpha_in.contiguous();
  FK_CHECK(alpha.dtype() == fk::DType::F32 || alpha.dtype() == fk::DType::F64, where,
           "f32 or f64 alpha", fk::name(alpha.dtype()));
  check_on(alpha, d, g.numel(), alpha.dtype(), where, "alpha");
  check_on(sums, d, 3 * g.numel(), alpha.dtype(), where, "sums");
  fk::Tensor grad = fk::empty(g.shape(), {alpha.dtype(), d});
  const cuda::HeatCoefficients k = heat_coefficients(g);
  fk::cuda::detail::DeviceGuard guard(d.index);
  dispatch_real(alpha.dtype(), [&](auto tag) {
    using T = decltype(tag);
    cuda::launch_alpha_gradient<T>(sums.data<T>(), alpha.data<T>(), grad.data<T>(),
                                   {g.nx, g.ny, g.nz}, k, fk::cuda::current_stream(d.index));
  });
  fk::profile::count_launch();
  fk::cuda::after_op(d.index);
  return grad;
}

}  // namespace nefi::heat
