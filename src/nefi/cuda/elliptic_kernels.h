#pragma once
// Launchers of the elliptic kernels (elliptic.cu): the finite-volume system
// of operators/elliptic/elliptic_grid.h built on the device from σ and κ,
// the multigrid hierarchy of each field (elliptic_multigrid.h's, one block
// per field), the CG of elliptic_cg.h preconditioned by Jacobi or that
// V-cycle with one thread block per system, and the conductivity gradient of
// the implicit-function adjoint.
// Raw device pointers (C order) and a stream (a cudaStream_t as void*), no
// CUDA types; T is float or double. Per-thread arithmetic: elliptic_cells.h.
//
// The CG runs the whole solve in one launch: block s iterates system s, its
// dot products summed in double by kCgThreads threads in a fixed tree (no
// atomics), its stopping test ‖r‖ ≤ max(tol ‖b‖, atol) taken on the device
// every check_every iterations, so nothing is read back to the host and the
// launch can be captured in a CUDA graph. Results are run to run
// reproducible and equal, bit for bit, the host emulation of
// elliptic_cells.h (block_pcg over HostBlock).
#include <cstdint>

namespace nefi::cuda {

// Axes a StencilGrid holds. The cells' loops over axes run to it, with an
// exit at ndim, so that nvcc unrolls them and every shape[a], stride[a], …
// has a constant index: a loop bounded by ndim alone indexes the grid at run
// time, and the kernel then copies the whole grid into a local-memory stack
// frame (ptxas resource audit, docs/performance.md, session 18).
inline constexpr int kStencilAxes = 3;

// The grid of an EllipticGrid (operators/elliptic/elliptic_stencil.h builds
// it), by value in every launch.
struct StencilGrid {
  int ndim = 1;
  int64_t numel = 1;
  int64_t shape[kStencilAxes] = {1, 1, 1};
  int64_t stride[kStencilAxes] = {1, 1, 1};  // C order
  bool periodic[kStencilAxes] = {false, false, false};
  // low, high side
  bool dirichlet[kStencilAxes][2] = {{false, false}, {false, false}, {false, false}};
  // 1 / h² in double (T(inv_h2) as build_face_system rounds it)
  double inv_h2[kStencilAxes] = {1, 1, 1};
  bool harmonic = true;  // face means: harmonic, else arithmetic
};

// The CG's settings for one launch (elliptic_cg.h's CgOptions, resolved).
struct CgControl {
  int64_t max_iter = 1, check_every = 1;
  double tol = 0, atol = 0;  // tol already clamped at 8 eps of T
  bool project = false;      // the null-space (zero-mean gauge) case
  bool warm = false;         // x holds a warm start on entry
};

// Per-system statistics the CG writes (f64, 4 per system).
enum CgStat { kCgIterations = 0, kCgWarmUsed = 1, kCgConverged = 2, kCgResidual = 3, kCgStats = 4 };

// faces (nb, ndim, numel), diag and inv_diag (nb, numel) of nb fields from
// sigma (numel, or nb·numel when sigma_batched) and kappa (null, numel, or
// nb·numel when kappa_batched): build_face_system's values (σ is not checked
// for positivity here: that would be a host read).
template <typename T>
void launch_face_system(const StencilGrid& g, int64_t nb, const T* sigma, bool sigma_batched,
                        const T* kappa, bool kappa_batched, T* faces, T* diag, T* inv_diag,
                        void* stream);

// The multigrid V-cycle's buffers (elliptic_multigrid_cells.h; sizes from
// its multigrid_*_size): per field, the coarse levels (hierarchy, T) and the
// coarsest Cholesky factor (f64); per system, the cycle's scratch (work, T).
// hierarchy null: the CG preconditions with Jacobi. A grid that is its own
// coarsest level has a hierarchy of size 0 but still takes the V-cycle (its
// direct solve): pass a non-null pointer there (elliptic_device.cpp
// allocates at least one element; an empty vector's data() may be null).
template <typename T>
struct MultigridBuffers {
  const T* hierarchy = nullptr;
  const double* cholesky = nullptr;
  T* work = nullptr;
};

// The hierarchies of nb fields from their face systems (faces, diag as
// launch_face_system wrote them): hierarchy (nb, multigrid_hierarchy_size)
// and cholesky (nb, multigrid_cholesky_size), one block per field. A
// singular coarsest system gets a NaN pivot (no host read to refuse it).
template <typename T>
void launch_multigrid_setup(const StencilGrid& g, int64_t nb, const T* faces, const T* diag,
                            T* hierarchy, double* cholesky, void* stream);

// x (ns, numel) := A⁻¹ b for ns systems, system s using field (nb == 1 ? 0 :
// s); x holds the warm start when control.warm. work: 5 ns numel of T
// (scratch). out (ns, numel) receives a copy of x when not null and not x.
// stats (ns, kCgStats) f64. mg.hierarchy not null: the V-cycle preconditions
// (mg.work: ns multigrid_work_size of T), else Jacobi.
template <typename T>
void launch_block_pcg(const StencilGrid& g, int64_t ns, int64_t nb, const T* faces, const T* diag,
                      const T* inv_diag, const T* b, T* x, T* out, T* work, double* stats,
                      const CgControl& control, const MultigridBuffers<T>& mg, void* stream);

// grad (nf, numel) = T(scale · Σ_s ∂(a_sᵀ A b_s)/∂σ) (accumulate_sigma_gradient
// over the systems of each field, in system order, in double), a and b (ns,
// numel); nf = ns when sigma_batched (system s its own field), else 1.
template <typename T>
void launch_sigma_gradient(const StencilGrid& g, int64_t ns, bool sigma_batched, const T* sigma,
                           const T* a, const T* b, double scale, T* grad, void* stream);

}  // namespace nefi::cuda
