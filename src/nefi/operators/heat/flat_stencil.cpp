#include "nefi/operators/heat/flat_stencil.h"

#include <cmath>
#include <cstring>

#include "fk/autograd.h"
#include "fk/cpu_isa.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/parallel.h"
#include "fk/profile.h"
#include "nefi/real_dispatch.h"

namespace nefi::heat {
namespace {

// Cells per thread below which a sweep stays on the calling thread: a sweep
// over 32k cells takes ~10 µs, so waking a team for less does not pay.
constexpr int64_t kSweepGrain = 32768;

// One contiguous run of n interior cells: s = c + Σ_j W_j x[k + off_j] in the
// order −x, +x, −y, +y, −z, +z (the roll reference's addcmul chain), then
// either out = s or the Chebyshev step out = out + ω (s − out).
template <typename T, bool kLerp, bool kRhs>
[[gnu::always_inline]] inline void sweep_run(T* __restrict out, const T* __restrict in,
                                             const T* __restrict c, const T* __restrict w,
                                             int64_t wn, int64_t n, int64_t sx, int64_t sy,
                                             T omega) {
  const T* __restrict w0 = w;
  const T* __restrict w1 = w + wn;
  const T* __restrict w2 = w + 2 * wn;
  const T* __restrict w3 = w + 3 * wn;
  const T* __restrict w4 = w + 4 * wn;
  const T* __restrict w5 = w + 5 * wn;
  for (int64_t k = 0; k < n; ++k) {
    T s;
    if constexpr (kRhs)
      s = c[k] + w0[k] * in[k - sx];
    else
      s = w0[k] * in[k - sx];
    s += w1[k] * in[k + sx];
    s += w2[k] * in[k - sy];
    s += w3[k] * in[k + sy];
    s += w4[k] * in[k - 1];
    s += w5[k] * in[k + 1];
    if constexpr (kLerp)
      out[k] = out[k] + omega * (s - out[k]);
    else
      out[k] = s;
  }
}

template <typename T, bool kLerp, bool kRhs>
void sweep_base(T* out, const T* in, const T* c, const T* w, int64_t wn, int64_t n, int64_t sx,
                int64_t sy, T omega) {
  sweep_run<T, kLerp, kRhs>(out, in, c, w, wn, n, sx, sy, omega);
}

template <typename T, bool kLerp, bool kRhs>
__attribute__((target("avx2,fma"))) void sweep_avx2(T* out, const T* in, const T* c, const T* w,
                                                    int64_t wn, int64_t n, int64_t sx, int64_t sy,
                                                    T omega) {
  sweep_run<T, kLerp, kRhs>(out, in, c, w, wn, n, sx, sy, omega);
}

bool has_avx2() {
  return fk::cpu_isa() >= fk::CpuIsa::Avx2;
}

template <typename T, bool kLerp, bool kRhs>
void sweep_rows(T* out, const T* in, const T* c, const T* w, int64_t wn, int64_t n, int64_t sx,
                int64_t sy, T omega) {
  if (has_avx2())
    sweep_avx2<T, kLerp, kRhs>(out, in, c, w, wn, n, sx, sy, omega);
  else
    sweep_base<T, kLerp, kRhs>(out, in, c, w, wn, n, sx, sy, omega);
}

// The symmetric (face-weight) sweep of FlatSweeper over one run: every pointer
// is at the run's first padded cell, and the −x/−y/−z face of a cell is the
// +x/+y/+z face of the cell one offset back.
template <typename T, bool kLerp>
[[gnu::always_inline]] inline void face_sweep_run(T* __restrict out, const T* __restrict in,
                                                  const T* __restrict c, const T* __restrict fx,
                                                  const T* __restrict fy, const T* __restrict fz,
                                                  int64_t n, int64_t sx, int64_t sy, T omega) {
  for (int64_t k = 0; k < n; ++k) {
    T s = c[k] + fx[k - sx] * in[k - sx];
    s += fx[k] * in[k + sx];
    s += fy[k - sy] * in[k - sy];
    s += fy[k] * in[k + sy];
    s += fz[k - 1] * in[k - 1];
    s += fz[k] * in[k + 1];
    if constexpr (kLerp)
      out[k] = out[k] + omega * (s - out[k]);
    else
      out[k] = s;
  }
}

template <typename T, bool kLerp>
void face_sweep_base(T* out, const T* in, const T* c, const T* fx, const T* fy, const T* fz,
                     int64_t n, int64_t sx, int64_t sy, T omega) {
  face_sweep_run<T, kLerp>(out, in, c, fx, fy, fz, n, sx, sy, omega);
}

template <typename T, bool kLerp>
__attribute__((target("avx2,fma"))) void face_sweep_avx2(T* out, const T* in, const T* c,
                                                         const T* fx, const T* fy, const T* fz,
                                                         int64_t n, int64_t sx, int64_t sy,
                                                         T omega) {
  face_sweep_run<T, kLerp>(out, in, c, fx, fy, fz, n, sx, sy, omega);
}

template <typename T, bool kLerp>
void face_sweep(T* out, const T* in, const T* c, const T* fx, const T* fy, const T* fz, int64_t n,
                int64_t sx, int64_t sy, T omega) {
  if (has_avx2())
    face_sweep_avx2<T, kLerp>(out, in, c, fx, fy, fz, n, sx, sy, omega);
  else
    face_sweep_base<T, kLerp>(out, in, c, fx, fy, fz, n, sx, sy, omega);
}

template <typename T>
void refill_rows(T* pad, const FlatLayout& L, int64_t x) {
  // Rows are short (nz cells): a plain loop beats two library calls.
  T* __restrict lo = pad + (x + 1) * L.plane();
  T* __restrict hi = lo + (L.ny + 1) * L.nz;
  const T* __restrict last = lo + L.ny * L.nz;
  const T* __restrict first = lo + L.nz;
  for (int64_t z = 0; z < L.nz; ++z) {
    lo[z] = last[z];
    hi[z] = first[z];
  }
}

template <typename T>
void refill_planes(T* pad, const FlatLayout& L) {
  std::memcpy(pad, pad + L.nx * L.plane(), L.plane() * sizeof(T));
  std::memcpy(pad + (L.nx + 1) * L.plane(), pad + L.plane(), L.plane() * sizeof(T));
}

int64_t plane_grain(const FlatLayout& L) {
  return std::max<int64_t>(1, kSweepGrain / (L.ny * L.nz));
}

// x (compact) -> padded buffer with its ghosts.
template <typename T>
void pack(T* pad, const T* x, const FlatLayout& L) {
  const int64_t run = L.ny * L.nz;
  for (int64_t i = 0; i < L.nx; ++i) {
    std::memcpy(pad + L.interior(i), x + i * run, run * sizeof(T));
    refill_rows(pad, L, i);
  }
  refill_planes(pad, L);
}

// One sweep over every x-plane: `out_at(x)` is where plane x's ny·nz results go.
template <typename T, bool kLerp, bool kRhs, typename OutAt>
void sweep_planes(const FlatLayout& L, const T* in_pad, const T* c, const T* w, T omega,
                  OutAt out_at, T* refill_pad) {
  const int64_t run = L.ny * L.nz, wn = L.nx * run;
  fk::parallel_for(0, L.nx, plane_grain(L), [&](int64_t lo, int64_t hi) {
    for (int64_t x = lo; x < hi; ++x) {
      sweep_rows<T, kLerp, kRhs>(out_at(x), in_pad + L.interior(x), c ? c + x * run : nullptr,
                                 w + x * run, wn, run, L.plane(), L.nz, omega);
      if (refill_pad) refill_rows(refill_pad, L, x);
    }
  });
  if (refill_pad) refill_planes(refill_pad, L);
}

void check_system(const HeatSystem& s, const StepGeometry& g) {
  FK_CHECK(s.weights.defined() && s.weights.is_contiguous() &&
               s.weights.shape() == fk::Dims({kNeighbours, g.nx, g.ny, g.nz}) &&
               s.inv_diag.is_contiguous() && s.inv_diag.shape() == g.shape() &&
               s.inv_diag.dtype() == s.weights.dtype(),
           "nefi::heat::FlatSweeper", "contiguous weights (6, *grid) and inv_diag (*grid)",
           s.weights.defined() ? s.weights.shape().str() : "undefined weights");
}

fk::Tensor contiguous_as(const fk::Tensor& t, fk::DType dt) {
  fk::autograd::NoGradGuard ng;
  fk::Tensor r = t.dtype() == dt ? t.detach() : t.detach().to(dt);
  return r.is_contiguous() ? r : r.contiguous();
}

template <typename T>
void refill_all(T* pad, const FlatLayout& L) {
  for (int64_t x = 0; x < L.nx; ++x) refill_rows(pad, L, x);
  refill_planes(pad, L);
}

}  // namespace

SymmetricFaces symmetric_faces(const HeatSystem& system, const StepGeometry& g) {
  check_system(system, g);
  fk::profile::OpScope scope("heat_symmetric_faces");
  const fk::DType dt = system.weights.dtype();
  SymmetricFaces r{fk::empty({3, g.nx, g.ny, g.nz}, {dt}), fk::empty({2, g.nx, g.ny, g.nz}, {dt})};
  dispatch_real(dt, [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = g.numel(), nx = g.nx, ny = g.ny, nz = g.nz;
    const T* w = system.weights.data<T>();
    const fk::Tensor diag = contiguous_as(system.diag, dt);
    const T* dd = diag.data<T>();
    T* sd = r.root_d.data<T>();
    T* isd = sd + n;
    for (int64_t i = 0; i < n; ++i) {
      sd[i] = std::sqrt(dd[i]);
      isd[i] = T(1) / sd[i];
    }
    T* fx = r.faces.data<T>();
    T* fy = fx + n;
    T* fz = fy + n;
    // Ŵ_f = W_j[i] √(D_i / D_j) = Δt a_f / √(D_i D_j) for the + face of cell i.
    for (int64_t x = 0; x < nx; ++x) {
      const int64_t xp = (x + 1) % nx;
      for (int64_t y = 0; y < ny; ++y) {
        const int64_t yp = (y + 1) % ny;
        for (int64_t z = 0; z < nz; ++z) {
          const int64_t i = (x * ny + y) * nz + z;
          fx[i] = w[n + i] * sd[i] * isd[(xp * ny + y) * nz + z];
          fy[i] = w[3 * n + i] * sd[i] * isd[(x * ny + yp) * nz + z];
          fz[i] = z + 1 < nz ? w[5 * n + i] * sd[i] * isd[i + 1] : T(0);
        }
      }
    }
  });
  return r;
}

FlatSweeper::FlatSweeper(HeatSystem system, const StepGeometry& g)
    : system_(std::move(system)), g_(g), layout_{g.nx, g.ny, g.nz} {
  const SymmetricFaces sym = symmetric_faces(system_, g_);
  fk::profile::OpScope scope("heat_flat_faces");
  const fk::DType dt = system_.weights.dtype();
  const int64_t P = layout_.size();
  for (auto& b : buf_) b = fk::zeros({P}, {dt});
  rhs_ = fk::zeros({P}, {dt});
  faces_ = fk::empty({3, P}, {dt});
  root_d_ = sym.root_d;
  dispatch_real(dt, [&](auto tag) {
    using T = decltype(tag);
    for (int a = 0; a < 3; ++a)
      pack(faces_.data<T>() + a * P, sym.faces.data<T>() + a * g.numel(), layout_);
  });
}

void FlatSweeper::load(const fk::Tensor& x_in) {
  fk::profile::OpScope scope("heat_flat_load");
  const fk::Tensor x = contiguous_as(x_in, rhs_.dtype());
  FK_CHECK(x.numel() == g_.numel(), "nefi::heat::FlatSweeper::load", "a grid " + g_.shape().str(),
           x.shape().str());
  dispatch_real(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* y = buf_[cur_].data<T>();
    const T* src = x.data<T>();
    const T* sd = root_d_.data<T>();
    const int64_t run = g_.ny * g_.nz;
    for (int64_t i = 0; i < g_.nx; ++i) {
      T* __restrict o = y + layout_.interior(i);
      const T* __restrict a = src + i * run;
      const T* __restrict r = sd + i * run;
      for (int64_t k = 0; k < run; ++k) o[k] = r[k] * a[k];
    }
    refill_all(y, layout_);
  });
  buf_[cur_].bump_version();
}

