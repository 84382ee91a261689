// The elliptic kernels' per-thread code (cuda/elliptic_cells.h) run on the
// host: the face system, the stencil apply and the conductivity gradient
// equal the CPU system's loops (elliptic_grid.cpp) bit for bit, cell by cell
// (both sides round every product and sum: no contraction). The block CG,
// emulated thread after thread by HostBlock (the device kernel runs the same
// block_pcg in the same phases, so it gives these bits), sums its dot
// products in another fixed order than pcg_solve, so it is checked against
// an analytic solution (a discrete eigenmode b = v, u = v / λ), against
// pcg_solve's solution to the tolerance, and for pcg_solve's stopping
// semantics: check_every, the iteration cap, warm starts and the projected
// (null-space) case.
#include "nefi/cuda/elliptic_cells.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "fk/test_util.h"
#include "nefi/cuda/elliptic_stencil.h"
#include "nefi/operators/elliptic/elliptic_cg.h"
#include "nefi/operators/elliptic/elliptic_grid.h"
#include "nefi/operators/elliptic/elliptic_test_grid.h"

namespace {

using fk::test::max_abs;

using nefi::cuda::CgControl;
using nefi::cuda::CgOutcome;
using nefi::cuda::StencilGrid;
using nefi::elliptic::EllipticGrid;
using nefi::elliptic::FaceMean;
using nefi::elliptic::FaceSystem;
using nefi::elliptic::test::box;

struct GridCase {
  std::vector<int64_t> shape;
  std::string bc;
  FaceMean mean;
};

// Dirichlet, Neumann, periodic (lengths 1, 2 and more), mixed sides, both means.
const std::vector<GridCase> kGrids = {
    {{7}, "dirichlet", FaceMean::kHarmonic},
    {{6, 5}, "periodic,neumann", FaceMean::kHarmonic},
    {{2, 4}, "periodic,dirichlet:neumann", FaceMean::kArithmetic},
    {{4, 3, 5}, "dirichlet:neumann,periodic,neumann:dirichlet", FaceMean::kHarmonic},
    {{3, 1, 4}, "neumann,periodic,dirichlet", FaceMean::kArithmetic},
};

EllipticGrid grid_of(const GridCase& c) {
  EllipticGrid g = box(fk::Dims(c.shape), c.bc);
  g.spacing[0] *= 1.3;  // anisotropic
  g.face_mean = c.mean;
  return g;
}

template <typename T>
std::vector<T> uniform(int64_t n, double lo, double hi, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(d(gen));
  return v;
}

// The face system of nb fields built by face_system_cell, thread by thread.
template <typename T>
FaceSystem<T> cells_system(const StencilGrid& g, int64_t nb, const std::vector<T>& sigma,
                           const T* kappa) {
  FaceSystem<T> s;
  s.nb = nb;
  const int64_t n = g.numel;
  s.faces.assign(nb * g.ndim * n, T(-7));
  s.diag.assign(nb * n, T(-7));
  s.inv_diag.assign(nb * n, T(-7));
  for (int64_t f = 0; f < nb; ++f)
    for (int64_t i = 0; i < n; ++i)
      nefi::cuda::face_system_cell<T>(g, sigma.data() + f * n, kappa ? kappa + f * n : nullptr, i,
                                      s.faces.data() + f * g.ndim * n, s.diag.data() + f * n,
                                      s.inv_diag.data() + f * n);
  return s;
}

template <typename T>
void expect_system_bitwise() {
  for (const GridCase& c : kGrids) {
    SCOPED_TRACE(c.bc);
    const EllipticGrid eg = grid_of(c);
    const StencilGrid g = nefi::cuda::stencil_grid(eg);
    const int64_t n = eg.numel();
    for (bool with_kappa : {false, true}) {
      const std::vector<T> sigma = uniform<T>(2 * n, 0.3, 3.0, 1);
      const std::vector<T> kappa = uniform<T>(2 * n, 0.0, 2.0, 2);
      const T* kp = with_kappa ? kappa.data() : nullptr;
      const FaceSystem<T> cpu =
          nefi::elliptic::build_face_system<T>(eg, 2, sigma.data(), true, kp, with_kappa);
      const FaceSystem<T> dev = cells_system<T>(g, 2, sigma, kp);
      EXPECT_EQ(dev.faces, cpu.faces);
      EXPECT_EQ(dev.diag, cpu.diag);
      EXPECT_EQ(dev.inv_diag, cpu.inv_diag);
      // q = A u, one cell per thread.
      const std::vector<T> u = uniform<T>(n, -1.0, 1.0, 3);
      for (int64_t f = 0; f < 2; ++f) {
        std::vector<T> q_cpu(n), q_dev(n);
        nefi::elliptic::apply_face_system<T>(eg, cpu, f, u.data(), q_cpu.data());
        for (int64_t i = 0; i < n; ++i)
          q_dev[i] = nefi::cuda::apply_cell<T>(g, dev.faces.data() + f * g.ndim * n,
                                               dev.diag.data() + f * n, u.data(), i);
        EXPECT_EQ(q_dev, q_cpu);
      }
    }
  }
}

TEST(NefiEllipticCells, FaceSystemAndApplyEqualTheCpuLoopsBitwiseF64) {
  expect_system_bitwise<double>();
}

TEST(NefiEllipticCells, FaceSystemAndApplyEqualTheCpuLoopsBitwiseF32) {
  expect_system_bitwise<float>();
}

// Σ_s ∂(a_sᵀ A b_s)/∂σ for a shared σ (systems in order into one double per
// cell) and for batched σ, as the gradient kernel's threads write it.
TEST(NefiEllipticCells, SigmaGradientEqualsTheCpuAccumulationBitwise) {
  for (const GridCase& c : kGrids) {
    SCOPED_TRACE(c.bc);
    const EllipticGrid eg = grid_of(c);
    const StencilGrid g = nefi::cuda::stencil_grid(eg);
    const int64_t n = eg.numel(), ns = 3;
    const std::vector<double> sigma = uniform<double>(ns * n, 0.3, 3.0, 4);
    const std::vector<double> a = uniform<double>(ns * n, -1, 1, 5),
                              b = uniform<double>(ns * n, -1, 1, 6);
    std::vector<double> shared_cpu(n, 0.0), batched_cpu(ns * n, 0.0);
    for (int64_t s = 0; s < ns; ++s) {
      nefi::elliptic::accumulate_sigma_gradient<double>(eg, sigma.data(), a.data() + s * n,
                                                        b.data() + s * n, -1.0, shared_cpu.data());
      nefi::elliptic::accumulate_sigma_gradient<double>(eg, sigma.data() + s * n, a.data() + s * n,
                                                        b.data() + s * n, 0.5,
                                                        batched_cpu.data() + s * n);
    }
    std::vector<double> shared_dev(n), batched_dev(ns * n);
    for (int64_t i = 0; i < n; ++i) {
      double acc = 0;
      for (int64_t s = 0; s < ns; ++s)
        acc = nefi::cuda::sigma_gradient_cell<double>(g, sigma.data(), a.data() + s * n,
                                                      b.data() + s * n, -1.0, i, acc);
      shared_dev[i] = acc;
      for (int64_t s = 0; s < ns; ++s)
        batched_dev[s * n + i] = nefi::cuda::sigma_gradient_cell<double>(
            g, sigma.data() + s * n, a.data() + s * n, b.data() + s * n, 0.5, i, 0.0);
    }
    EXPECT_EQ(shared_dev, shared_cpu);
    EXPECT_EQ(batched_dev, batched_cpu);
  }
}

// The device CG on the host: block_pcg over HostBlock for every system, as
// the kernel's blocks run it (system s on field nb == 1 ? 0 : s).
template <typename T>
std::vector<CgOutcome> emulate(const EllipticGrid& eg, const FaceSystem<T>& sys,
                               const std::vector<T>& b, std::vector<T>& x, const CgControl& c) {
  const StencilGrid g = nefi::cuda::stencil_grid(eg);
  const int64_t n = g.numel, ns = static_cast<int64_t>(b.size()) / n;
  std::vector<T> work(5 * n);
  std::vector<CgOutcome> out;
  nefi::cuda::HostBlock ex;
  for (int64_t s = 0; s < ns; ++s) {
    const int64_t f = sys.nb == 1 ? 0 : s;
    const nefi::cuda::CgScratch<T> w{work.data(), work.data() + n, work.data() + 2 * n,
                                     work.data() + 3 * n, work.data() + 4 * n};
    out.push_back(nefi::cuda::block_pcg<T>(ex, g, sys.faces.data() + f * g.ndim * n,
                                           sys.diag.data() + f * n, sys.inv_diag.data() + f * n,
                                           b.data() + s * n, x.data() + s * n, nullptr, w, c));
  }
  return out;
}

template <typename T>
CgControl control_of(const EllipticGrid& eg, const nefi::elliptic::CgOptions& o, bool warm) {
  CgControl c;
  c.max_iter = nefi::elliptic::resolved_max_iter(eg, o);
  c.check_every = o.check_every;
  c.tol = std::max(o.tol, 8.0 * std::numeric_limits<T>::epsilon());
  c.atol = o.atol;
  c.project = o.project;
  c.warm = warm;
  return c;
}

// A discrete eigenmode of A for constant σ on the box: per axis sin(π k (i +
// ½)/n) (Dirichlet both sides) or cos (Neumann both sides), eigenvalue Σ_a σ
// (4 / h_a²) sin²(π k_a / (2 n_a)) + κ. Returns (v, λ).
std::pair<std::vector<double>, double> eigenmode(const EllipticGrid& eg, bool dirichlet,
                                                 const std::vector<int>& k, double sigma,
                                                 double kappa) {
  const int64_t n = eg.numel();
  std::vector<double> v(n, 1.0);
  double lambda = kappa;
  for (int a = 0; a < eg.ndim(); ++a) {
    const double len = static_cast<double>(eg.shape[a]), h = eg.spacing[a];
    const double s = std::sin(std::numbers::pi * k[a] / (2 * len));
    lambda += sigma * 4 / (h * h) * s * s;
    for (int64_t i = 0; i < n; ++i) {
      const double c = static_cast<double>((i / eg.stride(a)) % eg.shape[a]);
      const double arg = std::numbers::pi * k[a] * (c + 0.5) / len;
      v[i] *= dirichlet ? std::sin(arg) : std::cos(arg);
    }
  }
  return {v, lambda};
}

TEST(NefiEllipticCells, BlockCgSolvesAnalyticModesAndAgreesWithPcg) {
  struct ModeCase {
    std::vector<int64_t> shape;
    bool dirichlet;
    std::vector<int> k;
    double kappa;
  };
  const std::vector<ModeCase> cases = {
      {{24, 20}, true, {3, 2}, 0.0},       // 480 cells: every thread holds 1-2 cells
      {{16, 18}, false, {1, 4}, 0.0},      // pure Neumann: the projected (null-space) path
      {{10, 8, 6}, true, {2, 1, 3}, 5.0},  // 3-D with κ
      {{700}, false, {5}, 1.0},            // 1-D, Neumann with κ (no projection)
  };
  for (const ModeCase& m : cases) {
    EllipticGrid eg = box(fk::Dims(m.shape), m.dirichlet ? "dirichlet" : "neumann");
    SCOPED_TRACE(fk::Dims(m.shape).str());
    const int64_t n = eg.numel();
    const double sigma = 1.7;
    const auto [v, lambda] = eigenmode(eg, m.dirichlet, m.k, sigma, m.kappa);
    std::vector<double> sig(n, sigma), kap(n, m.kappa);
    const FaceSystem<double> sys = nefi::elliptic::build_face_system<double>(
        eg, 1, sig.data(), false, m.kappa > 0 ? kap.data() : nullptr, false);
    nefi::elliptic::CgOptions o;
    o.tol = 1e-12;
    o.project = !m.dirichlet && m.kappa == 0;
    // Two systems: the mode and twice it.
    std::vector<double> b(2 * n);
    for (int64_t i = 0; i < n; ++i) b[i] = v[i], b[n + i] = 2 * v[i];
    std::vector<double> x(2 * n, 0.0), x_cpu(2 * n, 0.0);
    const auto res = emulate<double>(eg, sys, b, x, control_of<double>(eg, o, false));
    const nefi::elliptic::CgStats st =
        nefi::elliptic::pcg_solve<double>(eg, sys, b.data(), x_cpu.data(), 2, false, o);
    std::vector<double> err(2 * n), diff(2 * n);
    for (int64_t i = 0; i < 2 * n; ++i) {
      err[i] = x[i] - b[i] / lambda;
      diff[i] = x[i] - x_cpu[i];
    }
    const double scale = max_abs(v) / lambda;
    EXPECT_LE(max_abs(err), 1e-10 * 2 * scale);
    EXPECT_LE(max_abs(diff), 1e-10 * 2 * scale);
    for (const CgOutcome& r : res) {
      EXPECT_TRUE(r.converged);
      EXPECT_LE(r.residual, 1e-11);  // the true residual: the recurrence's drifts a little
      EXPECT_GT(r.iterations, 0);
      EXPECT_LE(std::abs(r.iterations - st.max_iterations), 2) << st.max_iterations;
    }
  }
}

// pcg_solve's stopping semantics on a variable-coefficient system: tests
// only every check_every iterations, stops at the cap unconverged, takes a
// warm start only when it beats zero, and at zero b returns zero.
TEST(NefiEllipticCells, BlockCgKeepsPcgStoppingAndWarmStartSemantics) {
  const EllipticGrid eg = box(fk::Dims({14, 12}), "dirichlet:neumann,neumann");
  const int64_t n = eg.numel();
  const std::vector<double> sigma = uniform<double>(n, 0.5, 4.0, 7);
  const FaceSystem<double> sys =
      nefi::elliptic::build_face_system<double>(eg, 1, sigma.data(), false, nullptr, false);
  std::vector<double> b = uniform<double>(2 * n, -1, 1, 8);
  for (int64_t i = n; i < 2 * n; ++i) b[i] = 0;  // the second system: b = 0
  nefi::elliptic::CgOptions o;
  o.tol = 1e-9;
  o.check_every = 7;
  std::vector<double> x(2 * n, 3.0), x_cpu(2 * n, 3.0);
  auto res = emulate<double>(eg, sys, b, x, control_of<double>(eg, o, false));
  nefi::elliptic::CgStats st =
      nefi::elliptic::pcg_solve<double>(eg, sys, b.data(), x_cpu.data(), 2, false, o);
  EXPECT_TRUE(res[0].converged);
  EXPECT_EQ(res[0].iterations % 7, 0);
  EXPECT_EQ(res[0].iterations, st.max_iterations);
  EXPECT_EQ(res[1].iterations, 0);
  for (int64_t i = n; i < 2 * n; ++i) ASSERT_EQ(x[i], 0.0);
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(x[i] - x_cpu[i]));
  EXPECT_LE(worst, 1e-7 * max_abs(x_cpu));

