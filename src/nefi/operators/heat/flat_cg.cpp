#include "nefi/operators/heat/flat_cg.h"

#include <cmath>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "nefi/operators/heat/inner_solvers.h"
#include "nefi/real_dispatch.h"

namespace nefi::heat {
namespace {

template <typename T>
void refill(T* pad, const FlatLayout& L) {
  for (int64_t x = 0; x < L.nx; ++x) {
    T* lo = pad + (x + 1) * L.plane();
    for (int64_t z = 0; z < L.nz; ++z) {
      lo[z] = lo[L.ny * L.nz + z];
      lo[(L.ny + 1) * L.nz + z] = lo[L.nz + z];
    }
  }
  const int64_t P = L.plane();
  for (int64_t k = 0; k < P; ++k) {
    pad[k] = pad[L.nx * P + k];
    pad[(L.nx + 1) * P + k] = pad[P + k];
  }
}

// Σ a_k b_k in double over four independent partial sums (a fixed order).
template <typename T>
double dot(const T* a, const T* b, int64_t n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t k = 0;
  for (; k + 4 <= n; k += 4) {
    s0 += double(a[k]) * double(b[k]);
    s1 += double(a[k + 1]) * double(b[k + 1]);
    s2 += double(a[k + 2]) * double(b[k + 2]);
    s3 += double(a[k + 3]) * double(b[k + 3]);
  }
  for (; k < n; ++k) s0 += double(a[k]) * double(b[k]);
  return (s0 + s1) + (s2 + s3);
}

// q = A p = D ⊙ (p − Σ_j W_j S_j p) over p's padded interior; returns p·q.
template <typename T>
double apply_a(T* __restrict q, const T* __restrict p, const T* __restrict w, const T* __restrict d,
               const FlatLayout& L) {
  const int64_t run = L.ny * L.nz, n = L.nx * run, sx = L.plane(), sy = L.nz;
  double pq = 0;
  for (int64_t x = 0; x < L.nx; ++x) {
    const T* __restrict pp = p + L.interior(x);
    const int64_t o = x * run;
    const T* __restrict w0 = w + o;
    const T* __restrict w1 = w0 + n;
    const T* __restrict w2 = w1 + n;
    const T* __restrict w3 = w2 + n;
    const T* __restrict w4 = w3 + n;
    const T* __restrict w5 = w4 + n;
    const T* __restrict dd = d + o;
    T* __restrict qq = q + o;
    for (int64_t k = 0; k < run; ++k) {
      T s = w0[k] * pp[k - sx];
      s += w1[k] * pp[k + sx];
      s += w2[k] * pp[k - sy];
      s += w3[k] * pp[k + sy];
      s += w4[k] * pp[k - 1];
      s += w5[k] * pp[k + 1];
      qq[k] = dd[k] * (pp[k] - s);
    }
    pq += dot(pp, qq, run);
  }
  return pq;
}

fk::Tensor contiguous_as(const fk::Tensor& t, fk::DType dt) {
  fk::autograd::NoGradGuard ng;
  fk::Tensor r = t.dtype() == dt ? t.detach() : t.detach().to(dt);
  return r.is_contiguous() ? r : r.contiguous();
}

// The buffers of one solve: the system (W, D, D⁻¹), the iterate x, the
// residual r, z = D⁻¹ r, q = A p and the right-hand side on the grid, and the
// search direction p on the padded grid.
template <typename T>
struct CgBuffers {
  const FlatLayout& L;
  const T *w, *d, *di;
  T *x, *r, *z, *q, *rhs, *p;
};

// p's interior <- the grid buffer g; the halo refilled.
template <typename T>
void load_padded(T* p, const T* g, const FlatLayout& L) {
  const int64_t run = L.ny * L.nz;
  for (int64_t xi = 0; xi < L.nx; ++xi)
    for (int64_t k = 0; k < run; ++k) p[L.interior(xi) + k] = g[xi * run + k];
  refill(p, L);
}

// rhs = b + s (s on the front face, may be null); r = rhs − A x; z = D⁻¹ r;
// p = z. Returns (rhs·rhs, r·z).
template <typename T>
std::pair<double, double> cg_start(const CgBuffers<T>& c, const T* b, const T* s) {
  fk::profile::OpScope scope("heat_cg_start");
  const FlatLayout& L = c.L;
  const int64_t n = L.nx * L.ny * L.nz;
  double bb = 0, rz = 0;
  for (int64_t i = 0; i < n; ++i) c.rhs[i] = b[i];
  if (s)
    for (int64_t r0 = 0; r0 < L.nx * L.ny; ++r0) c.rhs[r0 * L.nz] += s[r0];
  for (int64_t i = 0; i < n; ++i) bb += double(c.rhs[i]) * double(c.rhs[i]);
  load_padded(c.p, c.x, L);
  apply_a(c.q, c.p, c.w, c.d, L);
  for (int64_t i = 0; i < n; ++i) {
    c.r[i] = c.rhs[i] - c.q[i];
    c.z[i] = c.di[i] * c.r[i];
    rz += double(c.r[i]) * double(c.z[i]);
  }
  load_padded(c.p, c.z, L);
  return {bb, rz};
}

// x += a p; r −= a q; z = D⁻¹ r. Returns (r·z, r·r) of the new residual.
template <typename T>
std::pair<double, double> cg_update(const CgBuffers<T>& c, T a) {
  fk::profile::OpScope scope("heat_cg_update");
  const FlatLayout& L = c.L;
  const int64_t run = L.ny * L.nz;
  double rz_next = 0, rr = 0;
  for (int64_t xi = 0; xi < L.nx; ++xi) {
    const T* __restrict pp = c.p + L.interior(xi);
    const int64_t o = xi * run;
    T* __restrict xo = c.x + o;
    T* __restrict ro = c.r + o;
    T* __restrict zo = c.z + o;
    const T* __restrict qo = c.q + o;
    const T* __restrict dio = c.di + o;
    for (int64_t k = 0; k < run; ++k) {
      xo[k] += a * pp[k];
      ro[k] -= a * qo[k];
      zo[k] = dio[k] * ro[k];
    }
    rz_next += dot(ro, zo, run);
    rr += dot(ro, ro, run);
  }
  return {rz_next, rr};
}

// p = z + beta p; the halo refilled.
template <typename T>
void cg_direction(const CgBuffers<T>& c, T beta) {
  fk::profile::OpScope scope("heat_cg_direction");
  const FlatLayout& L = c.L;
  const int64_t run = L.ny * L.nz;
  for (int64_t xi = 0; xi < L.nx; ++xi) {
    T* pp = c.p + L.interior(xi);
    const T* zz = c.z + xi * run;
    for (int64_t k = 0; k < run; ++k) pp[k] = zz[k] + beta * pp[k];
  }
  refill(c.p, L);
}

// Jacobi-preconditioned CG from c.x; returns the iterations run.
template <typename T>
int64_t run_cg(const CgBuffers<T>& c, const T* b, const T* s, double tol, int64_t max_iter,
               int64_t check_every) {
  auto [bb, rz] = cg_start(c, b, s);
  const double b_norm = std::sqrt(bb);
  tol = cg_tolerance_floor(tol, fk::dtype_of<T>());
  if (b_norm == 0) {  // A is SPD: A x = 0 has the solution 0
    const int64_t n = c.L.nx * c.L.ny * c.L.nz;
    for (int64_t i = 0; i < n; ++i) c.x[i] = T(0);
    return 0;
  }
  int64_t it = 0;
  while (it < max_iter) {
    ++it;
    double pq;
    {
      fk::profile::OpScope scope("heat_cg_apply");
      pq = apply_a(c.q, c.p, c.w, c.d, c.L);
    }
    // Between checks (check_every > 1) CG runs on past convergence until
    // r.z and p.q underflow to 0, and 0 / 0 made the field NaN: x has
    // converged there (a NaN still spreads).
    if (pq == 0 || rz == 0) break;
    const auto [rz_next, rr] = cg_update(c, T(rz / pq));
    if ((it % check_every == 0 || it == max_iter) && std::sqrt(rr) <= tol * b_norm) break;
    cg_direction(c, T(rz_next / rz));
    rz = rz_next;
  }
  return it;
}

}  // namespace

FlatCG::FlatCG(HeatSystem system, const StepGeometry& g)
    : system_(std::move(system)), g_(g), layout_{g.nx, g.ny, g.nz} {
  const fk::DType dt = system_.weights.dtype();
  FK_CHECK(system_.weights.is_contiguous() && system_.diag.is_contiguous() &&
               system_.inv_diag.is_contiguous() && system_.diag.dtype() == dt,
           "nefi::heat::FlatCG", "a contiguous system of one dtype", system_.weights.shape().str());
  p_ = fk::zeros({layout_.size()}, {dt});
  r_ = fk::empty(g.shape(), {dt});
  z_ = fk::empty(g.shape(), {dt});
  q_ = fk::empty(g.shape(), {dt});
  rhs_ = fk::empty(g.shape(), {dt});
}

int64_t FlatCG::solve(fk::Tensor& x, const fk::Tensor& b_in, const fk::Tensor& surface, double tol,
                      int64_t max_iter, int64_t check_every) {
  const fk::DType dt = rhs_.dtype();
  FK_CHECK(x.is_contiguous() && x.dtype() == dt && x.numel() == g_.numel(),
           "nefi::heat::FlatCG::solve", "a contiguous grid x of the system's dtype",
           x.shape().str());
  const fk::Tensor b = contiguous_as(b_in, dt);
  const fk::Tensor s = surface.defined() ? contiguous_as(surface, dt) : fk::Tensor();
  int64_t it = 0;
  dispatch_real(dt, [&](auto tag) {
    using T = decltype(tag);
    const CgBuffers<T> c{layout_,
                         system_.weights.data<T>(),
                         system_.diag.data<T>(),
                         system_.inv_diag.data<T>(),
                         x.data<T>(),
                         r_.data<T>(),
                         z_.data<T>(),
                         q_.data<T>(),
                         rhs_.data<T>(),
                         p_.data<T>()};
    it = run_cg(c, b.data<T>(), s.defined() ? s.data<T>() : nullptr, tol, max_iter, check_every);
  });
  x.bump_version();
  return it;
}

}  // namespace nefi::heat