void FlatSweeper::store(fk::Tensor& x) const {
  fk::profile::OpScope scope("heat_flat_store");
  FK_CHECK(x.is_contiguous() && x.numel() == g_.numel() && x.dtype() == rhs_.dtype(),
           "nefi::heat::FlatSweeper::store", "a contiguous grid of the system's dtype",
           x.shape().str());
  dispatch_real(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* y = buf_[cur_].data<T>();
    const T* isd = root_d_.data<T>() + g_.numel();
    T* dst = x.data<T>();
    const int64_t run = g_.ny * g_.nz;
    for (int64_t i = 0; i < g_.nx; ++i) {
      const T* __restrict a = y + layout_.interior(i);
      const T* __restrict r = isd + i * run;
      T* __restrict o = dst + i * run;
      for (int64_t k = 0; k < run; ++k) o[k] = r[k] * a[k];
    }
  });
  x.bump_version();
}

void FlatSweeper::store_and_set_rhs(fk::Tensor& x) {
  fk::profile::OpScope scope("heat_flat_store_rhs");
  FK_CHECK(x.is_contiguous() && x.numel() == g_.numel() && x.dtype() == rhs_.dtype(),
           "nefi::heat::FlatSweeper::store_and_set_rhs", "a contiguous grid of the system's dtype",
           x.shape().str());
  dispatch_real(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* y = buf_[cur_].data<T>();
    T* c = rhs_.data<T>();
    const T* isd = root_d_.data<T>() + g_.numel();
    T* dst = x.data<T>();
    const int64_t run = g_.ny * g_.nz;
    for (int64_t i = 0; i < g_.nx; ++i) {
      const T* __restrict a = y + layout_.interior(i);
      T* __restrict cc = c + layout_.interior(i);
      const T* __restrict r = isd + i * run;
      T* __restrict o = dst + i * run;
      for (int64_t k = 0; k < run; ++k) {
        o[k] = r[k] * a[k];
        cc[k] = r[k] * o[k];
      }
    }
  });
  x.bump_version();
  rhs_.bump_version();
}

