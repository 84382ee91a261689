// The elliptic solve on a CUDA device (operators/elliptic/elliptic_device.h)
// against the CPU: the device CG equals its host emulation (block_pcg over
// HostBlock, elliptic_cells.h) bit for bit; EllipticOperator and
// DiffuseOpticalOperator forwards and field gradients equal the CPU's to the
// CG tolerance (the CPU CG sums its dot products in another order); the
// adjoint dot test <A⁻¹ b, y> = <b, A⁻¹ y> with both solves on the device;
// the kept iterates of warm starts; darcy_flow and dot3d (precond jacobi)
// stages captured as one CUDA graph that replay their eager solves bitwise.
// precond multigrid (the device V-cycle): elliptic_multigrid_device_test.cpp.
// Without a usable device the tests skip (scripts/gpu-check runs them on one).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/unary.h"
#include "fk/random.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/cuda/elliptic_cells.h"
#include "nefi/cuda/elliptic_emulated_stats.h"
#include "nefi/cuda/elliptic_stencil.h"
#include "nefi/cuda/operator_parity.h"
#include "nefi/cuda/stage_graph_replay.h"
#include "nefi/operators/elliptic/diffuse_optical.h"
#include "nefi/operators/elliptic/elliptic_operator.h"
#include "nefi/operators/elliptic/elliptic_solve.h"
#include "nefi/operators/elliptic/elliptic_test_fields.h"
#include "nefi/operators/elliptic/elliptic_test_grid.h"

