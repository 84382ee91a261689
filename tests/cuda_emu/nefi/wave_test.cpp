// wave.cu's kernels run on the emulated device (emulated_device.h), each in
// both thread orders, against the CPU wave operator's own loops
// (leapfrog_step.cpp's generic build, FK_CPU_ISA=generic: no FMA, as
// wave.cu's --fmad=false) bit for bit, f32 and f64, 1-D, 2-D and 3-D grids
// whose cell counts are not multiples of the 256-thread block, every
// absorbing layer, order 2 and 4, two shots: the velocity check's two
// passes against a host fold; κ and the velocity's coefficients; one
// forward and one adjoint step from random fields; whole solves through
// wave_shots.h's sequence (sources, sampling, trace injection, the
// checkpoint copies, the κ and velocity gradients), a launch per phase and
// each run of steps fused in one cooperative launch; the photoacoustic map
// and its adjoint; and launch_copy, a host memmove on this device.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/emulated_test_util.h"
#include "fk/factory.h"
#include "nefi/cuda/wave_cell_layout.h"
#include "nefi/cuda/wave_cells.h"
#include "nefi/cuda/wave_kernels.h"
#include "nefi/cuda/wave_shots.h"
#include "nefi/operators/wave/leapfrog.h"
#include "nefi/operators/wave/wave_initial_condition.h"
#include "nefi/operators/wave/wave_propagation.h"
#include "nefi/operators/wave_cells_host.h"

// The emulated launchers this file runs: wave_kernels.h's, in ::emu (a
// signature that drifts from its definition fails to link).
namespace nefi::cuda::emu {
int64_t velocity_stats_blocks(int64_t n);
template <typename T>
void launch_velocity_stats(const T* c, int64_t n, double* partials, double* stats, void* stream);
template <typename T>
void launch_padded_kappa(const WaveCells<T>& g, const T* c, double* kappa, void* stream);
template <typename T>
void launch_velocity_coefficients(const WaveCells<T>& g, const double* kappa,
                                  const double* k_per_kappa, const AxisFields<const double>& bpk,
                                  T* k, const AxisFields<T>& beta, void* stream);
template <typename T>
void launch_leapfrog_step(const WaveCells<T>& g, const WaveCoefficientsView<T>& co, int64_t shots,
                          const T* up, const T* u, T* un, const AxisFields<T>& psi, void* stream);
template <typename T>
void launch_inject_sources(const WaveCells<T>& g, const StencilsView& src, const T* ad,
                           const double* wavelet, int64_t n, T* un, void* stream);
template <typename T>
void launch_sample(const WaveCells<T>& g, const StencilsView& rec, int64_t shots, const T* u,
                   T* traces, int64_t n_t, int64_t j, void* stream);
template <typename T>
void launch_inject_traces(const WaveCells<T>& g, const CellStencilsView& rec, int64_t shots,
                          const T* traces_bar, int64_t n_t, int64_t j, T* lam, void* stream);
template <typename T>
void launch_adjoint_step(const WaveCells<T>& g, const WaveCoefficientsView<T>& co, int64_t shots,
                         T* lam_c, const T* lam_p, T* out_cur, T* out_prev, T* kl,
                         const AxisFields<T>& mu, const T* u_n, const T* u_np1, T* kbar,
                         const AxisFields<T>& fbar, void* stream);
template <typename T>
void launch_kappa_gradient(const WaveCells<T>& g, const double* k_per_kappa,
                           const AxisFields<const double>& bpk, int64_t shots, const T* kbar,
                           const AxisFields<T>& fbar, double* total, void* stream);
template <typename T>
void launch_velocity_gradient(const WaveCells<T>& g, const T* c, const double* kappa_bar, T* out,
                              void* stream);
template <typename T>
void launch_embed(const WaveCells<T>& g, const T* p0, T* x, void* stream);
template <typename T>
void launch_scaled_laplacian(const WaveCells<T>& g, const T* k, const T* u, T* out, void* stream);
template <typename T>
void launch_scaled_product(const T* k, const T* u, T* ku, int64_t n, void* stream);
template <typename T>
void launch_initial_adjoint_end(const WaveCells<T>& g, const T* u, const T* ku, const T* lam0,
                                T* out, void* stream);
template <typename T>
void launch_sensor_samples(const T* fine, int64_t n_rec, int64_t n_fine, int64_t every,
                           const double* w, int64_t half, int64_t n_t, T* out, void* stream);
template <typename T>
void launch_sensor_adjoint(const double* g, int64_t n_rec, int64_t n_t, int64_t n_fine,
                           int64_t every, const double* w, int64_t half, T* out, void* stream);
template <typename T>
void launch_copy(const T* src, T* dst, int64_t n, void* stream);
template <typename T>
void launch_wave_forward_run(const WaveSolve<T>& s, const WaveForwardRun<T>& r, void* stream);
template <typename T>
void launch_wave_adjoint_run(const WaveSolve<T>& s, const WaveAdjointRun<T>& r, void* stream);
}  // namespace nefi::cuda::emu

