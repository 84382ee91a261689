// The wave kernels' arithmetic (nefi/cuda/wave_cells.h) and their order in a
// solve (nefi/cuda/wave_shots.h), run on the host: every kernel's threads as
// a host loop, all shots batched as on the device, against the CPU operator's
// own loops (leapfrog_step.cpp's generic build: FK_CPU_ISA=generic, whose
// products and sums are rounded one by one as nvcc --fmad=false rounds
// them). Bit for bit, f32 and f64, 1-D, 2-D and 3-D, every absorbing layer,
// order 2 and 4: the velocity's coefficients built from the velocity-free
// tables the device caches, the traces, and the velocity gradient through
// full trajectories and through checkpoints; and one forward and adjoint
// step from random fields (ψ and μ included).
#include "nefi/cuda/wave_cells.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fk/factory.h"
#include "fk/knobs.h"
#include "nefi/cuda/wave_cell_layout.h"
#include "nefi/cuda/wave_initial_cells.h"
#include "nefi/cuda/wave_shots.h"
#include "nefi/operators/wave/leapfrog.h"
#include "nefi/operators/wave/wave_initial_condition.h"
#include "nefi/operators/wave/wave_propagation.h"

namespace {

namespace wave = nefi::wave;
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
};

// The CPU reference without FMA contraction for a scope.
class GenericIsa {
 public:
  GenericIsa() : knob_(fk::mutable_knob("FK_CPU_ISA")) {
    knob_.set_override(std::string("generic"));
  }
  ~GenericIsa() { knob_.set_override(std::nullopt); }
  GenericIsa(const GenericIsa&) = delete;
  GenericIsa& operator=(const GenericIsa&) = delete;

 private:
  fk::Knob& knob_;
};

struct Case {
  std::vector<int64_t> shape;
  wave::Absorbing absorbing;
  int order;
};

const std::vector<Case> kCases = {
    {{14, 12}, wave::Absorbing::kPml, 4},     {{13, 11}, wave::Absorbing::kPml, 2},
    {{12, 12}, wave::Absorbing::kSponge, 4},  {{11, 10}, wave::Absorbing::kCerjan, 2},
    {{9, 8, 7}, wave::Absorbing::kSponge, 4}, {{8, 7, 6}, wave::Absorbing::kNone, 2},
    {{24}, wave::Absorbing::kPml, 4},
};

std::string name_of(const Case& c) {
  std::string s = wave::absorbing_name(c.absorbing);
  s.append(" order ").append(std::to_string(c.order)).append(" shape");
  for (int64_t n : c.shape) s.append(" ").append(std::to_string(n));
  return s;
}

wave::ShotGeometry geometry_of(const Case& c) {
  const int nd = static_cast<int>(c.shape.size());
  wave::WaveConfig cfg;
  cfg.extent.assign(nd, 1.0);
  cfg.order = c.order;
  cfg.absorbing = c.absorbing;
  cfg.absorb_width = c.absorbing == wave::Absorbing::kNone ? 0.0 : 0.2;
  cfg.c_max = 2.5;
  cfg.dt_obs = 0.03;
  cfg.n_t = 9;
  std::vector<std::vector<double>> src = {std::vector<double>(nd, 0.3),
                                          std::vector<double>(nd, 0.61)};
  std::vector<std::vector<double>> rec = {
      std::vector<double>(nd, 0.8), std::vector<double>(nd, 0.47), std::vector<double>(nd, 0.45)};
  rec[0][0] = 0.12;
  return wave::make_shot_geometry(cfg, fk::Dims(c.shape), src, rec, 6.0, 1.0);
}

std::vector<double> random_velocity(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(1.5, 2.5);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng);
  return v;
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

// The device's tables: what step_coefficients gives for κ = 0 (everything
// but k and beta, which do not depend on κ otherwise), and k, beta from the
// velocity by the cells.
template <typename T>
struct DeviceTables {
  wave::StepCoefficients<T> fixed;
  std::vector<double> kappa;
  std::vector<T> k;
  std::array<std::vector<T>, 3> beta;  // by active axis
  cu::AxisFields<const double> bpk;
  cu::WaveCoefficientsView<T> view;

