#pragma once
// Launchers of the heat operator's CUDA kernels (heat.cu; each thread's
// arithmetic in heat_cells.h, host and device alike): raw device
// pointers, the grid and a stream (a cudaStream_t passed as void*), no CUDA
// types, so the host side (device_sweeper.cpp, heat_dispatch.cpp) is plain
// C++. T is float or double (explicitly instantiated for both). Every launch is
// asynchronous on `stream` and is one kernel (launch_heat_system: two); a
// failed launch throws fk::Error.
// Grids are compact and C-contiguous, cell i = (x · ny + y) · nz + z; the
// arithmetic of every kernel is that of its CPU loop in flat_stencil.cpp and
// heat_system.cpp, term for term in the same order and with the same fused
// multiply-adds: the sweeps' explicit fma() where GCC contracts the CPU
// sweep's AVX2+FMA build, none elsewhere (nvcc --fmad=false; those CPU loops
// are built for baseline x86-64, which has no FMA). Against the CPU's AVX2
// path results should then agree to the bit (up to the sign of zero); against
// its generic build (FK_CPU_ISA=generic) to rounding.
#include <cstdint>

namespace nefi::cuda {

// Every grid has fewer than 2³¹ cells (the kernels index in 32 bits).
struct Grid {
  int64_t nx = 0, ny = 0, nz = 0;
  int64_t numel() const { return nx * ny * nz; }
  // Every axis >= 1 and fewer than 2³¹ − 1 cells, checked without overflow
  // (numel() of axes near 2³² wraps to a small number). An empty grid would
  // be a zero-block launch, which CUDA refuses as a bad configuration.
  bool indexable() const {
    constexpr int64_t kMax = INT32_MAX;
    return nx >= 1 && ny >= 1 && nz >= 1 && nx < kMax && ny < kMax && nz < kMax && nx * ny < kMax &&
           nx * ny * nz < kMax;
  }
};

// The coefficients of the heat system in f64 (the launchers round them to T
// as build_system does): h² per axis, Δt of one implicit step, the back sink
// β, harmonic (or arithmetic) face means, periodic (or closed) sides.
struct HeatCoefficients {
  double h2[3] = {1, 1, 1};
  double dt = 0;
  double sink = 0;
  bool arithmetic = false;
  bool closed_sides = false;
};

// The system of one implicit step from α on the device, in the form the
// sweeps take (symmetric_faces of build_system, bit for bit): faces (3, grid)
// := Ŵ of the +x, +y, +z face of every cell, root_d (2, grid) := D^½, D^-½;
// row_sums (grid), unless null, := Gershgorin's row sums Σ_j W_j. Two kernels
// (the cells, then the faces' scaling by their neighbours' D^-½).
template <typename T>
void launch_heat_system(const T* alpha, T* faces, T* root_d, T* row_sums, Grid g,
                        const HeatCoefficients& k, void* stream);
// omega (k,) := chebyshev_weights(ρ, k) with ρ = max_i row_sums[i] (n cells):
// one single-block kernel, the bound never leaving the device.
template <typename T>
void launch_chebyshev_weights(const T* row_sums, int64_t n, T* omega, int k, void* stream);

// One sweep of FlatSweeper's symmetric iteration on compact grids:
//   s = c + Ŵx⁻ y[x−1] + Ŵx⁺ y[x+1] + Ŵy⁻ y[y−1] + Ŵy⁺ y[y+1] + Ŵz⁻ y[z−1] + Ŵz⁺ y[z+1]
// (x and y wrap; z stops at the faces), faces = (3, grid) holding the + face of
// every cell (the − face is the + face of the cell one step back). Then
// out = s (Jacobi) or, with lerp, out = out + ω (s − out) with ω = omega[j], a
// device array (Chebyshev: out holds the iterate before `in`). `in` and `out`
// must not overlap.
template <typename T>
void launch_face_sweep(const T* in, T* out, const T* c, const T* faces, Grid g, const T* omega,
                       int j, bool lerp, void* stream);

// Whether `device` can launch cooperative kernels (all current GPUs can;
// some virtualised or MPS set-ups cannot).
bool cooperative_launch_supported(int device);
// k sweeps in one cooperative launch: a grid-stride loop per sweep and a
// grid-wide barrier between sweeps (no host involvement). bufs[cur] holds the
// iterate and bufs[1 − cur] the one before it; after k sweeps bufs[(cur + k) % 2]
// holds the result (heat_cells.h: sweep_input). Sweep j is a plain Jacobi
// sweep for j < lerp_from, a Chebyshev step with weight omega[j] after (omega:
// a device array, read only from sweep lerp_from on; may be null when
// lerp_from >= k). Each cell's arithmetic is launch_face_sweep's, so both
// paths give the same bits.
template <typename T>
void launch_fused_sweeps(T* buf0, T* buf1, int cur, const T* c, const T* faces, Grid g,
                         const T* omega, int k, int lerp_from, void* stream);

// out[i] = r[i] · a[i] for i < n (the scaling into and out of the symmetric variable).
template <typename T>
void launch_scale(const T* a, const T* r, T* out, int64_t n, void* stream);
// out[i] = r[i] · a[i] and c[i] = r[i] · out[i] (a solution stored and made the
// next step's right-hand side in one pass).
template <typename T>
void launch_scale_twice(const T* a, const T* r, T* out, T* c, int64_t n, void* stream);
// c[cell (x, y, 0)] += r[cell (x, y, 0)] · s[x · ny + y]: a surface source on the front face.
template <typename T>
void launch_add_surface(const T* s, const T* r, T* c, Grid g, void* stream);

// The adjoint's face sums (accumulate_face_products): for the + face of every
// cell, sums_f += (Δ_f μ)(Δ_f T); the z face of the last layer, and with
// closed sides the x faces of the last plane and y faces of the last row, are 0.
template <typename T>
void launch_face_products(T* sums, const T* mu, const T* t, Grid g, bool closed_sides,
                          void* stream);

// dJ/dα from the face sums (alpha_gradient) with the system's coefficients
// (the sink is not used).
template <typename T>
void launch_alpha_gradient(const T* sums, const T* alpha, T* out, Grid g, const HeatCoefficients& k,
                           void* stream);

}  // namespace nefi::cuda