namespace nefi::wave_cells_test {
namespace {

constexpr fkemu::Order kOrders[] = {fkemu::Order::kAscending, fkemu::Order::kDescending};

using fkemu_test::order_name;
using fkemu_test::OrderScope;

template <typename T>
const char* dtype_name() {
  return sizeof(T) == 4 ? "f32" : "f64";
}

// wave_shots.h's kernels policy over the emulated launchers, with the
// velocity's tables and gradient (DeviceTables, check_shots_solve).
struct EmulatedKernels {
  template <typename T>
  static void padded_kappa(const cu::WaveCells<T>& g, const T* c, double* kappa) {
    cu::emu::launch_padded_kappa(g, c, kappa, nullptr);
  }
  template <typename T>
  static void velocity_coefficients(const cu::WaveCells<T>& g, const double* kappa,
                                    const double* kpk, const cu::AxisFields<const double>& bpk,
                                    T* k, const cu::AxisFields<T>& beta) {
    cu::emu::launch_velocity_coefficients(g, kappa, kpk, bpk, k, beta, nullptr);
  }
  template <typename T>
  static void velocity_gradient(const cu::WaveCells<T>& g, const T* c, const double* kbar, T* out) {
    cu::emu::launch_velocity_gradient(g, c, kbar, out, nullptr);
  }
  template <typename T>
  static void step(const cu::WaveCells<T>& g, const cu::WaveCoefficientsView<T>& co, int64_t shots,
                   const T* up, const T* u, T* un, const cu::AxisFields<T>& psi, void* stream) {
    cu::emu::launch_leapfrog_step(g, co, shots, up, u, un, psi, stream);
  }
  template <typename T>
  static void sources(const cu::WaveCells<T>& g, const cu::StencilsView& src, const T* ad,
                      const double* wavelet, int64_t n, T* un, void* stream) {
    cu::emu::launch_inject_sources(g, src, ad, wavelet, n, un, stream);
  }
  template <typename T>
  static void sample(const cu::WaveCells<T>& g, const cu::StencilsView& rec, int64_t shots,
                     const T* u, T* traces, int64_t n_t, int64_t j, void* stream) {
    cu::emu::launch_sample(g, rec, shots, u, traces, n_t, j, stream);
  }
  template <typename T>
  static void inject_traces(const cu::WaveCells<T>& g, const cu::CellStencilsView& rec,
                            int64_t shots, const T* gb, int64_t n_t, int64_t j, T* lam,
                            void* stream) {
    cu::emu::launch_inject_traces(g, rec, shots, gb, n_t, j, lam, stream);
  }
  template <typename T>
  static void adjoint(const cu::WaveCells<T>& g, const cu::WaveCoefficientsView<T>& co,
                      int64_t shots, T* lam_c, const T* lam_p, T* out_cur, T* out_prev, T* kl,
                      const cu::AxisFields<T>& mu, const T* u_n, const T* u_np1, T* kbar,
                      const cu::AxisFields<T>& fbar, void* stream) {
    cu::emu::launch_adjoint_step(g, co, shots, lam_c, lam_p, out_cur, out_prev, kl, mu, u_n, u_np1,
                                 kbar, fbar, stream);
  }
  template <typename T>
  static void copy(const T* src, T* dst, int64_t n, void* stream) {
    cu::emu::launch_copy(src, dst, n, stream);
  }
  template <typename T>
  static void forward_run(const cu::WaveSolve<T>& s, const cu::WaveForwardRun<T>& r, void* stream) {
    cu::emu::launch_wave_forward_run(s, r, stream);
  }
  template <typename T>
  static void adjoint_run(const cu::WaveSolve<T>& s, const cu::WaveAdjointRun<T>& r, void* stream) {
    cu::emu::launch_wave_adjoint_run(s, r, stream);
  }
  template <typename T>
  static void kappa_gradient(const cu::WaveCells<T>& g, const double* kpk,
                             const cu::AxisFields<const double>& bpk, int64_t shots, const T* kbar,
                             const cu::AxisFields<T>& fbar, double* total, void* stream) {
    cu::emu::launch_kappa_gradient(g, kpk, bpk, shots, kbar, fbar, total, stream);
  }
  template <typename T>
  static void embed(const cu::WaveCells<T>& g, const T* p0, T* x, void* stream) {
    cu::emu::launch_embed(g, p0, x, stream);
  }
  template <typename T>
  static void scaled_laplacian(const cu::WaveCells<T>& g, const T* k, const T* u, T* out,
                               void* stream) {
    cu::emu::launch_scaled_laplacian(g, k, u, out, stream);
  }
  template <typename T>
  static void scaled_product(const T* k, const T* u, T* ku, int64_t n, void* stream) {
    cu::emu::launch_scaled_product(k, u, ku, n, stream);
  }
  template <typename T>
  static void initial_adjoint_end(const cu::WaveCells<T>& g, const T* u, const T* ku, const T* lam0,
                                  T* out, void* stream) {
    cu::emu::launch_initial_adjoint_end(g, u, ku, lam0, out, stream);
  }
  template <typename T>
  static void sensor_samples(const T* fine, int64_t n_rec, int64_t n_fine, int64_t every,
                             const double* w, int64_t half, int64_t n_t, T* out, void* stream) {
    cu::emu::launch_sensor_samples(fine, n_rec, n_fine, every, w, half, n_t, out, stream);
  }
  template <typename T>
  static void sensor_adjoint(const double* g, int64_t n_rec, int64_t n_t, int64_t n_fine,
                             int64_t every, const double* w, int64_t half, T* out, void* stream) {
    cu::emu::launch_sensor_adjoint(g, n_rec, n_t, n_fine, every, w, half, out, stream);
  }
};

// --- the velocity check ------------------------------------------------------

// The two passes against a host fold: the partials of each first-pass block
// (its grid-stride share) and the merged stats, for no values (one block
// folding none: +inf, -inf, 0) and lengths under, at and over one block and
// over several, with NaN and ±inf among the values.
template <typename T>
void check_velocity_stats(int64_t n, fkemu::Order order) {
  SCOPED_TRACE("n " + std::to_string(n) + " " + dtype_name<T>() + " " + order_name(order));
  const OrderScope scope(order);
  std::mt19937_64 rng(static_cast<uint64_t>(n));
  std::uniform_real_distribution<double> u(1.5, 2.5);
  std::vector<T> c(n);
  for (T& v : c) v = static_cast<T>(u(rng));
  const double inf = std::numeric_limits<double>::infinity();
  if (n > 3) {
    c[n / 3] = static_cast<T>(std::nan(""));
    c[n / 2] = static_cast<T>(-inf);
    c[n - 1] = static_cast<T>(inf);
  }
  if (n > 300) {
    c[1] = static_cast<T>(0.25);     // the minimum, in the first block
    c[n - 2] = static_cast<T>(9.5);  // the maximum, in the last
  }
  const int64_t blocks = cu::emu::velocity_stats_blocks(n);
  ASSERT_EQ(blocks, std::min<int64_t>(1024, std::max<int64_t>(1, (n + 255) / 256)));
  std::vector<double> partials(3 * blocks, -7.0), stats(3, -7.0);
  cu::emu::launch_velocity_stats(c.data(), n, partials.data(), stats.data(), nullptr);
  double all[3] = {INFINITY, -INFINITY, 0};
  for (int64_t b = 0; b < blocks; ++b) {
    double want[3] = {INFINITY, -INFINITY, 0};
    for (int64_t i = b * 256; i < n; i += blocks * 256)
      for (int64_t j = i; j < std::min(n, i + 256); ++j) cu::fold_velocity(want, c[j]);
    for (int k = 0; k < 3; ++k) EXPECT_EQ(partials[3 * b + k], want[k]) << "block " << b;
  }
  for (T v : c) cu::fold_velocity(all, static_cast<double>(v));
  for (int k = 0; k < 3; ++k) EXPECT_EQ(stats[k], all[k]) << "stat " << k;
  if (n > 300) {
    EXPECT_EQ(stats[0], 0.25);
    EXPECT_EQ(stats[1], 9.5);
    EXPECT_EQ(stats[2], 3.0);
  }
}

TEST(EmulatedWave, VelocityStatsFoldMinMaxAndNonFiniteCount) {
  for (fkemu::Order order : kOrders)
    for (int64_t n : {0, 1, 5, 256, 257, 3000}) {
      check_velocity_stats<double>(n, order);
      check_velocity_stats<float>(n, order);
    }
}

// Over 1,024 blocks' worth the first pass's blocks stride over the values
// (the grid is capped), each block folding several of the 256-value slices.
// A quarter million fibers, one thread order: the emulator's slowest test.
TEST(EmulatedWave, VelocityStatsStrideBeyondTheCappedGrid) {
  EXPECT_EQ(cu::emu::velocity_stats_blocks(int64_t{1} << 30), 1024);
  check_velocity_stats<float>(1024 * 256 + 700, fkemu::Order::kDescending);
}

// --- κ and the velocity's coefficients --------------------------------------

bool is_padded(const wave::WaveGrid& gr, int64_t p) {
  for (int d = 0; d < 3; ++d) {
    const int64_t i = (p / gr.stride[d]) % (gr.n[d] + 2 * gr.off(d)) - gr.off(d);
    if (i < 0 || i >= gr.n[d]) return false;
  }
  return true;
}

template <typename T>
void check_coefficients(const Case& cs, fkemu::Order order) {
  SCOPED_TRACE(name_of(cs) + " " + dtype_name<T>() + " " + order_name(order));
  const OrderScope scope(order);
  const wave::ShotGeometry geo = geometry_of(cs);
  const wave::WaveGrid& gr = geo.grid;
  const cu::WaveCells<T> g = cu::make_wave_cells<T>(gr, geo.damping.kind == wave::Absorbing::kPml);
  std::vector<T> c;
  for (double v : random_velocity(g.domain, 7)) c.push_back(static_cast<T>(v));
  const std::vector<double> kappa = wave::padded_kappa(gr, std::vector<double>(c.begin(), c.end()));
  const wave::StepCoefficients<T> co = wave::step_coefficients<T>(gr, geo.damping, kappa);
  const double halo = -3.0;
  const DeviceTables<T, EmulatedKernels> dev(geo, g, c, halo);
  for (int64_t p = 0; p < gr.numel; ++p)
    ASSERT_EQ(dev.kappa[p], is_padded(gr, p) ? kappa[p] : halo) << "cell " << p;
  EXPECT_TRUE(same_bits(dev.k, co.k));
  for (int a = 0; a < g.nd && g.pml; ++a)
    EXPECT_TRUE(same_bits(dev.beta[a], co.beta[3 - g.nd + a])) << "beta " << a;
}

TEST(EmulatedWave, KappaAndVelocityCoefficientsEqualTheCpu) {
  for (fkemu::Order order : kOrders)
    for (const Case& c : kCases) {
      check_coefficients<double>(c, order);
      check_coefficients<float>(c, order);
    }
}

// --- one step of two shots ---------------------------------------------------

// Fields of all shots: random on the padded cells, zero in the halo.
template <typename T>
class FieldMaker {
 public:
  FieldMaker(const wave::WaveGrid& gr, int64_t shots) : gr_(gr), shots_(shots) {}
  std::vector<T> operator()() {
    std::vector<T> v(shots_ * gr_.numel, T(0));
    for (int64_t s = 0; s < shots_; ++s)
      wave::for_each_row(gr_, [&](int64_t p0, int64_t count) {
        for (int64_t p = s * gr_.numel + p0; p < s * gr_.numel + p0 + count; ++p)
          v[p] = static_cast<T>(nd_(rng_));
      });
    return v;
  }