  DeviceTables(const wave::ShotGeometry& geo, const cu::WaveCells<T>& g, const std::vector<T>& c) {
    const wave::WaveGrid& gr = geo.grid;
    fixed = wave::step_coefficients<T>(gr, geo.damping, std::vector<double>(gr.numel, 0.0));
    kappa.assign(gr.numel, 0.0);
    k.assign(gr.numel, T(0));
    for (int64_t t = 0; t < g.padded; ++t) cu::padded_kappa_cell(g, c.data(), kappa.data(), t);
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
    for (int64_t t = 0; t < g.padded; ++t)
      cu::velocity_coefficients_cell(g, kappa.data(), fixed.k_per_kappa.data(), bpk, k.data(),
                                     beta_ptr, t);
    view =
        cu::coefficients_view<T>(gr, fixed.q2.data(), fixed.b.data(), k.data(), fixed.a_dt2.data(),
                                 g.pml ? alpha_slot : nullptr, g.pml ? beta_slot : nullptr);
  }
};

template <typename T>
void check_solve(const Case& cs) {
  SCOPED_TRACE(name_of(cs) + (sizeof(T) == 4 ? " f32" : " f64"));
  GenericIsa generic;
  const wave::ShotGeometry geo = geometry_of(cs);
  const wave::WaveGrid& gr = geo.grid;
  const cu::WaveCells<T> g = cu::make_wave_cells<T>(gr, geo.damping.kind == wave::Absorbing::kPml);
  std::vector<T> c;
  for (double v : random_velocity(g.domain, 7)) c.push_back(static_cast<T>(v));
  std::vector<double> c64(c.begin(), c.end());

  // The CPU operator's coefficients, and the device's built from its tables.
  const std::vector<double> kappa = wave::padded_kappa(gr, c64);
  const wave::StepCoefficients<T> co = wave::step_coefficients<T>(gr, geo.damping, kappa);
  const DeviceTables<T> dev(geo, g, c);
  ASSERT_TRUE(same_bits(dev.kappa, kappa));
  ASSERT_TRUE(same_bits(dev.k, co.k));
  for (int a = 0; a < g.nd && g.pml; ++a)
    ASSERT_TRUE(same_bits(dev.beta[a], co.beta[3 - g.nd + a]));

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
  const cu::WaveShots<T, HostKernels> shots(setup);

  // Traces of the gradient: random, (shots, n_rec, n_t).
  const int64_t n_out = setup.shots * rec.count() * gr.n_t;
  std::vector<double> gv = random_velocity(n_out, 11);
  std::vector<T> gt(gv.begin(), gv.end());
  const fk::Tensor gbar = fk::from_vector(gt, {setup.shots, rec.count(), gr.n_t});

  for (int64_t every : {int64_t{0}, int64_t{3}, wave::auto_checkpoint_every(gr.n_steps())}) {
    SCOPED_TRACE(testing::Message() << "every " << every);
    wave::TraceRecord cpu_rec;
    cpu_rec.every = every;
    const fk::Tensor want = wave::shot_traces(geo, co, &cpu_rec);
    cu::WaveShotsRecord dev_rec;
    dev_rec.every = every;
    const fk::Tensor got = shots.forward(&dev_rec);
    ASSERT_EQ(got.shape(), want.shape());
    EXPECT_TRUE(same_bits(to_vec<T>(got), to_vec<T>(want)));

    const std::vector<double> kbar_want = wave::shot_kappa_gradient(geo, co, cpu_rec, gbar);
    const fk::Tensor total =
        shots.kappa_gradient(dev_rec, gt.data(), co.k_per_kappa.data(), dev.bpk);
    const std::vector<double> kbar_got = to_vec<double>(total);
    for (int64_t t = 0; t < g.padded; ++t) {
      const int64_t p = cu::padded_cell(g, t).p;
      ASSERT_EQ(std::memcmp(&kbar_got[p], &kbar_want[p], sizeof(double)), 0) << "cell " << p;
    }
    const std::vector<double> cbar = wave::velocity_gradient(gr, c64, kbar_want);
    for (int64_t i = 0; i < g.domain; ++i) {
      const T want_i = static_cast<T>(cbar[i]);
      const T got_i = cu::velocity_gradient_cell(g, c.data(), kbar_got.data(), i);
      ASSERT_EQ(std::memcmp(&got_i, &want_i, sizeof(T)), 0) << "velocity cell " << i;
    }
  }
  // Without a record (the inference forward) the traces are the same.
  EXPECT_TRUE(
      same_bits(to_vec<T>(shots.forward(nullptr)), to_vec<T>(wave::shot_traces(geo, co, nullptr))));
}

