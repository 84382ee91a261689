#pragma once
// Launchers of the advection-diffusion kernels (transport.cu) for the
// explicit steps (operators/transport_steps.h) and, with the diffusivity map
// or the velocity as the unknown, each factor's stencil built for the field
// and its transpose and the gradient's face sums, on device buffers of f64
// states, `batch` rows of `cells` values each (row-major); raw
// pointers and a stream (a cudaStream_t as void*), no CUDA types. Each
// output value is one thread, with separately rounded products and sums in
// the CPU loops' order (no atomics, no fused multiply-adds): the CPU's bits,
// run to run reproducible. Per-cell arithmetic: transport_cells.h.
#include <cstdint>

namespace nefi::cuda {

// One factor's sparse rows: weight[e] (+ tau per_tau[e] where per_tau is not
// null) on column col[e] for the entries [row_start[i], row_start[i + 1]);
// or, where width > 0 (a stencil built on the device), row i's entries are
// [i width, (i + 1) width), those with col < 0 padding.
struct TransportRows {
  const int64_t* row_start = nullptr;
  const int32_t* col = nullptr;
  const double* weight = nullptr;
  const double* per_tau = nullptr;
  int64_t width = 0;
};

// out = c + tau (M c + s) on every row (s null: none; else one per row).
void launch_transport_step(const TransportRows& m, int64_t batch, int64_t cells, double tau,
                           const double* c, const double* s, double* out, void* stream);

// Observation k of K: y[(b K + k) m + q] = c[b cells + cell_q], cell_q =
// sensors[q] (sensors null: q, m == cells).
void launch_transport_observe(int64_t batch, int64_t cells, int64_t observed, int64_t K, int64_t k,
                              const int64_t* sensors, const double* c, double* y, void* stream);

// Its transpose: lam[b cells + cell_q] += g[(b K + k) m + q] (distinct cells:
// no two threads write one value).
void launch_transport_inject(int64_t batch, int64_t cells, int64_t observed, int64_t K, int64_t k,
                             const int64_t* sensors, const double* g, double* lam, void* stream);

// acc += tau v over n values.
void launch_transport_accumulate(int64_t n, double tau, const double* v, double* acc, void* stream);

// The grid's faces: along axis a (of `axes`, C order), cell i and the cell
// above it (i + stride[a]; on a periodic axis of more than one cell the last
// wraps to the first), the face stored at i.
struct TransportGrid {
  int axes = 0;
  int64_t cells = 0;
  int64_t size[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1};
  bool periodic[3] = {false, false, false};
};

// What a factor's stencil rows are built from (transport_stencil_row): the
// grid, each axis's spacing and whether its box faces are open, the flow
// per axis (null: none; else one value per cell, or one for all), the
// diffusivity (one value per cell, or one for all), the scheme, and the
// factor's axis (-1: every axis).
struct TransportStencil {
  TransportGrid grid;
  double h[3] = {1, 1, 1};
  bool open[3] = {false, false, false};
  const double* v[3] = {nullptr, nullptr, nullptr};
  bool v_uniform[3] = {false, false, false};
  const double* D = nullptr;
  bool D_uniform = false;
  bool lax_wendroff = false;
  int axis = -1;
};

// Entries a stencil row merges at most (each axis's two faces and outflow,
// and the diagonal), and the columns it keeps at most: itself and two
// neighbours per axis.
inline constexpr int kMaxStencilRaw = 3 * 9 + 1;
inline constexpr int kMaxStencilColumns = 7;
// A factor's row width on the device: itself and two neighbours per axis.
inline int64_t transport_stencil_width(const TransportStencil& s) {
  return 1 + 2 * (s.axis < 0 ? s.grid.axes : 1);
}

// Every row of a factor's stencil, rows of `width` (col -1 padding):
// transport_stencil_row's entries, per_tau null for upwind; and per row,
// rate[i] = -(its diagonal) (upwind) or its largest (v_f / h)^2
// (Lax-Wendroff), and bad[i] = 1 where D (per cell) is negative or not
// finite or a velocity given per cell is not finite, else 0 (bad null: not
// written).
void launch_transport_stencil(const TransportStencil& s, int64_t width, int32_t* col,
                              double* weight, double* per_tau, double* rate, double* bad,
                              void* stream);

// The transpose of those rows, in the same layout: row c holds (r, M_rc) for
// the rows r whose stencil has column c, ascending r (as SparseRows'
// transpose orders them).
void launch_transport_stencil_transpose(const TransportStencil& s, int64_t width,
                                        const int32_t* col, const double* weight,
                                        const double* per_tau, int32_t* t_col, double* t_weight,
                                        double* t_per_tau, void* stream);

// For each face along `axis` (from cell i to j above it):
// dface[axis cells + i] += w (c_j - c_i) (lam_i - lam_j), the derivative of
// <lam, c + tau A c> in the face's diffusivity where w = tau / h^2.
void launch_transport_face_terms(const TransportGrid& grid, int axis, double w, const double* c,
                                 const double* lam, double* dface, void* stream);

// dD (cells) from the face sums dface (axes, cells) through each face's
// harmonic mean of its two cells' D: per cell, axis by axis, the face below
// it, then the face above it.
void launch_transport_diffusivity_gradient(const TransportGrid& grid, const double* dface,
                                           const double* D, double* dD, void* stream);

// The velocity unknown's gradient (s pointed at the velocity): for one
// factor application along `axis`, velocity_terms_at for every cell (the
// face above it into G, an open box face's outflow into Gout; both (axes,
// cells)); then dv (axes, cells) from them, velocity_gradient_cell per
// axis and cell.
void launch_transport_velocity_terms(const TransportStencil& s, int axis, double tau,
                                     const double* c, const double* lam, double* G, double* Gout,
                                     void* stream);
void launch_transport_velocity_gradient(const TransportStencil& s, const double* G,
                                        const double* Gout, double* dv, void* stream);

}  // namespace nefi::cuda
