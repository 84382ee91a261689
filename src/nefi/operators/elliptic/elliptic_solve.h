#pragma once
// The elliptic solve u = A(σ, κ)⁻¹ b as one differentiable op (nefi.md §5.3),
// A the finite-volume operator of elliptic_grid.h, solved by the batched
// PCG of elliptic_cg.h (Jacobi or multigrid, SolveOptions::cg.precond).
//
// Shapes: b (*batch, *grid), every leading index its own system; σ (*grid)
// (shared by all systems) or b's shape; κ undefined, (*grid) or b's shape.
// One dtype, f32 or f64, CPU. u has b's shape.
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
//             The reference the IFT gradient is checked against.
//   none      no graph at all.
// Null space (pure Neumann / periodic and no κ, or `project`): b's mean is
// removed and u has zero mean (the gauge); the gradients are those of that map.
#include <memory>

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
// the statistics of the last solves.
struct WarmStart {
  bool enabled = true;
  fk::Tensor forward, adjoint;
  CgStats last_forward, last_adjoint;
};

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
