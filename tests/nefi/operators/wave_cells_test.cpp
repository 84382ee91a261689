// The wave device's solve (nefi/cuda/wave_shots.h) with its kernels
// (nefi/cuda/wave_cells.h) run on the host (wave_cells_host.h: all shots
// batched as on the device) against the CPU operator's own loops
// (leapfrog_step.cpp's generic build), bit for bit, f32 and f64, 1-D, 2-D and
// 3-D, every absorbing layer, order 2 and 4: the velocity's coefficients built
// from the velocity-free tables the device caches, the traces, and the
// velocity gradient through full trajectories and through checkpoints, each
// run of steps launched per phase and through the fused runs' entry points
// (wave_steps.h's order either way; the adjoint's buffer swaps); one
// forward and adjoint step from random fields (ψ and μ included); the
// photoacoustic initial-value map and its adjoint; and all of it again with
// every kernel's threads run last to first. The sums across threads (trace
// injection, the velocity check's folds) are wave_cell_reductions_test.cpp.
#include "nefi/cuda/wave_cells.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fk/factory.h"
#include "nefi/cuda/wave_cell_layout.h"
#include "nefi/cuda/wave_initial_cells.h"
#include "nefi/cuda/wave_shots.h"
#include "nefi/operators/wave/leapfrog.h"
#include "nefi/operators/wave/wave_initial_condition.h"
#include "nefi/operators/wave/wave_propagation.h"
#include "nefi/operators/wave_cells_host.h"

namespace nefi::wave_cells_test {
namespace {

template <typename T>
void check_solve(const Case& cs) {
  SCOPED_TRACE(name_of(cs) + (sizeof(T) == 4 ? " f32" : " f64"));
  fk::KnobOverride generic("FK_CPU_ISA", "generic");
  const wave::ShotGeometry geo = geometry_of(cs);
  const wave::WaveGrid& gr = geo.grid;
  const cu::WaveCells<T> g = cu::make_wave_cells<T>(gr, geo.damping.kind == wave::Absorbing::kPml);
  std::vector<T> c;
  for (double v : random_velocity(g.domain, 7)) c.push_back(static_cast<T>(v));
  std::vector<double> c64(c.begin(), c.end());

  // The CPU operator's coefficients, and the device's built from its tables.
  const std::vector<double> kappa = wave::padded_kappa(gr, c64);
  const wave::StepCoefficients<T> co = wave::step_coefficients<T>(gr, geo.damping, kappa);
  const DeviceTables<T, HostKernels> dev(geo, g, c, 0.0);
  ASSERT_TRUE(same_bits(dev.kappa, kappa));
  ASSERT_TRUE(same_bits(dev.k, co.k));
  for (int a = 0; a < g.nd && g.pml; ++a)
    ASSERT_TRUE(same_bits(dev.beta[a], co.beta[3 - g.nd + a]));

  for (bool fused : {false, true})
    check_shots_solve<T, HostKernels>(
        geo, g, c, co, dev, {int64_t{0}, int64_t{3}, wave::auto_checkpoint_every(gr.n_steps())},
        fused);
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
  fk::KnobOverride generic("FK_CPU_ISA", "generic");
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

// With and without the sensor's low-pass, with a PML and a sponge, f32 and f64.
TEST(NefiWaveCells, InitialValueMapAndAdjointEqualTheCpuBitwise) {
  for (wave::Absorbing a : {wave::Absorbing::kPml, wave::Absorbing::kSponge})
    for (double fc : {0.0, 9.0}) {
      const WaveInitialConditionConfig cfg = photoacoustic_config(a, fc, 12);
      for (bool fused : {false, true}) {
        check_initial_value<double, HostKernels>(cfg, {12, 14}, fused);
        check_initial_value<float, HostKernels>(cfg, {12, 14}, fused);
      }
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
  const WaveInitialConditionConfig cfg = photoacoustic_config(wave::Absorbing::kPml, 9.0, 12);
  check_initial_value<double, HostKernels>(cfg, {12, 14}, false);
}

}  // namespace
}  // namespace nefi::wave_cells_test
