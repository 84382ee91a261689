// The expectations of tests/nefi/cuda/elliptic_multigrid_device_test.cpp
// (NefiEllipticMultigridDevice.*, which no GPU has run yet), checked here on
// the host emulation of the same kernels (HostBlock: the device's bits, by
// NefiEllipticMultigridCells.*) with the same inputs: its σ, κ and right-hand
// sides (fk's generators, seeds 4, 5, 6), grid and options. So when the
// device test fails on its first run, the kernels or their launch differ from
// the emulation, not the test's thresholds from what the algorithm gives:
//   - every system converges, multigrid-PCG and Jacobi-PCG, f64 and f32;
//   - the multigrid-PCG takes fewer than half the Jacobi-PCG's iterations;
//   - its solution is within 1e-8 (f64) / 1e-3 (f32) of the CPU multigrid's
//     solve_elliptic, relative to the largest value;
//   - the bitwise test's two cases converge within their iteration limit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/random.h"
#include "nefi/cuda/elliptic_multigrid_cells.h"
#include "nefi/cuda/elliptic_stencil.h"
#include "nefi/operators/elliptic/elliptic_cg.h"
#include "nefi/operators/elliptic/elliptic_grid.h"
#include "nefi/operators/elliptic/elliptic_solve.h"

namespace {

namespace cu = nefi::cuda;
namespace el = nefi::elliptic;

// The device test's helpers, on the CPU (its positive(), normal() and grid()).
fk::Tensor positive(const fk::Dims& s, uint64_t seed) {
  fk::Generator g(seed);
  return fk::rand(s, {fk::DType::F64}, &g) * 2.0 + 0.5;
}

fk::Tensor normal(const fk::Dims& s, uint64_t seed) {
  fk::Generator g(seed);
  return fk::randn(s, {fk::DType::F64}, &g);
}

el::EllipticGrid grid(const fk::Dims& shape, const std::string& bc) {
  el::EllipticGrid g;
  g.shape = shape;
  for (int64_t n : shape) g.spacing.push_back(1.0 / static_cast<double>(n));
  g.boundary = el::parse_boundary(bc, static_cast<int>(shape.size()));
  return g;
}

// solve_elliptic's device control for `tol` in T (elliptic_device.cpp).
template <typename T>
cu::CgControl control(const el::EllipticGrid& g, double tol) {
  el::CgOptions o;
  o.tol = tol;
  cu::CgControl c;
  c.max_iter = el::resolved_max_iter(g, o);
  c.check_every = o.check_every;
  c.tol = std::max(tol, 8.0 * std::numeric_limits<T>::epsilon());
  return c;
}

// The block PCG over HostBlock for every system of b on one field, with the
// V-cycle or Jacobi, as launch_block_pcg runs it (q is the cycle's t0).
template <typename T>
std::vector<cu::CgOutcome> emulate(const el::EllipticGrid& eg, const el::FaceSystem<T>& sys,
                                   const std::vector<T>& b, std::vector<T>& x,
                                   const cu::CgControl& c, bool multigrid) {
  const cu::StencilGrid g = cu::stencil_grid(eg);
  const int64_t n = g.numel, ns = static_cast<int64_t>(b.size()) / n;
  std::vector<T> hierarchy(cu::multigrid_hierarchy_size(g)), work(cu::multigrid_work_size(g));
  std::vector<double> cholesky(cu::multigrid_cholesky_size(g));
  std::vector<T> cg(5 * n);
  cu::HostBlock ex;
  if (multigrid)
    cu::block_multigrid_setup<T>(ex, g, sys.faces.data(), sys.diag.data(), hierarchy.data(),
                                 cholesky.data());
  std::vector<cu::CgOutcome> out;
  for (int64_t s = 0; s < ns; ++s) {
    const cu::CgScratch<T> w{cg.data(), cg.data() + n, cg.data() + 2 * n, cg.data() + 3 * n,
                             cg.data() + 4 * n};
    const T* bs = b.data() + s * n;
    T* xs = x.data() + s * n;
    const T *fa = sys.faces.data(), *di = sys.diag.data(), *inv = sys.inv_diag.data();
    if (multigrid) {
      const cu::MultigridPrecond<T> m{g,           fa, di, inv, hierarchy.data(), cholesky.data(),
                                      work.data(), w.q};
      out.push_back(cu::block_pcg<T>(ex, g, fa, di, inv, bs, xs, nullptr, w, c, m));
    } else {
      out.push_back(cu::block_pcg<T>(ex, g, fa, di, inv, bs, xs, nullptr, w, c));
    }
  }
  return out;
}

double relative_gap(const std::vector<double>& got, const std::vector<double>& want) {
  double scale = 1, worst = 0;
  for (double v : want) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
  return worst / scale;
}

// NefiEllipticMultigridDevice.SolveMatchesTheCpuMultigridInFewerIterationsThanJacobi.
template <typename T>
void expect_fewer_iterations_case(fk::DType dt) {
  const el::EllipticGrid g = grid({20, 20, 10}, "neumann");
  const fk::Tensor sigma = positive(g.shape, 4) * 0.2, kappa = positive(g.shape, 5) * 0.02;
  const fk::Tensor b = normal({2, 20, 20, 10}, 6);
  const double tol = dt == fk::DType::F64 ? 1e-10 : 1e-5;
  const fk::Tensor s = sigma.to(dt), k = kappa.to(dt), bb = b.to(dt);
  const std::vector<T> sv = s.to_vector<T>(), kv = k.to_vector<T>(), bv = bb.to_vector<T>();
  const el::FaceSystem<T> sys = el::build_face_system<T>(g, 1, sv.data(), false, kv.data(), false);
  std::vector<T> xm(bv.size(), T(0)), xj(bv.size(), T(0));
  const auto mg = emulate<T>(g, sys, bv, xm, control<T>(g, tol), true);
  const auto jac = emulate<T>(g, sys, bv, xj, control<T>(g, tol), false);
  int64_t mg_max = 0, jac_max = 0;
  for (size_t i = 0; i < mg.size(); ++i) {
    EXPECT_TRUE(mg[i].converged) << "multigrid system " << i;
    EXPECT_TRUE(jac[i].converged) << "jacobi system " << i;
    mg_max = std::max(mg_max, mg[i].iterations);
    jac_max = std::max(jac_max, jac[i].iterations);
  }
  EXPECT_LT(2 * mg_max, jac_max);
  el::SolveOptions o;
  o.cg.tol = tol;
  o.cg.precond = el::Preconditioner::kMultigrid;
  o.grad_mode = el::GradMode::kNone;
  const std::vector<double> cpu = el::solve_elliptic(s, bb, k, g, o, nullptr).to_vector<double>();
  const std::vector<double> got(xm.begin(), xm.end());
  const double gap = relative_gap(got, cpu);
  EXPECT_LE(gap, dt == fk::DType::F64 ? 1e-8 : 1e-3);
  std::printf(
      "[ 20x20x10 neumann, %s, tol %g ] iterations: multigrid %lld, jacobi %lld; "
      "gap to the CPU multigrid %.3g\n",
      fk::name(dt), tol, static_cast<long long>(mg_max), static_cast<long long>(jac_max), gap);
}

TEST(NefiEllipticMultigridDeviceCases, FewerIterationsThanJacobiAndTheCpuSolutionF64) {
  expect_fewer_iterations_case<double>(fk::DType::F64);
}

TEST(NefiEllipticMultigridDeviceCases, FewerIterationsThanJacobiAndTheCpuSolutionF32) {
  expect_fewer_iterations_case<float>(fk::DType::F32);
}

// NefiEllipticMultigridDevice.SolveEqualsTheHostEmulationBitwise's cases
// (tol 1e-10, check_every 2): every system converges (the device test
// expects no unconverged system in the statistics).
TEST(NefiEllipticMultigridDeviceCases, TheBitwiseCasesConverge) {
  struct Case {
    fk::Dims shape;
    std::string bc;
    bool batched;
  };
  for (const Case& c : {Case{{18, 15}, "dirichlet", false}, Case{{12, 10, 6}, "neumann", true}}) {
    SCOPED_TRACE(c.shape.str());
    const el::EllipticGrid g = grid(c.shape, c.bc);
    const int64_t n = g.numel(), ns = 3, nb = c.batched ? ns : 1;
    fk::Dims field = c.shape;
    if (c.batched) field.insert(0, ns);
    fk::Dims rhs = c.shape;
    rhs.insert(0, ns);
    const std::vector<double> sv = positive(field, 1).to_vector<double>(),
                              kv = (positive(field, 2) * 0.1).to_vector<double>(),
                              bv = normal(rhs, 3).to_vector<double>();
    cu::CgControl ctl = control<double>(g, 1e-10);
    ctl.check_every = 2;
    for (int64_t f = 0; f < nb; ++f) {
      const el::FaceSystem<double> sys =
          el::build_face_system<double>(g, 1, sv.data() + f * n, false, kv.data() + f * n, false);
      const int64_t first = nb == 1 ? 0 : f, count = nb == 1 ? ns : 1;
      const std::vector<double> b(bv.begin() + first * n, bv.begin() + (first + count) * n);
      std::vector<double> x(b.size(), 0.0);
      for (const cu::CgOutcome& r : emulate<double>(g, sys, b, x, ctl, true))
        EXPECT_TRUE(r.converged) << "field " << f;
    }
  }
}

}  // namespace
