#pragma once
// Launchers of the wave operator's CUDA kernels (wave.cu; each thread's
// arithmetic in wave_cells.h, host and device alike): raw device pointers,
// plain structs and a stream (a cudaStream_t as void*), no CUDA types, so the
// driver (wave_device.cpp) is plain C++. T is float or double. Every launch is
// asynchronous on `stream`; a failed launch throws fk::Error.
//
// Layout: the stored grid of one shot (wave_grid.h: padded cells plus a zero
// halo) is `numel` cells; a field of all shots is (shots, numel), shot s at
// s · numel. Coefficients are one stored grid shared by the shots. The
// arithmetic of every kernel is that of its CPU loop (leapfrog_step.cpp's
// baseline build, leapfrog.cpp, wave_propagation.cpp) term for term in the
// same order; wave.cu is built with --fmad=false, so against the CPU's
// generic build (FK_CPU_ISA=generic) results agree to the bit and against its
// AVX2+FMA build (which GCC contracts) to rounding.
#include <cstdint>

namespace nefi::cuda {

// Slots of a WaveCells (a 2-D grid is (1, nx, ny)). wave_cells.h's loops over
// active axes run to it, with an exit at nd, so that nvcc unrolls them and
// every s[a], w1[a], psi.a[a], … has a constant index: a loop bounded by nd
// alone indexes the kernel's by-value structs at run time, which copies them
// into a local-memory stack frame (ptxas resource audit, docs/performance.md,
// session 18).
inline constexpr int kWaveAxes = 3;

// One shot's stored grid as the kernels see it: slots are right-aligned as in
// WaveGrid (a 2-D grid is (1, nx, ny)); the Laplacian's and faces' weights
// are rounded to T as leapfrog_step.cpp's FixedLaplacian and FaceSet round
// them. Arrays indexed [a] run over the nd active axes (slot 3 − nd + a).
template <typename T>
struct WaveCells {
  int nd = 0, half = 1;  // active axes; Laplacian half-width (order / 2)
  bool pml = false;
  int64_t n[3] = {1, 1, 1};         // padded cells per slot
  int64_t off[3] = {0, 0, 0};       // halo cells before the padded ones, per slot
  int64_t stride[3] = {0, 0, 0};    // stored strides per slot
  int64_t interior[3] = {1, 1, 1};  // the domain's cells per slot
  int64_t pad[3] = {0, 0, 0};       // absorbing cells per side, per slot
  int64_t numel = 0;                // stored cells
  int64_t padded = 0;               // n[0] n[1] n[2]
  int64_t domain = 0;               // interior[0] interior[1] interior[2]
  int64_t s[3] = {0, 0, 0};         // stride of active axis a
  T w0 = 0;
  T w1[3] = {0, 0, 0}, w2[3] = {0, 0, 0};   // Laplacian weights of ±1 and ±2 cells
  T ih[3] = {0, 0, 0}, ih2[3] = {0, 0, 0};  // 1/h and 1/(2h) of active axis a
};

// wave::StepCoefficients on the device: one stored grid each; alpha and beta
// per active axis (PML only).
template <typename T>
struct WaveCoefficientsView {
  const T *q2 = nullptr, *b = nullptr, *k = nullptr, *ad = nullptr;
  const T* alpha[3] = {nullptr, nullptr, nullptr};
  const T* beta[3] = {nullptr, nullptr, nullptr};
};

// Per-axis fields of all shots (ψ, μ, fbar) or per-axis grids (beta), by active axis.
template <typename T>
struct AxisFields {
  T* a[3] = {nullptr, nullptr, nullptr};
};

// Point stencils (wave_grid.h's PointStencil) as CSR: point i owns entries
// start[i] .. start[i + 1] − 1 of index (stored cell) and weight.
struct StencilsView {
  const int64_t* start = nullptr;
  const int64_t* index = nullptr;
  const double* weight = nullptr;
  int64_t count = 0;
};

// The same stencils grouped by the stored cell they touch, for the trace
// injection: target c is cell[c], and entries start[c] .. start[c + 1] − 1
// name the point (receiver) and weight of each of its terms in the order the
// CPU's inject_traces adds them (points in order, each stencil in order).
// Every cell appears once, so one thread per (shot, target) writes alone.
struct CellStencilsView {
  const int64_t* start = nullptr;
  const int64_t* cell = nullptr;
  const int64_t* point = nullptr;
  const double* weight = nullptr;
  int64_t count = 0;   // target cells
  int64_t points = 0;  // stencils (receivers): the traces' middle extent
};

// What every step of one solve reads: the grid, the coefficients, the
// stencils, the wavelet table (null: no source term) and the time axis. A
// kernel parameter of the fused runs (launch_wave_forward_run).
template <typename T>
struct WaveSolve {
  WaveCells<T> cells;
  WaveCoefficientsView<T> co;
  StencilsView sources, receivers;
  CellStencilsView injection;  // the receivers by cell (the adjoint's trace injection)
  const double* wavelet = nullptr;
  int64_t shots = 1, n_t = 0, n_steps = 0, substeps = 1;
};

// A forward run of leapfrog steps n0 .. n1 − 1 of all shots (B = batch
// values a field), step n making u^{n+1} from (u^{n−1}, u^n, ψ):
//   u^{n0−1} is `before`; u^m for m >= n0 is traj + (m − n0) B when traj is
//   set, else ring[(m − n0) % 3];
//   when every > 0, at n % every == 0 the step's (u^{n−1}, u^n, ψ) go into
//   slot n / every of ckpt (slots of (2 + np) B);
//   when traces is set, u^n at n % substeps == 0 (n = n1 included) is
//   sampled into column n / substeps;
//   when start is set, (u^{n0−1}, u^{n0}, ψ) are first copied from that
//   checkpoint slot (a recomputed block of the backward).
// wave_steps.h gives its order; ψ (np per-axis fields) advances in place.
template <typename T>
struct WaveForwardRun {
  int64_t n0 = 0, n1 = 0, batch = 0;
  T* before = nullptr;
  T* traj = nullptr;
  T *ring0 = nullptr, *ring1 = nullptr, *ring2 = nullptr;
  AxisFields<T> psi;
  int np = 0;
  int64_t every = 0;
  T* ckpt = nullptr;
  T* traces = nullptr;
  const T* start = nullptr;
};

// An adjoint run of steps n1 − 1 down to n0 of all shots from the traces'
// cotangent g (shots, n_rec, n_t): each step injects g's column (n + 1) /
// substeps into lam_c when (n + 1) % substeps == 0, then runs the adjoint
// step into (spare0, spare1) and swaps lam_c with spare0 and lam_p with
// spare1. kl is scratch; μ advances in place. With traj set u^n is traj +
// (n − first) B and kbar and fbar accumulate the gradient sums; null: none.
template <typename T>
struct WaveAdjointRun {
  int64_t n0 = 0, n1 = 0, batch = 0;
  T *lam_c = nullptr, *lam_p = nullptr, *spare0 = nullptr, *spare1 = nullptr;
  T* kl = nullptr;
  AxisFields<T> mu;
  const T* traj = nullptr;
  int64_t first = 0;
  T* kbar = nullptr;
  AxisFields<T> fbar;
  const T* g = nullptr;
};

// --- once per apply: the velocity's coefficients --------------------------

// The velocity check's first-pass block count for n values (>= 1): the
// length of launch_velocity_stats's partials is 3 times it.
int64_t velocity_stats_blocks(int64_t n);
// stats (3 doubles) := min c, max c, number of non-finite values: per block
// a fold of a grid-stride share into partials, then one block merging them.
template <typename T>
void launch_velocity_stats(const T* c, int64_t n, double* partials, double* stats, void* stream);
// kappa (stored grid, f64) := c² of the domain cell each padded cell
// replicates (padded_kappa); the halo is left as it is (zero).
template <typename T>
void launch_padded_kappa(const WaveCells<T>& g, const T* c, double* kappa, void* stream);
// k := T(k_per_kappa κ) per padded cell and, PML, beta_a := T(beta_per_kappa_a
// ½ (κ_p + κ_{p+s})) on the faces step_coefficients sets (others left zero).
template <typename T>
void launch_velocity_coefficients(const WaveCells<T>& g, const double* kappa,
                                  const double* k_per_kappa, const AxisFields<const double>& bpk,
                                  T* k, const AxisFields<T>& beta, void* stream);

// --- the forward step of all shots ----------------------------------------

// un := the leapfrog of (up, u, ψ), then ψ advanced in place (PML): two kernels.
template <typename T>
void launch_leapfrog_step(const WaveCells<T>& g, const WaveCoefficientsView<T>& co, int64_t shots,
                          const T* up, const T* u, T* un, const AxisFields<T>& psi, void* stream);
// un[shot s] += a_dt2 · T(w · wavelet[n]) over source s's stencil (one thread per shot).
template <typename T>
void launch_inject_sources(const WaveCells<T>& g, const StencilsView& src, const T* ad,
                           const double* wavelet, int64_t n, T* un, void* stream);
// traces[s, r, j] := Σ_i w_i u[s, index_i] over receiver r (one thread per (s, r)).
template <typename T>
void launch_sample(const WaveCells<T>& g, const StencilsView& rec, int64_t shots, const T* u,
                   T* traces, int64_t n_t, int64_t j, void* stream);

// The whole run r (wave_steps.h's order) as one cooperative launch: a
// grid-wide barrier after each phase that a later phase reads (the
// restored start, the step, ψ, the sources), none after the samples and
// checkpoint copies (nothing in the run reads them). Needs cooperative launch support
// (cooperative_launch_supported, kernels.h); the grid is capped at the
// blocks the device holds at once. The same bits as the per-phase launches.
template <typename T>
void launch_wave_forward_run(const WaveSolve<T>& s, const WaveForwardRun<T>& r, void* stream);
// Likewise the adjoint run r: barriers after the injection and after each
// of the adjoint step's two (PML: three) phases. r's buffers are left as
// the run leaves them; its pointers are not swapped (wave_adjoint_swapped).
template <typename T>
void launch_wave_adjoint_run(const WaveSolve<T>& s, const WaveAdjointRun<T>& r, void* stream);

// --- the adjoint step of all shots ----------------------------------------

// lam[s] += T(w_i) g[s, r, j] over every receiver r's stencil: one thread
// per (shot, target cell of rec), each adding its cell's terms in the CPU's
// order (the CPU loop's bits; no atomics).
template <typename T>
void launch_inject_traces(const WaveCells<T>& g, const CellStencilsView& rec, int64_t shots,
                          const T* traces_bar, int64_t n_t, int64_t j, T* lam, void* stream);
// leapfrog_adjoint_step for all shots: lam_c (PML: += Gᵀ(beta μ)), out_cur,
// out_prev, μ in place; kl is scratch (stored grid per shot, zero halo);
// with u_n non-null also kbar and fbar accumulate. Two kernels (PML: three).
template <typename T>
void launch_adjoint_step(const WaveCells<T>& g, const WaveCoefficientsView<T>& co, int64_t shots,
                         T* lam_c, const T* lam_p, T* out_cur, T* out_prev, T* kl,
                         const AxisFields<T>& mu, const T* u_n, const T* u_np1, T* kbar,
                         const AxisFields<T>& fbar, void* stream);

// --- the gradient ----------------------------------------------------------

// total[p] := Σ_s kappa_gradient(shot s)[p] in shot order from 0.0, per padded cell.
template <typename T>
void launch_kappa_gradient(const WaveCells<T>& g, const double* k_per_kappa,
                           const AxisFields<const double>& bpk, int64_t shots, const T* kbar,
                           const AxisFields<T>& fbar, double* total, void* stream);
// out (the domain, C order) := T(Σ 2 c κ̄) over the padded cells replicating
// each domain cell, in the CPU's cell order (velocity_gradient).
template <typename T>
void launch_velocity_gradient(const WaveCells<T>& g, const T* c, const double* kappa_bar, T* out,
                              void* stream);

// --- the photoacoustic (initial-value) map: wave_initial_cells.h ------------

// x[stored cell of domain cell q] := p0[q] (one thread per domain cell; the
// rest of x is left as it is: zero).
template <typename T>
void launch_embed(const WaveCells<T>& g, const T* p0, T* x, void* stream);
// out := u + k ⊙ Δ_h u on the padded cells (the time-symmetric start).
template <typename T>
void launch_scaled_laplacian(const WaveCells<T>& g, const T* k, const T* u, T* out, void* stream);
// ku := k ⊙ u over n cells.
template <typename T>
void launch_scaled_product(const T* k, const T* u, T* ku, int64_t n, void* stream);
// out (the domain) := u + Δ_h ku + lam0 at each domain cell.
template <typename T>
void launch_initial_adjoint_end(const WaveCells<T>& g, const T* u, const T* ku, const T* lam0,
                                T* out, void* stream);
// out (n_rec, n_t) := T(the sensor's samples) of fine (n_rec, n_fine); w
// (2 half + 1 weights) null: no low-pass.
template <typename T>
void launch_sensor_samples(const T* fine, int64_t n_rec, int64_t n_fine, int64_t every,
                           const double* w, int64_t half, int64_t n_t, T* out, void* stream);
// out (n_rec, n_fine) := T(the sensor's transpose) of g (n_rec, n_t), f64.
template <typename T>
void launch_sensor_adjoint(const double* g, int64_t n_rec, int64_t n_t, int64_t n_fine,
                           int64_t every, const double* w, int64_t half, T* out, void* stream);

// dst := src, n elements, device to device (a copy node when captured).
template <typename T>
void launch_copy(const T* src, T* dst, int64_t n, void* stream);

}  // namespace nefi::cuda
