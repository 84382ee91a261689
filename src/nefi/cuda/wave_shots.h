#pragma once
// The order of the wave kernels in one solve: the forward of every shot
// (all shots in each launch) with its record for the backward, and the
// backward from that record. Written once over a kernels policy K, so the
// device driver (wave_device.cpp: K launches wave.cu's kernels on a stream)
// and the CPU test of the cells (wave_cells_host.h: K runs each kernel's
// threads as a host loop over wave_cells.h) run the same sequence, and the
// test checks it against wave_propagation.cpp's shot_traces and
// shot_kappa_gradient bit for bit.
//
// K provides, each enqueuing on `stream` (see wave_kernels.h for the
// contracts): step, sources, sample, inject_traces, adjoint, copy,
// kappa_gradient and, for the photoacoustic map, embed, scaled_laplacian,
// scaled_product, initial_adjoint_end, sensor_samples, sensor_adjoint. Buffers are fk tensors on
// `device` (zeros where a halo is read). Record, as wave_propagation.h's TraceRecord:
//   every == 0  u^0..u^N of all shots: (N + 1, shots, S)
//   every > 0   (u^{n−1}, u^n, ψ^n) every `every` steps: (slots, 2 + n_ψ, shots, S)
// Everything stays on the device: a solve is launches and device-to-device
// copies only, so it can be captured as a CUDA graph.
#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "fk/factory.h"
#include "fk/tensor.h"
#include "nefi/cuda/wave_kernels.h"

namespace nefi::cuda {

// What one solve reads: the grid, the coefficients (their velocity-dependent
// k and beta included), the stencils, the wavelet table (null: no source
// term) and the time axis.
template <typename T>
struct WaveShotsSetup {
  WaveCells<T> cells;
  WaveCoefficientsView<T> co;
  StencilsView sources, receivers;
  CellStencilsView injection;  // the receivers by cell (the adjoint's trace injection)
  const double* wavelet = nullptr;
  int64_t shots = 1, n_t = 0, n_steps = 0, substeps = 1;
  fk::Device device;
  void* stream = nullptr;

  int np() const { return cells.pml ? cells.nd : 0; }
  int64_t batch() const { return shots * cells.numel; }
  fk::Tensor zeros(int64_t n) const { return fk::zeros({n}, {fk::dtype_of<T>(), device}); }
};

// The photoacoustic sensor (WaveInitialConditionOperator): traces recorded at
// every leapfrog step, low-passed by w (2 half + 1 weights; null: none) and
// sampled every `every` steps into n_t samples.
struct WaveSensor {
  const double* w = nullptr;
  int64_t half = 0, every = 1, n_t = 0;
};

struct WaveShotsRecord {
  int64_t every = 0;  // 0: full trajectories; > 0: the checkpoint interval; < 0: none kept
  fk::Tensor saved;
};

template <typename T, typename K>
class WaveShots {
 public:
  explicit WaveShots(const WaveShotsSetup<T>& s) : s_(s) {}

  // Traces (shots, n_rec, n_t) from (u^{−1}, u^0) = (up0, u0) (null: at
  // rest) with ψ at 0; fills rec->saved unless rec->every < 0.
  fk::Tensor forward(WaveShotsRecord* rec, const T* up0 = nullptr, const T* u0 = nullptr) const {
    const int64_t B = s_.batch(), N = s_.n_steps, every = rec ? rec->every : -1;
    const int np = s_.np();
    std::vector<fk::Tensor> psi;
    AxisFields<T> psi_ptr;
    for (int a = 0; a < np; ++a) psi.push_back(s_.zeros(B)), psi_ptr.a[a] = psi.back().data<T>();
    fk::Tensor traces =
        fk::empty({s_.shots, s_.receivers.count, s_.n_t}, {fk::dtype_of<T>(), s_.device});
    fk::Tensor ring[3] = {s_.zeros(B), s_.zeros(B), s_.zeros(B)};
    T* traj = nullptr;
    T* ckpt = nullptr;
    if (every == 0) {
      rec->saved = s_.zeros((N + 1) * B);  // halos read as 0
      traj = rec->saved.template data<T>();
    } else if (every > 0) {
      rec->saved =
          fk::empty({((N + every - 1) / every) * (2 + np) * B}, {fk::dtype_of<T>(), s_.device});
      ckpt = rec->saved.template data<T>();
    }
    T* r[3] = {ring[0].template data<T>(), ring[1].template data<T>(), ring[2].template data<T>()};
    if (up0) K::copy(up0, r[0], B, s_.stream);
    if (u0) K::copy(u0, traj ? traj : r[1], B, s_.stream);
    const T* up = r[0];
    const T* u = traj ? traj : r[1];
    K::sample(s_.cells, s_.receivers, s_.shots, u, traces.template data<T>(), s_.n_t, 0, s_.stream);
    for (int64_t n = 0; n < N; ++n) {
      if (every > 0 && n % every == 0) {
        T* slot = ckpt + (n / every) * (2 + np) * B;
        K::copy(up, slot, B, s_.stream);
        K::copy(u, slot + B, B, s_.stream);
        for (int a = 0; a < np; ++a) K::copy(psi_ptr.a[a], slot + (2 + a) * B, B, s_.stream);
      }
      T* un = traj ? traj + (n + 1) * B : r[(n + 2) % 3];
      advance(n, up, u, un, psi_ptr);
      if ((n + 1) % s_.substeps == 0)
        K::sample(s_.cells, s_.receivers, s_.shots, un, traces.template data<T>(), s_.n_t,
                  (n + 1) / s_.substeps, s_.stream);
      up = u;
      u = un;
    }
    return traces;
  }

