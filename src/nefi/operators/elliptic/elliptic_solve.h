#pragma once
// The elliptic solve u = A(σ, κ)⁻¹ b as one differentiable op (nefi.md §5.3),
// A the finite-volume operator of elliptic_grid.h, solved by the batched
// PCG of elliptic_cg.h (Jacobi or multigrid, SolveOptions::cg.precond).
//
// Shapes: b (*batch, *grid), every leading index its own system; σ (*grid)
// (shared by all systems) or b's shape; κ undefined, (*grid) or b's shape.
// One dtype, f32 or f64, all on the CPU or all on one CUDA device (the
// device solve of elliptic_device.h: the PCG with Jacobi or the multigrid
// V-cycle, with the IFT adjoint or no gradient; device_refusal names a
// setting it refuses). u has b's shape.
//
// Gradient modes:
//   ift       the implicit-function adjoint: the forward keeps no graph; the
//             backward runs one adjoint solve Aλ = ∂L/∂u (A is symmetric;
//             same preconditioner and projection) and gives ∂L/∂b = λ,
//             ∂L/∂κ = −λ⊙u and ∂L/∂σ = −Σ_faces (∂K/∂σ)(Δλ)(Δu) (λᵀAu is
//             bilinear in face differences). Memory: σ, κ and u (O(N)).
//             Once differentiable: the backward records no graph.
//   unrolled  autograd through every CG iteration (apply_elliptic and fk's
//             pointwise ops), one graph per system, cold started, with the
//             Jacobi preconditioner held constant (whatever cg.precond
//             says); O(N · iterations) memory.
//             The reference the IFT gradient is checked against, on a
//             right-hand side that excites every mode: it differentiates
//             the iterates, and a b whose Krylov space closes early (point
//             sources: wells, electrode patterns) stops CG in a subspace
//             lacking directions of A⁻¹(∂A u), leaving it tens of percent
//             off (the instances refuse it).
//   none      no graph at all.
// Null space (pure Neumann / periodic and no κ, or `project`): b's mean is
// removed and u has zero mean (the gauge); the gradients are those of that map.
#include <memory>
#include <mutex>
#include <string>

#include "fk/tensor.h"
#include "nefi/operators/elliptic/elliptic_cg.h"
#include "nefi/operators/elliptic/elliptic_grid.h"

namespace nefi::elliptic {

enum class GradMode { kIft, kUnrolled, kNone };
// cg: the PCG (elliptic_cg.h); banded: the banded Cholesky of
// elliptic_banded.h where the grid has no periodic axis (else the PCG). The
// unrolled gradient always unrolls the PCG.
enum class LinearSolver { kCg, kBanded };
enum class Nullspace { kAuto, kProject, kNone };

struct SolveOptions {
  CgOptions cg;
  Nullspace nullspace = Nullspace::kAuto;
  GradMode grad_mode = GradMode::kIft;
  LinearSolver solver = LinearSolver::kCg;
};

// Warm starts kept between calls (an operator owns one): the last forward
// solution and the last adjoint, reused when the shape and dtype match, and
// the statistics of the last solves. One operator may be called from
// several threads (a Python caller's): a host solve reads and replaces
// them under `mutex`. A device solve, which solves in its buffers in place,
// holds it while it launches; its kernels run later on the thread's stream,
// so threads on different streams must not share one operator with warm
// starts on (warm_start off, or an operator per thread). Read the fields
// here while no solve runs.
struct WarmStart {
  std::mutex mutex;
  bool enabled = true;
  fk::Tensor forward, adjoint;
  CgStats last_forward, last_adjoint;  // host solves only
  // Device solves (elliptic_device.h): the iterates kept on the device and
  // solved in place (so a captured step replays on the same buffers; valid
  // once a solve has written them), and each system's statistics there,
  // (ns, 4) f64 in cuda::CgStat order, read only on request
  // (device_cg_stats): a step never reads the device.
  fk::Tensor device_forward, device_adjoint;
  bool device_forward_valid = false, device_adjoint_valid = false;
  fk::Tensor device_forward_stats, device_adjoint_stats;
};

// How the operands of one call line up: ns systems of numel cells each.
struct SolveLayout {
  int64_t ns = 1, numel = 1;
  bool sigma_batched = false, kappa_batched = false;
  bool project = false;
  fk::DType dtype = fk::DType::F64;
};

// The layout of (σ, b, κ) on g; fk::Error on shapes, dtypes or devices that
// do not fit (the shapes and dtypes above, one device for all).
SolveLayout solve_layout(const fk::Tensor& sigma, const fk::Tensor& rhs, const fk::Tensor& kappa,
                         const EllipticGrid& g, Nullspace ns);

// Why `opt` cannot solve on a CUDA device ("" when it can): linear_solver
// banded and grad_mode unrolled run on host vectors. Both preconditioners
// run there (the device V-cycle: cuda/elliptic_multigrid_cells.h).
std::string device_refusal(const SolveOptions& opt);

// The summary of a device solve's per-system statistics (one host read).
CgStats device_cg_stats(const fk::Tensor& per_system);

// "ift" | "unrolled" | "none", "auto" | "project" | "none" and "cg" |
// "banded"; fk::Error otherwise.
GradMode parse_grad_mode(const std::string& s);
LinearSolver parse_linear_solver(const std::string& s);
Nullspace parse_nullspace(const std::string& s);

fk::Tensor solve_elliptic(const fk::Tensor& sigma, const fk::Tensor& rhs, const fk::Tensor& kappa,
                          const EllipticGrid& grid, const SolveOptions& opt,
                          const std::shared_ptr<WarmStart>& warm = nullptr);

// q = A(σ, κ) u with the shapes above (u in place of b); differentiable in σ,
// κ and u (its own node: ∂u gets A g, ∂σ the face products (Δg)(Δu), ∂κ g⊙u).
fk::Tensor apply_elliptic(const fk::Tensor& sigma, const fk::Tensor& kappa, const fk::Tensor& u,
                          const EllipticGrid& grid);

}  // namespace nefi::elliptic