TEST(NefiWaveCells, SolveAndGradientEqualTheCpuBitwise) {
  for (const Case& c : kCases) {
    check_solve<double>(c);
    check_solve<float>(c);
  }
}

// One step from random fields on the padded cells (ψ, μ, λ nonzero; one
// shot): the forward and adjoint cells against leapfrog_step and
// leapfrog_adjoint_step, with and without the gradient sums.
template <typename T>
void check_one_step(const Case& cs) {
  SCOPED_TRACE(name_of(cs) + (sizeof(T) == 4 ? " f32" : " f64"));
  GenericIsa generic;
  const wave::ShotGeometry geo = geometry_of(cs);
  const wave::WaveGrid& gr = geo.grid;
  const bool pml = geo.damping.kind == wave::Absorbing::kPml;
  const cu::WaveCells<T> g = cu::make_wave_cells<T>(gr, pml);
  std::vector<double> c64 = random_velocity(g.domain, 3);
  const wave::StepCoefficients<T> co =
      wave::step_coefficients<T>(gr, geo.damping, wave::padded_kappa(gr, c64));
  std::mt19937_64 rng(5);
  std::normal_distribution<double> nd;
  auto field = [&] {
    std::vector<T> v(gr.numel, T(0));
    wave::for_each_row(gr, [&](int64_t p0, int64_t count) {
      for (int64_t p = p0; p < p0 + count; ++p) v[p] = static_cast<T>(nd(rng));
    });
    return v;
  };
  const T* alpha_slot[3] = {nullptr, nullptr, nullptr};
  const T* beta_slot[3] = {nullptr, nullptr, nullptr};
  for (int d = 0; d < 3; ++d)
    if (pml && gr.active[d]) alpha_slot[d] = co.alpha[d].data(), beta_slot[d] = co.beta[d].data();
  const cu::WaveCoefficientsView<T> view =
      cu::coefficients_view<T>(gr, co.q2.data(), co.b.data(), co.k.data(), co.a_dt2.data(),
                               pml ? alpha_slot : nullptr, pml ? beta_slot : nullptr);

  // Forward.
  const std::vector<T> up = field(), u = field();
  std::array<std::vector<T>, 3> psi_cpu, psi_dev;
  std::array<T*, 3> psi_slot{nullptr, nullptr, nullptr};
  cu::AxisFields<T> psi_axis;
  for (int a = 0; a < g.nd && pml; ++a) {
    const int d = 3 - g.nd + a;
    psi_cpu[d] = field();
    psi_dev[d] = psi_cpu[d];
    psi_slot[d] = psi_cpu[d].data();
    psi_axis.a[a] = psi_dev[d].data();
  }
  std::vector<T> un_cpu(gr.numel, T(0)), un_dev(gr.numel, T(0));
  wave::leapfrog_step<T>(gr, co, up.data(), u.data(), un_cpu.data(), psi_slot);
  HostKernels::step<T>(g, view, 1, up.data(), u.data(), un_dev.data(), psi_axis, nullptr);
  EXPECT_TRUE(same_bits(un_dev, un_cpu));
  for (int d = 0; d < 3; ++d) EXPECT_TRUE(same_bits(psi_dev[d], psi_cpu[d])) << "psi " << d;

  // Adjoint, with the gradient sums (u^n = u, u^{n+1} = un) and without.
  for (bool grad : {true, false}) {
    SCOPED_TRACE(grad ? "gradient" : "no gradient");
    std::vector<T> lam_c_cpu = field(), lam_p = field();
    std::vector<T> lam_c_dev = lam_c_cpu;
    std::vector<T> oc_cpu(gr.numel, T(0)), op_cpu(gr.numel, T(0));
    std::vector<T> oc_dev = oc_cpu, op_dev = op_cpu, kl(gr.numel, T(0));
    std::vector<T> kb_cpu = field(), kb_dev = kb_cpu;
    std::array<std::vector<T>, 3> mu_cpu, mu_dev, fb_cpu, fb_dev;
    std::array<T*, 3> mu_slot{nullptr, nullptr, nullptr}, fb_slot{nullptr, nullptr, nullptr};
    cu::AxisFields<T> mu_axis, fb_axis;
    for (int a = 0; a < g.nd && pml; ++a) {
      const int d = 3 - g.nd + a;
      mu_cpu[d] = field(), fb_cpu[d] = field();
      mu_dev[d] = mu_cpu[d], fb_dev[d] = fb_cpu[d];
      mu_slot[d] = mu_cpu[d].data(), fb_slot[d] = fb_cpu[d].data();
      mu_axis.a[a] = mu_dev[d].data(), fb_axis.a[a] = fb_dev[d].data();
    }
    wave::leapfrog_adjoint_step<T>(gr, co, lam_c_cpu.data(), lam_p.data(), oc_cpu.data(),
                                   op_cpu.data(), mu_slot, grad ? u.data() : nullptr,
                                   grad ? un_cpu.data() : nullptr, kb_cpu.data(), fb_slot);
    HostKernels::adjoint<T>(g, view, 1, lam_c_dev.data(), lam_p.data(), oc_dev.data(),
                            op_dev.data(), kl.data(), mu_axis, grad ? u.data() : nullptr,
                            grad ? un_cpu.data() : nullptr, kb_dev.data(), fb_axis, nullptr);
    EXPECT_TRUE(same_bits(lam_c_dev, lam_c_cpu));
    EXPECT_TRUE(same_bits(oc_dev, oc_cpu));
    EXPECT_TRUE(same_bits(op_dev, op_cpu));
    EXPECT_TRUE(same_bits(kb_dev, kb_cpu));
    for (int d = 0; d < 3; ++d) {
      EXPECT_TRUE(same_bits(mu_dev[d], mu_cpu[d])) << "mu " << d;
      EXPECT_TRUE(same_bits(fb_dev[d], fb_cpu[d])) << "fbar " << d;
    }
  }
}