 private:
  const wave::WaveGrid& gr_;
  int64_t shots_;
  std::mt19937_64 rng_{5};
  std::normal_distribution<double> nd_;
};

// Per-axis fields of all shots, by active axis, and the CPU's slot
// pointers into a copy of shot s.
template <typename T>
struct AxisSet {
  std::array<std::vector<T>, 3> by_axis;
  cu::AxisFields<T> fields() {
    cu::AxisFields<T> f;
    for (int a = 0; a < 3; ++a) f.a[a] = by_axis[a].empty() ? nullptr : by_axis[a].data();
    return f;
  }
};

template <typename T>
std::vector<T> shot_of(const std::vector<T>& v, int64_t s, int64_t numel) {
  return std::vector<T>(v.begin() + s * numel, v.begin() + (s + 1) * numel);
}

// A forward and an adjoint step of two shots from random fields (ψ, μ and
// λ nonzero) against leapfrog_step and leapfrog_adjoint_step shot by shot,
// with and without the gradient sums.
template <typename T>
void check_one_step(const Case& cs, fkemu::Order order) {
  SCOPED_TRACE(name_of(cs) + " " + dtype_name<T>() + " " + order_name(order));
  fk::KnobOverride generic("FK_CPU_ISA", "generic");
  const OrderScope scope(order);
  const wave::ShotGeometry geo = geometry_of(cs);
  const wave::WaveGrid& gr = geo.grid;
  const bool pml = geo.damping.kind == wave::Absorbing::kPml;
  const cu::WaveCells<T> g = cu::make_wave_cells<T>(gr, pml);
  const int64_t shots = 2, S = gr.numel;
  const wave::StepCoefficients<T> co = wave::step_coefficients<T>(
      gr, geo.damping, wave::padded_kappa(gr, random_velocity(g.domain, 3)));
  const T* alpha_slot[3] = {nullptr, nullptr, nullptr};
  const T* beta_slot[3] = {nullptr, nullptr, nullptr};
  for (int d = 0; d < 3; ++d)
    if (pml && gr.active[d]) alpha_slot[d] = co.alpha[d].data(), beta_slot[d] = co.beta[d].data();
  const cu::WaveCoefficientsView<T> view =
      cu::coefficients_view<T>(gr, co.q2.data(), co.b.data(), co.k.data(), co.a_dt2.data(),
                               pml ? alpha_slot : nullptr, pml ? beta_slot : nullptr);
  FieldMaker<T> field(gr, shots);
  const int np = pml ? g.nd : 0;
  // The CPU's per-axis pointers (by slot) into one shot's copies.
  auto slots = [&](std::array<std::vector<T>, 3>& per_axis) {
    std::array<T*, 3> p{nullptr, nullptr, nullptr};
    for (int a = 0; a < np; ++a) p[3 - g.nd + a] = per_axis[a].data();
    return p;
  };

  // Forward: un of both shots, then ψ advanced in place.
  const std::vector<T> up = field(), u = field();
  AxisSet<T> psi;
  for (int a = 0; a < np; ++a) psi.by_axis[a] = field();
  const AxisSet<T> psi0 = psi;
  std::vector<T> un(shots * S, T(0));
  cu::emu::launch_leapfrog_step(g, view, shots, up.data(), u.data(), un.data(), psi.fields(),
                                nullptr);
  for (int64_t s = 0; s < shots; ++s) {
    SCOPED_TRACE("forward, shot " + std::to_string(s));
    std::array<std::vector<T>, 3> psi_cpu;
    for (int a = 0; a < np; ++a) psi_cpu[a] = shot_of(psi0.by_axis[a], s, S);
    std::vector<T> un_cpu(S, T(0));
    wave::leapfrog_step<T>(gr, co, up.data() + s * S, u.data() + s * S, un_cpu.data(),
                           slots(psi_cpu));
    EXPECT_TRUE(same_bits(shot_of(un, s, S), un_cpu));
    for (int a = 0; a < np; ++a)
      EXPECT_TRUE(same_bits(shot_of(psi.by_axis[a], s, S), psi_cpu[a])) << "psi " << a;
  }

  // Adjoint, with the gradient sums (u^n = u, u^{n+1} = un) and without.
  for (bool grad : {true, false}) {
    const std::vector<T> lam_c0 = field(), lam_p = field(), kbar0 = field();
    std::vector<T> lam_c = lam_c0, kbar = kbar0;
    std::vector<T> out_cur(shots * S, T(0)), out_prev(shots * S, T(0)), kl(shots * S, T(0));
    AxisSet<T> mu, fbar;
    for (int a = 0; a < np; ++a) mu.by_axis[a] = field(), fbar.by_axis[a] = field();
    const AxisSet<T> mu0 = mu, fbar0 = fbar;
    cu::emu::launch_adjoint_step(g, view, shots, lam_c.data(), lam_p.data(), out_cur.data(),
                                 out_prev.data(), kl.data(), mu.fields(), grad ? u.data() : nullptr,
                                 grad ? un.data() : nullptr, kbar.data(), fbar.fields(), nullptr);
    for (int64_t s = 0; s < shots; ++s) {
      SCOPED_TRACE(std::string(grad ? "gradient" : "no gradient") + ", shot " + std::to_string(s));
      std::vector<T> lc = shot_of(lam_c0, s, S), kb = shot_of(kbar0, s, S);
      std::vector<T> oc(S, T(0)), op(S, T(0));
      std::array<std::vector<T>, 3> mu_cpu, fb_cpu;
      for (int a = 0; a < np; ++a)
        mu_cpu[a] = shot_of(mu0.by_axis[a], s, S), fb_cpu[a] = shot_of(fbar0.by_axis[a], s, S);
      wave::leapfrog_adjoint_step<T>(gr, co, lc.data(), lam_p.data() + s * S, oc.data(), op.data(),
                                     slots(mu_cpu), grad ? u.data() + s * S : nullptr,
                                     grad ? un.data() + s * S : nullptr, kb.data(), slots(fb_cpu));
      EXPECT_TRUE(same_bits(shot_of(lam_c, s, S), lc));
      EXPECT_TRUE(same_bits(shot_of(out_cur, s, S), oc));
      EXPECT_TRUE(same_bits(shot_of(out_prev, s, S), op));
      EXPECT_TRUE(same_bits(shot_of(kbar, s, S), kb));
      for (int a = 0; a < np; ++a) {
        EXPECT_TRUE(same_bits(shot_of(mu.by_axis[a], s, S), mu_cpu[a])) << "mu " << a;
        EXPECT_TRUE(same_bits(shot_of(fbar.by_axis[a], s, S), fb_cpu[a])) << "fbar " << a;
      }
    }
  }
}

TEST(EmulatedWave, OneStepOfTwoShotsEqualsTheCpu) {
  for (fkemu::Order order : kOrders)
    for (const Case& c : kCases) {
      check_one_step<double>(c, order);
      check_one_step<float>(c, order);
    }
}

// --- whole solves ------------------------------------------------------------

// check_shots_solve over the emulated kernels: full trajectories and
// checkpoints every 3 steps (a partial last block), the velocity gradient by
// its own kernel; `fused`: each run of steps as one cooperative launch.
template <typename T>
void check_solve(const Case& cs, fkemu::Order order, bool fused = false) {
  SCOPED_TRACE(name_of(cs) + " " + dtype_name<T>() + " " + order_name(order));
  fk::KnobOverride generic("FK_CPU_ISA", "generic");
  const OrderScope scope(order);
  // geometry_of's problem with 5 samples: 8 leapfrog steps (24 in 1-D)
  // instead of 16, as every launch costs the emulator a fiber per thread.
  const wave::ShotGeometry geo = geometry_of(cs, 5);
  const wave::WaveGrid& gr = geo.grid;
  const cu::WaveCells<T> g = cu::make_wave_cells<T>(gr, geo.damping.kind == wave::Absorbing::kPml);
  std::vector<T> c;
  for (double v : random_velocity(g.domain, 7)) c.push_back(static_cast<T>(v));
  const std::vector<double> c64(c.begin(), c.end());
  const wave::StepCoefficients<T> co =
      wave::step_coefficients<T>(gr, geo.damping, wave::padded_kappa(gr, c64));
  const DeviceTables<T, EmulatedKernels> dev(geo, g, c, 0.0);

  check_shots_solve<T, EmulatedKernels>(geo, g, c, co, dev, {int64_t{0}, int64_t{3}}, fused);
}

// Split so that each test stays short; the one-step test above covers
// every case's step and adjoint kernels.
TEST(EmulatedWave, SolveAndGradientEqualTheCpu2D) {
  for (fkemu::Order order : kOrders) check_solve<double>(kCases[0], order);  // PML, order 4
  check_solve<float>(kCases[0], fkemu::Order::kDescending);
  check_solve<double>(kCases[3], fkemu::Order::kDescending);  // Cerjan, order 2
}

TEST(EmulatedWave, SolveAndGradientEqualTheCpu1D) {
  for (fkemu::Order order : kOrders) check_solve<double>(kCases[6], order);  // PML, order 4
  check_solve<float>(kCases[6], fkemu::Order::kDescending);
}

TEST(EmulatedWave, SolveAndGradientEqualTheCpu3D) {
  for (fkemu::Order order : kOrders) check_solve<double>(kCases[5], order);  // no layer, order 2
  check_solve<float>(kCases[5], fkemu::Order::kDescending);
}

// The fused runs (launch_wave_forward_run, launch_wave_adjoint_run): a
// whole run per cooperative launch, its blocks running together between the
// grid barriers in both thread orders, so a phase that reads what another
// thread wrote without a barrier between gives other bits. On 132 SMs the
// grid covers every thread index; on one SM (emulated device 1: one
// resident block of 256) each thread strides over several cells.
TEST(EmulatedWave, FusedRunsEqualTheCpu) {
  for (fkemu::Order order : kOrders) {
    check_solve<double>(kCases[0], order, true);  // 2-D, PML, order 4
    check_solve<double>(kCases[6], order, true);  // 1-D, PML, order 4
  }
  check_solve<float>(kCases[0], fkemu::Order::kDescending, true);
  check_solve<double>(kCases[3], fkemu::Order::kAscending, true);   // 2-D, Cerjan, order 2
  check_solve<double>(kCases[5], fkemu::Order::kDescending, true);  // 3-D, no layer
  const fkemu::DeviceGuard one_sm_device(1);
  fkemu::set_device(1, 1);
  check_solve<double>(kCases[0], fkemu::Order::kDescending, true);
}

// --- the photoacoustic map ---------------------------------------------------

// Each layer with and without the sensor's low-pass, 6 samples.
TEST(EmulatedWave, InitialValueMapAndAdjointEqualTheCpu) {
  for (wave::Absorbing a : {wave::Absorbing::kPml, wave::Absorbing::kSponge})
    for (double fc : {0.0, 9.0}) {
      const WaveInitialConditionConfig cfg = photoacoustic_config(a, fc, 6);
      const bool pml = a == wave::Absorbing::kPml;
      {
        const fkemu::Order order = pml ? kOrders[0] : kOrders[1];
        SCOPED_TRACE(order_name(order));
        const OrderScope scope(order);
        check_initial_value<double, EmulatedKernels>(cfg, {12, 14}, false);
        check_initial_value<double, EmulatedKernels>(cfg, {12, 14}, true);
      }
      if (pml == (fc > 0)) {
        const fkemu::Order order = kOrders[fc > 0 ? 1 : 0];
        SCOPED_TRACE(order_name(order));
        const OrderScope scope(order);
        check_initial_value<float, EmulatedKernels>(cfg, {12, 14}, fc > 0);
      }
    }
}

// --- the copy ----------------------------------------------------------------

// n elements from src to dst and nothing past them; n = 0 touches nothing.
TEST(EmulatedWave, CopyMovesExactlyNElements) {
  const std::vector<double> src = {1.5, -2.0, 3.25, 4.0, 5.5};
  std::vector<double> dst(7, -1.0);
  cu::emu::launch_copy(src.data(), dst.data() + 1, 5, nullptr);
  EXPECT_EQ(dst, (std::vector<double>{-1.0, 1.5, -2.0, 3.25, 4.0, 5.5, -1.0}));
  cu::emu::launch_copy(src.data(), dst.data(), 0, nullptr);
  EXPECT_EQ(dst[0], -1.0);
  const std::vector<float> fs = {0.5f, 0.25f, 0.125f};
  std::vector<float> fd(3, 0.0f);
  cu::emu::launch_copy(fs.data(), fd.data(), 3, nullptr);
  EXPECT_EQ(fd, fs);
}

}  // namespace
}  // namespace nefi::wave_cells_test
