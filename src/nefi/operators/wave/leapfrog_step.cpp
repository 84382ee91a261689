// The hot loops of leapfrog.h: one forward step and its adjoint, compiled
// for each rank (ND active axes), Laplacian half-width (HALF = order / 2),
// layer (PML or not) and, for the adjoint, whether the velocity gradient is
// accumulated, so the stencil is unrolled and the rows vectorise. Every
// variant visits the cells in the same order with the same arithmetic; the
// AVX2 copies may contract a multiply and an add into one FMA (the generic
// copy cannot), so FK_CPU_ISA=generic differs from them in the last bits
// (~1e-14 relative in f64 over 50 steps).
#include <array>
#include <vector>

#include "fk/cpu_isa.h"
#include "nefi/operators/wave/leapfrog.h"

namespace nefi::wave {
namespace {

template <typename T, int ND, int HALF>
struct FixedLaplacian {
  std::array<int64_t, ND> s{};
  std::array<T, ND> w1{}, w2{};
  T w0 = 0;
  explicit FixedLaplacian(const WaveGrid& g) {
    double c0 = 0;
    for (int a = 0; a < ND; ++a) {
      const int d = 3 - ND + a;
      const double ih2 = 1.0 / (g.h[d] * g.h[d]);
      s[a] = g.stride[d];
      c0 += (HALF == 1 ? -2.0 : -2.5) * ih2;
      w1[a] = static_cast<T>((HALF == 1 ? 1.0 : 4.0 / 3.0) * ih2);
      w2[a] = static_cast<T>(-1.0 / 12.0 * ih2);
    }
    w0 = static_cast<T>(c0);
  }
  [[gnu::always_inline]] T at(const T* u, int64_t p) const {
    T v = w0 * u[p];
    for (int a = 0; a < ND; ++a) {
      v += w1[a] * (u[p + s[a]] + u[p - s[a]]);
      if constexpr (HALF == 2) v += w2[a] * (u[p + 2 * s[a]] + u[p - 2 * s[a]]);
    }
    return v;
  }
};

template <typename T, int ND>
struct FaceSet {
  std::array<int64_t, ND> s{};
  std::array<T, ND> ih{}, ih2{};  // 1/h, 1/(2h)
  explicit FaceSet(const WaveGrid& g) {
    for (int a = 0; a < ND; ++a) {
      const int d = 3 - ND + a;
      s[a] = g.stride[d];
      ih[a] = static_cast<T>(1.0 / g.h[d]);
      ih2[a] = static_cast<T>(0.5 / g.h[d]);
    }
  }
};

// What one step reads: the coefficients and, for the PML, each axis's ψ
// (or μ, fbar) with its face coefficients, the active axes first.
template <typename T, int ND>
struct StepArrays {
  const T *q2, *b, *k, *ad;
  std::array<const T*, ND> al{}, be{};
  StepArrays(const StepCoefficients<T>& co) {
    q2 = co.q2.data(), b = co.b.data(), k = co.k.data(), ad = co.a_dt2.data();
    if (!co.pml) return;
    for (int a = 0; a < ND; ++a)
      al[a] = co.alpha[3 - ND + a].data(), be[a] = co.beta[3 - ND + a].data();
  }
};

template <int ND, typename T>
std::array<T*, ND> active(const std::array<T*, 3>& all) {
  std::array<T*, ND> out{};
  for (int a = 0; a < ND; ++a) out[a] = all[3 - ND + a];
  return out;
}

// The rows [lo, hi) of each kernel below are independent of the others'
// order; every buffer a row writes is distinct from those it reads (the
// caller's contract), so the rows vectorise.
template <typename T, int ND, int HALF, bool PML>
[[gnu::always_inline]] inline void step_row(const FixedLaplacian<T, ND, HALF>& lap,
                                            const FaceSet<T, ND>& f, const StepArrays<T, ND>& c,
                                            int64_t lo, int64_t hi, const T* __restrict up,
                                            const T* __restrict u, T* __restrict un,
                                            const std::array<T*, ND>& psi) {
  for (int64_t p = lo; p < hi; ++p) {
    T v = c.q2[p] * u[p] - c.b[p] * up[p] + c.k[p] * lap.at(u, p);
    if constexpr (PML) {
      T div = 0;
      for (int a = 0; a < ND; ++a) div += (psi[a][p] - psi[a][p - f.s[a]]) * f.ih[a];
      v += c.ad[p] * div;
    }
    un[p] = v;
  }
}

template <typename T, int ND>
[[gnu::always_inline]] inline void psi_row(const FaceSet<T, ND>& f, const StepArrays<T, ND>& c,
                                           int64_t lo, int64_t hi, const T* __restrict u,
                                           const T* __restrict un, T* __restrict ps, int a) {
  const int64_t s = f.s[a];
  const T* __restrict al = c.al[a];
  const T* __restrict be = c.be[a];
  for (int64_t p = lo; p < hi; ++p)
    ps[p] = al[p] * ps[p] + be[p] * ((un[p + s] - un[p] + u[p + s] - u[p]) * f.ih2[a]);
}

// kl = k ⊙ λ over every stored cell (k is 0 in the halo): the adjoint's
// Δ_h(k λ) (Δ_h is symmetric) then reads one array per stencil point, not two
// and a product, which made the adjoint step ~1.8x the forward one.
template <typename T>
[[gnu::always_inline]] inline void scaled_copy(int64_t n, const T* __restrict k,
                                               const T* __restrict l, T* __restrict kl) {
  for (int64_t p = 0; p < n; ++p) kl[p] = k[p] * l[p];
}

template <typename T, int ND, int HALF, bool PML, bool GRAD>
[[gnu::always_inline]] inline void adjoint_row(const FixedLaplacian<T, ND, HALF>& lap,
                                               const StepArrays<T, ND>& c, int64_t lo, int64_t hi,
                                               const T* __restrict lc, const T* __restrict kl,
                                               const T* __restrict lp, T* __restrict oc,
                                               T* __restrict op, T* __restrict kb,
                                               const T* __restrict un) {
  for (int64_t p = lo; p < hi; ++p) {
    const T l = lc[p];
    T v = lp[p] + c.q2[p] * l + lap.at(kl, p);
    if constexpr (PML) v += op[p];  // the ψ update's share of ū^n
    oc[p] = v;
    op[p] = -c.b[p] * l;
    if constexpr (GRAD) kb[p] += l * lap.at(un, p);
  }
}

// ψ^{n+1} = alpha ψ^n + beta G (u^{n+1} + u^n)/2 transposed: Gᵀ(beta μ)/2
// into λ and (out_prev as scratch) ū^n.
template <typename T, int ND>
[[gnu::always_inline]] inline void psi_transpose_row(const FaceSet<T, ND>& f,
                                                     const StepArrays<T, ND>& c, int64_t lo,
                                                     int64_t hi, const std::array<T*, ND>& mu,
                                                     T* __restrict lam, T* __restrict scratch) {
  for (int64_t p = lo; p < hi; ++p) {
    T t = 0;
    for (int a = 0; a < ND; ++a) {
      const int64_t s = f.s[a];
      t += (c.be[a][p - s] * mu[a][p - s] - c.be[a][p] * mu[a][p]) * f.ih2[a];
    }
    scratch[p] = t;
    lam[p] += t;
  }
}

template <typename T, int ND, bool GRAD>
[[gnu::always_inline]] inline void mu_decay_row(const FaceSet<T, ND>& f, const StepArrays<T, ND>& c,
                                                int64_t lo, int64_t hi, T* __restrict m,
                                                T* __restrict fb, const T* __restrict u1,
                                                const T* __restrict u0, int a) {
  const int64_t s = f.s[a];
  const T* __restrict al = c.al[a];
  for (int64_t p = lo; p < hi; ++p) {
    if constexpr (GRAD) fb[p] += m[p] * ((u1[p + s] - u1[p] + u0[p + s] - u0[p]) * f.ih2[a]);
    m[p] = al[p] * m[p];
  }
}

// μ^n += Dᵀ(a_dt2 λ) (the divergence of ψ^n in the u update).
template <typename T, int ND>
[[gnu::always_inline]] inline void mu_divergence_row(const FaceSet<T, ND>& f,
                                                     const StepArrays<T, ND>& c, int64_t lo,
                                                     int64_t hi, const T* __restrict lc,
                                                     T* __restrict m, int a) {
  const int64_t s = f.s[a];
  for (int64_t p = lo; p < hi; ++p) m[p] += (c.ad[p] * lc[p] - c.ad[p + s] * lc[p + s]) * f.ih[a];
}

#define NEFI_WAVE_ROWS(body)                                \
  for (int64_t i0 = 0; i0 < g.n[0]; ++i0)                   \
    for (int64_t i1 = 0; i1 < g.n[1]; ++i1) {               \
      const int64_t lo = g.at(i0, i1, 0), hi = lo + g.n[2]; \
      body;                                                 \
    }

template <typename T, int ND, int HALF, bool PML>
[[gnu::always_inline]] inline void step_impl(const WaveGrid& g, const StepCoefficients<T>& co,
                                             const T* up, const T* u, T* un,
                                             const std::array<T*, 3>& psi_all) {
  const FixedLaplacian<T, ND, HALF> lap(g);
  const FaceSet<T, ND> f(g);
  const StepArrays<T, ND> c(co);
  const std::array<T*, ND> psi = active<ND>(psi_all);
  NEFI_WAVE_ROWS((step_row<T, ND, HALF, PML>(lap, f, c, lo, hi, up, u, un, psi)));
  if constexpr (PML)
    for (int a = 0; a < ND; ++a) NEFI_WAVE_ROWS((psi_row<T, ND>(f, c, lo, hi, u, un, psi[a], a)));
}

template <typename T, int ND, int HALF, bool PML, bool GRAD>
[[gnu::always_inline]] inline void adjoint_impl(const WaveGrid& g, const StepCoefficients<T>& co,
                                                T* lam_c, const T* lam_p, T* out_cur, T* out_prev,
                                                const std::array<T*, 3>& mu_all, const T* u_n,
                                                const T* u_np1, T* kbar,
                                                const std::array<T*, 3>& fbar_all) {
  const FixedLaplacian<T, ND, HALF> lap(g);
  const FaceSet<T, ND> f(g);
  const StepArrays<T, ND> c(co);
  const std::array<T*, ND> mu = active<ND>(mu_all), fbar = active<ND>(fbar_all);
  if constexpr (PML) {
    NEFI_WAVE_ROWS((psi_transpose_row<T, ND>(f, c, lo, hi, mu, lam_c, out_prev)));
    for (int a = 0; a < ND; ++a)
      NEFI_WAVE_ROWS((mu_decay_row<T, ND, GRAD>(f, c, lo, hi, mu[a], fbar[a], u_np1, u_n, a)));
  }
  // The step's scratch for k ⊙ λ, one per thread (shots run in parallel).
  thread_local std::vector<T> kl_buf;
  kl_buf.resize(g.numel);
  T* kl = kl_buf.data();
  scaled_copy<T>(g.numel, c.k, lam_c, kl);
  NEFI_WAVE_ROWS((adjoint_row<T, ND, HALF, PML, GRAD>(lap, c, lo, hi, lam_c, kl, lam_p, out_cur,
                                                      out_prev, kbar, u_n)));
  if constexpr (PML)
    for (int a = 0; a < ND; ++a)
      NEFI_WAVE_ROWS((mu_divergence_row<T, ND>(f, c, lo, hi, lam_c, mu[a], a)));
}
#undef NEFI_WAVE_ROWS

// Each kernel twice: for the baseline ISA and for AVX2 + FMA (fk::cpu_isa).
template <typename T, int ND, int HALF, bool PML>
void step_base(const WaveGrid& g, const StepCoefficients<T>& co, const T* up, const T* u, T* un,
               const std::array<T*, 3>& psi) {
  step_impl<T, ND, HALF, PML>(g, co, up, u, un, psi);
}
template <typename T, int ND, int HALF, bool PML>
__attribute__((target("avx2,fma"))) void step_avx2(const WaveGrid& g, const StepCoefficients<T>& co,
                                                   const T* up, const T* u, T* un,
                                                   const std::array<T*, 3>& psi) {
  step_impl<T, ND, HALF, PML>(g, co, up, u, un, psi);
}
template <typename T, int ND, int HALF, bool PML, bool GRAD>
void adjoint_base(const WaveGrid& g, const StepCoefficients<T>& co, T* lc, const T* lp, T* oc,
                  T* op, const std::array<T*, 3>& mu, const T* u0, const T* u1, T* kb,
                  const std::array<T*, 3>& fb) {
  adjoint_impl<T, ND, HALF, PML, GRAD>(g, co, lc, lp, oc, op, mu, u0, u1, kb, fb);
}
template <typename T, int ND, int HALF, bool PML, bool GRAD>
__attribute__((target("avx2,fma"))) void adjoint_avx2(
    const WaveGrid& g, const StepCoefficients<T>& co, T* lc, const T* lp, T* oc, T* op,
    const std::array<T*, 3>& mu, const T* u0, const T* u1, T* kb, const std::array<T*, 3>& fb) {
  adjoint_impl<T, ND, HALF, PML, GRAD>(g, co, lc, lp, oc, op, mu, u0, u1, kb, fb);
}

bool has_avx2() {
  return fk::cpu_isa() >= fk::CpuIsa::Avx2;
}

// Calls F::template run<ND, HALF, PML>() for the grid's rank, order and layer.
template <typename F>
void dispatch(const WaveGrid& g, bool pml, const F& f) {
  const int key = g.ndim * 10 + g.halo;
  auto with = [&](auto nd, auto half) {
    if (pml)
      f.template operator()<decltype(nd)::value, decltype(half)::value, true>();
    else
      f.template operator()<decltype(nd)::value, decltype(half)::value, false>();
  };
  using I1 = std::integral_constant<int, 1>;
  using I2 = std::integral_constant<int, 2>;
  using I3 = std::integral_constant<int, 3>;
  switch (key) {
    case 11:
      with(I1{}, I1{});
      break;
    case 12:
      with(I1{}, I2{});
      break;
    case 21:
      with(I2{}, I1{});
      break;
    case 22:
      with(I2{}, I2{});
      break;
    case 31:
      with(I3{}, I1{});
      break;
    default:
      with(I3{}, I2{});
      break;
  }
}

}  // namespace

template <typename T>
void leapfrog_step(const WaveGrid& g, const StepCoefficients<T>& co, const T* up, const T* u, T* un,
                   const std::array<T*, 3>& psi) {
  const bool avx2 = has_avx2();
  dispatch(g, co.pml, [&]<int ND, int HALF, bool PML>() {
    if (avx2)
      step_avx2<T, ND, HALF, PML>(g, co, up, u, un, psi);
    else
      step_base<T, ND, HALF, PML>(g, co, up, u, un, psi);
  });
}

template <typename T>
void leapfrog_adjoint_step(const WaveGrid& g, const StepCoefficients<T>& co, T* lam_c,
                           const T* lam_p, T* out_cur, T* out_prev, const std::array<T*, 3>& mu,
                           const T* u_n, const T* u_np1, T* kbar, const std::array<T*, 3>& fbar) {
  const bool avx2 = has_avx2();
  dispatch(g, co.pml, [&]<int ND, int HALF, bool PML>() {
    auto run = [&]<bool GRAD>() {
      if (avx2)
        adjoint_avx2<T, ND, HALF, PML, GRAD>(g, co, lam_c, lam_p, out_cur, out_prev, mu, u_n, u_np1,
                                             kbar, fbar);
      else
        adjoint_base<T, ND, HALF, PML, GRAD>(g, co, lam_c, lam_p, out_cur, out_prev, mu, u_n, u_np1,
                                             kbar, fbar);
    };
    if (u_n)
      run.template operator()<true>();
    else
      run.template operator()<false>();
  });
}

template void leapfrog_step<float>(const WaveGrid&, const StepCoefficients<float>&, const float*,
                                   const float*, float*, const std::array<float*, 3>&);
template void leapfrog_step<double>(const WaveGrid&, const StepCoefficients<double>&, const double*,
                                    const double*, double*, const std::array<double*, 3>&);
template void leapfrog_adjoint_step<float>(const WaveGrid&, const StepCoefficients<float>&, float*,
                                           const float*, float*, float*,
                                           const std::array<float*, 3>&, const float*, const float*,
                                           float*, const std::array<float*, 3>&);
template void leapfrog_adjoint_step<double>(const WaveGrid&, const StepCoefficients<double>&,
                                            double*, const double*, double*, double*,
                                            const std::array<double*, 3>&, const double*,
                                            const double*, double*, const std::array<double*, 3>&);

}  // namespace nefi::wave
