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
// kappa_gradient, the fused runs forward_run and adjoint_run and, for the
// photoacoustic map, embed, scaled_laplacian, scaled_product,
// initial_adjoint_end, sensor_samples, sensor_adjoint. The steps of a run go
// in wave_steps.h's order. Buffers are fk tensors on `device` (zeros where a
// halo is read). Record, as wave_propagation.h's TraceRecord:
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
#include "nefi/cuda/wave_steps.h"

namespace nefi::cuda {

// One solve's setup: what its steps read (WaveSolve), where its buffers
// live and the stream; `fused` runs each forward and adjoint run as one
// cooperative launch (K::forward_run, K::adjoint_run) instead of a launch
// per phase.
template <typename T>
struct WaveShotsSetup : WaveSolve<T> {
  fk::Device device;
  void* stream = nullptr;
  bool fused = false;

  int np() const { return this->cells.pml ? this->cells.nd : 0; }
  int64_t batch() const { return this->shots * this->cells.numel; }
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
    WaveForwardRun<T> r;
    r.n1 = N;
    r.batch = B;
    r.np = np;
    std::vector<fk::Tensor> psi;
    for (int a = 0; a < np; ++a) psi.push_back(s_.zeros(B)), r.psi.a[a] = psi.back().data<T>();
    fk::Tensor traces =
        fk::empty({s_.shots, s_.receivers.count, s_.n_t}, {fk::dtype_of<T>(), s_.device});
    r.traces = traces.template data<T>();
    // u^{−1}, u^0, u^1 in three buffers, u^2 reusing u^{−1}'s.
    fk::Tensor ring[3] = {s_.zeros(B), s_.zeros(B), s_.zeros(B)};
    r.before = r.ring2 = ring[0].template data<T>();
    r.ring0 = ring[1].template data<T>();
    r.ring1 = ring[2].template data<T>();
    if (every == 0) {
      rec->saved = s_.zeros((N + 1) * B);  // halos read as 0
      r.traj = rec->saved.template data<T>();
    } else if (every > 0) {
      rec->saved =
          fk::empty({((N + every - 1) / every) * (2 + np) * B}, {fk::dtype_of<T>(), s_.device});
      r.every = every;
      r.ckpt = rec->saved.template data<T>();
    }
    if (up0) K::copy(up0, r.before, B, s_.stream);
    if (u0) K::copy(u0, run_field(r, 0), B, s_.stream);
    steps(r);
    return traces;
  }

  // The adjoint run of all shots for the trace gradient g (shots, n_rec,
  // n_t, contiguous on the device); run's pointers name the buffers.
  struct Adjoint {
    fk::Tensor buf[4], kl, kbar;
    std::vector<fk::Tensor> mu, fbar;
    WaveAdjointRun<T> run;
  };

  // κ̄ summed over the shots, (S,) f64 on the device (halo unset).
  fk::Tensor kappa_gradient(const WaveShotsRecord& rec, const T* g, const double* k_per_kappa,
                            const AxisFields<const double>& beta_per_kappa) const {
    Adjoint st = adjoint_state(true);
    const int64_t N = s_.n_steps;
    if (rec.every == 0) {
      run(st, g, 0, N, rec.saved.template data<T>(), 0);
    } else {
      checkpoint_backward(st, g, rec.saved.template data<T>(), rec.every);
    }
    fk::Tensor total = fk::zeros({s_.cells.numel}, {fk::DType::F64, s_.device});
    K::kappa_gradient(s_.cells, k_per_kappa, beta_per_kappa, s_.shots, st.run.kbar, st.run.fbar,
                      total.template data<double>(), s_.stream);
    return total;
  }

  // The adjoint without gradient sums from traces g: after it, run.lam_c =
  // ū^0 (without the t = 0 sample) and run.lam_p = ū^{−1}
  // (initial_value_adjoint).
  Adjoint adjoint_to_start(const T* g) const {
    Adjoint st = adjoint_state(false);
    run(st, g, 0, s_.n_steps, nullptr, 0);
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
    K::inject_traces(s_.cells, s_.injection, 1, fine.template data<T>(), s_.n_t, 0, st.run.lam_c,
                     s_.stream);
    fk::Tensor ku = fk::empty({S}, {fk::dtype_of<T>(), s_.device});
    K::scaled_product(start_k, st.run.lam_p, ku.template data<T>(), S, s_.stream);
    fk::Tensor out = fk::empty(shape, {fk::dtype_of<T>(), s_.device});
    K::initial_adjoint_end(s_.cells, st.run.lam_p, ku.template data<T>(), st.run.lam_c,
                           out.template data<T>(), s_.stream);
    return out;
  }

