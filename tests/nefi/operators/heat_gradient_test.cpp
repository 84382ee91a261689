// HeatOperator's gradients and iterations against independent references:
// finite differences (gradcheck, f64) and an adjoint dot test for every
// gradient mode and backend, Chebyshev against Jacobi at the smoke and paper
// spacings, heat balance with adiabatic and Robin back faces, and the
// saved-bytes accounting of each gradient mode.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/knobs.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/parallel.h"
#include "fk/profile.h"
#include "fk/random.h"
#include "fk/testing.h"
#include "nefi/operators/heat/flat_cg.h"
#include "nefi/operators/heat/flat_stencil.h"
#include "nefi/operators/heat/heat_operator.h"
#include "nefi/operators/heat/heat_system.h"
#include "nefi/operators/heat/inner_solvers.h"
#include "nefi/operators/heat/step_solver.h"
#include "nefi/operators/heat_test_util.h"
#include "nefi/solve/step_graph.h"

namespace {

using nefi::HeatConfig;
using nefi::HeatOperator;
namespace heat = nefi::heat;
using heat_test::dot;
using heat_test::geometry;
using heat_test::l2;
using heat_test::loss_gradient;
using heat_test::max_abs;
using heat_test::max_abs_diff;
using heat_test::one_step;
using heat_test::small_config;
using heat_test::test_alpha;

// --- gradients -------------------------------------------------------------------

void adjoint_passes_dot_test_and_finite_differences(const char* face_mode);

TEST(HeatGradient, AdjointPassesDotTestAndFiniteDifferences) {
  for (const char* face_mode : {"harmonic", "arithmetic"})
    adjoint_passes_dot_test_and_finite_differences(face_mode);
}

void adjoint_passes_dot_test_and_finite_differences(const char* face_mode) {
  HeatConfig c = small_config();
  c.face_mode = face_mode;
  c.solver = "cg";
  c.cg_tol = 1e-14;
  c.cg_max_iter = 400;
  c.n_frames = 3;
  c.first_frame = 0;
  c.implicit_substeps = 2;
  c.back_bc = "robin";
  c.robin_h = 0.3;
  const fk::Dims s{4, 3, 4};
  HeatOperator op(c, s);
  fk::Tensor alpha = test_alpha(s, fk::DType::F64);
  fk::Generator gen(11);
  fk::Tensor w = fk::randn(op.output_shape(s), {fk::DType::F64}, &gen);
  fk::Tensor da = fk::randn(s, {fk::DType::F64}, &gen);
  // <J δα, w> by central differences against <δα, Jᵀ w> by the adjoint.
  const double eps = 1e-6;
  const double jd = (dot(op.apply(fk::add(alpha, fk::mul(da, eps))), w) -
                     dot(op.apply(fk::sub(alpha, fk::mul(da, eps))), w)) /
                    (2 * eps);
  const double jt = dot(da, loss_gradient(op, alpha, w));
  EXPECT_NEAR(jd, jt, 1e-7 * std::abs(jt)) << face_mode;
  // The full Jacobian, element by element.
  auto fn = [&](const std::vector<fk::Tensor>& in) { return op.apply(in[0]); };
  fk::Tensor a = alpha.clone();
  a.set_requires_grad(true);
  EXPECT_EQ(fk::testing::gradcheck(fn, {a}, {1e-6, 1e-7, 1e-5}), "") << face_mode;
}

TEST(HeatGradient, AutogradAndCheckpointPassGradcheckForEveryBackend) {
  for (const char* stencil : {"flat", "roll"})
    for (const char* solver : {"jacobi", "cg"})  // chebyshev: its ω are graph constants
      for (const char* mode : {"autograd", "checkpoint"}) {
        HeatConfig c = small_config();
        c.n_frames = 2;
        c.implicit_substeps = 2;
        c.stencil = stencil;
        c.solver = solver;
        c.jacobi_iters = 4;
        c.cg_tol = 0;  // a fixed count: the map stays smooth under perturbation
        c.cg_max_iter = 3;
        c.grad_mode = mode;
        const fk::Dims s{3, 4, 3};
        HeatOperator op(c, s);
        auto fn = [&](const std::vector<fk::Tensor>& in) { return op.apply(in[0]); };
        fk::Tensor a = test_alpha(s, fk::DType::F64);
        a.set_requires_grad(true);
        EXPECT_EQ(fk::testing::gradcheck(fn, {a}, {1e-6, 1e-7, 1e-5}), "")
            << stencil << " " << solver << " " << mode;
      }
}

// Chebyshev's weights come from ρ(α) but are constants of the graph (as in the
// reference): with ω fixed, the unrolled sweeps are exact derivatives.
TEST(HeatGradient, ChebyshevSweepsWithFixedWeightsPassGradcheck) {
  const auto g = geometry(3, 4, 3, {1.0, 1.0, 1.0}, 0.1, 0.5);
  const fk::Tensor omega = heat::chebyshev_weights(fk::scalar_tensor(0.7, {fk::DType::F64}), 5);
  const fk::Tensor b = test_alpha(g.shape(), fk::DType::F64, 7);
  for (bool flat : {true, false}) {
    auto fn = [&](const std::vector<fk::Tensor>& in) {
      const auto sys = heat::build_system_ops(in[0], g);
      const auto sweep = heat::make_sweep(flat, sys.weights, g);
      return heat::chebyshev_solve(sweep, fk::mul(in[1], sys.inv_diag), in[1], omega);
    };
    fk::Tensor a = test_alpha(g.shape(), fk::DType::F64);
    a.set_requires_grad(true);
    fk::Tensor x = b.clone();
    x.set_requires_grad(true);
    EXPECT_EQ(fk::testing::gradcheck(fn, {a, x}, {1e-6, 1e-7, 1e-5}), "") << flat;
  }
}

// The adjoint differentiates the exactly solved recurrence and the unrolled
// mode the K-sweep map: they agree up to O(ρ^K).
TEST(HeatGradient, AdjointApproachesAutogradAsSweepsGrow) {
  const fk::Dims s{6, 6, 4};
  fk::Tensor alpha = test_alpha(s, fk::DType::F64);
  fk::Generator gen(4);
  double prev = 1e300;
  for (int64_t k : {5, 15, 45}) {
    HeatConfig c = small_config();
    c.jacobi_iters = k;
    HeatOperator adj(c, s);
    c.grad_mode = "autograd";
    HeatOperator unrolled(c, s);
    c.grad_mode = "checkpoint";
    HeatOperator ckpt(c, s);
    fk::Tensor w = fk::ones(adj.output_shape(s), {fk::DType::F64});
    fk::Tensor ga = loss_gradient(adj, alpha, w), gu = loss_gradient(unrolled, alpha, w);
    fk::Tensor gc = loss_gradient(ckpt, alpha, w);
    EXPECT_LT(max_abs_diff(gc, gu), 1e-12 * max_abs(gu)) << "K = " << k;
    const double rel = max_abs_diff(ga, gu) / max_abs(gu);
    const double rho = adj.jacobi_bound(alpha).item();
    EXPECT_LT(rel, 50 * std::pow(rho, k) + 1e-12) << "K = " << k;
    EXPECT_LT(rel, prev);
    prev = rel;
  }
  EXPECT_LT(prev, 1e-8);
  // Checkpoint recomputes exactly what autograd records, Chebyshev included.
  HeatConfig c = small_config();
  c.solver = "chebyshev";
  c.jacobi_iters = 7;
  c.grad_mode = "autograd";
  HeatOperator unrolled(c, s);
  c.grad_mode = "checkpoint";
  HeatOperator ckpt(c, s);
  fk::Tensor w = fk::ones(unrolled.output_shape(s), {fk::DType::F64});
  fk::Tensor gu = loss_gradient(unrolled, alpha, w);
  EXPECT_LT(max_abs_diff(loss_gradient(ckpt, alpha, w), gu), 1e-12 * max_abs(gu));
}

TEST(HeatGradient, AdjointInF32FollowsF64) {
  HeatConfig c = small_config();
  c.solver = "chebyshev";
  c.jacobi_iters = 20;
  const fk::Dims s{6, 5, 4};
  HeatOperator op(c, s);
  fk::Tensor a64 = test_alpha(s, fk::DType::F64);
  fk::Tensor w = fk::ones(op.output_shape(s), {fk::DType::F64});
  fk::Tensor g64 = loss_gradient(op, a64, w);
  fk::Tensor g32 = loss_gradient(op, a64.to(fk::DType::F32), w.to(fk::DType::F32));
  EXPECT_EQ(g32.dtype(), fk::DType::F32);
  EXPECT_LT(max_abs_diff(g32, g64), 1e-4 * max_abs(g64));
}

// --- Chebyshev against Jacobi ----------------------------------------------------

// Relative error of one implicit step from the flash (warm start T⁰) after
// K sweeps, against CG at 1e-13, with α uniform in α0 (1 ± 10 %).
struct SweepErrors {
  double rho = 0;
  std::function<double(const char*, int64_t)> error;
};
SweepErrors sweep_errors(const heat::StepGeometry& g, double alpha0, double width_xy) {
  fk::Generator gen(9);
  fk::Tensor alpha = fk::uniform(g.shape(), alpha0 * 0.9, alpha0 * 1.1, {fk::DType::F64}, &gen);
  nefi::GaussianFlash f;
  f.width_xy = width_xy;
  fk::Tensor t0 = nefi::flash_cell_averages(f, g.shape(), {g.hx * g.nx, g.hy * g.ny, g.hz * g.nz});
  fk::Tensor ref = one_step(alpha, g, t0, true, {"cg", 1, 1e-13, 3000, 1});
  SweepErrors e;
  e.rho = heat::gershgorin_bound(heat::build_system(alpha, g)).item();
  e.error = [=](const char* solver, int64_t k) {
    return l2(fk::sub(one_step(alpha, g, t0, true, {solver, k, 0, 1, 1}), ref)) / l2(ref);
  };
  return e;
}

// The fewest Chebyshev sweeps that reach the error of k_jacobi Jacobi sweeps.
int64_t chebyshev_sweeps_to_match(const SweepErrors& e, int64_t k_jacobi) {
  const double target = e.error("jacobi", k_jacobi);
  for (int64_t k = 1; k <= k_jacobi; ++k)
    if (e.error("chebyshev", k) <= target) return k;
  return k_jacobi + 1;
}

TEST(HeatChebyshev, ReachesJacobisErrorInFewerSweeps) {
  // Smoke: 16×16×6 over 10×10×1, Δt 0.1, flash width 4 (ρ ≈ 0.57–0.6).
  auto smoke = sweep_errors(geometry(16, 16, 6, {10, 10, 1}, 0.1), 0.165, 4.0);
  EXPECT_NEAR(smoke.rho, 0.58, 0.03);
  EXPECT_LE(chebyshev_sweeps_to_match(smoke, 20), 13);
  // Paper: 64×64×16 over 10×10×1, Δt 0.05, flash width 2.5 (ρ ≈ 0.82).
  auto paper = sweep_errors(geometry(64, 64, 16, {10, 10, 1}, 0.05), 0.13, 2.5);
  EXPECT_NEAR(paper.rho, 0.82, 0.02);
  EXPECT_LE(chebyshev_sweeps_to_match(paper, 50), 20);
}

// ω₁ = 1 makes the first Chebyshev iteration one Jacobi sweep; the weights
// then follow ω₂ = 2/(2 − ρ²) and tend to 2/(1 + √(1 − ρ²)).
TEST(HeatChebyshev, WeightsFollowTheRecurrence) {
  fk::Tensor omega = heat::chebyshev_weights(fk::scalar_tensor(0.6, {fk::DType::F64}), 30);
  auto o = omega.to_vector<double>();
  EXPECT_EQ(o[0], 1.0);
  EXPECT_NEAR(o[1], 2 / (2 - 0.36), 1e-15);
  EXPECT_NEAR(o[29], 2 / (1 + std::sqrt(1 - 0.36)), 1e-10);
}

// --- boundaries: heat balance ----------------------------------------------------

double total(const fk::Tensor& t) {
  return fk::sum(t).item();
}

TEST(HeatBoundary, AdiabaticConservesHeatAndRobinLosesIt) {
  HeatConfig c = small_config();
  c.n_frames = 6;
  c.solver = "cg";
  c.cg_tol = 1e-13;
  c.cg_max_iter = 500;
  const fk::Dims s{6, 6, 5};
  fk::Tensor alpha = test_alpha(s, fk::DType::F64);
  HeatOperator closed(c, s);
  fk::Tensor sim = closed.simulate(alpha);
  const double q0 = total(sim.select(0, 0));
  for (int64_t f = 1; f <= c.n_frames; ++f) EXPECT_NEAR(total(sim.select(0, f)), q0, 1e-10 * q0);
  c.back_bc = "robin";
  c.robin_h = 0.0;
  HeatOperator zero(c, s);
  EXPECT_LT(max_abs_diff(zero.simulate(alpha), sim), 1e-12 * q0);
  c.robin_h = 2.0;
  c.solver = "jacobi";
  c.jacobi_iters = 60;
  HeatOperator open(c, s);
  fk::Tensor so = open.simulate(alpha);
  for (int64_t f = 1; f <= c.n_frames; ++f)
    EXPECT_LT(total(so.select(0, f)), total(so.select(0, f - 1)));
  // The loss per step is Δt β Σ_back T (within the Jacobi tolerance): A's row sums.
  const auto g = open.step_geometry();
  for (int64_t f = 1; f <= c.n_frames; ++f) {
    const fk::Tensor back = so.select(0, f).select(2, s[2] - 1);
    const double loss = g.dt * g.sink * total(back);
    EXPECT_NEAR(total(so.select(0, f - 1)) - total(so.select(0, f)), loss, 1e-6 * q0);
  }
}

// --- saved memory by gradient mode ------------------------------------------------

TEST(HeatMemory, SavedBytesByGradMode) {
  const fk::Dims s{8, 8, 4};
  const int64_t grid = s.numel() * 8, steps = 6;
  HeatConfig c = small_config();
  c.n_frames = steps;
  c.jacobi_iters = 10;
  auto saved = [&](HeatConfig cfg) {
    HeatOperator op(cfg, s);
    fk::Tensor a = test_alpha(s, fk::DType::F64);
    a.set_requires_grad(true);
    return fk::autograd::saved_stats(op.apply(a));
  };
  const auto adjoint = saved(c);
  EXPECT_EQ(adjoint.bytes, (steps + 1) * grid);  // T¹..T^N and α
  c.grad_mode = "checkpoint";
  const auto ckpt = saved(c);
  EXPECT_EQ(ckpt.bytes, (steps + 1) * grid);  // the frame starts T⁰..T^{N-1} and α
  c.grad_mode = "autograd";
  c.stencil = "flat";
  const auto flat = saved(c);
  c.stencil = "roll";
  const auto roll = saved(c);
  EXPECT_GT(flat.bytes, c.jacobi_iters * steps * grid);
  EXPECT_GT(roll.bytes, 3 * flat.bytes);
}

}  // namespace
