#include "nefi/operators/wave/wave_propagation.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/parallel.h"
#include "fk/profile.h"

namespace nefi::wave {
namespace {

template <typename T>
int psi_count(const WaveGrid& g, const StepCoefficients<T>& co) {
  return co.pml ? g.ndim : 0;
}

// ψ fields of one running shot (or their adjoints), zero-initialised.
template <typename T>
struct FaceFields {
  std::array<std::vector<T>, 3> v;
  std::array<T*, 3> ptr{nullptr, nullptr, nullptr};
  FaceFields(const WaveGrid& g, bool on) {
    for (int d = 0; d < 3; ++d)
      if (on && g.active[d]) v[d].assign(g.numel, T(0)), ptr[d] = v[d].data();
  }
};

template <typename T>
void sample(const std::vector<PointStencil>& rec, const T* u, T* traces, int64_t n_t, int64_t j) {
  for (size_t r = 0; r < rec.size(); ++r) {
    double s = 0;
    for (size_t i = 0; i < rec[r].index.size(); ++i) s += rec[r].weight[i] * u[rec[r].index[i]];
    traces[r * n_t + j] = static_cast<T>(s);
  }
}

template <typename T>
void inject_traces(const std::vector<PointStencil>& rec, const T* g, int64_t n_t, int64_t j,
                   T* lam) {
  for (size_t r = 0; r < rec.size(); ++r)
    for (size_t i = 0; i < rec[r].index.size(); ++i)
      lam[rec[r].index[i]] += static_cast<T>(rec[r].weight[i]) * g[r * n_t + j];
}

// One step of shot `s`: the leapfrog plus the source term of step n.
template <typename T>
void advance(const ShotGeometry& geo, const StepCoefficients<T>& co, int64_t s, int64_t n,
             const T* up, const T* u, T* un, const std::array<T*, 3>& psi) {
  leapfrog_step(geo.grid, co, up, u, un, psi);
  if (s < 0) return;
  const PointStencil& src = geo.sources[s];
  const double f = geo.wavelet[n];
  for (size_t i = 0; i < src.index.size(); ++i) {
    const int64_t p = src.index[i];
    un[p] += co.a_dt2[p] * static_cast<T>(src.weight[i] * f);
  }
}

// Runs shot s (s < 0: no source) from (up, u) = (u^{−1}, u^0), writing traces
// (n_rec, n_t); full: u^0..u^N into traj; every > 0: checkpoints into ckpt.
template <typename T>
void forward_shot(const ShotGeometry& geo, const StepCoefficients<T>& co, int64_t s,
                  std::vector<T> up0, std::vector<T> u0, T* traces, T* traj, int64_t every,
                  T* ckpt) {
  const WaveGrid& g = geo.grid;
  const int64_t S = g.numel, N = g.n_steps(), m = g.substeps;
  const int np = psi_count(g, co);
  FaceFields<T> psi(g, co.pml);
  std::vector<T> spare(traj ? 0 : S, T(0));
  T* ring[3] = {up0.data(), u0.data(), spare.data()};
  if (traj) std::memcpy(traj, u0.data(), S * sizeof(T));
  const T* up = up0.data();
  const T* u = traj ? traj : u0.data();
  sample(geo.receivers, u, traces, g.n_t, 0);
  for (int64_t n = 0; n < N; ++n) {
    if (every > 0 && n % every == 0) {
      T* slot = ckpt + (n / every) * (2 + np) * S;
      std::memcpy(slot, up, S * sizeof(T));
      std::memcpy(slot + S, u, S * sizeof(T));
      for (int d = 0, j = 0; d < 3; ++d)
        if (psi.ptr[d]) std::memcpy(slot + (2 + j++) * S, psi.ptr[d], S * sizeof(T));
    }
    T* un = traj ? traj + (n + 1) * S : ring[(n + 2) % 3];
    advance(geo, co, s, n, up, u, un, psi.ptr);
    if ((n + 1) % m == 0) sample(geo.receivers, un, traces, g.n_t, (n + 1) / m);
    up = u;
    u = un;
  }
}

// The adjoint state of one shot running backwards, with the gradient sums.
template <typename T>
struct AdjointRun {
  const ShotGeometry& geo;
  const StepCoefficients<T>& co;
  const T* g;  // this shot's trace gradient (n_rec, n_t)
  std::vector<T> buf[4];
  T* lam_c;     // ū^{n+1}
  T* lam_p;     // the adjoint of the previous-field slot
  T* spare[2];  // where the step's ū^n and ū^{n−1} go
  FaceFields<T> mu, fbar;
  std::vector<T> kbar;
  bool gradient;