 private:
  // wave_steps.h's launcher over K: one launch (or copy) per call.
  struct PhaseLaunch {
    const WaveShotsSetup<T>& s;
    void sample(const T* u, T* traces, int64_t j) {
      K::sample(s.cells, s.receivers, s.shots, u, traces, s.n_t, j, s.stream);
    }
    void checkpoint(const T* up, const T* u, const AxisFields<T>& psi, T* slot) {
      const int64_t B = s.batch();
      K::copy(up, slot, B, s.stream);
      K::copy(u, slot + B, B, s.stream);
      for (int a = 0; a < s.np(); ++a) K::copy(psi.a[a], slot + (2 + a) * B, B, s.stream);
    }
    void restore(const T* slot, T* up, T* u, const AxisFields<T>& psi) {
      const int64_t B = s.batch();
      K::copy(slot, up, B, s.stream);
      K::copy(slot + B, u, B, s.stream);
      for (int a = 0; a < s.np(); ++a) K::copy(slot + (2 + a) * B, psi.a[a], B, s.stream);
    }
    void step(int64_t n, const T* up, const T* u, T* un, const AxisFields<T>& psi) {
      K::step(s.cells, s.co, s.shots, up, u, un, psi, s.stream);
      if (s.wavelet) K::sources(s.cells, s.sources, s.co.ad, s.wavelet, n, un, s.stream);
    }
    void inject_traces(const T* g, int64_t j, T* lam) {
      K::inject_traces(s.cells, s.injection, s.shots, g, s.n_t, j, lam, s.stream);
    }
    void adjoint(T* lam_c, const T* lam_p, T* out_cur, T* out_prev, T* kl, const AxisFields<T>& mu,
                 const T* u_n, const T* u_np1, T* kbar, const AxisFields<T>& fbar) {
      K::adjoint(s.cells, s.co, s.shots, lam_c, lam_p, out_cur, out_prev, kl, mu, u_n, u_np1, kbar,
                 fbar, s.stream);
    }
  };

  void steps(const WaveForwardRun<T>& r) const {
    if (s_.fused) {
      K::forward_run(static_cast<const WaveSolve<T>&>(s_), r, s_.stream);
      return;
    }
    PhaseLaunch launch{s_};
    wave_forward_steps(r, s_.substeps, launch);
  }

  Adjoint adjoint_state(bool gradient) const {
    const int64_t B = s_.batch();
    Adjoint st;
    WaveAdjointRun<T>& r = st.run;
    r.batch = B;
    for (auto& b : st.buf) b = s_.zeros(B);
    st.kl = s_.zeros(B);
    r.kl = st.kl.template data<T>();
    r.lam_c = st.buf[0].template data<T>(), r.lam_p = st.buf[1].template data<T>();
    r.spare0 = st.buf[2].template data<T>(), r.spare1 = st.buf[3].template data<T>();
    for (int a = 0; a < s_.np(); ++a) {
      st.mu.push_back(s_.zeros(B));
      r.mu.a[a] = st.mu.back().template data<T>();
      if (!gradient) continue;
      st.fbar.push_back(s_.zeros(B));
      r.fbar.a[a] = st.fbar.back().template data<T>();
    }
    if (gradient) st.kbar = s_.zeros(B), r.kbar = st.kbar.template data<T>();
    return st;
  }

  // Adjoint steps n = n1 − 1 .. n0; u^n at traj + (n − first) B (null: no gradient).
  void run(Adjoint& st, const T* g, int64_t n0, int64_t n1, const T* traj, int64_t first) const {
    WaveAdjointRun<T>& r = st.run;
    r.n0 = n0, r.n1 = n1, r.g = g, r.traj = traj, r.first = first;
    if (s_.fused) {
      K::adjoint_run(static_cast<const WaveSolve<T>&>(s_), r, s_.stream);
    } else {
      PhaseLaunch launch{s_};
      wave_adjoint_steps(r, s_.substeps, launch);
    }
    r = wave_adjoint_swapped(r);
  }

  // Each block of `every` steps recomputed from its checkpoint into blk
  // (zero halos; the run restores its start from the slot), then run in
  // reverse (checkpoint_backward).
  void checkpoint_backward(Adjoint& st, const T* g, const T* ckpt, int64_t every) const {
    const int64_t B = s_.batch(), N = s_.n_steps;
    const int np = s_.np();
    fk::Tensor blk_t = s_.zeros((every + 1) * B), up_t = s_.zeros(B);
    WaveForwardRun<T> f;
    f.batch = B;
    f.np = np;
    f.traj = blk_t.template data<T>();
    f.before = up_t.template data<T>();
    std::vector<fk::Tensor> psi;
    for (int a = 0; a < np; ++a) psi.push_back(s_.zeros(B)), f.psi.a[a] = psi.back().data<T>();
    for (int64_t b = (N - 1) / every; b >= 0; --b) {
      f.n0 = b * every, f.n1 = std::min(N, f.n0 + every);
      f.start = ckpt + b * (2 + np) * B;
      steps(f);
      run(st, g, f.n0, f.n1, f.traj, f.n0);
    }
  }

  WaveShotsSetup<T> s_;
};

}  // namespace nefi::cuda
