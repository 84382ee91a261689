// The elliptic solve on a CUDA device (operators/elliptic/elliptic_device.h):
// the launches of elliptic.cu on the device's current stream and the IFT
// autograd node. Forward: 2 launches (face system, block CG), 3 with precond
// multigrid (the hierarchy after the face system); backward: 1 (block CG on
// the saved system and hierarchy) + 1 (σ gradient, when σ takes one) + the κ
// gradient's fk ops. Memory: the system (ndim + 2 grids per field), with
// multigrid its hierarchy (elliptic_multigrid_cells.h), the CG's scratch (5
// grids per system, with multigrid 3 per coarse level more) and the
// statistics (4 f64 per system).
#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "nefi/cuda/elliptic_kernels.h"
#include "nefi/cuda/elliptic_multigrid_cells.h"
#include "nefi/cuda/elliptic_stencil.h"
#include "nefi/operators/elliptic/elliptic_device.h"
#include "nefi/operators/elliptic/elliptic_solve_node.h"
#include "nefi/real_dispatch.h"

namespace nefi::elliptic {
namespace {

constexpr const char* kWhere = "nefi::elliptic::solve_elliptic (CUDA)";

// The face system of σ and κ on their device (build_face_system's values)
// and, for precond multigrid, each field's V-cycle hierarchy
// (build_multigrid's values).
struct DeviceSystem {
  cuda::StencilGrid grid;
  int64_t nb = 1;
  fk::Tensor faces, diag, inv_diag;
  fk::Tensor hierarchy, cholesky;  // undefined: Jacobi
};

DeviceSystem build_system(const EllipticGrid& eg, const fk::Tensor& sigma, const fk::Tensor& kappa,
                          const SolveLayout& L, const SolveOptions& opt) {
  DeviceSystem sys;
  sys.grid = cuda::stencil_grid(eg);
  sys.nb = L.sigma_batched || L.kappa_batched ? L.ns : 1;
  const fk::TensorOptions o{L.dtype, sigma.device()};
  const int64_t n = L.numel;
  sys.faces = fk::empty({sys.nb * sys.grid.ndim * n}, o);
  sys.diag = fk::empty({sys.nb * n}, o);
  sys.inv_diag = fk::empty({sys.nb * n}, o);
  const int device = sigma.device().index;
  dispatch_real(L.dtype, [&](auto tag) {
    using T = decltype(tag);
    cuda::launch_face_system<T>(sys.grid, sys.nb, sigma.data<T>(), L.sigma_batched,
                                kappa.defined() ? kappa.data<T>() : nullptr, L.kappa_batched,
                                sys.faces.data<T>(), sys.diag.data<T>(), sys.inv_diag.data<T>(),
                                fk::cuda::current_stream(device));
  });
  fk::profile::count_launch();
  if (opt.cg.precond != Preconditioner::kMultigrid) return sys;
  sys.hierarchy =
      fk::empty({std::max<int64_t>(1, sys.nb * cuda::multigrid_hierarchy_size(sys.grid))}, o);
  sys.cholesky = fk::empty({sys.nb * cuda::multigrid_cholesky_size(sys.grid)},
                           {fk::DType::F64, sigma.device()});
  dispatch_real(L.dtype, [&](auto tag) {
    using T = decltype(tag);
    cuda::launch_multigrid_setup<T>(sys.grid, sys.nb, sys.faces.data<T>(), sys.diag.data<T>(),
                                    sys.hierarchy.data<T>(), sys.cholesky.data<double>(),
                                    fk::cuda::current_stream(device));
  });
  fk::profile::count_launch();
  return sys;
}

// The iterate a solve runs in: the kept buffer (reallocated, and then cold,
// when b's shape, dtype or device changed) or, without warm starts, none.
fk::Tensor kept_iterate(fk::Tensor& keep, bool& valid, const fk::Tensor& b) {
  if (!keep.defined() || keep.shape() != b.shape() || keep.dtype() != b.dtype() ||
      keep.device() != b.device()) {
    keep = fk::empty(b.shape(), {b.dtype(), b.device()});
    valid = false;
  }
  return keep;
}

// u := A⁻¹ b for every system of b (contiguous, on the system's device);
// `keep`/`valid` the warm-start buffer when warm starts are on (else null).
// stats receives the per-system statistics, written in place when it already
// fits: WarmStart keeps it, and a captured step that replaced it would free
// the warm-up step's buffer inside the graph (again at every replay) and keep
// one the graph allocated (a graph cannot relaunch with it unfreed).
fk::Tensor device_solve(const DeviceSystem& sys, const fk::Tensor& b, const SolveLayout& L,
                        const SolveOptions& opt, const EllipticGrid& eg, fk::Tensor* keep,
                        bool* valid, fk::Tensor& stats) {
  const fk::Device d = b.device();
  const int device = d.index;
  cuda::CgControl c;
  c.max_iter = resolved_max_iter(eg, opt.cg);
  c.check_every = opt.cg.check_every;
  c.tol = std::max(
      opt.cg.tol, 8 * (L.dtype == fk::DType::F64 ? 2.220446049250313e-16 : 1.1920928955078125e-07));
  c.atol = opt.cg.atol;
  c.project = L.project;
  fk::Tensor out = fk::empty(b.shape(), {L.dtype, d});
  fk::Tensor x = out;
  if (keep) {
    x = kept_iterate(*keep, *valid, b);
    c.warm = *valid;
  }
  fk::Tensor work = fk::empty({5 * L.ns * L.numel}, {L.dtype, d});
  fk::Tensor mg_work;
  if (sys.hierarchy.defined())
    mg_work =
        fk::empty({std::max<int64_t>(1, L.ns * cuda::multigrid_work_size(sys.grid))}, {L.dtype, d});
  const fk::Dims stats_shape{L.ns, cuda::kCgStats};
  if (!stats.defined() || stats.shape() != stats_shape || stats.device() != d)
    stats = fk::empty(stats_shape, {fk::DType::F64, d});
  dispatch_real(L.dtype, [&](auto tag) {
    using T = decltype(tag);
    cuda::MultigridBuffers<T> mg;
    if (sys.hierarchy.defined())
      mg = {sys.hierarchy.data<T>(), sys.cholesky.data<double>(), mg_work.data<T>()};
    cuda::launch_block_pcg<T>(sys.grid, L.ns, sys.nb, sys.faces.data<T>(), sys.diag.data<T>(),
                              sys.inv_diag.data<T>(), b.data<T>(), x.data<T>(), out.data<T>(),
                              work.data<T>(), stats.data<double>(), c, mg,
                              fk::cuda::current_stream(device));
  });
  fk::profile::count_launch();
  if (keep) {
    *valid = true;
    keep->bump_version();
  }
  out.bump_version();
  stats.bump_version();
  return out;
}

struct EllipticDeviceSolveBackward : SavedOperandsNode {
  DeviceSystem system;
  EllipticGrid grid;
  SolveOptions opt;
  SolveLayout layout;
  std::shared_ptr<WarmStart> warm;
  const char* name() const override { return "EllipticDeviceSolveBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::profile::OpScope scope("elliptic_device_adjoint");
    fk::autograd::NoGradGuard ng;
    const auto [s, k, sol] = unpack_operands();
    fk::Tensor gu = grads[0].device() == s.device() ? grads[0] : grads[0].to(s.device());
    if (gu.dtype() != layout.dtype) gu = gu.to(layout.dtype);
    gu = solve_operand(gu);
    const int device = s.device().index;
    fk::cuda::detail::DeviceGuard guard(device);
    std::unique_lock<std::mutex> lock;  // the buffers are solved in place
    if (warm) lock = std::unique_lock(warm->mutex);
    const bool use_warm = warm && warm->enabled;
    fk::Tensor own_stats;
    const fk::Tensor lambda =
        device_solve(system, gu, layout, opt, grid, use_warm ? &warm->device_adjoint : nullptr,
                     use_warm ? &warm->device_adjoint_valid : nullptr,
                     warm ? warm->device_adjoint_stats : own_stats);
    fk::Tensor g_sigma;
    if (next[0].fn) {
      g_sigma = fk::empty(s.shape(), {layout.dtype, s.device()});
      dispatch_real(layout.dtype, [&](auto tag) {
        using T = decltype(tag);
        cuda::launch_sigma_gradient<T>(system.grid, layout.ns, layout.sigma_batched, s.data<T>(),
                                       lambda.data<T>(), sol.data<T>(), -1.0, g_sigma.data<T>(),
                                       fk::cuda::current_stream(device));
      });
      fk::profile::count_launch();
    }
    const fk::Tensor g_kappa =
        k.defined() && next[2].fn ? kappa_gradient(k, lambda, sol, layout, -1.0) : fk::Tensor();
    fk::cuda::after_op(device);
    return {g_sigma, lambda, g_kappa};
  }
};

}  // namespace

fk::Tensor solve_elliptic_device(const fk::Tensor& sigma, const fk::Tensor& rhs,
                                 const fk::Tensor& kappa, const EllipticGrid& grid,
                                 const SolveOptions& opt, const SolveLayout& L,
                                 const std::shared_ptr<WarmStart>& warm) {
  fk::profile::OpScope scope("elliptic_device_solve");
  const std::string refusal = device_refusal(opt);
  FK_CHECK(refusal.empty(), kWhere, "linear_solver cg and grad_mode ift or none", refusal);
  FK_CHECK(sigma.device().is_cuda(), kWhere, "a conductivity on a CUDA device",
           sigma.device().str());
  // pcg_solve's refusal, decided from the layout before any launch (no host
  // read): the null-space case has no coarse solve.
  FK_CHECK(opt.cg.precond != Preconditioner::kMultigrid || !L.project, kWhere,
           "the jacobi preconditioner for a null-space (projected) system", "multigrid");
  const fk::Tensor s = solve_operand(sigma), b = solve_operand(rhs);
  const fk::Tensor k = kappa.defined() ? solve_operand(kappa) : fk::Tensor();
  const int device = sigma.device().index;
  fk::cuda::detail::DeviceGuard guard(device);
  const DeviceSystem sys = build_system(grid, s, k, L, opt);
  std::unique_lock<std::mutex> lock;  // the buffers are solved in place
  if (warm) lock = std::unique_lock(warm->mutex);
  const bool use_warm = warm && warm->enabled;
  fk::Tensor own_stats;
  fk::Tensor u = device_solve(sys, b, L, opt, grid, use_warm ? &warm->device_forward : nullptr,
                              use_warm ? &warm->device_forward_valid : nullptr,
                              warm ? warm->device_forward_stats : own_stats);
  fk::cuda::after_op(device);
  if (opt.grad_mode == GradMode::kIft && fk::autograd::needs_grad(sigma, rhs, kappa)) {
    auto node = std::make_shared<EllipticDeviceSolveBackward>();
    node->save(s, k, u.detach());
    node->system = sys;
    node->grid = grid;
    node->opt = opt;
    node->layout = L;
    node->warm = warm;
    fk::autograd::record(node, {sigma, rhs, kappa}, u);
  }
  return u;
}

}  // namespace nefi::elliptic
