#pragma once
// The wave device's kernels run on the host (what the wave cell tests share):
// every kernel of nefi/cuda/wave_cells.h and wave_initial_cells.h as a loop
// over its threads in wave.cu's launch geometry, threads in order or last to
// first; the CPU reference without FMA contraction (FK_CPU_ISA=generic, whose
// products and sums are rounded one by one as nvcc --fmad=false rounds them);
// the problems compared (every absorbing layer, order 2 and 4, 1-D to 3-D,
// two shots and three receivers) and a bit-for-bit comparison.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "fk/factory.h"
#include "fk/knobs.h"
#include "fk/tensor.h"
#include "nefi/cuda/wave_cell_layout.h"
#include "nefi/cuda/wave_cells.h"
#include "nefi/cuda/wave_initial_cells.h"
#include "nefi/cuda/wave_shots.h"
#include "nefi/operators/wave/leapfrog.h"
#include "nefi/operators/wave/wave_initial_condition.h"
#include "nefi/operators/wave/wave_propagation.h"

namespace nefi::wave_cells_test {

namespace cu = nefi::cuda;

// Each device kernel as a loop over its threads (wave.cu's launch geometry).
struct HostKernels {
  // Threads run last to first when set: a kernel where one thread reads what
  // another writes in the same launch would then give other bits (a GPU runs
  // them in no set order).
  static inline bool reversed = false;
  template <typename Fn>
  static void threads(int64_t n, Fn&& fn) {
    for (int64_t i = 0; i < n; ++i) fn(reversed ? n - 1 - i : i);
  }
  template <typename T>
  static void step(const cu::WaveCells<T>& g, const cu::WaveCoefficientsView<T>& co, int64_t shots,
                   const T* up, const T* u, T* un, const cu::AxisFields<T>& psi, void*) {
    threads(shots * g.padded, [&](int64_t t) {
      cu::step_cell(g, co, up, u, un, psi, (t / g.padded) * g.numel,
                    cu::padded_cell(g, t % g.padded).p);
    });
    if (!g.pml) return;
    threads(shots * g.padded, [&](int64_t t) {
      cu::psi_cell(g, co, u, un, psi, (t / g.padded) * g.numel, cu::padded_cell(g, t % g.padded).p);
    });
  }
  template <typename T>
  static void sources(const cu::WaveCells<T>& g, const cu::StencilsView& src, const T* ad,
                      const double* wavelet, int64_t n, T* un, void*) {
    threads(src.count, [&](int64_t s) { cu::source_cell(g, src, ad, wavelet, n, un, s); });
  }
  template <typename T>
  static void sample(const cu::WaveCells<T>& g, const cu::StencilsView& rec, int64_t shots,
                     const T* u, T* traces, int64_t n_t, int64_t j, void*) {
    threads(shots * rec.count, [&](int64_t t) {
      traces[t * n_t + j] = cu::sample_cell(g, rec, u, t / rec.count, t % rec.count);
    });
  }
  template <typename T>
  static void inject_traces(const cu::WaveCells<T>& g, const cu::CellStencilsView& rec,
                            int64_t shots, const T* gb, int64_t n_t, int64_t j, T* lam, void*) {
    threads(shots * rec.count, [&](int64_t t) {
      cu::inject_traces_cell(g, rec, gb, n_t, j, lam, t / rec.count, t % rec.count);
    });
  }
  template <typename T>
  static void adjoint(const cu::WaveCells<T>& g, const cu::WaveCoefficientsView<T>& co,
                      int64_t shots, T* lam_c, const T* lam_p, T* out_cur, T* out_prev, T* kl,
                      const cu::AxisFields<T>& mu, const T* u_n, const T* u_np1, T* kbar,
                      const cu::AxisFields<T>& fbar, void*) {
    const int64_t pad = g.padded;
    if (g.pml)
      threads(shots * pad, [&](int64_t t) {
        cu::psi_transpose_cell(g, co, mu, lam_c, out_prev, (t / pad) * g.numel,
                               cu::padded_cell(g, t % pad).p);
      });
    threads(shots * g.numel, [&](int64_t t) {
      cu::adjoint_prepare_cell(g, co, lam_c, kl, mu, u_n, u_np1, fbar, (t / g.numel) * g.numel,
                               t % g.numel);
    });
    threads(shots * pad, [&](int64_t t) {
      cu::adjoint_cell(g, co, lam_c, kl, lam_p, out_cur, out_prev, kbar, u_n, (t / pad) * g.numel,
                       cu::padded_cell(g, t % pad).p);
    });
  }
  template <typename T>
  static void copy(const T* src, T* dst, int64_t n, void*) {
    std::memcpy(dst, src, n * sizeof(T));
  }
  // The fused runs: wave_steps.h's order over these loops (a pass per call,
  // as the per-phase launcher; what the fused kernels' barriers add is
  // checked on the emulated device, tests/cuda_emu/nefi/wave_test.cpp).
  template <typename T>
  struct Passes {
    const cu::WaveSolve<T>& s;
    void sample(const T* u, T* traces, int64_t j) {
      HostKernels::sample(s.cells, s.receivers, s.shots, u, traces, s.n_t, j, nullptr);
    }
    void checkpoint(const T* up, const T* u, const cu::AxisFields<T>& psi, T* slot) {
      const int64_t B = s.shots * s.cells.numel;
      copy(up, slot, B, nullptr);
      copy(u, slot + B, B, nullptr);
      for (int a = 0; a < (s.cells.pml ? s.cells.nd : 0); ++a)
        copy<T>(psi.a[a], slot + (2 + a) * B, B, nullptr);
    }
    void restore(const T* slot, T* up, T* u, const cu::AxisFields<T>& psi) {
      const int64_t B = s.shots * s.cells.numel;
      copy(slot, up, B, nullptr);
      copy(slot + B, u, B, nullptr);
      for (int a = 0; a < (s.cells.pml ? s.cells.nd : 0); ++a)
        copy<T>(slot + (2 + a) * B, psi.a[a], B, nullptr);
    }
    void step(int64_t n, const T* up, const T* u, T* un, const cu::AxisFields<T>& psi) {
      HostKernels::step(s.cells, s.co, s.shots, up, u, un, psi, nullptr);
      if (s.wavelet) HostKernels::sources(s.cells, s.sources, s.co.ad, s.wavelet, n, un, nullptr);
    }
    void inject_traces(const T* g, int64_t j, T* lam) {
      HostKernels::inject_traces(s.cells, s.injection, s.shots, g, s.n_t, j, lam, nullptr);
    }
    void adjoint(T* lam_c, const T* lam_p, T* out_cur, T* out_prev, T* kl,
                 const cu::AxisFields<T>& mu, const T* u_n, const T* u_np1, T* kbar,
                 const cu::AxisFields<T>& fbar) {
      HostKernels::adjoint(s.cells, s.co, s.shots, lam_c, lam_p, out_cur, out_prev, kl, mu, u_n,
                           u_np1, kbar, fbar, nullptr);
    }
  };
  template <typename T>
  static void forward_run(const cu::WaveSolve<T>& s, const cu::WaveForwardRun<T>& r, void*) {
    Passes<T> passes{s};
    cu::wave_forward_steps(r, s.substeps, passes);
  }
  template <typename T>
  static void adjoint_run(const cu::WaveSolve<T>& s, const cu::WaveAdjointRun<T>& r, void*) {
    Passes<T> passes{s};
    cu::wave_adjoint_steps(r, s.substeps, passes);
  }
  template <typename T>
  static void kappa_gradient(const cu::WaveCells<T>& g, const double* kpk,
                             const cu::AxisFields<const double>& bpk, int64_t shots, const T* kbar,
                             const cu::AxisFields<T>& fbar, double* total, void*) {
    threads(g.padded, [&](int64_t t) {
      const int64_t p = cu::padded_cell(g, t).p;
      total[p] = cu::kappa_gradient_cell(g, kpk, bpk, shots, kbar, fbar, p);
    });
  }
  template <typename T>
  static void embed(const cu::WaveCells<T>& g, const T* p0, T* x, void*) {
    threads(g.domain, [&](int64_t q) { x[cu::domain_cell(g, q)] = p0[q]; });
  }
  template <typename T>
  static void scaled_laplacian(const cu::WaveCells<T>& g, const T* k, const T* u, T* out, void*) {
    threads(g.padded, [&](int64_t t) { cu::scaled_laplacian_cell(g, k, u, out, t); });
  }
  template <typename T>
  static void scaled_product(const T* k, const T* u, T* ku, int64_t n, void*) {
    threads(n, [&](int64_t p) { cu::scaled_product_cell(k, u, ku, p); });
  }
  template <typename T>
  static void initial_adjoint_end(const cu::WaveCells<T>& g, const T* u, const T* ku, const T* lam0,
                                  T* out, void*) {
    threads(g.domain, [&](int64_t q) { out[q] = cu::initial_adjoint_cell(g, u, ku, lam0, q); });
  }
  template <typename T>
  static void sensor_samples(const T* fine, int64_t n_rec, int64_t n_fine, int64_t every,
                             const double* w, int64_t half, int64_t n_t, T* out, void*) {
    threads(n_rec * n_t, [&](int64_t t) {
      out[t] =
          static_cast<T>(cu::sensor_sample_cell(fine, n_fine, every, w, half, t / n_t, t % n_t));
    });
  }
  template <typename T>
  static void sensor_adjoint(const double* g, int64_t n_rec, int64_t n_t, int64_t n_fine,
                             int64_t every, const double* w, int64_t half, T* out, void*) {
    threads(n_rec * n_fine, [&](int64_t t) {
      out[t] = static_cast<T>(
          cu::sensor_adjoint_cell(g, n_t, n_fine, every, w, half, t / n_fine, t % n_fine));
    });
  }
  // The velocity's tables and gradient (launched outside wave_shots.h).
  template <typename T>
  static void padded_kappa(const cu::WaveCells<T>& g, const T* c, double* kappa) {
    threads(g.padded, [&](int64_t t) { cu::padded_kappa_cell(g, c, kappa, t); });
  }
  template <typename T>
  static void velocity_coefficients(const cu::WaveCells<T>& g, const double* kappa,
                                    const double* kpk, const cu::AxisFields<const double>& bpk,
                                    T* k, const cu::AxisFields<T>& beta) {
    threads(g.padded,
            [&](int64_t t) { cu::velocity_coefficients_cell(g, kappa, kpk, bpk, k, beta, t); });
  }
  template <typename T>
  static void velocity_gradient(const cu::WaveCells<T>& g, const T* c, const double* kbar, T* out) {
    threads(g.domain, [&](int64_t i) { out[i] = cu::velocity_gradient_cell(g, c, kbar, i); });
  }
};

struct Case {
  std::vector<int64_t> shape;
  wave::Absorbing absorbing;
  int order;
};

inline const std::vector<Case> kCases = {
    {{14, 12}, wave::Absorbing::kPml, 4},     {{13, 11}, wave::Absorbing::kPml, 2},
    {{12, 12}, wave::Absorbing::kSponge, 4},  {{11, 10}, wave::Absorbing::kCerjan, 2},
    {{9, 8, 7}, wave::Absorbing::kSponge, 4}, {{8, 7, 6}, wave::Absorbing::kNone, 2},
    {{24}, wave::Absorbing::kPml, 4},
};

inline std::string name_of(const Case& c) {
  std::string s = wave::absorbing_name(c.absorbing);
  s.append(" order ").append(std::to_string(c.order)).append(" shape");
  for (int64_t n : c.shape) s.append(" ").append(std::to_string(n));
  return s;
}

// n_t observed samples (fewer where every launch costs more, as emulated).
inline wave::ShotGeometry geometry_of(const Case& c, int64_t n_t = 9) {
  const int nd = static_cast<int>(c.shape.size());
  wave::WaveConfig cfg;
  cfg.extent.assign(nd, 1.0);
  cfg.order = c.order;
  cfg.absorbing = c.absorbing;
  cfg.absorb_width = c.absorbing == wave::Absorbing::kNone ? 0.0 : 0.2;
  cfg.c_max = 2.5;
  cfg.dt_obs = 0.03;
  cfg.n_t = n_t;
  std::vector<std::vector<double>> src = {std::vector<double>(nd, 0.3),
                                          std::vector<double>(nd, 0.61)};
  std::vector<std::vector<double>> rec = {
      std::vector<double>(nd, 0.8), std::vector<double>(nd, 0.47), std::vector<double>(nd, 0.45)};
  rec[0][0] = 0.12;
  return wave::make_shot_geometry(cfg, fk::Dims(c.shape), src, rec, 6.0, 1.0);
}

inline std::vector<double> random_velocity(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(1.5, 2.5);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng);
  return v;
}

