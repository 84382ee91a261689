#pragma once
// Gray-Scott reaction-diffusion on a cell-centred 2-D grid (Pearson units):
//   u_t = Du lap(u) - u v^2 + F (1 - u),  v_t = Dv lap(v) + u v^2 - (F + k) v,
// with a feed-rate field F(x) and scalar k, Du, Dv. The Laplacian is in
// conservative flux form (face differences / h^2; the faces on a Neumann
// boundary carry no flux, a periodic axis wraps), so sum(u + v) is conserved
// when F = k = 0. Time: explicit Euler at tau = dt / m per step of dt, with
// the smallest m such that tau (max(Du, Dv) sum_a 2/h_a^2 + F_max + k + 1) <= 1:
// while v <= 1 every update is a combination of the old values with
// non-negative weights, which keeps u, v >= 0 and u <= 1 (the tests check
// that v stays <= 1 over long runs too). Everything here is plain f64 loops on flat C-order arrays;
// no fk autograd (the operator adds its own adjoint node).
//
// step: one Euler substep in place. adjoint_step: the exact transpose of its
// Jacobian (L is symmetric), mapping the cotangents of the new state to those
// of the old one and accumulating dL/dF.
#include <cstdint>
#include <vector>

namespace nefi::gray_scott {

enum class Boundary { kNeumann, kPeriodic };

struct Grid {
  int64_t n0 = 0, n1 = 0;
  double h0 = 1, h1 = 1;
  Boundary boundary = Boundary::kNeumann;
  int64_t size() const { return n0 * n1; }
};

struct Rates {
  double k = 0.06, Du = 2e-5, Dv = 1e-5;
};

// y = lap(x) on the grid (flux form).
void laplacian(const Grid& g, const double* x, double* y);

// The substeps per dt that the bound above asks for (>= 1); F_max is the
// largest feed rate the state may see.
int64_t stable_substeps(const Grid& g, const Rates& r, double dt, double F_max);

// Scratch of two grids, reused across steps (no allocation in the loop).
struct Workspace {
  std::vector<double> lu, lv;
  explicit Workspace(int64_t size) : lu(size), lv(size) {}
};

void step(const Grid& g, const Rates& r, const double* F, double tau, double* u, double* v,
          Workspace& w);

// (ub, vb): cotangents of the state after the step, overwritten with those
// before it; u, v: the state before the step; Fb += dL/dF of the step.
void adjoint_step(const Grid& g, const Rates& r, const double* F, double tau, const double* u,
                  const double* v, double* ub, double* vb, double* Fb, Workspace& w);

// The analytic initial condition (the reference's GrayScottIC idea: the whole
// box away from the trivial state (1, 0), where F is unobservable):
// v0 = 0.2 + 0.1 cos(2 pi m0 x0 / L0) cos(2 pi m1 x1 / L1), u0 = 1 - 2 v0,
// point-sampled at the cell centres (box [0, L0] x [0, L1]).
void initial_condition(const Grid& g, int64_t m0, int64_t m1, std::vector<double>& u,
                       std::vector<double>& v);

}  // namespace nefi::gray_scott