TEST(NefiWaveCells, OneStepFromRandomFieldsEqualsTheCpuBitwise) {
  for (const Case& c : kCases) {
    check_one_step<double>(c);
    check_one_step<float>(c);
  }
}

// The photoacoustic map as the device runs it (the operator's tables, the
// start, one shot without source, the sensor) against
// WaveInitialConditionOperator's apply and adjoint, with and without the
// sensor's low-pass, with a PML and a sponge, f32 and f64.
template <typename T>
void check_initial_value(const nefi::WaveInitialConditionConfig& cfg, const fk::Dims& shape) {
  SCOPED_TRACE(wave::absorbing_name(cfg.wave.absorbing) + (cfg.sensor_fc > 0 ? " filtered" : "") +
               (sizeof(T) == 4 ? " f32" : " f64"));
  GenericIsa generic;
  const nefi::WaveInitialConditionOperator op(cfg, shape);
  const wave::ShotGeometry& geo = op.geometry();
  const wave::WaveGrid& gr = geo.grid;
  const bool pml = geo.damping.kind == wave::Absorbing::kPml;
  const cu::WaveCells<T> g = cu::make_wave_cells<T>(gr, pml);
  std::vector<double> kappa(gr.numel, 0.0);
  {
    const std::vector<T> c(g.domain, static_cast<T>(cfg.wave.c_max));
    for (int64_t t = 0; t < g.padded; ++t) cu::padded_kappa_cell(g, c.data(), kappa.data(), t);
  }
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
  const cu::WaveShots<T, HostKernels> shots(setup);
  std::vector<double> w;
  cu::WaveSensor sensor;
  if (cfg.sensor_fc > 0) {
    w = nefi::gaussian_lowpass_weights(gr.dt, cfg.sensor_fc);
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
  std::vector<T> adj_want_t(adj_want.begin(), adj_want.end());
  EXPECT_TRUE(same_bits(to_vec<T>(adj), adj_want_t));
}

TEST(NefiWaveCells, InitialValueMapAndAdjointEqualTheCpuBitwise) {
  for (wave::Absorbing a : {wave::Absorbing::kPml, wave::Absorbing::kSponge})
    for (double fc : {0.0, 9.0}) {
      nefi::WaveInitialConditionConfig cfg;
      cfg.wave.extent = {1.0, 1.2};
      cfg.wave.order = 4;
      cfg.wave.absorbing = a;
      cfg.wave.absorb_width = 0.2;
      cfg.wave.c_max = 1.5;
      cfg.wave.dt_obs = 0.04;
      cfg.wave.n_t = 12;
      cfg.receivers = {{0.1, 0.3}, {0.1, 0.62}, {0.9, 0.95}};
      cfg.sensor_fc = fc;
      check_initial_value<double>(cfg, {12, 14});
      check_initial_value<float>(cfg, {12, 14});
    }
}

// Every kernel's threads run last to first (a GPU runs them in no set
// order): the same bits, so no thread reads what another thread of its
// launch writes.
struct ReversedThreads {
  ReversedThreads() { HostKernels::reversed = true; }
  ~ReversedThreads() { HostKernels::reversed = false; }
};

TEST(NefiWaveCells, ThreadOrderDoesNotChangeTheBits) {
  ReversedThreads reversed;
  for (const Case& c : kCases) {
    check_one_step<double>(c);
    check_solve<double>(c);
    check_solve<float>(c);
  }
  nefi::WaveInitialConditionConfig cfg;
  cfg.wave.extent = {1.0, 1.2};
  cfg.wave.order = 4;
  cfg.wave.absorbing = wave::Absorbing::kPml;
  cfg.wave.absorb_width = 0.2;
  cfg.wave.c_max = 1.5;
  cfg.wave.dt_obs = 0.04;
  cfg.wave.n_t = 12;
  cfg.receivers = {{0.1, 0.3}, {0.1, 0.62}, {0.9, 0.95}};
  cfg.sensor_fc = 9.0;
  check_initial_value<double>(cfg, {12, 14});
}

// The trace injection by target cell (one thread per (shot, cell)) against
// inject_traces's loop written out (receivers in order, each stencil in
// order, lam[i] += T(w) g): two shots, receivers sharing cells (neighbours,
// and one receiver twice), threads forward and reversed. Each cell is one
// target; adding a shared cell's terms in another order gives other bits
// here, so only the CPU's order passes.
template <typename T>
void check_injection(bool reversed) {
  SCOPED_TRACE(std::string(sizeof(T) == 4 ? "f32" : "f64") + (reversed ? " reversed" : ""));
  wave::WaveConfig cfg;
  cfg.extent = {1.0, 1.0};
  cfg.order = 4;
  cfg.absorbing = wave::Absorbing::kPml;
  cfg.absorb_width = 0.2;
  cfg.c_max = 2.5;
  cfg.dt_obs = 0.03;
  cfg.n_t = 5;
  const std::vector<std::vector<double>> rec = {
      {0.45, 0.5}, {0.47, 0.5}, {0.45, 0.5}, {0.8, 0.12}, {0.46, 0.52}};
  const wave::ShotGeometry geo =
      wave::make_shot_geometry(cfg, fk::Dims{14, 12}, {{0.3, 0.3}, {0.6, 0.6}}, rec, 6.0, 1.0);
  const wave::WaveGrid& gr = geo.grid;
  const cu::WaveCells<T> g = cu::make_wave_cells<T>(gr, true);
  const cu::CellStencilsCsr by_cell = cu::stencils_by_cell(geo.receivers);
  int64_t terms = 0, shared = 0;
  for (const wave::PointStencil& p : geo.receivers) terms += static_cast<int64_t>(p.index.size());
  ASSERT_EQ(by_cell.start.back(), terms);
  ASSERT_EQ(by_cell.points, static_cast<int64_t>(rec.size()));
  for (int64_t c = 0; c < by_cell.count(); ++c) {
    if (c > 0) {
      ASSERT_LT(by_cell.cell[c - 1], by_cell.cell[c]) << "a cell listed twice";
    }
    shared += by_cell.start[c + 1] - by_cell.start[c] > 2 ? 1 : 0;
  }
  ASSERT_GT(shared, 0) << "no cell with three terms or more: the order would not matter";

  const int64_t shots = 2, n_rec = static_cast<int64_t>(rec.size()), n_t = cfg.n_t, j = 3;
  std::mt19937_64 rng(9);
  std::normal_distribution<double> nd;
  std::vector<T> lam(shots * g.numel), gb(shots * n_rec * n_t);
  for (T& v : lam) v = static_cast<T>(nd(rng));
  for (T& v : gb) v = static_cast<T>(nd(rng));
  std::vector<T> want = lam, backwards = lam, got = lam;
  for (int64_t s = 0; s < shots; ++s)
    for (int64_t r = 0; r < n_rec; ++r) {
      const wave::PointStencil& p = geo.receivers[r];
      const T gv = gb[(s * n_rec + r) * n_t + j];
      for (size_t i = 0; i < p.index.size(); ++i)
        want[s * g.numel + p.index[i]] += static_cast<T>(p.weight[i]) * gv;
    }
  for (int64_t s = 0; s < shots; ++s)
    for (int64_t r = n_rec - 1; r >= 0; --r) {
      const wave::PointStencil& p = geo.receivers[r];
      const T gv = gb[(s * n_rec + r) * n_t + j];
      for (size_t i = p.index.size(); i-- > 0;)
        backwards[s * g.numel + p.index[i]] += static_cast<T>(p.weight[i]) * gv;
    }
  ASSERT_FALSE(same_bits(backwards, want)) << "the terms' order leaves the bits alone here";
  HostKernels::reversed = reversed;
  HostKernels::inject_traces<T>(g, cu::view_of(by_cell), shots, gb.data(), n_t, j, got.data(),
                                nullptr);
  HostKernels::reversed = false;
  EXPECT_TRUE(same_bits(got, want));
}

TEST(NefiWaveCells, TraceInjectionByCellEqualsTheCpuLoop) {
  for (bool reversed : {false, true}) {
    check_injection<double>(reversed);
    check_injection<float>(reversed);
  }
}

// The velocity check's fold: min and max of the finite values, NaN and ±inf counted.
TEST(NefiWaveCells, VelocityFoldCountsNonFiniteValues) {
  double acc[3] = {INFINITY, -INFINITY, 0};
  const double inf = INFINITY;
  for (double v : {2.0, 0.5, std::nan(""), 3.0, inf, -inf, 1.0}) cu::fold_velocity(acc, v);
  EXPECT_EQ(acc[0], 0.5);
  EXPECT_EQ(acc[1], 3.0);
  EXPECT_EQ(acc[2], 3.0);
}

// The device check's two passes on the host: each of 6 "blocks" folds its
// grid-stride share of the values, a 7th (a block past the end) folds none;
// the partials merged in either order give the single fold's min, max and count.
TEST(NefiWaveCells, MergedBlockFoldsEqualOneFold) {
  const double inf = INFINITY;
  std::vector<double> v;
  for (int i = 0; i < 40; ++i) v.push_back(1.0 + 0.37 * ((i * 13) % 17));
  v[5] = std::nan(""), v[11] = inf, v[29] = -inf, v[17] = 0.25, v[33] = 9.5;
  double one[3] = {INFINITY, -INFINITY, 0};
  for (double x : v) cu::fold_velocity(one, x);
  ASSERT_EQ(one[0], 0.25);
  ASSERT_EQ(one[1], 9.5);
  ASSERT_EQ(one[2], 3.0);
  constexpr size_t kStride = 6, kBlocks = 7;
  std::vector<std::array<double, 3>> partials(kBlocks, {INFINITY, -INFINITY, 0});
  for (size_t b = 0; b < kStride; ++b)
    for (size_t i = b; i < v.size(); i += kStride) cu::fold_velocity(partials[b].data(), v[i]);
  for (bool reverse : {false, true}) {
    double acc[3] = {INFINITY, -INFINITY, 0};
    for (size_t k = 0; k < kBlocks; ++k)
      cu::merge_velocity(acc, partials[reverse ? kBlocks - 1 - k : k].data());
    EXPECT_EQ(acc[0], one[0]);
    EXPECT_EQ(acc[1], one[1]);
    EXPECT_EQ(acc[2], one[2]);
  }
}

}  // namespace