void FlatSweeper::set_rhs(const fk::Tensor& b_in, const fk::Tensor& surface) {
  fk::profile::OpScope scope("heat_flat_rhs");
  const fk::DType dt = rhs_.dtype();
  const fk::Tensor b = contiguous_as(b_in, dt);
  FK_CHECK(b.numel() == g_.numel(), "nefi::heat::FlatSweeper::set_rhs",
           "a grid " + g_.shape().str(), b.shape().str());
  dispatch_real(dt, [&](auto tag) {
    using T = decltype(tag);
    const T* bb = b.data<T>();
    const T* isd = root_d_.data<T>() + g_.numel();
    T* c = rhs_.data<T>();
    const int64_t run = g_.ny * g_.nz;
    for (int64_t i = 0; i < g_.nx; ++i) {
      const T* __restrict a = bb + i * run;
      const T* __restrict r = isd + i * run;
      T* __restrict cc = c + layout_.interior(i);
      for (int64_t k = 0; k < run; ++k) cc[k] = r[k] * a[k];
    }
  });
  rhs_.bump_version();
  if (surface.defined()) add_surface(surface);
}

void FlatSweeper::add_surface(const fk::Tensor& surface) {
  fk::profile::OpScope scope("heat_flat_add_surface");
  const fk::DType dt = rhs_.dtype();
  const fk::Tensor s = contiguous_as(surface, dt);
  FK_CHECK(s.numel() == g_.nx * g_.ny, "nefi::heat::FlatSweeper::add_surface", "a surface (nx, ny)",
           s.shape().str());
  dispatch_real(dt, [&](auto tag) {
    using T = decltype(tag);
    const T* ss = s.data<T>();
    const T* isd = root_d_.data<T>() + g_.numel();
    T* c = rhs_.data<T>();
    for (int64_t x = 0; x < g_.nx; ++x)
      for (int64_t y = 0; y < g_.ny; ++y) {
        const int64_t r = x * g_.ny + y;
        c[layout_.interior(x) + y * g_.nz] += isd[r * g_.nz] * ss[r];
      }
  });
  rhs_.bump_version();
}