namespace {

using nefi::cuda_test::add_outcome;
using nefi::cuda_test::close_within;
using nefi::cuda_test::expect_adjoint_on_device;
using nefi::cuda_test::expect_captured_stage_replays_eager;
using nefi::cuda_test::expect_close;
using nefi::cuda_test::expect_device_matches_cpu;
using nefi::cuda_test::expect_emulated_stats;
using nefi::cuda_test::host;
using nefi::cuda_test::kGpu;
using nefi::cuda_test::ParityOutputs;
namespace el = nefi::elliptic;
using el::test::box;
using el::test::normal;
using el::test::positive;

// The device solve's bits are block_pcg's on the host (same system, same
// phases, same reduction tree): Dirichlet with κ, and the projected case.
TEST(NefiEllipticDevice, SolveEqualsTheHostEmulationBitwise) {
  NEFI_SKIP_WITHOUT_GPU();
  for (const std::string bc : {"dirichlet", "neumann"}) {
    SCOPED_TRACE(bc);
    const el::EllipticGrid g = box({18, 15}, bc);
    const int64_t n = g.numel(), ns = 3;
    const fk::Tensor sigma = positive(g.shape, 1);
    const fk::Tensor kappa = bc == "dirichlet" ? positive(g.shape, 2) : fk::Tensor();
    const fk::Tensor b = normal({ns, 18, 15}, 3);
    el::SolveOptions o;
    o.cg.tol = 1e-10;
    o.cg.check_every = 3;
    o.grad_mode = el::GradMode::kNone;
    auto state = std::make_shared<el::WarmStart>();
    state->enabled = false;  // cold solves; the statistics are kept
    const fk::Tensor u = el::solve_elliptic(sigma.to(kGpu), b.to(kGpu),
                                            kappa.defined() ? kappa.to(kGpu) : kappa, g, o, state);
    ASSERT_EQ(u.device(), kGpu);
    const std::vector<double> sv = sigma.to_vector<double>(), bv = b.to_vector<double>();
    const std::vector<double> kv =
        kappa.defined() ? kappa.to_vector<double>() : std::vector<double>();
    const el::FaceSystem<double> sys = el::build_face_system<double>(
        g, 1, sv.data(), false, kappa.defined() ? kv.data() : nullptr, false);
    nefi::cuda::CgControl c;
    c.max_iter = el::resolved_max_iter(g, o.cg);
    c.check_every = 3;
    c.tol = 1e-10;
    c.project = !kappa.defined();
    const nefi::cuda::StencilGrid sg = nefi::cuda::stencil_grid(g);
    std::vector<double> x(ns * n), work(5 * n);
    nefi::cuda::HostBlock ex;
    el::CgStats want;
    for (int64_t s = 0; s < ns; ++s) {
      const nefi::cuda::CgScratch<double> w{work.data(), work.data() + n, work.data() + 2 * n,
                                            work.data() + 3 * n, work.data() + 4 * n};
      const nefi::cuda::CgOutcome r = nefi::cuda::block_pcg<double>(
          ex, sg, sys.faces.data(), sys.diag.data(), sys.inv_diag.data(), bv.data() + s * n,
          x.data() + s * n, nullptr, w, c);
      add_outcome(want, r);
    }
    EXPECT_EQ(host(u), x);
    expect_emulated_stats(el::device_cg_stats(state->device_forward_stats), want);
  }
}

// The statistics land in WarmStart's buffers in place: a captured step that
// allocated new ones would keep a graph allocation and free the warm-up
// step's buffer inside the graph, so its replays could not run.
TEST(NefiEllipticDevice, StatisticsAreWrittenInPlace) {
  NEFI_SKIP_WITHOUT_GPU();
  const el::EllipticGrid g = box({9, 8}, "dirichlet");
  fk::Tensor sigma = positive(g.shape, 21).to(kGpu);
  sigma.set_requires_grad(true);
  auto state = std::make_shared<el::WarmStart>();
  el::SolveOptions o;
  const void* forward = nullptr;
  const void* adjoint = nullptr;
  for (int call = 0; call < 2; ++call) {
    const fk::Tensor u =
        el::solve_elliptic(sigma, normal({2, 9, 8}, 22).to(kGpu), fk::Tensor(), g, o, state);
    // A new adjoint right-hand side each call: the warm start (the last
    // call's solution) would otherwise solve it in 0 iterations.
    u.backward(normal({2, 9, 8}, 23 + call).to(kGpu));
    ASSERT_TRUE(state->device_forward_stats.defined());
    ASSERT_TRUE(state->device_adjoint_stats.defined());
    if (call == 0) {
      forward = state->device_forward_stats.data_ptr();
      adjoint = state->device_adjoint_stats.data_ptr();
      continue;
    }
    EXPECT_EQ(state->device_forward_stats.data_ptr(), forward);
    EXPECT_EQ(state->device_adjoint_stats.data_ptr(), adjoint);
  }
  EXPECT_EQ(el::device_cg_stats(state->device_forward_stats).unconverged, 0);
  EXPECT_GT(el::device_cg_stats(state->device_adjoint_stats).max_iterations, 0);
}

nefi::EllipticOperatorOptions tight(const std::string& bc, const std::string& transform) {
  nefi::EllipticOperatorOptions o;
  o.boundary = bc;
  o.sigma_transform = transform;
  o.solve.cg.tol = 1e-13;
  o.warm_start = true;
  return o;
}

// The forward and the field gradient on the device against the CPU's, f64
// and f32: a darcy-like operator (pure Neumann, exp transform, observed
// gauges) and a Dirichlet one with κ returning u.
TEST(NefiEllipticDevice, OperatorForwardAndGradientMatchTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  const nefi::Domain dom({12, 10}, {1.0, 0.8});
  auto rhs = [](const nefi::Domain& d) { return normal({3, d.shape()[0], d.shape()[1]}, 4); };
  auto observe = [](const nefi::Domain& d) { return normal({5, d.numel()}, 5); };
  auto kappa = [](const nefi::Domain& d) { return positive(d.shape(), 6); };
  const std::vector<std::shared_ptr<nefi::Operator>> ops = {
      std::make_shared<nefi::EllipticOperator>(dom, rhs, observe, tight("neumann", "exp")),
      std::make_shared<nefi::EllipticOperator>(dom, rhs, nefi::GridFunction(),
                                               tight("dirichlet", "identity"), kappa)};
  for (const auto& op : ops) {
    EXPECT_EQ(op->host_only_reason(), "");
    EXPECT_TRUE(op->graph_capturable());
    const fk::Tensor x = positive(dom.shape(), 7) * 0.5;
    const fk::Tensor g = normal(op->output_shape(dom.shape()), 8);
    for (fk::DType dt : {fk::DType::F64, fk::DType::F32}) {
      SCOPED_TRACE(fk::name(dt));
      const double tol = dt == fk::DType::F64 ? 1e-9 : 2e-3;
      ParityOutputs y;
      expect_device_matches_cpu(*op, x, g, dt, close_within(tol), &y);
      // A second call starts warm from the kept iterates and gives the same values.
      expect_close(host(op->apply(x.to(dt).to(kGpu))), y.cpu, tol, "warm forward");
      const auto* solve = dynamic_cast<const nefi::EllipticOperator*>(op.get());
      ASSERT_NE(solve, nullptr);
      const el::CgStats warm = el::device_cg_stats(solve->solve_state().device_forward_stats);
      EXPECT_GT(warm.warm_used, 0) << "the second forward did not start from the kept iterate";
    }
  }
}

// The diffuse-optical operator (κ the unknown, calibrated by its reference)
// on the device against the CPU.
TEST(NefiEllipticDevice, DiffuseOpticalForwardAndGradientMatchTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  const nefi::Domain dom({8, 7, 5}, {1.0, 1.0, 1.0});
  nefi::DiffuseOpticalOptions o;
  o.reference_absorption = 0.05;
  o.elliptic = tight("neumann", "identity");
  auto rhs = [](const nefi::Domain& d) {
    return fk::abs(normal({2, d.shape()[0], d.shape()[1], d.shape()[2]}, 9));
  };
  auto sink = [](const nefi::Domain& d) { return positive(d.shape(), 10) * 0.1; };
  auto observe = [](const nefi::Domain& d) { return fk::abs(normal({6, d.numel()}, 11)); };
  const nefi::DiffuseOpticalOperator op(dom, rhs, sink, observe, o);
  EXPECT_EQ(op.host_only_reason(), "");
  const fk::Tensor x = positive(dom.shape(), 12) * 0.05;
  const fk::Tensor g = normal(op.output_shape(dom.shape()), 13);
  expect_device_matches_cpu(
      op, x, g, fk::DType::F64,
      [](const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
        expect_close(got, want, what == "output" ? 1e-9 : 1e-8, what);
      });
}

// b -> A⁻¹ b for a fixed σ, κ: linear, so the dot test applies with both
// solves (forward and the IFT adjoint) on the device.
class LinearSolve : public nefi::Operator {
 public:
  LinearSolve(el::EllipticGrid g, fk::Tensor sigma, fk::Tensor kappa, el::SolveOptions o)
      : g_(std::move(g)), sigma_(std::move(sigma)), kappa_(std::move(kappa)), o_(o) {}
  fk::Tensor apply(const fk::Tensor& b) const override {
    return el::solve_elliptic(sigma_, b, kappa_, g_, o_, nullptr);
  }
  std::shared_ptr<nefi::Operator> at_resolution(const fk::Dims&) const override { return nullptr; }
  fk::Dims output_shape(const fk::Dims& s) const override { return s; }
  std::string fidelity_tag() const override { return "test"; }
  std::string kind() const override { return "linear_solve"; }

