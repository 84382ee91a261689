// The elliptic solve with precond multigrid on a CUDA device (the V-cycle of
// cuda/elliptic_multigrid_cells.h: the hierarchy launch and the cycle inside
// the block CG) against its host emulation and the CPU multigrid: the device
// solve equals block_multigrid_setup + block_pcg over HostBlock bit for bit
// (shared and batched σ), agrees with the CPU's multigrid solve to the CG
// tolerance in f64 and f32 (the CG's dot products are summed in another
// order) in fewer iterations than the device Jacobi-PCG; the operator's
// forward and IFT gradient match the CPU's; a null-space system is refused
// as on the CPU; dot3d's default (multigrid) stage is captured as one CUDA
// graph and replays its eager run bitwise, with no device note.
// Without a usable device the tests skip (scripts/gpu-check runs them on one).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/random.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/cuda/elliptic_emulated_stats.h"
#include "nefi/cuda/elliptic_multigrid_cells.h"
#include "nefi/cuda/elliptic_stencil.h"
#include "nefi/cuda/operator_parity.h"
#include "nefi/cuda/stage_graph_replay.h"
#include "nefi/operators/elliptic/elliptic_operator.h"
#include "nefi/operators/elliptic/elliptic_solve.h"
#include "nefi/operators/elliptic/elliptic_test_fields.h"
#include "nefi/operators/elliptic/elliptic_test_grid.h"

namespace {

using nefi::cuda_test::add_outcome;
using nefi::cuda_test::close_within;
using nefi::cuda_test::expect_captured_stage_replays_eager;
using nefi::cuda_test::expect_close;
using nefi::cuda_test::expect_device_matches_cpu;
using nefi::cuda_test::expect_emulated_stats;
using nefi::cuda_test::host;
using nefi::cuda_test::kGpu;
namespace el = nefi::elliptic;
using el::test::box;
using el::test::normal;
using el::test::positive;
namespace cu = nefi::cuda;

el::SolveOptions multigrid(double tol) {
  el::SolveOptions o;
  o.cg.tol = tol;
  o.cg.precond = el::Preconditioner::kMultigrid;
  o.grad_mode = el::GradMode::kNone;
  return o;
}

struct Case {
  fk::Dims shape;
  std::string bc;
  bool batched_sigma;
};

// 2-D Dirichlet with κ on one shared σ; 3-D Neumann with κ (dot3d's kind) on
// a σ per system.
const std::vector<Case> kCases = {{{18, 15}, "dirichlet", false}, {{12, 10, 6}, "neumann", true}};

TEST(NefiEllipticMultigridDevice, SolveEqualsTheHostEmulationBitwise) {
  NEFI_SKIP_WITHOUT_GPU();
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.shape.str());
    const el::EllipticGrid g = box(c.shape, c.bc);
    const int64_t n = g.numel(), ns = 3, nb = c.batched_sigma ? ns : 1;
    fk::Dims field = c.shape;
    if (c.batched_sigma) field.insert(0, ns);
    fk::Dims rhs = c.shape;
    rhs.insert(0, ns);
    const fk::Tensor sigma = positive(field, 1), kappa = positive(field, 2) * 0.1;
    const fk::Tensor b = normal(rhs, 3);
    el::SolveOptions o = multigrid(1e-10);
    o.cg.check_every = 2;
    auto state = std::make_shared<el::WarmStart>();
    state->enabled = false;  // cold solves; the statistics are kept
    const fk::Tensor u =
        el::solve_elliptic(sigma.to(kGpu), b.to(kGpu), kappa.to(kGpu), g, o, state);
    const std::vector<double> sv = sigma.to_vector<double>(), kv = kappa.to_vector<double>(),
                              bv = b.to_vector<double>();
    const el::FaceSystem<double> sys =
        el::build_face_system<double>(g, nb, sv.data(), nb > 1, kv.data(), nb > 1);
    const cu::StencilGrid sg = cu::stencil_grid(g);
    cu::CgControl ctl;
    ctl.max_iter = el::resolved_max_iter(g, o.cg);
    ctl.check_every = 2;
    ctl.tol = 1e-10;
    std::vector<double> x(ns * n), cg(5 * n);
    std::vector<double> hierarchy(nb * cu::multigrid_hierarchy_size(sg));
    std::vector<double> cholesky(nb * cu::multigrid_cholesky_size(sg));
    std::vector<double> work(cu::multigrid_work_size(sg));
    cu::HostBlock ex;
    for (int64_t f = 0; f < nb; ++f)
      cu::block_multigrid_setup<double>(ex, sg, sys.faces.data() + f * sg.ndim * n,
                                        sys.diag.data() + f * n,
                                        hierarchy.data() + f * cu::multigrid_hierarchy_size(sg),
                                        cholesky.data() + f * cu::multigrid_cholesky_size(sg));
    el::CgStats want;
    for (int64_t s = 0; s < ns; ++s) {
      const int64_t f = nb == 1 ? 0 : s;
      const cu::CgScratch<double> w{cg.data(), cg.data() + n, cg.data() + 2 * n, cg.data() + 3 * n,
                                    cg.data() + 4 * n};
      const double *fa = sys.faces.data() + f * sg.ndim * n, *di = sys.diag.data() + f * n,
                   *inv = sys.inv_diag.data() + f * n;
      const cu::MultigridPrecond<double> m{sg,
                                           fa,
                                           di,
                                           inv,
                                           hierarchy.data() + f * cu::multigrid_hierarchy_size(sg),
                                           cholesky.data() + f * cu::multigrid_cholesky_size(sg),
                                           work.data(),
                                           w.q};
      const cu::CgOutcome r = cu::block_pcg<double>(ex, sg, fa, di, inv, bv.data() + s * n,
                                                    x.data() + s * n, nullptr, w, ctl, m);
      add_outcome(want, r);
    }
    EXPECT_EQ(host(u), x);
    expect_emulated_stats(el::device_cg_stats(state->device_forward_stats), want);
  }
}