void FlatSweeper::sweep(bool lerp, const void* omega) {
  fk::profile::OpScope scope(lerp ? "heat_flat_chebyshev_sweep" : "heat_flat_sweep");
  const int next = 1 - cur_;
  dispatch_real(rhs_.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const FlatLayout& L = layout_;
    const int64_t P = L.size(), run = L.ny * L.nz;
    const T* in = buf_[cur_].data<T>();
    T* out = buf_[next].data<T>();
    const T* c = rhs_.data<T>();
    const T* fx = faces_.data<T>();
    const T w = lerp ? *static_cast<const T*>(omega) : T(1);
    fk::parallel_for(0, L.nx, plane_grain(L), [&](int64_t lo, int64_t hi) {
      // Planes lo..hi-1 as one run: the ghost rows between two planes are
      // swept too (finite garbage: every buffer's ghosts are finite) and then
      // refilled, which costs 2 / (ny + 2) more cells but one call per chunk.
      const int64_t p = L.interior(lo), n = (hi - 1 - lo) * L.plane() + run;
      if (lerp)
        face_sweep<T, true>(out + p, in + p, c + p, fx + p, fx + P + p, fx + 2 * P + p, n,
                            L.plane(), L.nz, w);
      else
        face_sweep<T, false>(out + p, in + p, c + p, fx + p, fx + P + p, fx + 2 * P + p, n,
                             L.plane(), L.nz, w);
      for (int64_t x = lo; x < hi; ++x) refill_rows(out, L, x);
    });
    refill_planes(out, L);
  });
  buf_[next].bump_version();
  cur_ = next;
}

