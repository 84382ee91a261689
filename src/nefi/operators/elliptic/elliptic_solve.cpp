#include "nefi/operators/elliptic/elliptic_solve.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/join/cat.h"
#include "fk/ops/reduce.h"
#include "fk/profile.h"
#include "nefi/operators/elliptic/elliptic_banded.h"
#include "nefi/operators/elliptic/elliptic_device.h"
#include "nefi/operators/elliptic/elliptic_solve_node.h"
#include "nefi/real_dispatch.h"

namespace nefi::elliptic {
namespace {

constexpr const char* kWhere = "nefi::elliptic::solve_elliptic";

using Layout = SolveLayout;

bool ends_with_grid(const fk::Tensor& t, const fk::Dims& grid) {
  if (t.dim() < grid.size()) return false;
  for (int a = 0; a < grid.size(); ++a)
    if (t.size(t.dim() - grid.size() + a) != grid[a]) return false;
  return true;
}

// σ, κ: the grid alone or b's full shape; `what` names the operand.
bool batched_like(const fk::Tensor& t, const fk::Tensor& b, const fk::Dims& grid,
                  const char* what) {
  if (t.shape() == grid) return false;
  FK_CHECK(t.shape() == b.shape(), kWhere,
           std::string(what) + " of shape " + grid.str() + " or " + b.shape().str(),
           t.shape().str());
  return true;
}

}  // namespace

SolveLayout solve_layout(const fk::Tensor& sigma, const fk::Tensor& rhs, const fk::Tensor& kappa,
                         const EllipticGrid& g, Nullspace ns) {
  g.validate();
  FK_CHECK(rhs.defined() && sigma.defined(), kWhere, "a conductivity and a right-hand side",
           "an undefined tensor");
  FK_CHECK(ends_with_grid(rhs, g.shape), kWhere,
           "a right-hand side of shape (..., " + g.shape.str() + ")", rhs.shape().str());
  FK_CHECK(sigma.dtype() == fk::DType::F32 || sigma.dtype() == fk::DType::F64, kWhere,
           "a real f32/f64 conductivity", fk::name(sigma.dtype()));
  FK_CHECK(rhs.dtype() == sigma.dtype() && (!kappa.defined() || kappa.dtype() == sigma.dtype()),
           kWhere, "b and κ of the conductivity's dtype " + std::string(fk::name(sigma.dtype())),
           std::string(fk::name(rhs.dtype())) +
               (kappa.defined() ? std::string(" and ") + fk::name(kappa.dtype()) : ""));
  FK_CHECK(rhs.device() == sigma.device() && (!kappa.defined() || kappa.device() == sigma.device()),
           kWhere, "b and κ on the conductivity's device " + sigma.device().str(),
           rhs.device().str() + (kappa.defined() ? " and " + kappa.device().str() : ""));
  Layout L;
  L.numel = g.numel();
  L.ns = rhs.numel() / L.numel;
  L.dtype = sigma.dtype();
  L.sigma_batched = batched_like(sigma, rhs, g.shape, "a conductivity");
  if (kappa.defined()) L.kappa_batched = batched_like(kappa, rhs, g.shape, "a κ");
  L.project = ns == Nullspace::kProject ||
              (ns == Nullspace::kAuto && !g.has_dirichlet() && !kappa.defined());
  return L;
}

fk::Tensor solve_operand(const fk::Tensor& t) {
  fk::autograd::NoGradGuard ng;
  fk::Tensor d = t.detach();
  return d.is_contiguous() ? d : d.contiguous();
}

fk::Tensor kappa_gradient(const fk::Tensor& kappa, const fk::Tensor& a, const fk::Tensor& b,
                          const Layout& L, double scale) {
  fk::autograd::NoGradGuard ng;
  fk::Tensor p = fk::mul(a, b) * scale;
  if (L.kappa_batched) return p;
  return fk::sum(p.reshape({L.ns, L.numel}), {0}).reshape(kappa.shape());
}

namespace {

template <typename T>
FaceSystem<T> system_of(const EllipticGrid& g, const fk::Tensor& sigma, const fk::Tensor& kappa,
                        const Layout& L) {
  return build_face_system<T>(g, L.sigma_batched || L.kappa_batched ? L.ns : 1, sigma.data<T>(),
                              L.sigma_batched, kappa.defined() ? kappa.data<T>() : nullptr,
                              L.kappa_batched);
}

// x := A⁻¹ b for every system; x0 (same shape) seeds the PCG when defined.
CgStats host_solve(const EllipticGrid& g, const fk::Tensor& sigma, const fk::Tensor& kappa,
                   const fk::Tensor& b, const Layout& L, const SolveOptions& opt,
                   const fk::Tensor& x0, fk::Tensor& x) {
  CgOptions cg = opt.cg;
  const bool banded = opt.solver == LinearSolver::kBanded && banded_applicable(g);
  cg.project = L.project;
  x = fk::empty(b.shape(), {L.dtype});
  const bool warm = x0.defined() && x0.shape() == b.shape() && x0.dtype() == L.dtype;
  if (warm) x.copy_(x0);
  CgStats st;
  dispatch_real(L.dtype, [&](auto tag) {
    using T = decltype(tag);
    const FaceSystem<T> sys = system_of<T>(g, sigma, kappa, L);
    st = banded ? banded_solve<T>(g, sys, b.data<T>(), x.data<T>(), L.ns, L.project)
                : pcg_solve<T>(g, sys, b.data<T>(), x.data<T>(), L.ns, warm, cg);
  });
  x.bump_version();
  return st;
}

// scale · ∂(aᵀ A b)/∂σ (faces and Dirichlet sides) in σ's shape.
fk::Tensor sigma_gradient(const EllipticGrid& g, const fk::Tensor& sigma, const fk::Tensor& a,
                          const fk::Tensor& b, const Layout& L, double scale) {
  const int64_t n = L.numel, nb = L.sigma_batched ? L.ns : 1;
  std::vector<double> gs(nb * n, 0.0);
  dispatch_real(L.dtype, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t s = 0; s < L.ns; ++s) {
      const int64_t f = L.sigma_batched ? s : 0;
      accumulate_sigma_gradient<T>(g, sigma.data<T>() + f * n, a.data<T>() + s * n,
                                   b.data<T>() + s * n, scale, gs.data() + f * n);
    }
  });
  return fk::from_vector(gs, sigma.shape()).to(L.dtype);
}

