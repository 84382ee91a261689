#pragma once
// Gray-Scott reaction-diffusion on a cell-centred 2-D grid (Pearson units):
//   u_t = Du lap(u) - u v^2 + F (1 - u),  v_t = Dv lap(v) + u v^2 - (F + k) v,
// with a feed-rate field F(x), and k, Du either scalars or fields too (the
// operator's unknown may be any one of F, k, Du); Dv is a scalar. A Du field
// diffuses u in flux form with harmonic face means, div(Du grad u), so
// a jump in Du behaves like layered media. The Laplacian is in
// conservative flux form (face differences / h^2; the faces on a Neumann
// boundary carry no flux, a periodic axis wraps), so sum(u + v) is conserved
// when F = k = 0. Time: explicit Euler at tau = dt / m per step of dt, with
// the smallest m such that tau (max(Du, Dv) sum_a 2/h_a^2 + F_max + k + 1) <= 1:
// while v <= 1 every update is a combination of the old values with
// non-negative weights, which keeps u, v >= 0 and u <= 1 (the tests check
// that v stays <= 1 over long runs too). The reference's bound,
// tau (D_max sum_a 4/h_a^2 + F_max + k + 1) <= 2, admits twice this tau at
// the defaults (one substep per dt, not two): its weights can go negative,
// and its larger O(tau) gap to the finer-stepped data cost the smoke fit
// 1.5 dB (PSNR 29.3 against 30.8 at seed 0, the reference's own 30.2), so
// "gray-scott-euler" here takes the smaller step. Everything here is plain
// f64 loops on flat C-order arrays; no fk autograd (the operator adds its
// own adjoint node).
//
// step: one Euler substep in place. adjoint_step: the exact transpose of its
// Jacobian (the diffusion operators are symmetric), mapping the cotangents of
// the new state to those of the old one and accumulating dL/dF, dL/dk and
// dL/dDu where asked.
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

// y = div(D grad x) with the harmonic mean 2 D_i D_j / (D_i + D_j) of the two
// cells on each face (D > 0 per cell); with a constant D it is D lap(x).
void diffusion(const Grid& g, const double* D, const double* x, double* y);

// The per-cell coefficients of a solve: F always a field; k and Du a field
// when given, else the scalars of Rates.
struct Fields {
  const double* F = nullptr;
  const double* k = nullptr;
  const double* Du = nullptr;
};

// Where adjoint_step accumulates the gradients (null: not wanted).
struct FieldGrads {
  double* F = nullptr;
  double* k = nullptr;
  double* Du = nullptr;
};

// The substeps per dt that the bound above asks for (>= 1); F_max is the
// largest feed rate the state may see, r.k and r.Du the largest k and Du.
int64_t stable_substeps(const Grid& g, const Rates& r, double dt, double F_max);

// Scratch of two grids, reused across steps (no allocation in the loop).
struct Workspace {
  std::vector<double> lu, lv;
  explicit Workspace(int64_t size) : lu(size), lv(size) {}
};

void step(const Grid& g, const Rates& r, const Fields& f, double tau, double* u, double* v,
          Workspace& w);
// The feed-rate-field case (k, Du the scalars of r).
inline void step(const Grid& g, const Rates& r, const double* F, double tau, double* u, double* v,
                 Workspace& w) {
  step(g, r, Fields{F, nullptr, nullptr}, tau, u, v, w);
}

// (ub, vb): cotangents of the state after the step, overwritten with those
// before it; u, v: the state before the step; grads.X += dL/dX of the step
// for each field X asked for.
void adjoint_step(const Grid& g, const Rates& r, const Fields& f, double tau, const double* u,
                  const double* v, double* ub, double* vb, const FieldGrads& grads, Workspace& w);

// The analytic initial condition (the reference's GrayScottIC idea: the whole
// box away from the trivial state (1, 0), where F is unobservable):
// v0 = 0.2 + 0.1 cos(2 pi m0 x0 / L0) cos(2 pi m1 x1 / L1), u0 = 1 - 2 v0,
// point-sampled at the cell centres (box [0, L0] x [0, L1]).
void initial_condition(const Grid& g, int64_t m0, int64_t m1, std::vector<double>& u,
                       std::vector<double>& v);

}  // namespace nefi::gray_scott