// The photoacoustic problem: a 2-D box with three sensors, the given layer,
// sensor low-pass (0: none) and samples.
inline WaveInitialConditionConfig photoacoustic_config(wave::Absorbing a, double fc, int64_t n_t) {
  WaveInitialConditionConfig cfg;
  cfg.wave.extent = {1.0, 1.2};
  cfg.wave.order = 4;
  cfg.wave.absorbing = a;
  cfg.wave.absorb_width = 0.2;
  cfg.wave.c_max = 1.5;
  cfg.wave.dt_obs = 0.04;
  cfg.wave.n_t = n_t;
  cfg.receivers = {{0.1, 0.3}, {0.1, 0.62}, {0.9, 0.95}};
  cfg.sensor_fc = fc;
  return cfg;
}

template <typename T>
std::vector<T> to_vec(const fk::Tensor& t) {
  return t.contiguous().to_vector<T>();
}

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// The device's tables over a kernels policy: step_coefficients at κ = 0
// gives everything but k and beta (which alone depend on κ); κ, k and beta
// from the policy's kernels, the halo of κ holding `halo` and the faces beta
// leaves alone 0.
template <typename T, typename Kernels>
struct DeviceTables {
  wave::StepCoefficients<T> fixed;
  std::vector<double> kappa;
  std::vector<T> k;
  std::array<std::vector<T>, 3> beta;  // by active axis
  cu::AxisFields<const double> bpk;
  cu::WaveCoefficientsView<T> view;

