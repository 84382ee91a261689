#pragma once
// wave_shots.h's kernels policy on a CUDA device: wave.cu's launchers
// (wave_kernels.h), each counted by fk's launch counter (the copies are not
// kernels and are not counted). Used by the drivers wave_device.cpp and
// wave_initial_device.cpp.
#include <cstdint>

#include "fk/profile.h"
#include "nefi/cuda/wave_kernels.h"

namespace nefi::cuda {

// wave_shots.h's kernels policy: wave.cu's launchers, each counted.
struct WaveDeviceKernels {
  template <typename T>
  static void step(const WaveCells<T>& g, const WaveCoefficientsView<T>& co, int64_t shots,
                   const T* up, const T* u, T* un, const AxisFields<T>& psi, void* stream) {
    launch_leapfrog_step(g, co, shots, up, u, un, psi, stream);
    fk::profile::count_launch(g.pml ? 2 : 1);
  }
  template <typename T>
  static void sources(const WaveCells<T>& g, const StencilsView& src, const T* ad,
                      const double* wavelet, int64_t n, T* un, void* stream) {
    launch_inject_sources(g, src, ad, wavelet, n, un, stream);
    fk::profile::count_launch(1);
  }
  template <typename T>
  static void sample(const WaveCells<T>& g, const StencilsView& rec, int64_t shots, const T* u,
                     T* traces, int64_t n_t, int64_t j, void* stream) {
    launch_sample(g, rec, shots, u, traces, n_t, j, stream);
    fk::profile::count_launch(1);
  }
  template <typename T>
  static void inject_traces(const WaveCells<T>& g, const CellStencilsView& rec, int64_t shots,
                            const T* gb, int64_t n_t, int64_t j, T* lam, void* stream) {
    launch_inject_traces(g, rec, shots, gb, n_t, j, lam, stream);
    fk::profile::count_launch(1);
  }
  template <typename T>
  static void adjoint(const WaveCells<T>& g, const WaveCoefficientsView<T>& co, int64_t shots,
                      T* lam_c, const T* lam_p, T* out_cur, T* out_prev, T* kl,
                      const AxisFields<T>& mu, const T* u_n, const T* u_np1, T* kbar,
                      const AxisFields<T>& fbar, void* stream) {
    launch_adjoint_step(g, co, shots, lam_c, lam_p, out_cur, out_prev, kl, mu, u_n, u_np1, kbar,
                        fbar, stream);
    fk::profile::count_launch(g.pml ? 3 : 2);
  }
  template <typename T>
  static void copy(const T* src, T* dst, int64_t n, void* stream) {
    launch_copy(src, dst, n, stream);
  }
  template <typename T>
  static void forward_run(const WaveSolve<T>& s, const WaveForwardRun<T>& r, void* stream) {
    launch_wave_forward_run(s, r, stream);
    fk::profile::count_launch(1);
  }
  template <typename T>
  static void adjoint_run(const WaveSolve<T>& s, const WaveAdjointRun<T>& r, void* stream) {
    launch_wave_adjoint_run(s, r, stream);
    fk::profile::count_launch(1);
  }
  template <typename T>
  static void kappa_gradient(const WaveCells<T>& g, const double* kpk,
                             const AxisFields<const double>& bpk, int64_t shots, const T* kbar,
                             const AxisFields<T>& fbar, double* total, void* stream) {
    launch_kappa_gradient(g, kpk, bpk, shots, kbar, fbar, total, stream);
    fk::profile::count_launch(1);
  }
  template <typename T>
  static void embed(const WaveCells<T>& g, const T* p0, T* x, void* stream) {
    launch_embed(g, p0, x, stream);
    fk::profile::count_launch(1);
  }
  template <typename T>
  static void scaled_laplacian(const WaveCells<T>& g, const T* k, const T* u, T* out,
                               void* stream) {
    launch_scaled_laplacian(g, k, u, out, stream);
    fk::profile::count_launch(1);
  }
  template <typename T>
  static void scaled_product(const T* k, const T* u, T* ku, int64_t n, void* stream) {
    launch_scaled_product(k, u, ku, n, stream);
    fk::profile::count_launch(1);
  }
  template <typename T>
  static void initial_adjoint_end(const WaveCells<T>& g, const T* u, const T* ku, const T* lam0,
                                  T* out, void* stream) {
    launch_initial_adjoint_end(g, u, ku, lam0, out, stream);
    fk::profile::count_launch(1);
  }
  template <typename T>
  static void sensor_samples(const T* fine, int64_t n_rec, int64_t n_fine, int64_t every,
                             const double* w, int64_t half, int64_t n_t, T* out, void* stream) {
    launch_sensor_samples(fine, n_rec, n_fine, every, w, half, n_t, out, stream);
    fk::profile::count_launch(1);
  }
  template <typename T>
  static void sensor_adjoint(const double* g, int64_t n_rec, int64_t n_t, int64_t n_fine,
                             int64_t every, const double* w, int64_t half, T* out, void* stream) {
    launch_sensor_adjoint(g, n_rec, n_t, n_fine, every, w, half, out, stream);
    fk::profile::count_launch(1);
  }
};

}  // namespace nefi::cuda