// The warm start's kept iterate in `slot` (undefined: none kept, or warm
// starts off), read under its lock.
fk::Tensor kept(const std::shared_ptr<WarmStart>& warm, fk::Tensor WarmStart::*slot) {
  if (!warm) return {};
  const std::lock_guard lock(warm->mutex);
  return warm->enabled ? (*warm).*slot : fk::Tensor();
}

// Records a host solve's statistics and, with warm starts on, its iterate.
void keep(const std::shared_ptr<WarmStart>& warm, fk::Tensor WarmStart::*slot,
          CgStats WarmStart::*stats, const CgStats& st, const fk::Tensor& x) {
  if (!warm) return;
  const std::lock_guard lock(warm->mutex);
  (*warm).*stats = st;
  if (warm->enabled) (*warm).*slot = x.clone();
}

struct EllipticSolveBackward : SavedOperandsNode {
  EllipticGrid grid;
  SolveOptions opt;
  Layout layout;
  std::shared_ptr<WarmStart> warm;
  const char* name() const override { return "EllipticSolveBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::profile::OpScope scope("elliptic_adjoint");
    fk::autograd::NoGradGuard ng;
    const auto [s, k, sol] = unpack_operands();
    const fk::Tensor gu = solve_operand(grads[0].to(layout.dtype));
    fk::Tensor lambda;
    const CgStats st =
        host_solve(grid, s, k, gu, layout, opt, kept(warm, &WarmStart::adjoint), lambda);
    keep(warm, &WarmStart::adjoint, &WarmStart::last_adjoint, st, lambda);
    // Only the inputs that take a gradient (next[i].fn set) get one: dot3d's
    // constant D would otherwise cost a pass over every face per backward.
    fk::Tensor g_sigma =
        next[0].fn ? sigma_gradient(grid, s, lambda, sol, layout, -1.0) : fk::Tensor();
    fk::Tensor g_kappa =
        k.defined() && next[2].fn ? kappa_gradient(k, lambda, sol, layout, -1.0) : fk::Tensor();
    return {g_sigma, lambda, g_kappa};
  }
};