  DeviceTables(const wave::ShotGeometry& geo, const cu::WaveCells<T>& g, const std::vector<T>& c,
               double halo) {
    const wave::WaveGrid& gr = geo.grid;
    fixed = wave::step_coefficients<T>(gr, geo.damping, std::vector<double>(gr.numel, 0.0));
    kappa.assign(gr.numel, halo);
    k.assign(gr.numel, T(0));
    Kernels::padded_kappa(g, c.data(), kappa.data());
    cu::AxisFields<T> beta_ptr;
    const T* alpha_slot[3] = {nullptr, nullptr, nullptr};
    const T* beta_slot[3] = {nullptr, nullptr, nullptr};
    for (int a = 0; a < g.nd && g.pml; ++a) {
      const int d = 3 - g.nd + a;
      beta[a].assign(gr.numel, T(0));
      beta_ptr.a[a] = beta[a].data();
      bpk.a[a] = fixed.beta_per_kappa[d].data();
      alpha_slot[d] = fixed.alpha[d].data();
      beta_slot[d] = beta[a].data();
    }
    Kernels::velocity_coefficients(g, kappa.data(), fixed.k_per_kappa.data(), bpk, k.data(),
                                   beta_ptr);
    view =
        cu::coefficients_view<T>(gr, fixed.q2.data(), fixed.b.data(), k.data(), fixed.a_dt2.data(),
                                 g.pml ? alpha_slot : nullptr, g.pml ? beta_slot : nullptr);
  }
};