 private:
  el::EllipticGrid g_;
  fk::Tensor sigma_, kappa_;
  el::SolveOptions o_;
};

TEST(NefiEllipticDevice, AdjointDotTestOnTheDevice) {
  NEFI_SKIP_WITHOUT_GPU();
  for (const std::string bc : {"dirichlet:neumann,periodic", "neumann"}) {
    SCOPED_TRACE(bc);
    const el::EllipticGrid g = box({10, 9}, bc);
    el::SolveOptions o;
    o.cg.tol = 1e-15;
    const LinearSolve op(g, positive(g.shape, 14).to(kGpu), fk::Tensor(), o);
    expect_adjoint_on_device(op, normal({2, 10, 9}, 15).to(kGpu), normal({2, 10, 9}, 16).to(kGpu));
  }
}

TEST(NefiEllipticDevice, RefusedSettingsAreNamed) {
  NEFI_SKIP_WITHOUT_GPU();
  const el::EllipticGrid g = box({6, 6}, "dirichlet");
  el::SolveOptions o;
  o.solver = el::LinearSolver::kBanded;
  EXPECT_THROW(el::solve_elliptic(positive(g.shape, 1).to(kGpu), normal({6, 6}, 2).to(kGpu),
                                  fk::Tensor(), g, o, nullptr),
               fk::Error);
}

TEST(NefiEllipticDevice, DarcyFlowStageIsCapturedAndReplaysBitwise) {
  NEFI_SKIP_WITHOUT_GPU();
  expect_captured_stage_replays_eager("darcy_flow", {{"n", "16"}, {"n_configs", "3"}}, "logk");
}

TEST(NefiEllipticDevice, Dot3dJacobiStageIsCapturedAndReplaysBitwise) {
  NEFI_SKIP_WITHOUT_GPU();
  expect_captured_stage_replays_eager("dot3d", {{"grid", "[10, 10, 6]"}, {"precond", "jacobi"}},
                                      "mua");
}

}  // namespace
