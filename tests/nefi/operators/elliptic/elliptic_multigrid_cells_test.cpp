// The device multigrid V-cycle (cuda/elliptic_multigrid_cells.h) run on the
// host, block phase after block phase by HostBlock, as the device kernels
// run it: its hierarchy (every coarse level's faces, diagonal and inverse
// diagonal, and the coarsest Cholesky factor) and one V-cycle equal the CPU
// multigrid's (elliptic_multigrid.cpp) bit for bit, since every value is
// made by the same operations in the same order. The multigrid-PCG of
// block_pcg sums its dot products in another fixed order than pcg_solve, so
// it is checked to the tolerance (solution and iteration count), and against
// the emulated Jacobi-PCG on dot3d's system for its iteration count. A
// singular system, which the CPU refuses, ends the emulated CG at its
// breakdown test, unconverged.
#include "nefi/cuda/elliptic_multigrid_cells.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "fk/error.h"
#include "fk/test_util.h"
#include "nefi/cuda/elliptic_stencil.h"
#include "nefi/instances/dot3d_model.h"
#include "nefi/operators/elliptic/elliptic_cg.h"
#include "nefi/operators/elliptic/elliptic_grid.h"
#include "nefi/operators/elliptic/elliptic_multigrid.h"
#include "nefi/operators/elliptic/elliptic_test_grid.h"