  AdjointRun(const ShotGeometry& geo_, const StepCoefficients<T>& co_, const T* g_, bool grad)
      : geo(geo_),
        co(co_),
        g(g_),
        mu(geo_.grid, co_.pml),
        fbar(geo_.grid, co_.pml && grad),
        gradient(grad) {
    for (auto& b : buf) b.assign(geo.grid.numel, T(0));
    lam_c = buf[0].data(), lam_p = buf[1].data();
    spare[0] = buf[2].data(), spare[1] = buf[3].data();
    if (grad) kbar.assign(geo.grid.numel, T(0));
  }
  // Adjoint steps n = n1 − 1 .. n0; u(n) points at u^n (unused without gradient).
  template <typename U>
  void run(int64_t n0, int64_t n1, const U& u) {
    const WaveGrid& gr = geo.grid;
    for (int64_t n = n1 - 1; n >= n0; --n) {
      if ((n + 1) % gr.substeps == 0)
        inject_traces(geo.receivers, g, gr.n_t, (n + 1) / gr.substeps, lam_c);
      leapfrog_adjoint_step(gr, co, lam_c, lam_p, spare[0], spare[1], mu.ptr,
                            gradient ? u(n) : nullptr, gradient ? u(n + 1) : nullptr, kbar.data(),
                            fbar.ptr);
      std::swap(lam_c, spare[0]);
      std::swap(lam_p, spare[1]);
    }
  }
};

// Backward of one shot from its checkpoints: each block of `every` steps is
// recomputed from its checkpoint into blk, then run in reverse.
template <typename T>
void checkpoint_backward(AdjointRun<T>& run, int64_t s, const T* ckpt, int64_t every) {
  const ShotGeometry& geo = run.geo;
  const WaveGrid& g = geo.grid;
  const int64_t S = g.numel, N = g.n_steps();
  const int np = psi_count(g, run.co);
  // zeros: advance writes the padded cells only, the stencil reads the halo.
  fk::Tensor blk_t = fk::zeros({(every + 1) * S}, {fk::dtype_of<T>()});
  T* blk = blk_t.data<T>();
  std::vector<T> up(S);
  FaceFields<T> psi(g, run.co.pml);
  for (int64_t b = (N - 1) / every; b >= 0; --b) {
    const int64_t n0 = b * every, n1 = std::min(N, n0 + every);
    const T* slot = ckpt + b * (2 + np) * S;
    std::memcpy(up.data(), slot, S * sizeof(T));
    std::memcpy(blk, slot + S, S * sizeof(T));
    for (int d = 0, j = 0; d < 3; ++d)
      if (psi.ptr[d]) std::memcpy(psi.ptr[d], slot + (2 + j++) * S, S * sizeof(T));
    const T* prev = up.data();
    for (int64_t n = n0; n < n1; ++n) {
      advance(geo, run.co, s, n, prev, blk + (n - n0) * S, blk + (n - n0 + 1) * S, psi.ptr);
      prev = blk + (n - n0) * S;
    }
    run.run(n0, n1, [&](int64_t n) { return blk + (n - n0) * S; });
  }
}

}  // namespace

ShotGeometry make_shot_geometry(const WaveConfig& cfg, const fk::Dims& shape,
                                const std::vector<std::vector<double>>& sources,
                                const std::vector<std::vector<double>>& receivers, double f0,
                                double amplitude) {
  ShotGeometry geo;
  geo.grid = make_wave_grid(cfg, shape);
  geo.damping = make_damping(geo.grid, cfg.absorbing, cfg.c_max, cfg.absorb_R);
  geo.sources = point_stencils(geo.grid, sources, "wave source");
  geo.receivers = point_stencils(geo.grid, receivers, "wave receiver");
  FK_CHECK(!receivers.empty(), "wave receivers", "at least one receiver", "none");
  if (!sources.empty()) {
    FK_CHECK(f0 > 0 && std::isfinite(f0), "wave config 'f0'", "a frequency > 0", fk::to_text(f0));
    const double scale = amplitude / geo.grid.cell_volume();
    geo.wavelet.resize(geo.grid.n_steps());
    for (int64_t n = 0; n < geo.grid.n_steps(); ++n)
      geo.wavelet[n] = scale * ricker(static_cast<double>(n) * geo.grid.dt, f0);
  }
  return geo;
}

int64_t auto_checkpoint_every(int64_t n_steps) {
  return std::max<int64_t>(1, std::llround(std::sqrt(static_cast<double>(n_steps))));
}

template <typename T>
fk::Tensor shot_traces(const ShotGeometry& geo, const StepCoefficients<T>& co,
                       TraceRecord* record) {
  fk::profile::OpScope scope("wave_forward");
  const WaveGrid& g = geo.grid;
  const int64_t n_src = static_cast<int64_t>(geo.sources.size());
  const int64_t n_rec = static_cast<int64_t>(geo.receivers.size());
  const int64_t S = g.numel, N = g.n_steps();
  const fk::DType dt = fk::dtype_of<T>();
  fk::Tensor out = fk::empty({n_src, n_rec, g.n_t}, {dt});
  int64_t every = record ? record->every : 0;
  T* saved = nullptr;
  int64_t per_shot = 0;
  if (record) {
    const int np = psi_count(g, co);
    const int64_t slots = every > 0 ? (N + every - 1) / every : 0;
    record->saved = every > 0 ? fk::empty({n_src, slots, 2 + np, S}, {dt})
                              : fk::zeros({n_src, N + 1, S}, {dt});  // halos read as 0
    saved = record->saved.data<T>();
    per_shot = record->saved.numel() / n_src;
  }
  T* o = out.data<T>();
  fk::parallel_for(0, n_src, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t s = lo; s < hi; ++s) {
      T* mine = saved ? saved + s * per_shot : nullptr;
      forward_shot(geo, co, s, std::vector<T>(S, T(0)), std::vector<T>(S, T(0)),
                   o + s * n_rec * g.n_t, (record && every == 0) ? mine : nullptr, every,
                   every > 0 ? mine : nullptr);
    }
  });
  return out;
}