void FlatSweeper::jacobi(int64_t iters) {
  for (int64_t k = 0; k < iters; ++k) sweep(false, nullptr);
}

void FlatSweeper::chebyshev(const fk::Tensor& omega) {
  FK_CHECK(omega.dim() == 1 && omega.is_contiguous() && omega.dtype() == rhs_.dtype(),
           "nefi::heat::FlatSweeper::chebyshev", "contiguous weights (K,) of the system's dtype",
           omega.shape().str());
  const char* base = static_cast<const char*>(omega.data_ptr());
  // Sweep 0 is plain Jacobi (ω₀ = 1); the others step from the iterate before.
  for (int64_t k = 0; k < omega.size(0); ++k) sweep(k > 0, base + k * omega.itemsize());
}

// --- the differentiable flat sweep on compact grids -------------------------

namespace {

struct FlatSweepBackward : fk::autograd::Node {
  fk::autograd::SavedTensor x, weights;
  StepGeometry g;
  bool has_c = false;
  const char* name() const override { return "FlatSweepBackward"; }
  void for_each_saved(const std::function<void(fk::autograd::SavedTensor&)>& fn) override {
    fn(x);
    fn(weights);
  }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::profile::OpScope scope("heat_flat_sweep_backward");
    const fk::Tensor& xt = x.unpack(name());
    const fk::Tensor& wt = weights.unpack(name());
    const fk::DType dt = xt.dtype();
    const fk::Tensor gy = contiguous_as(grads[0], dt);
    const int ix = 0, ic = has_c ? 1 : -1, iw = has_c ? 2 : 1;
    std::vector<fk::Tensor> res(next.size());
    if (ic >= 0 && next[ic].fn) res[ic] = gy;
    const FlatLayout L{g.nx, g.ny, g.nz};
    const int64_t n = g.numel(), nx = g.nx, ny = g.ny, nz = g.nz;
    dispatch_real(dt, [&](auto tag) {
      using T = decltype(tag);
      const T* gp = gy.data<T>();
      const T* w = wt.data<T>();
      if (next[iw].fn) {
        // dL/dW_j = g ⊙ S_j x.
        fk::Tensor pad = fk::empty({L.size()}, {dt});
        pack(pad.data<T>(), xt.data<T>(), L);
        const T* p = pad.data<T>();
        fk::Tensor gw = fk::empty(wt.shape(), {dt});
        T* o = gw.data<T>();
        const int64_t off[kNeighbours] = {-L.plane(), L.plane(), -nz, nz, -1, 1};
        for (int64_t xx = 0; xx < nx; ++xx)
          for (int j = 0; j < kNeighbours; ++j) {
            const T* in = p + L.interior(xx) + off[j];
            T* oj = o + j * n + xx * ny * nz;
            const T* gj = gp + xx * ny * nz;
            for (int64_t k = 0; k < ny * nz; ++k) oj[k] = gj[k] * in[k];
          }
        res[iw] = gw;
      }
      if (next[ix].fn) {
        // dL/dx = Σ_j S_jᵀ (W_j ⊙ g): cell i receives from the cells that read it.
        fk::Tensor gx = fk::empty(g.shape(), {dt});
        T* o = gx.data<T>();
        const T* wxm = w;
        const T* wxp = w + n;
        const T* wym = w + 2 * n;
        const T* wyp = w + 3 * n;
        const T* wzm = w + 4 * n;
        const T* wzp = w + 5 * n;
        for (int64_t xx = 0; xx < nx; ++xx) {
          const int64_t xm = (xx + nx - 1) % nx, xp = (xx + 1) % nx;
          for (int64_t y = 0; y < ny; ++y) {
            const int64_t ym = (y + ny - 1) % ny, yp = (y + 1) % ny;
            const int64_t i = (xx * ny + y) * nz;
            const int64_t jxm = (xm * ny + y) * nz, jxp = (xp * ny + y) * nz;
            const int64_t jym = (xx * ny + ym) * nz, jyp = (xx * ny + yp) * nz;
            for (int64_t z = 0; z < nz; ++z) {
              T s = wxp[jxm + z] * gp[jxm + z] + wxm[jxp + z] * gp[jxp + z] +
                    wyp[jym + z] * gp[jym + z] + wym[jyp + z] * gp[jyp + z];
              if (z > 0) s += wzp[i + z - 1] * gp[i + z - 1];
              if (z + 1 < nz) s += wzm[i + z + 1] * gp[i + z + 1];
              o[i + z] = s;
            }
          }
        }
        res[ix] = gx;
      }
    });
    return res;
  }
};

}  // namespace

