#include "nefi/operators/elliptic/elliptic_solve.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/random.h"
#include "fk/testing.h"
#include "nefi/operators/elliptic/elliptic_test_fields.h"
#include "nefi/operators/elliptic/elliptic_test_grid.h"

namespace {

using nefi::elliptic::EllipticGrid;
using nefi::elliptic::GradMode;
using nefi::elliptic::SolveOptions;
using nefi::elliptic::test::box;
using nefi::elliptic::test::normal;
using nefi::elliptic::test::positive;

double dot(const fk::Tensor& a, const fk::Tensor& b) {
  return fk::sum(fk::mul(a.detach(), b.detach())).item();
}

SolveOptions tight(GradMode mode = GradMode::kIft) {
  SolveOptions o;
  o.cg.tol = 1e-14;
  o.grad_mode = mode;
  return o;
}

// ⟨A⁻¹ b, c⟩ = ⟨b, A⁻¹ c⟩ (A symmetric), with and without the null space.
TEST(NefiEllipticSolve, AdjointDotTest) {
  for (const char* bc : {"dirichlet:neumann,periodic", "neumann", "periodic"}) {
    const EllipticGrid g = box({6, 5}, bc);
    const fk::Tensor sigma = positive({6, 5}, 1);
    const fk::Tensor b = normal({6, 5}, 2), c = normal({6, 5}, 3);
    const fk::Tensor ab = nefi::elliptic::solve_elliptic(sigma, b, {}, g, tight());
    const fk::Tensor ac = nefi::elliptic::solve_elliptic(sigma, c, {}, g, tight());
    EXPECT_NEAR(dot(ab, c), dot(b, ac), 1e-12 * (std::abs(dot(ab, c)) + 1)) << bc;
  }
}

// The IFT gradient against central finite differences in f64 (every input:
// σ, b, κ; a shared σ over a batch of 2; a batched σ; the null-space case).
TEST(NefiEllipticSolve, IftGradientMatchesFiniteDifferences) {
  fk::testing::GradcheckOptions gc;
  gc.atol = 1e-7;
  gc.rtol = 1e-5;
  {
    const EllipticGrid g = box({4, 3}, "dirichlet,neumann");
    fk::Tensor sigma = positive({4, 3}, 4).set_requires_grad(true);
    fk::Tensor b = normal({2, 4, 3}, 5).set_requires_grad(true);
    fk::Tensor kappa = positive({2, 4, 3}, 6).set_requires_grad(true);
    auto fn = [&](const std::vector<fk::Tensor>& in) {
      return nefi::elliptic::solve_elliptic(in[0], in[1], in[2], g, tight());
    };
    EXPECT_EQ(fk::testing::gradcheck(fn, {sigma, b, kappa}, gc), "");
  }
  {
    const EllipticGrid g = box({3, 2, 2}, "periodic,neumann,dirichlet");
    fk::Tensor sigma = positive({2, 3, 2, 2}, 7).set_requires_grad(true);
    fk::Tensor b = normal({2, 3, 2, 2}, 8).set_requires_grad(true);
    auto fn = [&](const std::vector<fk::Tensor>& in) {
      return nefi::elliptic::solve_elliptic(in[0], in[1], {}, g, tight());
    };
    EXPECT_EQ(fk::testing::gradcheck(fn, {sigma, b}, gc), "");
  }
  {
    const EllipticGrid g = box({5, 4}, "neumann");
    fk::Tensor sigma = positive({5, 4}, 9).set_requires_grad(true);
    fk::Tensor b = normal({5, 4}, 10).set_requires_grad(true);
    auto fn = [&](const std::vector<fk::Tensor>& in) {
      return nefi::elliptic::solve_elliptic(in[0], in[1], {}, g, tight());
    };
    EXPECT_EQ(fk::testing::gradcheck(fn, {sigma, b}, gc), "");
  }
}

// apply_elliptic: gradcheck in σ, κ and u, and ⟨A x, y⟩ = ⟨x, A y⟩.
TEST(NefiEllipticSolve, ApplyGradcheckAndDotTest) {
  const EllipticGrid g = box({3, 4}, "dirichlet:neumann,periodic");
  fk::Tensor sigma = positive({3, 4}, 11).set_requires_grad(true);
  fk::Tensor kappa = positive({2, 3, 4}, 12).set_requires_grad(true);
  fk::Tensor u = normal({2, 3, 4}, 13).set_requires_grad(true);
  auto fn = [&](const std::vector<fk::Tensor>& in) {
    return nefi::elliptic::apply_elliptic(in[0], in[1], in[2], g);
  };
  EXPECT_EQ(fk::testing::gradcheck(fn, {sigma, kappa, u}), "");
  const fk::Tensor y = normal({2, 3, 4}, 14);
  const double l = dot(nefi::elliptic::apply_elliptic(sigma, kappa, u, g), y);
  const double r = dot(u, nefi::elliptic::apply_elliptic(sigma, kappa, y, g));
  EXPECT_NEAR(l, r, 1e-12 * std::abs(l));
}

// The IFT gradient equals the one autograd takes through the unrolled CG
// iterations when both solve tightly (the exactly solved map).
TEST(NefiEllipticSolve, IftGradientMatchesUnrolled) {
  for (const char* bc : {"dirichlet", "neumann"}) {
    const EllipticGrid g = box({8, 7}, bc);
    std::vector<fk::Tensor> grads[2];
    for (int m = 0; m < 2; ++m) {
      fk::Tensor sigma = positive({8, 7}, 15).set_requires_grad(true);
      fk::Tensor b = normal({3, 8, 7}, 16).set_requires_grad(true);
      const fk::Tensor w = normal({3, 8, 7}, 17);
      const fk::Tensor u = nefi::elliptic::solve_elliptic(
          sigma, b, {}, g, tight(m == 0 ? GradMode::kIft : GradMode::kUnrolled));
      fk::sum(fk::mul(u, fk::mul(u, w))).backward();
      grads[m] = {sigma.grad(), b.grad()};
    }
    for (int k = 0; k < 2; ++k) {
      const auto a = grads[0][k].to_vector<double>(), c = grads[1][k].to_vector<double>();
      double scale = 0, diff = 0;
      for (size_t i = 0; i < a.size(); ++i)
        scale = std::max(scale, std::abs(a[i])), diff = std::max(diff, std::abs(a[i] - c[i]));
      EXPECT_LT(diff, 1e-9 * scale) << bc << " input " << k;
    }
  }
}

// A warm start that beats zero is kept (fewer iterations); one that does not
// is dropped; check_every > 1 runs at most check_every − 1 extra iterations.
TEST(NefiEllipticSolve, WarmStartAndCheckPeriod) {
  const EllipticGrid g = box({16, 16}, "neumann");
  const fk::Tensor sigma = positive({16, 16}, 18), b = normal({2, 16, 16}, 19);
  SolveOptions o;
  o.cg.tol = 1e-8;
  auto warm = std::make_shared<nefi::elliptic::WarmStart>();
  nefi::elliptic::solve_elliptic(sigma, b, {}, g, o, warm);
  const auto cold = warm->last_forward;
  EXPECT_EQ(cold.warm_used, 0);
  EXPECT_EQ(cold.unconverged, 0);
  nefi::elliptic::solve_elliptic(sigma * 1.01, b, {}, g, o, warm);
  EXPECT_EQ(warm->last_forward.warm_used, 2);
  EXPECT_LT(warm->last_forward.max_iterations, cold.max_iterations);
  warm->forward = warm->forward * 1e6;
  nefi::elliptic::solve_elliptic(sigma, b, {}, g, o, warm);
  EXPECT_EQ(warm->last_forward.warm_used, 0);
  o.cg.check_every = 8;
  auto w8 = std::make_shared<nefi::elliptic::WarmStart>();
  w8->enabled = false;
  nefi::elliptic::solve_elliptic(sigma, b, {}, g, o, w8);
  EXPECT_GE(w8->last_forward.max_iterations, cold.max_iterations);
  EXPECT_LT(w8->last_forward.max_iterations, cold.max_iterations + 8);
  EXPECT_EQ(w8->last_forward.max_iterations % 8, 0);
}

// Pure Neumann: the solution has zero mean and solves the projected system.
TEST(NefiEllipticSolve, NullSpaceGaugeAndF32) {
  const EllipticGrid g = box({10, 9}, "neumann,periodic");
  const fk::Tensor sigma = positive({10, 9}, 20), b = normal({10, 9}, 21) + 3.0;
  const fk::Tensor u = nefi::elliptic::solve_elliptic(sigma, b, {}, g, tight());
  EXPECT_NEAR(fk::mean(u).item(), 0.0, 1e-13);
  const fk::Tensor r = nefi::elliptic::apply_elliptic(sigma, {}, u, g) - (b - fk::mean(b));
  EXPECT_LT(std::sqrt(dot(r, r)), 1e-11 * std::sqrt(dot(b, b)));
  SolveOptions o;
  o.cg.tol = 1e-5;
  const fk::Tensor u32 =
      nefi::elliptic::solve_elliptic(sigma.to(fk::DType::F32), b.to(fk::DType::F32), {}, g, o);
  EXPECT_EQ(u32.dtype(), fk::DType::F32);
  const fk::Tensor d = u32.to(fk::DType::F64) - u;
  EXPECT_LT(std::sqrt(dot(d, d)), 1e-4 * std::sqrt(dot(u, u)));
}

TEST(NefiEllipticSolve, BadShapesAndOptionsAreErrors) {
  const EllipticGrid g = box({4, 4}, "dirichlet");
  const fk::Tensor s = positive({4, 4}, 22), b = normal({2, 4, 4}, 23);
  const SolveOptions o;
  EXPECT_THROW(nefi::elliptic::solve_elliptic(s, normal({4, 5}, 1), {}, g, o), fk::Error);
  EXPECT_THROW(nefi::elliptic::solve_elliptic(positive({3, 4, 4}, 1), b, {}, g, o), fk::Error);
  EXPECT_THROW(nefi::elliptic::solve_elliptic(s, b, positive({4, 3}, 1), g, o), fk::Error);
  EXPECT_THROW(nefi::elliptic::solve_elliptic(s.to(fk::DType::F32), b, {}, g, o), fk::Error);
  EXPECT_THROW(nefi::elliptic::solve_elliptic(s * -1.0, b, {}, g, o), fk::Error);
  EXPECT_THROW(nefi::elliptic::solve_elliptic(s.to(fk::DType::I32), b.to(fk::DType::I32), {}, g, o),
               fk::Error);
  SolveOptions bad = o;
  bad.cg.check_every = 0;
  EXPECT_THROW(nefi::elliptic::solve_elliptic(s, b, {}, g, bad), fk::Error);
  EXPECT_THROW(nefi::elliptic::parse_grad_mode("adjoint"), fk::Error);
  EXPECT_THROW(nefi::elliptic::parse_nullspace("pin"), fk::Error);
}

// A device solve's per-system statistics (iterations, warm used, converged,
// residual) summarised as the host solve's CgStats.
TEST(NefiEllipticSolve, DeviceStatisticsSummary) {
  const fk::Tensor per_system =
      fk::from_vector(std::vector<double>{3, 1, 1, 1e-9, 5, 0, 0, 2e-3, 0, 0, 1, 0}, {3, 4});
  const nefi::elliptic::CgStats st = nefi::elliptic::device_cg_stats(per_system);
  EXPECT_EQ(st.max_iterations, 5);
  EXPECT_EQ(st.total_iterations, 8);
  EXPECT_EQ(st.warm_used, 1);
  EXPECT_EQ(st.unconverged, 1);
  EXPECT_EQ(st.worst_residual, 2e-3);
  EXPECT_EQ(nefi::elliptic::device_cg_stats(fk::Tensor()).total_iterations, 0);
}

}  // namespace