struct EllipticApplyBackward : SavedOperandsNode {
  EllipticGrid grid;
  Layout layout;
  const char* name() const override { return "EllipticApplyBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override;
};

// q = A u on detached contiguous operands.
fk::Tensor apply_host(const EllipticGrid& g, const fk::Tensor& sigma, const fk::Tensor& kappa,
                      const fk::Tensor& u, const Layout& L) {
  fk::profile::OpScope scope("elliptic_apply");
  fk::Tensor q = fk::empty(u.shape(), {L.dtype});
  dispatch_real(L.dtype, [&](auto tag) {
    using T = decltype(tag);
    const FaceSystem<T> sys = system_of<T>(g, sigma, kappa, L);
    for (int64_t s = 0; s < L.ns; ++s)
      apply_face_system<T>(g, sys, sys.nb == 1 ? 0 : s, u.data<T>() + s * L.numel,
                           q.data<T>() + s * L.numel);
  });
  return q;
}

std::vector<fk::Tensor> EllipticApplyBackward::apply(std::vector<fk::Tensor>&& grads) {
  fk::autograd::NoGradGuard ng;
  const auto [s, k, x] = unpack_operands();
  const fk::Tensor g = solve_operand(grads[0].to(layout.dtype));
  fk::Tensor g_u = apply_host(grid, s, k, g, layout);  // A is symmetric
  fk::Tensor g_sigma = sigma_gradient(grid, s, g, x, layout, 1.0);
  fk::Tensor g_kappa = k.defined() ? kappa_gradient(k, g, x, layout, 1.0) : fk::Tensor();
  return {g_sigma, g_kappa, g_u};
}

fk::Tensor zero_mean(const fk::Tensor& v) {
  return v - fk::mean(v);
}

// Preconditioned CG on one system in fk ops (the graph records every step).
fk::Tensor unrolled_one(const fk::Tensor& sigma, const fk::Tensor& kappa, const fk::Tensor& b_in,
                        const fk::Tensor& inv_diag, const EllipticGrid& g, const Layout& L,
                        const CgOptions& cg) {
  const int64_t max_iter = resolved_max_iter(g, cg);
  const double tol =
      std::max(cg.tol, 8 * (L.dtype == fk::DType::F64 ? 2.220446049250313e-16 : 1.1920929e-07));
  const fk::Tensor b = L.project ? zero_mean(b_in) : b_in;
  const double b_norm = std::sqrt(fk::sum(b.detach() * b.detach()).item());
  fk::Tensor x = fk::zeros_like(b);
  if (b_norm == 0) return x + 0.0 * b;
  fk::Tensor r = b;
  fk::Tensor z = L.project ? zero_mean(r * inv_diag) : r * inv_diag;
  fk::Tensor p = z;
  fk::Tensor rz = fk::sum(r * z);
  const double stop = std::max(tol * b_norm, cg.atol);
  for (int64_t it = 1; it <= max_iter; ++it) {
    const fk::Tensor q = apply_elliptic(sigma, kappa, p, g);
    const fk::Tensor alpha = rz / fk::sum(p * q);
    x = x + alpha * p;
    r = r - alpha * q;
    if (L.project) r = zero_mean(r);
    if ((it % cg.check_every == 0 || it == max_iter) &&
        std::sqrt(fk::sum(r.detach() * r.detach()).item()) <= stop)
      break;
    z = L.project ? zero_mean(r * inv_diag) : r * inv_diag;
    const fk::Tensor rz_next = fk::sum(r * z);
    p = z + (rz_next / rz) * p;
    rz = rz_next;
  }
  return L.project ? zero_mean(x) : x;
}

fk::Tensor solve_unrolled(const fk::Tensor& sigma, const fk::Tensor& rhs, const fk::Tensor& kappa,
                          const EllipticGrid& g, const Layout& L, const CgOptions& cg) {
  const fk::Tensor s_host = solve_operand(sigma),
                   k_host = kappa.defined() ? solve_operand(kappa) : fk::Tensor();
  std::vector<double> inv;
  dispatch_real(L.dtype, [&](auto tag) {
    using T = decltype(tag);
    const FaceSystem<T> sys = system_of<T>(g, s_host, k_host, L);
    inv.assign(sys.inv_diag.begin(), sys.inv_diag.end());
  });
  const fk::Tensor inv_diag = fk::from_vector(inv, {static_cast<int64_t>(inv.size())}).to(L.dtype);
  const fk::Tensor b = rhs.reshape({L.ns, L.numel});
  const fk::Tensor sig =
      L.sigma_batched ? sigma.reshape({L.ns, L.numel}) : sigma.reshape({L.numel});
  const fk::Tensor kap = !kappa.defined()  ? fk::Tensor()
                         : L.kappa_batched ? kappa.reshape({L.ns, L.numel})
                                           : kappa.reshape({L.numel});
  std::vector<fk::Tensor> out;
  Layout one = L;
  one.ns = 1;
  one.sigma_batched = one.kappa_batched = false;
  for (int64_t s = 0; s < L.ns; ++s) {
    const int64_t f = L.sigma_batched || L.kappa_batched ? s : 0;
    const fk::Tensor sg = (L.sigma_batched ? sig.select(0, s) : sig).reshape(g.shape);
    const fk::Tensor kg =
        !kap.defined() ? fk::Tensor() : (L.kappa_batched ? kap.select(0, s) : kap).reshape(g.shape);
    const fk::Tensor di = inv_diag.narrow(0, f * L.numel, L.numel).reshape(g.shape);
    out.push_back(unrolled_one(sg, kg, b.select(0, s).reshape(g.shape), di, g, one, cg));
  }
  return fk::stack(out, 0).reshape(rhs.shape());
}

}  // namespace