// Against the CPU's multigrid solve, f64 and f32, and against the device
// Jacobi-PCG's iteration count.
TEST(NefiEllipticMultigridDevice, SolveMatchesTheCpuMultigridInFewerIterationsThanJacobi) {
  NEFI_SKIP_WITHOUT_GPU();
  const el::EllipticGrid g = box({20, 20, 10}, "neumann");
  const fk::Tensor sigma = positive(g.shape, 4) * 0.2, kappa = positive(g.shape, 5) * 0.02;
  const fk::Tensor b = normal({2, 20, 20, 10}, 6);
  for (fk::DType dt : {fk::DType::F64, fk::DType::F32}) {
    SCOPED_TRACE(fk::name(dt));
    const double tol = dt == fk::DType::F64 ? 1e-10 : 1e-5;
    const el::SolveOptions o = multigrid(tol);
    const fk::Tensor s = sigma.to(dt), k = kappa.to(dt), bb = b.to(dt);
    const fk::Tensor u_cpu = el::solve_elliptic(s, bb, k, g, o, nullptr);
    auto state = std::make_shared<el::WarmStart>();
    state->enabled = false;
    const fk::Tensor u = el::solve_elliptic(s.to(kGpu), bb.to(kGpu), k.to(kGpu), g, o, state);
    expect_close(host(u), host(u_cpu), dt == fk::DType::F64 ? 1e-8 : 1e-3, "u");
    const el::CgStats mg = el::device_cg_stats(state->device_forward_stats);
    el::SolveOptions oj = o;
    oj.cg.precond = el::Preconditioner::kJacobi;
    el::solve_elliptic(s.to(kGpu), bb.to(kGpu), k.to(kGpu), g, oj, state);
    const el::CgStats jac = el::device_cg_stats(state->device_forward_stats);
    EXPECT_EQ(mg.unconverged + jac.unconverged, 0);
    EXPECT_LT(2 * mg.max_iterations, jac.max_iterations);
  }
}

// The operator with precond multigrid: forward and IFT gradient (the adjoint
// solve runs the same V-cycle on the saved hierarchy) against the CPU.
TEST(NefiEllipticMultigridDevice, OperatorForwardAndGradientMatchTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  const nefi::Domain dom({12, 10, 5}, {1.0, 0.8, 0.5});
  nefi::EllipticOperatorOptions o;
  o.boundary = "dirichlet";
  o.solve.cg.tol = 1e-13;
  o.solve.cg.precond = el::Preconditioner::kMultigrid;
  o.warm_start = true;
  auto rhs = [](const nefi::Domain& d) {
    return normal({2, d.shape()[0], d.shape()[1], d.shape()[2]}, 7);
  };
  auto kappa = [](const nefi::Domain& d) { return positive(d.shape(), 8); };
  const nefi::EllipticOperator op(dom, rhs, nefi::GridFunction(), o, kappa);
  EXPECT_EQ(op.device_note(), "");
  const fk::Tensor x = positive(dom.shape(), 9) * 0.5;
  const fk::Tensor g = normal(op.output_shape(dom.shape()), 10);
  for (fk::DType dt : {fk::DType::F64, fk::DType::F32})
    expect_device_matches_cpu(op, x, g, dt, close_within(dt == fk::DType::F64 ? 1e-9 : 2e-3));
}

// pcg_solve refuses multigrid on a null-space system; so does the device,
// from the layout (no host read).
TEST(NefiEllipticMultigridDevice, NullSpaceSystemIsRefused) {
  NEFI_SKIP_WITHOUT_GPU();
  const el::EllipticGrid g = box({8, 8}, "neumann");
  EXPECT_THROW(el::solve_elliptic(positive(g.shape, 11).to(kGpu), normal({8, 8}, 12).to(kGpu),
                                  fk::Tensor(), g, multigrid(1e-8), nullptr),
               fk::Error);
}

TEST(NefiEllipticMultigridDevice, Dot3dMultigridStageIsCapturedAndReplaysBitwise) {
  NEFI_SKIP_WITHOUT_GPU();
  expect_captured_stage_replays_eager("dot3d", {{"grid", "[10, 10, 6]"}}, "mua");
}

// dot3d's default precond multigrid on the device: no device note, and its
// loss follows the precond jacobi run's closely (both solve to the CG
// tolerance; not bitwise: different iterates).
TEST(NefiEllipticMultigridDevice, Dot3dMultigridStageFollowsJacobiWithoutANote) {
  NEFI_SKIP_WITHOUT_GPU();
  using nefi::cuda_test::solve_stage_on_gpu;
  const nefi::Result mg = solve_stage_on_gpu("dot3d", {{"grid", "[10, 10, 6]"}}, 8, true);
  const nefi::Result jac =
      solve_stage_on_gpu("dot3d", {{"grid", "[10, 10, 6]"}, {"precond", "jacobi"}}, 8, true);
  const std::vector<double> total_mg = mg.history.column("total"),
                            total_jac = jac.history.column("total");
  ASSERT_FALSE(total_mg.empty());
  expect_close(total_mg, total_jac, 1e-3, "loss totals");
  const std::string note = mg.stages.at(0).device_note;
  EXPECT_EQ(note.find("precond"), std::string::npos) << note;
  EXPECT_GT(mg.stages.at(0).graph_steps, 0) << note;
}

}  // namespace