namespace {

namespace cu = nefi::cuda;
namespace el = nefi::elliptic;
using el::EllipticGrid;
using el::FaceSystem;
using el::test::box;
using fk::test::max_abs;
using fk::test::max_abs_diff;

static_assert(cu::kMgDirectCells == el::Multigrid<double>::kDirectCells);
static_assert(cu::kMgOmega == el::Multigrid<double>::kOmega);

struct Case {
  std::vector<int64_t> shape;
  std::string bc;
  double kappa_lo, kappa_hi;  // κ ~ U(lo, hi); none when hi is 0
  el::FaceMean mean;
};

// 1-, 2- and 3-D; Neumann with κ (dot3d's kind), Dirichlet without, periodic
// axes of odd and even length (down to a coarse periodic axis of 2 cells),
// mixed sides, both face means, and a grid that is its own coarsest level.
const std::vector<Case> kCases = {
    {{20, 20, 10}, "neumann", 0.002, 0.05, el::FaceMean::kHarmonic},
    {{33, 17}, "dirichlet", 0, 0, el::FaceMean::kHarmonic},
    {{9, 7, 6}, "periodic,dirichlet:neumann,neumann", 0.0, 1.0, el::FaceMean::kArithmetic},
    {{200}, "neumann:dirichlet", 0, 0, el::FaceMean::kHarmonic},
    {{6, 6, 4}, "periodic", 0.1, 0.5, el::FaceMean::kHarmonic},
    {{11, 16}, "periodic,neumann", 0.05, 0.2, el::FaceMean::kArithmetic},
    {{7, 5}, "dirichlet:neumann,neumann", 0, 0, el::FaceMean::kHarmonic},
};

template <typename T>
std::vector<T> uniform(int64_t n, double lo, double hi, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(d(gen));
  return v;
}

EllipticGrid grid_of(const Case& c) {
  EllipticGrid g = box(fk::Dims(c.shape), c.bc);
  g.spacing[0] *= 1.3;  // anisotropic
  g.face_mean = c.mean;
  return g;
}

template <typename T>
FaceSystem<T> system_of(const EllipticGrid& g, const Case& c, unsigned seed) {
  const int64_t n = g.numel();
  const std::vector<T> sigma = uniform<T>(n, 0.3, 3.0, seed);
  const std::vector<T> kappa = uniform<T>(n, c.kappa_lo, c.kappa_hi, seed + 1);
  return el::build_face_system<T>(g, 1, sigma.data(), false,
                                  c.kappa_hi > 0 ? kappa.data() : nullptr, false);
}

// One field's hierarchy as the setup kernel's block builds it.
template <typename T>
struct Hierarchy {
  std::vector<T> coarse;
  std::vector<double> cholesky;
};

template <typename T>
Hierarchy<T> emulate_setup(const cu::StencilGrid& g, const FaceSystem<T>& sys) {
  Hierarchy<T> h;
  h.coarse.assign(cu::multigrid_hierarchy_size(g), T(-7));
  h.cholesky.assign(cu::multigrid_cholesky_size(g), -7.0);
  cu::HostBlock ex;
  cu::block_multigrid_setup<T>(ex, g, sys.faces.data(), sys.diag.data(), h.coarse.data(),
                               h.cholesky.data());
  return h;
}

template <typename T>
cu::MultigridPrecond<T> precond_of(const cu::StencilGrid& g, const FaceSystem<T>& sys,
                                   const Hierarchy<T>& h, std::vector<T>& work,
                                   std::vector<T>& t0) {
  work.assign(cu::multigrid_work_size(g), T(-7));
  t0.assign(g.numel, T(-7));
  return {g,
          sys.faces.data(),
          sys.diag.data(),
          sys.inv_diag.data(),
          h.coarse.data(),
          h.cholesky.data(),
          work.data(),
          t0.data()};
}

template <typename T>
void expect_hierarchy_and_vcycle_bitwise() {
  for (const Case& c : kCases) {
    SCOPED_TRACE(fk::Dims(c.shape).str() + " " + c.bc);
    const EllipticGrid eg = grid_of(c);
    const cu::StencilGrid g = cu::stencil_grid(eg);
    const FaceSystem<T> sys = system_of<T>(eg, c, 11);
    const el::Multigrid<T> mg = el::build_multigrid<T>(eg, sys.faces.data(), sys.diag.data());
    const Hierarchy<T> h = emulate_setup<T>(g, sys);
    ASSERT_EQ(cu::multigrid_levels(g), static_cast<int>(mg.levels.size()));
    for (int l = 1; l < cu::multigrid_levels(g); ++l) {
      const el::MultigridLevel<T>& L = mg.levels[l];
      const int64_t n = L.grid.numel(), d = L.grid.ndim();
      ASSERT_EQ(cu::level_grid(g, l).numel, n);
      const auto at = h.coarse.begin() + cu::coarse_offset(g, l, true);
      EXPECT_EQ(std::vector<T>(at, at + d * n), L.faces) << "level " << l;
      EXPECT_EQ(std::vector<T>(at + d * n, at + (d + 1) * n), L.diag) << "level " << l;
      EXPECT_EQ(std::vector<T>(at + (d + 1) * n, at + (d + 2) * n), L.inv_diag) << "level " << l;
    }
    EXPECT_EQ(h.cholesky, mg.coarse_cholesky);
    // One V-cycle on a random residual.
    const std::vector<T> r = uniform<T>(g.numel, -1, 1, 12);
    std::vector<T> z_cpu(g.numel, T(5)), z_dev(g.numel, T(-5)), work, t0;
    auto scratch = mg.scratch();
    el::vcycle(mg, scratch, r.data(), z_cpu.data());
    cu::HostBlock ex;
    precond_of(g, sys, h, work, t0).apply(ex, r.data(), z_dev.data());
    EXPECT_EQ(z_dev, z_cpu);
  }
}

TEST(NefiEllipticMultigridCells, HierarchyAndVcycleEqualTheCpuMultigridBitwiseF64) {
  expect_hierarchy_and_vcycle_bitwise<double>();
}

TEST(NefiEllipticMultigridCells, HierarchyAndVcycleEqualTheCpuMultigridBitwiseF32) {
  expect_hierarchy_and_vcycle_bitwise<float>();
}

template <typename T>
cu::CgControl control_of(const EllipticGrid& eg, const el::CgOptions& o, bool warm) {
  cu::CgControl c;
  c.max_iter = el::resolved_max_iter(eg, o);
  c.check_every = o.check_every;
  c.tol = std::max(o.tol, 8.0 * std::numeric_limits<T>::epsilon());
  c.atol = o.atol;
  c.project = o.project;
  c.warm = warm;
  return c;
}

// block_pcg over HostBlock for ns systems on one field, with the V-cycle
// (multigrid) or Jacobi.
template <typename T>
std::vector<cu::CgOutcome> emulate_pcg(const EllipticGrid& eg, const FaceSystem<T>& sys,
                                       const std::vector<T>& b, std::vector<T>& x,
                                       const cu::CgControl& c, bool multigrid) {
  const cu::StencilGrid g = cu::stencil_grid(eg);
  const int64_t n = g.numel, ns = static_cast<int64_t>(b.size()) / n;
  std::vector<T> cg(5 * n), work, t0;
  const Hierarchy<T> h = multigrid ? emulate_setup<T>(g, sys) : Hierarchy<T>();
  cu::HostBlock ex;
  std::vector<cu::CgOutcome> out;
  for (int64_t s = 0; s < ns; ++s) {
    const cu::CgScratch<T> w{cg.data(), cg.data() + n, cg.data() + 2 * n, cg.data() + 3 * n,
                             cg.data() + 4 * n};
    const T *bs = b.data() + s * n, *di = sys.inv_diag.data();
    T* xs = x.data() + s * n;
    if (multigrid) {
      cu::MultigridPrecond<T> m = precond_of(g, sys, h, work, t0);
      m.t0 = w.q;  // as the kernel passes it: the CG's q
      out.push_back(
          cu::block_pcg<T>(ex, g, sys.faces.data(), sys.diag.data(), di, bs, xs, nullptr, w, c, m));
    } else {
      out.push_back(
          cu::block_pcg<T>(ex, g, sys.faces.data(), sys.diag.data(), di, bs, xs, nullptr, w, c));
    }
  }
  return out;
}

// The emulated multigrid-PCG against pcg_solve with precond multigrid: the
// same V-cycle bits, dot products in another order, so the solutions agree
// to the tolerance and the iteration counts within one; warm starts and
// check_every keep pcg_solve's semantics.
TEST(NefiEllipticMultigridCells, MultigridPcgAgreesWithTheCpuMultigridPcg) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(fk::Dims(c.shape).str() + " " + c.bc);
    const EllipticGrid eg = grid_of(c);
    const FaceSystem<double> sys = system_of<double>(eg, c, 21);
    const int64_t n = eg.numel(), ns = 2;
    const std::vector<double> b = uniform<double>(ns * n, -1, 1, 22);
    el::CgOptions o;
    o.tol = 1e-11;
    o.precond = el::Preconditioner::kMultigrid;
    std::vector<double> x(ns * n, 0.0), x_cpu(ns * n, 0.0);
    const auto res = emulate_pcg<double>(eg, sys, b, x, control_of<double>(eg, o, false), true);
    const el::CgStats st = el::pcg_solve<double>(eg, sys, b.data(), x_cpu.data(), ns, false, o);
    EXPECT_LE(max_abs_diff(x, x_cpu), 1e-9 * max_abs(x_cpu));
    for (const cu::CgOutcome& r : res) {
      EXPECT_TRUE(r.converged);
      EXPECT_LE(r.residual, 1e-10);
      EXPECT_LE(std::abs(r.iterations - st.max_iterations), 1) << st.max_iterations;
    }
    // Warm from the solution: taken, done within one test period of 3.
    o.check_every = 3;
    std::vector<double> warm = x;
    const auto again = emulate_pcg<double>(eg, sys, b, warm, control_of<double>(eg, o, true), true);
    EXPECT_TRUE(again[0].warm_used);
    EXPECT_LE(again[0].iterations, 3);
    EXPECT_EQ(again[0].iterations % 3, 0);
  }
}