GradMode parse_grad_mode(const std::string& s) {
  if (s == "ift") return GradMode::kIft;
  if (s == "unrolled") return GradMode::kUnrolled;
  if (s == "none") return GradMode::kNone;
  throw fk::Error("elliptic grad_mode", "ift | unrolled | none", "'" + s + "'");
}

Nullspace parse_nullspace(const std::string& s) {
  if (s == "auto") return Nullspace::kAuto;
  if (s == "project") return Nullspace::kProject;
  if (s == "none") return Nullspace::kNone;
  throw fk::Error("elliptic nullspace", "auto | project | none", "'" + s + "'");
}

LinearSolver parse_linear_solver(const std::string& s) {
  if (s == "cg") return LinearSolver::kCg;
  if (s == "banded") return LinearSolver::kBanded;
  throw fk::Error("elliptic linear solver", "cg | banded", "'" + s + "'");
}

std::string device_refusal(const SolveOptions& opt) {
  if (opt.solver == LinearSolver::kBanded)
    return "linear_solver banded runs on host vectors (the device needs linear_solver cg)";
  if (opt.grad_mode == GradMode::kUnrolled)
    return "grad_mode unrolled differentiates host CG steps (the device needs grad_mode ift or "
           "none)";
  return "";
}

CgStats device_cg_stats(const fk::Tensor& per_system) {
  CgStats st;
  if (!per_system.defined()) return st;
  const std::vector<double> v = per_system.to(fk::kCPU).contiguous().to_vector<double>();
  for (size_t s = 0; s + 4 <= v.size(); s += 4) {
    const auto it = static_cast<int64_t>(v[s]);
    st.max_iterations = std::max(st.max_iterations, it);
    st.total_iterations += it;
    st.warm_used += v[s + 1] != 0;
    st.unconverged += v[s + 2] == 0;
    st.worst_residual = std::max(st.worst_residual, v[s + 3]);
  }
  return st;
}

fk::Tensor solve_elliptic(const fk::Tensor& sigma, const fk::Tensor& rhs, const fk::Tensor& kappa,
                          const EllipticGrid& grid, const SolveOptions& opt,
                          const std::shared_ptr<WarmStart>& warm) {
  const Layout L = solve_layout(sigma, rhs, kappa, grid, opt.nullspace);
  if (sigma.device().is_cuda()) return solve_elliptic_device(sigma, rhs, kappa, grid, opt, L, warm);
  const bool grad = fk::autograd::needs_grad(sigma, rhs, kappa);
  if (grad && opt.grad_mode == GradMode::kUnrolled)
    return solve_unrolled(sigma, rhs, kappa, grid, L, opt.cg);
  const fk::Tensor s = solve_operand(sigma), b = solve_operand(rhs);
  const fk::Tensor k = kappa.defined() ? solve_operand(kappa) : fk::Tensor();
  fk::Tensor u;
  const CgStats st = host_solve(grid, s, k, b, L, opt, kept(warm, &WarmStart::forward), u);
  keep(warm, &WarmStart::forward, &WarmStart::last_forward, st, u);
  if (grad && opt.grad_mode == GradMode::kIft) {
    auto node = std::make_shared<EllipticSolveBackward>();
    node->save(s, k, u.detach());
    node->grid = grid;
    node->opt = opt;
    node->layout = L;
    node->warm = warm;
    fk::autograd::record(node, {sigma, rhs, kappa}, u);
  }
  return u;
}

fk::Tensor apply_elliptic(const fk::Tensor& sigma, const fk::Tensor& kappa, const fk::Tensor& u,
                          const EllipticGrid& grid) {
  const Layout L = solve_layout(sigma, u, kappa, grid, Nullspace::kNone);
  FK_CHECK(sigma.device().is_cpu(), "nefi::elliptic::apply_elliptic", "CPU tensors",
           sigma.device().str());
  const fk::Tensor s = solve_operand(sigma), x = solve_operand(u);
  const fk::Tensor k = kappa.defined() ? solve_operand(kappa) : fk::Tensor();
  fk::Tensor q = apply_host(grid, s, k, x, L);
  if (fk::autograd::needs_grad(sigma, kappa, u)) {
    auto node = std::make_shared<EllipticApplyBackward>();
    node->save(s, k, x);
    node->grid = grid;
    node->layout = L;
    fk::autograd::record(node, {sigma, kappa, u}, q);
  }
  return q;
}

}  // namespace nefi::elliptic