  // Warm from the solution: taken, converged in at most one test period.
  std::vector<double> warm = x;
  res = emulate<double>(eg, sys, b, warm, control_of<double>(eg, o, true));
  EXPECT_TRUE(res[0].warm_used);
  EXPECT_LE(res[0].iterations, 7);
  // Warm from something worse than zero: refused, the cold solve's bits.
  std::vector<double> bad(2 * n, 1e6);
  res = emulate<double>(eg, sys, b, bad, control_of<double>(eg, o, true));
  EXPECT_FALSE(res[0].warm_used);
  EXPECT_EQ(std::vector<double>(bad.begin(), bad.begin() + n),
            std::vector<double>(x.begin(), x.begin() + n));

  // The cap: 5 iterations, unconverged, the same iterate as pcg_solve's to rounding.
  o.max_iter = 5;
  o.check_every = 1;
  std::vector<double> xc(2 * n, 0.0), xc_cpu(2 * n, 0.0);
  res = emulate<double>(eg, sys, b, xc, control_of<double>(eg, o, false));
  st = nefi::elliptic::pcg_solve<double>(eg, sys, b.data(), xc_cpu.data(), 2, false, o);
  EXPECT_EQ(res[0].iterations, 5);
  EXPECT_FALSE(res[0].converged);
  EXPECT_EQ(st.unconverged, 1);
  worst = 0;
  for (int64_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(xc[i] - xc_cpu[i]));
  EXPECT_LE(worst, 1e-12 * max_abs(xc_cpu));
}