// dot3d's system at its smoke grid (dot3d_model.h: the 40×40×20 mm slab at
// 20×20×10 cells, σ = D = 1/(3 μ_s′), κ = μ_a (0.01/mm, an absorber of 0.04
// and radius 4 mm centred 6 mm deep) plus the Robin sink, the 9 sources'
// right-hand sides, tol 1e-7) solved cold: the multigrid-PCG needs far fewer
// iterations than the Jacobi-PCG, both emulated as the device runs them, in
// f64 and f32. Prints the counts (docs/performance.md quotes them).
template <typename T>
void expect_multigrid_beats_jacobi() {
  const nefi::dot::Geometry geo;
  const fk::Dims shape({20, 20, 10});
  const EllipticGrid eg = nefi::dot::slab_grid(geo, shape);
  const int64_t n = eg.numel();
  const std::vector<double> sink = nefi::dot::robin_sink(geo, shape);
  const std::vector<double> rhs = nefi::dot::source_rhs(geo, shape);
  const int64_t ns = static_cast<int64_t>(rhs.size()) / n;
  std::vector<T> sigma(n, T(geo.diffusion())), kappa(n), b(rhs.begin(), rhs.end());
  for (int64_t i = 0; i < n; ++i) {
    const double x = (double(i / 200) + 0.5) * 2, y = (double(i / 10 % 20) + 0.5) * 2,
                 z = (double(i % 10) + 0.5) * 2;  // cell centres in mm
    const bool absorber = std::hypot(x - 20, y - 20, z - 6) < 4;
    kappa[i] = T((absorber ? 0.04 : 0.01) + sink[i]);
  }
  const FaceSystem<T> sys =
      el::build_face_system<T>(eg, 1, sigma.data(), false, kappa.data(), false);
  el::CgOptions o;
  o.tol = 1e-7;
  std::vector<T> xj(ns * n, T(0)), xm(ns * n, T(0));
  const auto jac = emulate_pcg<T>(eg, sys, b, xj, control_of<T>(eg, o, false), false);
  const auto mg = emulate_pcg<T>(eg, sys, b, xm, control_of<T>(eg, o, false), true);
  // The true residual ‖b − A x‖/‖b‖: in f32 it stalls near ‖A‖‖x‖ eps/‖b‖
  // above the recurrence's 1e-7.
  const double residual_bound = sizeof(T) == 8 ? 2 * o.tol : 1e-4;
  double it_j = 0, it_m = 0;
  for (int64_t s = 0; s < ns; ++s) {
    EXPECT_TRUE(jac[s].converged && mg[s].converged);
    EXPECT_LE(mg[s].residual, residual_bound);
    EXPECT_LT(3 * mg[s].iterations, jac[s].iterations) << "system " << s;
    it_j += double(jac[s].iterations) / double(ns);
    it_m += double(mg[s].iterations) / double(ns);
  }
  std::printf(
      "[ dot3d 20x20x10, %lld sources, %s, tol 1e-7, cold ] jacobi-PCG %.2f, "
      "multigrid-PCG %.2f iterations a system\n",
      static_cast<long long>(ns), sizeof(T) == 8 ? "f64" : "f32", it_j, it_m);
}