// wave_shots.h's forward and backward over a kernels policy against
// shot_traces and shot_kappa_gradient, for each checkpoint interval in
// `everies` (0: full trajectories), then the policy's velocity gradient from
// the κ gradient against velocity_gradient's, and the forward without a
// record; `fused`: each run of steps through the policy's forward_run and
// adjoint_run.
template <typename T, typename Kernels>
void check_shots_solve(const wave::ShotGeometry& geo, const cu::WaveCells<T>& g,
                       const std::vector<T>& c, const wave::StepCoefficients<T>& co,
                       const DeviceTables<T, Kernels>& dev, std::initializer_list<int64_t> everies,
                       bool fused) {
  SCOPED_TRACE(fused ? "fused runs" : "a launch per phase");
  const wave::WaveGrid& gr = geo.grid;
  const std::vector<double> c64(c.begin(), c.end());
  const cu::StencilsCsr src = cu::stencils_csr(geo.sources), rec = cu::stencils_csr(geo.receivers);
  const cu::CellStencilsCsr by_cell = cu::stencils_by_cell(geo.receivers);
  cu::WaveShotsSetup<T> setup;
  setup.cells = g;
  setup.co = dev.view;
  setup.sources = cu::view_of(src);
  setup.receivers = cu::view_of(rec);
  setup.injection = cu::view_of(by_cell);
  setup.wavelet = geo.wavelet.data();
  setup.shots = static_cast<int64_t>(geo.sources.size());
  setup.n_t = gr.n_t;
  setup.n_steps = gr.n_steps();
  setup.substeps = gr.substeps;
  setup.device = fk::kCPU;
  setup.fused = fused;
  const cu::WaveShots<T, Kernels> shots(setup);
  ASSERT_EQ(setup.shots, 2);

  // Traces of the gradient: random, (shots, n_rec, n_t).
  const int64_t n_out = setup.shots * rec.count() * gr.n_t;
  const std::vector<double> gv = random_velocity(n_out, 11);
  const std::vector<T> gt(gv.begin(), gv.end());
  const fk::Tensor gbar = fk::from_vector(gt, {setup.shots, rec.count(), gr.n_t});

  for (int64_t every : everies) {
    SCOPED_TRACE("every " + std::to_string(every));
    wave::TraceRecord cpu_rec;
    cpu_rec.every = every;
    const fk::Tensor want = wave::shot_traces(geo, co, &cpu_rec);
    cu::WaveShotsRecord dev_rec;
    dev_rec.every = every;
    const fk::Tensor got = shots.forward(&dev_rec);
    ASSERT_EQ(got.shape(), want.shape());
    EXPECT_TRUE(same_bits(to_vec<T>(got), to_vec<T>(want)));

    const std::vector<double> kbar_want = wave::shot_kappa_gradient(geo, co, cpu_rec, gbar);
    const std::vector<double> kbar_got = to_vec<double>(
        shots.kappa_gradient(dev_rec, gt.data(), dev.fixed.k_per_kappa.data(), dev.bpk));
    for (int64_t t = 0; t < g.padded; ++t) {
      const int64_t p = cu::padded_cell(g, t).p;
      ASSERT_EQ(std::memcmp(&kbar_got[p], &kbar_want[p], sizeof(double)), 0) << "cell " << p;
    }
    const std::vector<double> cbar = wave::velocity_gradient(gr, c64, kbar_want);
    std::vector<T> cbar_got(g.domain, T(-7));
    Kernels::velocity_gradient(g, c.data(), kbar_got.data(), cbar_got.data());
    for (int64_t i = 0; i < g.domain; ++i) {
      const T want_i = static_cast<T>(cbar[i]);
      ASSERT_EQ(std::memcmp(&cbar_got[i], &want_i, sizeof(T)), 0) << "velocity cell " << i;
    }
  }
  // Without a record (the inference forward) the traces are the same.
  EXPECT_TRUE(
      same_bits(to_vec<T>(shots.forward(nullptr)), to_vec<T>(wave::shot_traces(geo, co, nullptr))));
}