TEST(NefiEllipticCells, BlockCgInF32ReachesItsClampedTolerance) {
  const EllipticGrid eg = box(fk::Dims({12, 10}), "dirichlet");
  const int64_t n = eg.numel();
  const std::vector<float> sigma = uniform<float>(n, 0.5, 2.0, 9);
  const FaceSystem<float> sys =
      nefi::elliptic::build_face_system<float>(eg, 1, sigma.data(), false, nullptr, false);
  const std::vector<float> b = uniform<float>(n, -1, 1, 10);
  nefi::elliptic::CgOptions o;
  o.tol = 1e-5;
  std::vector<float> x(n, 0.0f), x_cpu(n, 0.0f);
  const auto res = emulate<float>(eg, sys, b, x, control_of<float>(eg, o, false));
  nefi::elliptic::pcg_solve<float>(eg, sys, b.data(), x_cpu.data(), 1, false, o);
  EXPECT_TRUE(res[0].converged);
  EXPECT_LE(res[0].residual, 1e-4);
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < n; ++i) {
    worst = std::max(worst, std::fabs(double(x[i]) - double(x_cpu[i])));
    scale = std::max(scale, std::fabs(double(x_cpu[i])));
  }
  EXPECT_LE(worst, 1e-3 * scale);
}

}  // namespace