TEST(NefiEllipticMultigridCells, MultigridPcgNeedsFarFewerIterationsThanJacobiF64) {
  expect_multigrid_beats_jacobi<double>();
}

TEST(NefiEllipticMultigridCells, MultigridPcgNeedsFarFewerIterationsThanJacobiF32) {
  expect_multigrid_beats_jacobi<float>();
}

// A singular system (pure Neumann, no κ, not projected): the CPU refuses it
// at its coarse pivot; the device cannot throw, so the pivot becomes NaN and
// the CG stops at its breakdown test, unconverged, with x untouched at 0.
TEST(NefiEllipticMultigridCells, SingularSystemEndsAtTheBreakdownTest) {
  const EllipticGrid eg = box(fk::Dims({12, 10}), "neumann");
  const FaceSystem<double> sys =
      system_of<double>(eg, {{12, 10}, "neumann", 0, 0, el::FaceMean::kHarmonic}, 41);
  EXPECT_THROW(el::build_multigrid<double>(eg, sys.faces.data(), sys.diag.data()), fk::Error);
  const cu::StencilGrid g = cu::stencil_grid(eg);
  EXPECT_TRUE(std::isnan(emulate_setup<double>(g, sys).cholesky.back()));
  const std::vector<double> b = uniform<double>(eg.numel(), -1, 1, 42);
  std::vector<double> x(eg.numel(), 1.0);
  el::CgOptions o;
  const auto res = emulate_pcg<double>(eg, sys, b, x, control_of<double>(eg, o, false), true);
  EXPECT_FALSE(res[0].converged);
  EXPECT_EQ(res[0].iterations, 1);
  EXPECT_EQ(x, std::vector<double>(eg.numel(), 0.0));
}

}  // namespace