fk::Tensor flat_sweep(const fk::Tensor& x_in, const fk::Tensor& c_in, const fk::Tensor& w_in,
                      const StepGeometry& g) {
  fk::profile::OpScope scope("heat_flat_sweep");
  const fk::DType dt = w_in.dtype();
  FK_CHECK(w_in.shape() == fk::Dims({kNeighbours, g.nx, g.ny, g.nz}) && x_in.shape() == g.shape() &&
               x_in.dtype() == dt &&
               (!c_in.defined() || (c_in.shape() == g.shape() && c_in.dtype() == dt)),
           "nefi::heat::flat_sweep",
           "x, c " + g.shape().str() + " and weights (6, *grid) of one dtype",
           x_in.shape().str() + ", " + w_in.shape().str());
  const fk::Tensor x = contiguous_as(x_in, dt), w = contiguous_as(w_in, dt);
  const fk::Tensor c = c_in.defined() ? contiguous_as(c_in, dt) : fk::Tensor();
  const FlatLayout L{g.nx, g.ny, g.nz};
  fk::Tensor y = fk::empty(g.shape(), {dt});
  dispatch_real(dt, [&](auto tag) {
    using T = decltype(tag);
    fk::Tensor pad = fk::empty({L.size()}, {dt});
    pack(pad.data<T>(), x.data<T>(), L);
    T* out = y.data<T>();
    const int64_t run = g.ny * g.nz;
    auto out_at = [&](int64_t xx) { return out + xx * run; };
    if (c.defined())
      sweep_planes<T, false, true>(L, pad.data<T>(), c.data<T>(), w.data<T>(), T(1), out_at,
                                   static_cast<T*>(nullptr));
    else
      sweep_planes<T, false, false>(L, pad.data<T>(), static_cast<const T*>(nullptr), w.data<T>(),
                                    T(1), out_at, static_cast<T*>(nullptr));
  });
  const bool grad = c_in.defined() ? fk::autograd::needs_grad(x_in, c_in, w_in)
                                   : fk::autograd::needs_grad(x_in, w_in);
  if (grad) {
    auto node = std::make_shared<FlatSweepBackward>();
    node->x = x;
    node->weights = w;
    node->g = g;
    node->has_c = c_in.defined();
    if (c_in.defined())
      fk::autograd::record(node, {x_in, c_in, w_in}, y);
    else
      fk::autograd::record(node, {x_in, w_in}, y);
  }
  return y;
}

}  // namespace nefi::heat