  // The adjoint run of all shots for the trace gradient g (shots, n_rec,
  // n_t, contiguous on the device).
  struct Adjoint {
    fk::Tensor buf[4], kl, kbar;
    std::vector<fk::Tensor> mu, fbar;
    T *lam_c, *lam_p, *spare[2];
    AxisFields<T> mu_ptr, fbar_ptr;
  };

  // κ̄ summed over the shots, (S,) f64 on the device (halo unset).
  fk::Tensor kappa_gradient(const WaveShotsRecord& rec, const T* g, const double* k_per_kappa,
                            const AxisFields<const double>& beta_per_kappa) const {
    Adjoint st = adjoint_state(true);
    const int64_t B = s_.batch(), N = s_.n_steps;
    if (rec.every == 0) {
      const T* traj = rec.saved.template data<T>();
      run(st, g, 0, N, [&](int64_t n) { return traj + n * B; });
    } else {
      checkpoint_backward(st, g, rec.saved.template data<T>(), rec.every);
    }
    fk::Tensor total = fk::zeros({s_.cells.numel}, {fk::DType::F64, s_.device});
    K::kappa_gradient(s_.cells, k_per_kappa, beta_per_kappa, s_.shots, st.kbar.template data<T>(),
                      st.fbar_ptr, total.template data<double>(), s_.stream);
    return total;
  }

  // The adjoint without gradient sums from traces g: after it, lam_c = ū^0
  // (without the t = 0 sample) and lam_p = ū^{−1} (initial_value_adjoint).
  Adjoint adjoint_to_start(const T* g) const {
    Adjoint st = adjoint_state(false);
    run(st, g, 0, s_.n_steps, [](int64_t) { return static_cast<const T*>(nullptr); });
    return st;
  }

  // The photoacoustic map of one shot without sources (setup: shots 1, no
  // wavelet, n_t every step): p0 (the domain) -> the sensor's (n_rec,
  // sensor.n_t), started at u^0 = p0, u^{−1} = p0 + k ⊙ Δ_h p0 (k = ½ dt² κ).
  fk::Tensor initial_value_forward(const T* p0, const T* start_k, const WaveSensor& sensor) const {
    const int64_t S = s_.cells.numel, n_rec = s_.receivers.count;
    fk::Tensor x = s_.zeros(S), up = s_.zeros(S);
    K::embed(s_.cells, p0, x.template data<T>(), s_.stream);
    K::scaled_laplacian(s_.cells, start_k, x.template data<T>(), up.template data<T>(), s_.stream);
    const fk::Tensor fine = forward(nullptr, up.template data<T>(), x.template data<T>());
    fk::Tensor out = fk::empty({n_rec, sensor.n_t}, {fk::dtype_of<T>(), s_.device});
    K::sensor_samples(fine.template data<T>(), n_rec, s_.n_t, sensor.every, sensor.w, sensor.half,
                      sensor.n_t, out.template data<T>(), s_.stream);
    return out;
  }

