#pragma once
// The per-cell arithmetic of the advection-diffusion kernels (transport.cu):
// operators/transport_steps.cpp's Euler step and StepWeights, operation for
// operation; and, called by the CPU too, the grid's faces, the harmonic mean,
// each stencil row (transport_steps.cpp assembles its stencils with it) and
// the coefficient unknowns' gradient sums (transport_coefficients.cpp). Host
// and device functions alike, so that a CPU build compiles the same code
// (the emulated device runs it).
#include <cfloat>
#include <cstdint>

#include "nefi/cuda/host_device.h"
#include "nefi/cuda/transport_kernels.h"

namespace nefi::cuda {

// a + b and a b, each rounded: what the CPU's loops (baseline x86-64, built
// with -ffp-contract=off) compute; nvcc would otherwise contract a product
// into the sum that follows it.
NEFI_HOST_DEVICE inline double rounded_add(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
NEFI_HOST_DEVICE inline double rounded_mul(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
NEFI_HOST_DEVICE inline double rounded_div(double a, double b) {
#ifdef __CUDA_ARCH__
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

// Cell i of state row `c` after one Euler step: c_i + tau (s_i + sum_e w_e
// c[col_e]), w_e = weight_e + tau per_tau_e (StepWeights::set), the sum from
// s_i (0 without a source) in entry order (a row of m.width entries ends at
// its first padding).
NEFI_HOST_DEVICE inline double stepped_cell(const TransportRows& m, double tau, const double* c,
                                            const double* s, int64_t i) {
  double acc = s != nullptr ? s[i] : 0.0;
  const int64_t begin = m.width > 0 ? i * m.width : m.row_start[i];
  const int64_t end = m.width > 0 ? begin + m.width : m.row_start[i + 1];
  for (int64_t e = begin; e < end && m.col[e] >= 0; ++e) {
    const double w = m.per_tau != nullptr ? rounded_add(m.weight[e], rounded_mul(tau, m.per_tau[e]))
                                          : m.weight[e];
    acc = rounded_add(acc, rounded_mul(w, c[m.col[e]]));
  }
  return rounded_add(c[i], rounded_mul(tau, acc));
}

// The cell above cell i (its index k along an axis of na cells, stride the
// axis's) across a face, wrapping on a periodic axis of more than one cell;
// -1 at a box face. transport_lower_cell: the cell below, likewise.
NEFI_HOST_DEVICE inline int64_t transport_upper_cell(int64_t i, int64_t k, int64_t na,
                                                     int64_t stride, bool periodic) {
  if (k + 1 < na) return i + stride;
  return periodic && na > 1 ? i - (na - 1) * stride : -1;
}
NEFI_HOST_DEVICE inline int64_t transport_lower_cell(int64_t i, int64_t k, int64_t na,
                                                     int64_t stride, bool periodic) {
  if (k > 0) return i - stride;
  return periodic && na > 1 ? i + (na - 1) * stride : -1;
}

// The diffusivity on the face between cells of diffusivity a and b: their
// harmonic mean 2ab / (a + b) (a flux through two cells in series; 0 when
// either is), exactly a when a == b. d_da / d_db (where not null): its
// derivatives; at a == b the 1/2 each of the limit along a = b, 0 included,
// so that a blocked face can still open.
NEFI_HOST_DEVICE inline double transport_face_diffusivity(double a, double b, double* d_da,
                                                          double* d_db) {
  if (a == b) {
    if (d_da != nullptr) *d_da = 0.5;
    if (d_db != nullptr) *d_db = 0.5;
    return a;
  }
  const double s = rounded_add(a, b);  // > 0: a != b, both >= 0
  const double ra = rounded_div(b, s), rb = rounded_div(a, s);
  if (d_da != nullptr) *d_da = rounded_mul(rounded_mul(2.0, ra), ra);
  if (d_db != nullptr) *d_db = rounded_mul(rounded_mul(2.0, rb), rb);
  return rounded_mul(rounded_mul(2.0, a), ra);
}

// acc + w (c_j - c_i) (lam_i - lam_j): one factor's term of a face's sum
// (launch_transport_face_terms).
NEFI_HOST_DEVICE inline double face_term(double acc, double w, double ci, double cj, double li,
                                         double lj) {
  return rounded_add(acc, rounded_mul(rounded_mul(w, cj - ci), li - lj));
}

// Cell x's gradient in D from the face sums dface (axes, cells): axis by
// axis, the face below x (x its upper cell) and then the face above it,
// each sum times its harmonic mean's slope in x's D.
NEFI_HOST_DEVICE inline double diffusivity_gradient_cell(const TransportGrid& g,
                                                         const double* dface, const double* D,
                                                         int64_t x) {
  double acc = 0;
  for (int a = 0; a < g.axes; ++a) {
    const int64_t k = (x / g.stride[a]) % g.size[a];
    const double* F = dface + a * g.cells;
    const int64_t lo = transport_lower_cell(x, k, g.size[a], g.stride[a], g.periodic[a]);
    if (lo >= 0) {
      double d_db = 0;
      transport_face_diffusivity(D[lo], D[x], nullptr, &d_db);
      acc = rounded_add(acc, rounded_mul(F[lo], d_db));
    }
    const int64_t hi = transport_upper_cell(x, k, g.size[a], g.stride[a], g.periodic[a]);
    if (hi >= 0) {
      double d_da = 0;
      transport_face_diffusivity(D[x], D[hi], &d_da, nullptr);
      acc = rounded_add(acc, rounded_mul(F[x], d_da));
    }
  }
  return acc;
}

// One entry of a stencil row: the rate of change of c_i per unit c_col is
// w + tau per_tau.
struct StencilEntry {
  int64_t col;
  double w, per_tau;
};

// Row i of a factor's stencil A (c' = c + tau (A + tau T) c, T's weights
// per_tau; all zero for upwind) into out, ascending columns, each column's
// raw entries summed in the order a walk over the faces (axes last to
// first, faces by their lower cell) adds them: for each face, the diffusive
// flux -D_f (c_hi - c_lo) / h^2 (D_f the harmonic mean, lower cell first),
// and the advective flux of v_f the mean of the two cells' velocities,
// Lax-Wendroff's v_f (c_lo + c_hi) / 2 with its v_f^2 tau / 2 diffusion or
// upwind's v_f c_upwind; on an open box face the upwind outflow. A raw
// entry that is zero both ways is not added; the diagonal is always kept.
// Returns the entries' count; *speed2 gets the largest (v_f / h)^2 over the
// cell's faces, outflow included (Lax-Wendroff's bound reads it).
NEFI_HOST_DEVICE inline int transport_stencil_row(const TransportStencil& s, int64_t i,
                                                  StencilEntry* out, double* speed2) {
  StencilEntry raw[kMaxStencilRaw];
  int n = 0;
  auto put = [&](int64_t col, double w, double per_tau) {
    if (w != 0 || per_tau != 0) raw[n++] = {col, w, per_tau};
  };
  auto D_at = [&](int64_t c) { return s.D_uniform ? s.D[0] : s.D[c]; };
  auto v_at = [&](int a, int64_t c) {
    return s.v[a] == nullptr ? 0.0 : s.v_uniform[a] ? s.v[a][0] : s.v[a][c];
  };
  double s2 = 0;
  // The face from cell lo to cell hi along a: row i's entries as either cell.
  auto face = [&](int a, int64_t lo, int64_t hi) {
    const double h2 = rounded_mul(s.h[a], s.h[a]);
    const double w =
        rounded_div(transport_face_diffusivity(D_at(lo), D_at(hi), nullptr, nullptr), h2);
    const double v = rounded_div(rounded_mul(0.5, rounded_add(v_at(a, lo), v_at(a, hi))), s.h[a]);
    const double vv = rounded_mul(v, v);
    const int64_t other = i == lo ? hi : lo;
    if (s.lax_wendroff) s2 = vv > s2 ? vv : s2;
    put(other, w, 0);
    put(i, -w, 0);
    if (i == lo) {  // the lower cell: its flux leaves upward
      if (s.lax_wendroff) {
        put(i, -v / 2, -vv / 2);
        put(hi, -v / 2, vv / 2);
      } else if (v > 0) {
        put(i, -v, 0);
      } else if (v < 0) {
        put(hi, -v, 0);
      }
    } else {  // the upper cell: the flux arrives from below
      if (s.lax_wendroff) {
        put(lo, v / 2, vv / 2);
        put(i, v / 2, -vv / 2);
      } else if (v > 0) {
        put(lo, v, 0);
      } else if (v < 0) {
        put(i, v, 0);
      }
    }
  };
  for (int a = s.grid.axes - 1; a >= 0; --a) {
    if (s.axis >= 0 && a != s.axis) continue;
    const int64_t na = s.grid.size[a], stride = s.grid.stride[a];
    const int64_t k = (i / stride) % na;
    const int64_t lo = transport_lower_cell(i, k, na, stride, s.grid.periodic[a]);
    const int64_t hi = transport_upper_cell(i, k, na, stride, s.grid.periodic[a]);
    // The walk reaches the face below at its lower cell: before cell i's own
    // faces unless it wraps from the box's far end.
    if (lo >= 0 && lo < i) face(a, lo, i);
    if (hi >= 0) face(a, i, hi);
    if (s.open[a]) {  // outflow through the box's faces, upwind
      const double v = rounded_div(v_at(a, i), s.h[a]);
      if ((k + 1 == na && v > 0) || (k == 0 && v < 0)) {
        put(i, v < 0 ? v : -v, 0);
        if (s.lax_wendroff) {
          const double vv = rounded_mul(v, v);
          s2 = vv > s2 ? vv : s2;
        }
      }
    }
    if (lo >= 0 && lo > i) face(a, lo, i);
  }
  raw[n++] = {i, 0.0, 0.0};
  // Stable insertion sort by column, then each column's entries summed.
  for (int e = 1; e < n; ++e)
    for (int q = e; q > 0 && raw[q - 1].col > raw[q].col; --q) {
      const StencilEntry t = raw[q - 1];
      raw[q - 1] = raw[q];
      raw[q] = t;
    }
  int m = 0;
  for (int e = 0; e < n; ++e) {
    if (m > 0 && raw[e].col == out[m - 1].col) {
      out[m - 1].w = rounded_add(out[m - 1].w, raw[e].w);
      out[m - 1].per_tau = rounded_add(out[m - 1].per_tau, raw[e].per_tau);
      continue;
    }
    out[m++] = raw[e];
  }
  *speed2 = s2;
  return m;
}

// Row i of a factor's stencil into rows of `width` (col -1 padding; per_tau
// null for upwind), its rate (upwind: -A_ii; Lax-Wendroff: the largest
// (v_f / h)^2) and (bad not null) whether D_i is negative or not finite or
// a velocity given per cell is not finite there.
NEFI_HOST_DEVICE inline void write_stencil_row(const TransportStencil& s, int64_t width, int64_t i,
                                               int32_t* col, double* weight, double* per_tau,
                                               double* rate, double* bad) {
  StencilEntry row[kMaxStencilColumns];
  double speed2 = 0;
  const int m = transport_stencil_row(s, i, row, &speed2);
  double r = speed2;
  for (int64_t e = 0; e < width; ++e) {
    const bool used = e < m;
    col[i * width + e] = used ? static_cast<int32_t>(row[e].col) : -1;
    weight[i * width + e] = used ? row[e].w : 0.0;
    if (per_tau != nullptr) per_tau[i * width + e] = used ? row[e].per_tau : 0.0;
    if (used && !s.lax_wendroff && row[e].col == i) r = -row[e].w;
  }
  rate[i] = r;
  if (bad != nullptr) {
    const double d = s.D_uniform ? s.D[0] : s.D[i];
    bool ok = d >= 0 && d <= DBL_MAX;  // NaN fails both
    for (int a = 0; a < s.grid.axes; ++a)
      if (s.v[a] != nullptr && !s.v_uniform[a])
        ok = ok && s.v[a][i] >= -DBL_MAX && s.v[a][i] <= DBL_MAX;
    bad[i] = ok ? 0.0 : 1.0;
  }
}

// Row c of the transpose of rows of `width`: (r, M_rc) for the rows r whose
// entries hold column c (c itself and its neighbours along the factor's
// axes), ascending r.
NEFI_HOST_DEVICE inline void write_transposed_row(const TransportStencil& s, int64_t width,
                                                  int64_t c, const int32_t* col,
                                                  const double* weight, const double* per_tau,
                                                  int32_t* t_col, double* t_weight,
                                                  double* t_per_tau) {
  int64_t rows[kMaxStencilColumns];
  int n = 0;
  rows[n++] = c;
  for (int a = 0; a < s.grid.axes; ++a) {
    if (s.axis >= 0 && a != s.axis) continue;
    const int64_t na = s.grid.size[a], stride = s.grid.stride[a];
    const int64_t k = (c / stride) % na;
    const int64_t lo = transport_lower_cell(c, k, na, stride, s.grid.periodic[a]);
    const int64_t hi = transport_upper_cell(c, k, na, stride, s.grid.periodic[a]);
    if (lo >= 0) rows[n++] = lo;
    if (hi >= 0) rows[n++] = hi;
  }
  for (int e = 1; e < n; ++e)
    for (int q = e; q > 0 && rows[q - 1] > rows[q]; --q) {
      const int64_t t = rows[q - 1];
      rows[q - 1] = rows[q];
      rows[q] = t;
    }
  int64_t out = c * width;
  for (int e = 0; e < n; ++e) {
    if (e > 0 && rows[e] == rows[e - 1]) continue;  // a periodic axis of two cells
    const int64_t r = rows[e];
    for (int64_t q = r * width; q < (r + 1) * width && col[q] >= 0; ++q)
      if (col[q] == c) {
        t_col[out] = static_cast<int32_t>(r);
        t_weight[out] = weight[q];
        if (t_per_tau != nullptr) t_per_tau[out] = per_tau[q];
        ++out;
        break;
      }
  }
  for (; out < (c + 1) * width; ++out) {
    t_col[out] = -1;
    t_weight[out] = 0.0;
    if (t_per_tau != nullptr) t_per_tau[out] = 0.0;
  }
}

// The velocity unknown's gradient. v_f = (v_i + v_j) / (2 h), the face's
// velocity over its spacing as the stencil computes it (transport_stencil_row).
NEFI_HOST_DEVICE inline double face_velocity(const TransportStencil& s, int a, int64_t i,
                                             int64_t j) {
  const double vi = s.v_uniform[a] ? s.v[a][0] : s.v[a][i];
  const double vj = s.v_uniform[a] ? s.v[a][0] : s.v[a][j];
  return rounded_div(rounded_mul(0.5, rounded_add(vi, vj)), s.h[a]);
}

// acc + d<lam', c'>/d(v_f) for one factor application (c' = c + tau (A +
// tau T) c) at the face from cell i to j above it: Lax-Wendroff's central
// flux v_f (c_i + c_j) / 2 and its v_f^2 tau / 2 diffusion,
//   tau ((lam_j - lam_i) (c_i + c_j) / 2 + tau v_f (lam_i - lam_j) (c_j - c_i));
// upwind's v_f c_upwind, tau (lam_j - lam_i) c_up with c_up the upwind
// cell's value (at v_f = 0, where the flux has no derivative, the mean of
// its two one-sided ones).
NEFI_HOST_DEVICE inline double velocity_face_term(double acc, double tau, double vf, bool lw,
                                                  double ci, double cj, double li, double lj) {
  if (lw) {
    const double central = rounded_mul(rounded_mul(0.5, lj - li), rounded_add(ci, cj));
    const double spread = rounded_mul(rounded_mul(rounded_mul(tau, vf), li - lj), cj - ci);
    return rounded_add(acc, rounded_mul(tau, rounded_add(central, spread)));
  }
  const double up = vf > 0 ? ci : vf < 0 ? cj : rounded_mul(0.5, rounded_add(ci, cj));
  return rounded_add(acc, rounded_mul(tau, rounded_mul(lj - li, up)));
}

// Every face term of one factor application along axis a at cell i (its
// index k along a): the
// face above i into G[a cells + i], and on an open box face the upwind
// outflow -|v| with v = v_i / h, taken on the last cell where v > 0 and on
// the first where v < 0 (its derivative in v: -lam_i c_i and +lam_i c_i,
// times tau; at v = 0 the mean of the two one-sided ones, as for a face)
// into Gout[a cells + i].
NEFI_HOST_DEVICE inline void velocity_terms_at(const TransportStencil& s, int a, int64_t i,
                                               int64_t k, double tau, const double* c,
                                               const double* lam, double* G, double* Gout) {
  const int64_t na = s.grid.size[a], stride = s.grid.stride[a], n = s.grid.cells;
  const int64_t j = transport_upper_cell(i, k, na, stride, s.grid.periodic[a]);
  if (j >= 0)
    G[a * n + i] = velocity_face_term(G[a * n + i], tau, face_velocity(s, a, i, j), s.lax_wendroff,
                                      c[i], c[j], lam[i], lam[j]);
  if (s.open[a]) {
    const double v = rounded_div(s.v_uniform[a] ? s.v[a][0] : s.v[a][i], s.h[a]);
    const bool last = k + 1 == na, first = k == 0;
    // The outflow entry's slope in v (it is then times lam_i c_i).
    double slope = 0;
    if (v > 0)
      slope = last ? -1.0 : 0.0;
    else if (v < 0)
      slope = first ? 1.0 : 0.0;
    else
      slope = (last ? -0.5 : 0.0) + (first ? 0.5 : 0.0);
    if (slope != 0)
      Gout[a * n + i] = rounded_add(
          Gout[a * n + i], rounded_mul(tau, rounded_mul(rounded_mul(slope, lam[i]), c[i])));
  }
}

// Cell x's gradient in its velocity along axis a from the face sums: the
// face below and the face above (each v_f takes half of v_x / h), then the
// outflow (v_x / h), in that order.
NEFI_HOST_DEVICE inline double velocity_gradient_cell(const TransportStencil& s, int a,
                                                      const double* G, const double* Gout,
                                                      int64_t x) {
  const int64_t na = s.grid.size[a], stride = s.grid.stride[a], n = s.grid.cells;
  const int64_t k = (x / stride) % na;
  const double half = rounded_div(0.5, s.h[a]);
  double acc = 0;
  const int64_t lo = transport_lower_cell(x, k, na, stride, s.grid.periodic[a]);
  if (lo >= 0) acc = rounded_add(acc, rounded_mul(G[a * n + lo], half));
  if (transport_upper_cell(x, k, na, stride, s.grid.periodic[a]) >= 0)
    acc = rounded_add(acc, rounded_mul(G[a * n + x], half));
  if (s.open[a]) acc = rounded_add(acc, rounded_div(Gout[a * n + x], s.h[a]));
  return acc;
}

}  // namespace nefi::cuda
