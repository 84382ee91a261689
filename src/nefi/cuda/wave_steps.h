#pragma once
// The order of a run of wave steps (wave_kernels.h's WaveForwardRun and
// WaveAdjointRun), written once over a launcher L so that the two ways the
// device runs it cannot drift apart: wave_shots.h's per-phase launcher
// enqueues one kernel per call on a stream, and wave.cu's fused kernels
// call the same functions inside one cooperative launch, where each call is
// a grid-stride pass with a grid-wide barrier after it where a later call
// reads what it wrote. L provides
//   sample(u, traces, j)                 traces[s, r, j] := receiver r of u (shot s)
//   checkpoint(up, u, psi, slot)         slot := (up, u, ψ) of all shots
//   restore(slot, up, u, psi)            (up, u, ψ) := slot
//   step(n, up, u, un, psi)              the leapfrog of step n with ψ and the sources
//   inject_traces(g, j, lam)             lam += g's column j over the receivers
//   adjoint(lam_c, lam_p, out_cur, out_prev, kl, mu, u_n, u_np1, kbar, fbar)
// with wave_kernels.h's launch_* contracts.
#include <cstdint>

#include "nefi/cuda/host_device.h"
#include "nefi/cuda/wave_kernels.h"

namespace nefi::cuda {

// u^m of the run (WaveForwardRun's layout), for m >= r.n0 − 1.
template <typename T>
NEFI_HOST_DEVICE inline T* run_field(const WaveForwardRun<T>& r, int64_t m) {
  if (m < r.n0) return r.before;
  if (r.traj) return r.traj + (m - r.n0) * r.batch;
  // Selected, not indexed: an array of the three would sit in local memory.
  const int64_t k = (m - r.n0) % 3;
  return k == 0 ? r.ring0 : k == 1 ? r.ring1 : r.ring2;
}

template <typename T, typename L>
NEFI_HOST_DEVICE void wave_forward_steps(const WaveForwardRun<T>& r, int64_t substeps, L& launch) {
  if (r.start) launch.restore(r.start, run_field(r, r.n0 - 1), run_field(r, r.n0), r.psi);
  for (int64_t n = r.n0; n < r.n1; ++n) {
    const T* up = run_field(r, n - 1);
    const T* u = run_field(r, n);
    if (r.traces && n % substeps == 0) launch.sample(u, r.traces, n / substeps);
    if (r.every > 0 && n % r.every == 0)
      launch.checkpoint(up, u, r.psi, r.ckpt + (n / r.every) * (2 + r.np) * r.batch);
    launch.step(n, up, u, run_field(r, n + 1), r.psi);
  }
  if (r.traces && r.n1 % substeps == 0)
    launch.sample(run_field(r, r.n1), r.traces, r.n1 / substeps);
}

// u^n of an adjoint run (null without a trajectory: no gradient sums).
template <typename T>
NEFI_HOST_DEVICE inline const T* run_state(const WaveAdjointRun<T>& r, int64_t n) {
  return r.traj ? r.traj + (n - r.first) * r.batch : nullptr;
}

template <typename T>
NEFI_HOST_DEVICE inline void swap_adjoint_buffers(WaveAdjointRun<T>& r) {
  T* c = r.lam_c;
  T* p = r.lam_p;
  r.lam_c = r.spare0, r.spare0 = c;
  r.lam_p = r.spare1, r.spare1 = p;
}

// Runs r's steps. The two pairs of buffers trade roles every step: each
// step's are picked by its parity rather than swapped in r, because a
// kernel's parameter whose fields are assigned is copied to local memory and
// every pass would reload its pointers from there (wave_adjoint_swapped
// gives r's pointers as the steps leave them).
template <typename T, typename L>
NEFI_HOST_DEVICE void wave_adjoint_steps(const WaveAdjointRun<T>& r, int64_t substeps, L& launch) {
  for (int64_t n = r.n1 - 1; n >= r.n0; --n) {
    const bool odd = (r.n1 - 1 - n) % 2 == 1;
    T* lam_c = odd ? r.spare0 : r.lam_c;
    T* lam_p = odd ? r.spare1 : r.lam_p;
    T* out_cur = odd ? r.lam_c : r.spare0;
    T* out_prev = odd ? r.lam_p : r.spare1;
    if ((n + 1) % substeps == 0) launch.inject_traces(r.g, (n + 1) / substeps, lam_c);
    launch.adjoint(lam_c, lam_p, out_cur, out_prev, r.kl, r.mu, run_state(r, n),
                   run_state(r, n + 1), r.kbar, r.fbar);
  }
}

// r's pointers after its steps ran: two swaps are none.
template <typename T>
NEFI_HOST_DEVICE inline WaveAdjointRun<T> wave_adjoint_swapped(WaveAdjointRun<T> r) {
  if ((r.n1 > r.n0 ? r.n1 - r.n0 : 0) % 2 == 1) swap_adjoint_buffers(r);
  return r;
}

}  // namespace nefi::cuda