  // Its exact transpose: g (n_rec, sensor.n_t) f64 -> the domain's values, T.
  fk::Tensor initial_value_adjoint(const double* g, const T* start_k, const WaveSensor& sensor,
                                   const fk::Dims& shape) const {
    const int64_t S = s_.cells.numel, n_rec = s_.receivers.count;
    fk::Tensor fine = fk::empty({n_rec * s_.n_t}, {fk::dtype_of<T>(), s_.device});
    K::sensor_adjoint(g, n_rec, sensor.n_t, s_.n_t, sensor.every, sensor.w, sensor.half,
                      fine.template data<T>(), s_.stream);
    Adjoint st = adjoint_to_start(fine.template data<T>());
    K::inject_traces(s_.cells, s_.injection, 1, fine.template data<T>(), s_.n_t, 0, st.lam_c,
                     s_.stream);
    fk::Tensor ku = fk::empty({S}, {fk::dtype_of<T>(), s_.device});
    K::scaled_product(start_k, st.lam_p, ku.template data<T>(), S, s_.stream);
    fk::Tensor out = fk::empty(shape, {fk::dtype_of<T>(), s_.device});
    K::initial_adjoint_end(s_.cells, st.lam_p, ku.template data<T>(), st.lam_c,
                           out.template data<T>(), s_.stream);
    return out;
  }

 private:
  void advance(int64_t n, const T* up, const T* u, T* un, const AxisFields<T>& psi) const {
    K::step(s_.cells, s_.co, s_.shots, up, u, un, psi, s_.stream);
    if (s_.wavelet) K::sources(s_.cells, s_.sources, s_.co.ad, s_.wavelet, n, un, s_.stream);
  }

  Adjoint adjoint_state(bool gradient) const {
    const int64_t B = s_.batch();
    Adjoint st;
    for (auto& b : st.buf) b = s_.zeros(B);
    st.kl = s_.zeros(B);
    st.lam_c = st.buf[0].template data<T>(), st.lam_p = st.buf[1].template data<T>();
    st.spare[0] = st.buf[2].template data<T>(), st.spare[1] = st.buf[3].template data<T>();
    for (int a = 0; a < s_.np(); ++a) {
      st.mu.push_back(s_.zeros(B));
      st.mu_ptr.a[a] = st.mu.back().template data<T>();
      if (!gradient) continue;
      st.fbar.push_back(s_.zeros(B));
      st.fbar_ptr.a[a] = st.fbar.back().template data<T>();
    }
    if (gradient) st.kbar = s_.zeros(B);
    return st;
  }

  // Adjoint steps n = n1 − 1 .. n0; u(n) gives u^n of all shots (null: no gradient).
  template <typename U>
  void run(Adjoint& st, const T* g, int64_t n0, int64_t n1, const U& u) const {
    T* kbar = st.kbar.defined() ? st.kbar.template data<T>() : nullptr;
    for (int64_t n = n1 - 1; n >= n0; --n) {
      if ((n + 1) % s_.substeps == 0)
        K::inject_traces(s_.cells, s_.injection, s_.shots, g, s_.n_t, (n + 1) / s_.substeps,
                         st.lam_c, s_.stream);
      K::adjoint(s_.cells, s_.co, s_.shots, st.lam_c, st.lam_p, st.spare[0], st.spare[1],
                 st.kl.template data<T>(), st.mu_ptr, u(n), u(n + 1), kbar, st.fbar_ptr, s_.stream);
      std::swap(st.lam_c, st.spare[0]);
      std::swap(st.lam_p, st.spare[1]);
    }
  }

  // Each block of `every` steps recomputed from its checkpoint into blk
  // (zero halos), then run in reverse (checkpoint_backward).
  void checkpoint_backward(Adjoint& st, const T* g, const T* ckpt, int64_t every) const {
    const int64_t B = s_.batch(), N = s_.n_steps;
    const int np = s_.np();
    fk::Tensor blk_t = s_.zeros((every + 1) * B), up_t = s_.zeros(B);
    T* blk = blk_t.template data<T>();
    T* up = up_t.template data<T>();
    std::vector<fk::Tensor> psi;
    AxisFields<T> psi_ptr;
    for (int a = 0; a < np; ++a) psi.push_back(s_.zeros(B)), psi_ptr.a[a] = psi.back().data<T>();
    for (int64_t b = (N - 1) / every; b >= 0; --b) {
      const int64_t n0 = b * every, n1 = std::min(N, n0 + every);
      const T* slot = ckpt + b * (2 + np) * B;
      K::copy(slot, up, B, s_.stream);
      K::copy(slot + B, blk, B, s_.stream);
      for (int a = 0; a < np; ++a) K::copy(slot + (2 + a) * B, psi_ptr.a[a], B, s_.stream);
      const T* prev = up;
      for (int64_t n = n0; n < n1; ++n) {
        advance(n, prev, blk + (n - n0) * B, blk + (n - n0 + 1) * B, psi_ptr);
        prev = blk + (n - n0) * B;
      }
      run(st, g, n0, n1, [&](int64_t n) { return static_cast<const T*>(blk + (n - n0) * B); });
    }
  }

  WaveShotsSetup<T> s_;
};

}  // namespace nefi::cuda
