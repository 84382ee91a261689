#include "nefi/operators/heat/flat_cg.h"

#include <cmath>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"

namespace nefi::heat {
namespace {

template <typename F>
void dispatch(fk::DType dt, F&& f) {
  if (dt == fk::DType::F64)
    f(double{});
  else
    f(float{});
}

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
  dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    const FlatLayout& L = layout_;
    const int64_t n = g_.numel(), run = L.ny * L.nz;
    const T* w = system_.weights.data<T>();
    const T* d = system_.diag.data<T>();
    const T* di = system_.inv_diag.data<T>();
    T* xx = x.data<T>();
    T* r = r_.data<T>();
    T* z = z_.data<T>();
    T* q = q_.data<T>();
    T* rhs = rhs_.data<T>();
    T* p = p_.data<T>();
    double bb = 0, rz = 0;
    {
      // rhs = b + s; r = rhs − A x; z = D⁻¹ r; p = z.
      fk::profile::OpScope scope("heat_cg_start");
      const T* bp = b.data<T>();
      for (int64_t i = 0; i < n; ++i) rhs[i] = bp[i];
      if (s.defined()) {
        const T* sp = s.data<T>();
        for (int64_t r0 = 0; r0 < L.nx * L.ny; ++r0) rhs[r0 * L.nz] += sp[r0];
      }
      for (int64_t i = 0; i < n; ++i) bb += double(rhs[i]) * double(rhs[i]);
      for (int64_t xi = 0; xi < L.nx; ++xi)
        for (int64_t k = 0; k < run; ++k) p[L.interior(xi) + k] = xx[xi * run + k];
      refill(p, L);
      apply_a(q, p, w, d, L);
      for (int64_t i = 0; i < n; ++i) {
        r[i] = rhs[i] - q[i];
        z[i] = di[i] * r[i];
        rz += double(r[i]) * double(z[i]);
      }
      for (int64_t xi = 0; xi < L.nx; ++xi)
        for (int64_t k = 0; k < run; ++k) p[L.interior(xi) + k] = z[xi * run + k];
      refill(p, L);
    }
    const double b_norm = std::sqrt(bb);
    if (b_norm == 0) {  // A is SPD: A x = 0 has the solution 0
      for (int64_t i = 0; i < n; ++i) xx[i] = T(0);
      return;
    }
    while (it < max_iter) {
      ++it;
      double pq;
      {
        fk::profile::OpScope scope("heat_cg_apply");
        pq = apply_a(q, p, w, d, L);
      }
      const T a = T(rz / pq);
      double rz_next = 0, rr = 0;
      {
        fk::profile::OpScope scope("heat_cg_update");
        for (int64_t xi = 0; xi < L.nx; ++xi) {
          const T* __restrict pp = p + L.interior(xi);
          const int64_t o = xi * run;
          T* __restrict xo = xx + o;
          T* __restrict ro = r + o;
          T* __restrict zo = z + o;
          const T* __restrict qo = q + o;
          const T* __restrict dio = di + o;
          for (int64_t k = 0; k < run; ++k) {
            xo[k] += a * pp[k];
            ro[k] -= a * qo[k];
            zo[k] = dio[k] * ro[k];
          }
          rz_next += dot(ro, zo, run);
          rr += dot(ro, ro, run);
        }
      }
      if ((it % check_every == 0 || it == max_iter) && std::sqrt(rr) <= tol * b_norm) break;
      {
        fk::profile::OpScope scope("heat_cg_direction");
        const T beta = T(rz_next / rz);
        for (int64_t xi = 0; xi < L.nx; ++xi) {
          T* pp = p + L.interior(xi);
          const T* zz = z + xi * run;
          for (int64_t k = 0; k < run; ++k) pp[k] = zz[k] + beta * pp[k];
        }
        refill(p, L);
      }
      rz = rz_next;
    }
  });
  x.bump_version();
  return it;
}

}  // namespace nefi::heat