template <typename T>
std::vector<double> shot_kappa_gradient(const ShotGeometry& geo, const StepCoefficients<T>& co,
                                        const TraceRecord& record, const fk::Tensor& g_in) {
  fk::profile::OpScope scope("wave_backward");
  const WaveGrid& g = geo.grid;
  const int64_t n_src = static_cast<int64_t>(geo.sources.size());
  const int64_t n_rec = static_cast<int64_t>(geo.receivers.size());
  const int64_t S = g.numel, N = g.n_steps();
  const fk::Tensor gt = g_in.contiguous();
  const T* gp = gt.data<T>();
  const T* saved = record.saved.data<T>();
  const int64_t per_shot = record.saved.numel() / n_src;
  std::vector<std::vector<double>> per(n_src);
  fk::parallel_for(0, n_src, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t s = lo; s < hi; ++s) {
      AdjointRun<T> run(geo, co, gp + s * n_rec * g.n_t, true);
      const T* mine = saved + s * per_shot;
      if (record.every > 0)
        checkpoint_backward(run, s, mine, record.every);
      else
        run.run(0, N, [&](int64_t n) { return mine + n * S; });
      per[s] = kappa_gradient(g, co, run.kbar, run.fbar.v);
    }
  });
  std::vector<double> total(S, 0.0);
  for (const auto& v : per)
    for (int64_t p = 0; p < S; ++p) total[p] += v[p];
  return total;
}

template <typename T>
std::vector<T> initial_value_traces(const ShotGeometry& geo, const StepCoefficients<T>& co,
                                    const std::vector<double>& kappa, const std::vector<T>& p0) {
  fk::profile::OpScope scope("wave_ic_forward");
  const WaveGrid& g = geo.grid;
  std::vector<T> up(g.numel, T(0));
  const double dt2 = g.dt * g.dt;
  add_scaled_laplacian(g, kappa, 0.5 * dt2, p0.data(), up.data(), false);
  std::vector<T> traces(geo.receivers.size() * g.n_t);
  forward_shot(geo, co, -1, std::move(up), p0, traces.data(), static_cast<T*>(nullptr), 0,
               static_cast<T*>(nullptr));
  return traces;
}

template <typename T>
std::vector<T> initial_value_adjoint(const ShotGeometry& geo, const StepCoefficients<T>& co,
                                     const std::vector<double>& kappa,
                                     const std::vector<T>& traces) {
  fk::profile::OpScope scope("wave_ic_adjoint");
  const WaveGrid& g = geo.grid;
  AdjointRun<T> run(geo, co, traces.data(), false);
  run.run(0, g.n_steps(), [](int64_t) { return static_cast<const T*>(nullptr); });
  // After step 0: lam_c = ū^0 (without the t = 0 sample), lam_p = ū^{−1}.
  inject_traces(geo.receivers, traces.data(), g.n_t, 0, run.lam_c);
  std::vector<T> out(g.numel, T(0));
  const double dt2 = g.dt * g.dt;
  add_scaled_laplacian(g, kappa, 0.5 * dt2, run.lam_p, out.data(), true);
  for_each_row(g, [&](int64_t p0, int64_t count) {
    for (int64_t p = p0; p < p0 + count; ++p) out[p] += run.lam_c[p];
  });
  return out;
}

#define NEFI_WAVE_INSTANTIATE(T)                                                                   \
  template fk::Tensor shot_traces<T>(const ShotGeometry&, const StepCoefficients<T>&,              \
                                     TraceRecord*);                                                \
  template std::vector<double> shot_kappa_gradient<T>(                                             \
      const ShotGeometry&, const StepCoefficients<T>&, const TraceRecord&, const fk::Tensor&);     \
  template std::vector<T> initial_value_traces<T>(const ShotGeometry&, const StepCoefficients<T>&, \
                                                  const std::vector<double>&,                      \
                                                  const std::vector<T>&);                          \
  template std::vector<T> initial_value_adjoint<T>(                                                \
      const ShotGeometry&, const StepCoefficients<T>&, const std::vector<double>&,                 \
      const std::vector<T>&);
NEFI_WAVE_INSTANTIATE(float)
NEFI_WAVE_INSTANTIATE(double)
#undef NEFI_WAVE_INSTANTIATE

}  // namespace nefi::wave