// The photoacoustic map as the device runs it over a kernels policy (the
// operator's tables, the start, one shot without source, the sensor) against
// WaveInitialConditionOperator's apply and adjoint (`fused`: the runs of
// steps through the policy's forward_run and adjoint_run).
template <typename T, typename Kernels>
void check_initial_value(const WaveInitialConditionConfig& cfg, const fk::Dims& shape, bool fused) {
  SCOPED_TRACE(wave::absorbing_name(cfg.wave.absorbing) + (cfg.sensor_fc > 0 ? " filtered" : "") +
               (sizeof(T) == 4 ? " f32" : " f64") + (fused ? " fused" : ""));
  fk::KnobOverride generic("FK_CPU_ISA", "generic");
  const WaveInitialConditionOperator op(cfg, shape);
  const wave::ShotGeometry& geo = op.geometry();
  const wave::WaveGrid& gr = geo.grid;
  const bool pml = geo.damping.kind == wave::Absorbing::kPml;
  const cu::WaveCells<T> g = cu::make_wave_cells<T>(gr, pml);
  std::vector<double> kappa(gr.numel, 0.0);
  const std::vector<T> c(g.domain, static_cast<T>(cfg.wave.c_max));
  Kernels::padded_kappa(g, c.data(), kappa.data());
  const wave::StepCoefficients<T> co = wave::step_coefficients<T>(gr, geo.damping, kappa);
  std::vector<T> start(gr.numel);
  for (int64_t p = 0; p < gr.numel; ++p) start[p] = static_cast<T>(0.5 * gr.dt * gr.dt * kappa[p]);
  const T* alpha[3] = {nullptr, nullptr, nullptr};
  const T* beta[3] = {nullptr, nullptr, nullptr};
  for (int d = 0; d < 3; ++d)
    if (pml && gr.active[d]) alpha[d] = co.alpha[d].data(), beta[d] = co.beta[d].data();
  const cu::StencilsCsr rec = cu::stencils_csr(geo.receivers);
  const cu::CellStencilsCsr by_cell = cu::stencils_by_cell(geo.receivers);
  cu::WaveShotsSetup<T> setup;
  setup.cells = g;
  setup.co = cu::coefficients_view<T>(gr, co.q2.data(), co.b.data(), co.k.data(), co.a_dt2.data(),
                                      alpha, beta);
  setup.receivers = cu::view_of(rec);
  setup.injection = cu::view_of(by_cell);
  setup.n_t = gr.n_t;
  setup.n_steps = gr.n_steps();
  setup.substeps = gr.substeps;
  setup.device = fk::kCPU;
  setup.fused = fused;
  const cu::WaveShots<T, Kernels> shots(setup);
  std::vector<double> w;
  cu::WaveSensor sensor;
  if (cfg.sensor_fc > 0) {
    w = gaussian_lowpass_weights(gr.dt, cfg.sensor_fc);
    sensor.w = w.data();
    sensor.half = static_cast<int64_t>(w.size() / 2);
  }
  sensor.every = op.substeps();
  sensor.n_t = cfg.wave.n_t;

  const fk::DType dt = fk::dtype_of<T>();
  std::vector<double> p0v = random_velocity(shape.numel(), 21);
  for (double& v : p0v) v -= 2.0;
  const fk::Tensor p0 = fk::from_vector(p0v, shape).to(dt);
  const fk::Tensor want = op.apply(p0);
  const fk::Tensor got =
      shots.initial_value_forward(p0.contiguous().data<T>(), start.data(), sensor);
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_TRUE(same_bits(to_vec<T>(got), to_vec<T>(want)));

  const std::vector<double> gv = random_velocity(want.numel(), 22);
  const std::vector<double> adj_want = op.adjoint(gv, dt);
  const fk::Tensor adj = shots.initial_value_adjoint(gv.data(), start.data(), sensor, shape);
  EXPECT_TRUE(same_bits(to_vec<T>(adj), std::vector<T>(adj_want.begin(), adj_want.end())));
}

}  // namespace nefi::wave_cells_test
