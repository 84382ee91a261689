#pragma once
// The leapfrog step of the damped acoustic wave equation on a WaveGrid and
// its hand-written discrete adjoint. One step, for every padded cell,
//   u^{n+1} = q2 u^n − b u^{n−1} + k Δ_h u^n + a_dt2 (Σ_d D_d ψ_d^n + f^n)
//   ψ_d^{n+1} = alpha_d ψ_d^n + beta_d G_d (u^{n+1} + u^n)/2   (PML only)
// where Δ_h is the 2nd/4th-order Laplacian with u = 0 outside the padded grid
// (symmetric), G_d the forward difference onto the faces (i, i+1) of axis d
// (interior faces only, stored at i) and D_d = −G_dᵀ the matching divergence.
// The coefficients encode the absorbing layer (with κ = c² per cell):
//   none    q2 = 2, b = 1, k = dt² κ, a_dt2 = dt²
//   sponge  u_tt + σ u_t = κΔu: a = 1/(1 + σdt/2), q2 = 2a, b = a(1 − σdt/2),
//           k = a dt² κ, σ = Σ_d σ_max ξ_d² (ξ the depth into the layer / W)
//   pml     Grote & Sim (2010): u_tt + (ζ1 + ζ2) u_t + ζ1ζ2 u = κΔu + ∇·ψ,
//           ψ_t = −diag(ζ_d) ψ + κ diag(ζ_other − ζ_d) ∇u, ζ_d = ζ_max ξ_d²;
//           centred in time for u, trapezoidal for ψ (its decay and
//           its source), which keeps the layer second order in time
//   cerjan  the step times the taper G = exp(−σ dt / 2) with the sponge's σ
//           (the amplitude decay rate σ/2 a sponge of that σ has), and
//           u^{n−1} tapered once more: q2 = 2G, b = G², k = G dt² κ.
// Templated on float and double; the adjoint runs the same loops transposed,
// so a gradient assembled from it is the exact gradient of the discrete map.
#include <array>
#include <vector>

#include "nefi/operators/wave/wave_grid.h"

namespace nefi::wave {

// The absorbing layer's profiles, independent of the velocity.
struct Damping {
  Absorbing kind = Absorbing::kNone;
  std::vector<double> sigma;                         // per stored cell: Σ_d ζ_d (pml) or σ
  std::vector<double> zeta_product;                  // ζ1ζ2 per stored cell (pml 2-D)
  std::array<std::vector<double>, 3> face_zeta;      // ζ_d on face (i, i+1) of axis d
  std::array<std::vector<double>, 3> face_contrast;  // ζ_other − ζ_d on that face
};
Damping make_damping(const WaveGrid& g, Absorbing kind, double c_max, double absorb_R);

template <typename T>
struct StepCoefficients {
  std::vector<T> q2, b, k, a_dt2;
  std::vector<double> k_per_kappa;  // ∂k/∂κ per cell (a dt², or G dt²)
  bool pml = false;
  std::array<std::vector<T>, 3> alpha, beta;
  std::array<std::vector<double>, 3> beta_per_kappa;  // ∂beta/∂κ_face
};

// Coefficients for κ = c² given per stored cell (zero in the halo).
template <typename T>
StepCoefficients<T> step_coefficients(const WaveGrid& g, const Damping& damp,
                                      const std::vector<double>& kappa);

// κ̄ per stored cell from the adjoint sums: kbar = Σ_n λ^{n+1} Δ_h u^n and
// fbar_d = Σ_n μ_d^{n+1} G_d (u^{n+1} + u^n)/2 (the PML's faces, face κ = mean of its cells).
template <typename T>
std::vector<double> kappa_gradient(const WaveGrid& g, const StepCoefficients<T>& co,
                                   const std::vector<T>& kbar,
                                   const std::array<std::vector<T>, 3>& fbar);

// One forward step: un from up, u and psi; psi then advanced in place.
template <typename T>
void leapfrog_step(const WaveGrid& g, const StepCoefficients<T>& co, const T* up, const T* u, T* un,
                   const std::array<T*, 3>& psi);

// The adjoint of one step. lam_c: ū^{n+1} (read; the PML adds Gᵀ(beta μ) to
// it in place), lam_p: the adjoint of the state's previous-field slot;
// writes out_cur = ū^n (may alias lam_p) and out_prev = ū^{n−1}; mu = ψ̄ in
// place (out_prev is scratch until written, so it must not alias the
// others). With u_n non-null, also kbar += λ Δ_h u^n and
// fbar_d += μ G_d (u^{n+1} + u^n)/2.
template <typename T>
void leapfrog_adjoint_step(const WaveGrid& g, const StepCoefficients<T>& co, T* lam_c,
                           const T* lam_p, T* out_cur, T* out_prev, const std::array<T*, 3>& mu,
                           const T* u_n, const T* u_np1, T* kbar, const std::array<T*, 3>& fbar);

// out = u + scale κ Δ_h u per padded cell (the photoacoustic start
// u^{−1} = p0 + ½ dt² κ Δ_h p0), and its transpose out = u + scale Δ_h(κ u).
template <typename T>
void add_scaled_laplacian(const WaveGrid& g, const std::vector<double>& kappa, double scale,
                          const T* u, T* out, bool transpose);

// Discrete energy that the lossless leapfrog conserves exactly:
// E^{n+½} = ½ V Σ [ (u^{n+1} − u^n)² / (dt² κ) − u^{n+1} Δ_h u^n ].
double wave_energy(const WaveGrid& g, const std::vector<double>& kappa, const double* u_n,
                   const double* u_np1);

// κ = c² per stored cell from c on the domain (C order), continued into the
// layer by edge replication; and the transpose c̄ = Eᵀ(2 c_pad κ̄).
std::vector<double> padded_kappa(const WaveGrid& g, const std::vector<double>& c);
std::vector<double> velocity_gradient(const WaveGrid& g, const std::vector<double>& c,
                                      const std::vector<double>& kappa_bar);

// Visits the padded cells row by row: f(p0, count) with p0 the flat index of
// the first cell of a contiguous row of `count` cells along the last axis.
template <typename F>
void for_each_row(const WaveGrid& g, const F& f) {
  for (int64_t i0 = 0; i0 < g.n[0]; ++i0)
    for (int64_t i1 = 0; i1 < g.n[1]; ++i1) f(g.at(i0, i1, 0), g.n[2]);
}

}  // namespace nefi::wave
