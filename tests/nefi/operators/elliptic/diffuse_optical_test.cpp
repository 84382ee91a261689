#include "nefi/operators/elliptic/diffuse_optical.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/random.h"
#include "fk/testing.h"
#include "nefi/instances/dot3d_model.h"

namespace {

// dot3d's sources, Robin sink and detectors for geometry g.
nefi::DiffuseOpticalOperator make(
    const nefi::dot::Geometry& g, const fk::Dims& shape, double reference, double tol,
    nefi::elliptic::Preconditioner precond = nefi::elliptic::Preconditioner::kJacobi) {
  nefi::DiffuseOpticalOptions o;
  o.elliptic.solve.cg.precond = precond;
  o.diffusion = g.diffusion();
  o.reference_absorption = reference;
  o.elliptic.boundary = "neumann";
  o.elliptic.solve.cg.tol = tol;
  o.elliptic.warm_start = true;
  auto rhs = [g](const nefi::Domain& d) {
    const fk::Dims s = d.shape();
    return fk::from_vector(nefi::dot::source_rhs(g, s), {g.sources(), s[0], s[1], s[2]});
  };
  auto sink = [g](const nefi::Domain& d) {
    return fk::from_vector(nefi::dot::robin_sink(g, d.shape()), d.shape());
  };
  auto observe = [g](const nefi::Domain& d) {
    return fk::from_vector(nefi::dot::detector_matrix(g, d.shape()),
                           {g.detectors(), d.shape().numel()});
  };
  const nefi::Domain domain(shape, {g.extent[0], g.extent[1], g.extent[2]});
  return nefi::DiffuseOpticalOperator(domain, rhs, sink, observe, o);
}

nefi::dot::Geometry small() {
  nefi::dot::Geometry g;
  g.extent = {10, 8, 6};
  g.n_sources = 2;
  g.n_detectors = 3;
  g.detector_samples = 2;
  return g;
}

fk::Tensor absorption(const fk::Dims& shape, uint64_t seed) {
  fk::Generator gen(seed);
  return fk::rand(shape, {fk::DType::F64}, &gen) * 0.04 + 0.01;
}

// The calibrated detector responses' gradient in μ_a (the IFT adjoint in κ)
// against central differences, in f64; the homogeneous slab reads 1 at
// every detector.
TEST(NefiDiffuseOptical, GradcheckAndCalibration) {
  const fk::Dims shape{4, 3, 3};
  const auto op = make(small(), shape, 0.01, 1e-13);
  EXPECT_EQ(op.output_shape(shape), fk::Dims({4, 9}));
  EXPECT_EQ(op.at_resolution({3, 3, 2})->output_shape({3, 3, 2}), fk::Dims({4, 9}));
  for (double r : op.apply(fk::full(shape, 0.01, {fk::DType::F64})).to_vector<double>())
    EXPECT_NEAR(r, 1.0, 1e-9);
  fk::Tensor x = absorption(shape, 3);
  x.set_requires_grad(true);
  auto fn = [&](const std::vector<fk::Tensor>& in) { return op.apply(in[0]); };
  EXPECT_EQ(fk::testing::gradcheck(fn, {x}), "");
  EXPECT_GT(op.solve_state().last_adjoint.total_iterations, 0);
}

// ⟨J v, w⟩ = ⟨v, Jᵀ w⟩ at a random μ_a: Jᵀw from the operator's adjoint
// (vjp), J v from a separately written tangent solve
// J v = −W A⁻¹ (v ⊙ Φ) / reference (uncalibrated here: reference = 1).
TEST(NefiDiffuseOptical, AdjointMatchesTangentSolve) {
  const nefi::dot::Geometry g = small();
  const fk::Dims shape{6, 5, 4};
  const auto op = make(g, shape, 0, 1e-14);
  const fk::Tensor x = absorption(shape, 5);
  fk::Generator gen(6);
  const fk::Tensor v = fk::randn(shape, {fk::DType::F64}, &gen);
  const fk::Tensor w = fk::randn({g.sources(), g.detectors()}, {fk::DType::F64}, &gen);
  const fk::Tensor phi = op.fluence(x);
  const auto grid = nefi::dot::slab_grid(g, shape);
  const fk::Tensor kappa = x + fk::from_vector(nefi::dot::robin_sink(g, shape), shape);
  nefi::elliptic::SolveOptions so;
  so.cg.tol = 1e-14;
  so.grad_mode = nefi::elliptic::GradMode::kNone;
  const auto dphi = nefi::elliptic::solve_elliptic(fk::full(shape, g.diffusion(), {fk::DType::F64}),
                                                   phi * v, kappa, grid, so)
                        .to_vector<double>();
  const auto mat = nefi::dot::detector_matrix(g, shape);
  const auto wv = w.to_vector<double>();
  const int64_t n = shape.numel();
  double lhs = 0;
  for (int64_t p = 0; p < g.sources(); ++p)
    for (int64_t m = 0; m < g.detectors(); ++m) {
      double jv = 0;
      for (int64_t k = 0; k < n; ++k) jv -= mat[m * n + k] * dphi[p * n + k];
      lhs += jv * wv[p * g.detectors() + m];
    }
  const double rhs = fk::sum(op.vjp(x, w) * v).item();
  EXPECT_NEAR(lhs, rhs, 1e-10 * std::abs(lhs));
  EXPECT_GT(std::abs(lhs), 0.0);
}

// dot3d's multigrid-preconditioned solve (a 3-level hierarchy here) gives
// the Jacobi-PCG's calibrated readings and μ_a gradient (both to 1e-12) to
// 1e-8, from a cold start in under half the iterations.
TEST(NefiDiffuseOptical, MultigridMatchesJacobi) {
  const nefi::dot::Geometry g = small();
  const fk::Dims shape{10, 8, 6};
  const auto jacobi = make(g, shape, 0.01, 1e-12);
  const auto multigrid = make(g, shape, 0.01, 1e-12, nefi::elliptic::Preconditioner::kMultigrid);
  fk::Generator gen(8);
  const fk::Tensor w = fk::randn({g.sources(), g.detectors()}, {fk::DType::F64}, &gen);
  for (uint64_t seed : {1, 2}) {
    const fk::Tensor x = absorption(shape, seed);
    const auto yj = jacobi.apply(x).to_vector<double>();
    const auto ym = multigrid.apply(x).to_vector<double>();
    for (size_t i = 0; i < yj.size(); ++i) EXPECT_NEAR(yj[i], ym[i], 1e-8 * std::abs(yj[i])) << i;
    if (seed == 1) {  // the cold start (later solves start from the last solution)
      EXPECT_LT(2 * multigrid.solve_state().last_forward.max_iterations,
                jacobi.solve_state().last_forward.max_iterations);
    }
    const auto gj = jacobi.vjp(x, w).to_vector<double>();
    const auto gm = multigrid.vjp(x, w).to_vector<double>();
    if (seed == 1) {
      EXPECT_LT(2 * multigrid.solve_state().last_adjoint.max_iterations,
                jacobi.solve_state().last_adjoint.max_iterations);
    }
    double scale = 0;
    for (double v : gj) scale = std::max(scale, std::abs(v));
    for (size_t i = 0; i < gj.size(); ++i) EXPECT_NEAR(gj[i], gm[i], 1e-8 * scale) << i;
  }
}

// 1-D reduction: a slab so wide that the lateral Robin sink vanishes, one
// lateral cell, one source 1/μ_s′ deep. Then −DΦ″ + μ_aΦ = s δ(z − z₀) with
// Φ(0) − 2ADΦ′(0) = 0 and Φ(L) + 2ADΦ′(L) = 0 has the closed form
// Φ = s u_L(min(z, z₀)) u_R(max(z, z₀)) / (D W), u_L = 2ADk cosh kz + sinh kz,
// u_R(z) = u_L(L − z), W = u_L′(z₀)u_R(z₀) − u_L(z₀)u_R′(z₀), k² = μ_a/D.
// The FV fluence (second order, exact Robin faces) and the top detector's
// exitance Φ(0)/(2A) match it; A is Groenhuis' 3.25 at n = 1.4.
TEST(NefiDiffuseOptical, HomogeneousSlabMatchesOneDimensionalSolution) {
  nefi::dot::Geometry g;
  g.extent = {1e6, 1e6, 20};
  g.n_sources = 1;
  g.n_detectors = 2;
  g.detector_samples = 1;
  EXPECT_NEAR(g.robin_a(), 3.25, 0.01);
  const int64_t nz = 400;
  const double mua = 0.02, d = g.diffusion(), a = g.robin_a(), len = 20, z0 = 1.0 / g.mus_prime;
  const double k = std::sqrt(mua / d), s = 1.0 / (g.extent[0] * g.extent[1]);
  auto ul = [&](double z) { return 2 * a * d * k * std::cosh(k * z) + std::sinh(k * z); };
  auto dul = [&](double z) { return 2 * a * d * k * k * std::sinh(k * z) + k * std::cosh(k * z); };
  auto ur = [&](double z) { return ul(len - z); };
  const double wr = dul(z0) * ur(z0) + ul(z0) * dul(len - z0);
  auto exact = [&](double z) { return s * ul(std::min(z, z0)) * ur(std::max(z, z0)) / (d * wr); };
  const fk::Dims shape{2, 2, nz};
  const auto op = make(g, shape, 0, 1e-12);
  const auto phi = op.fluence(fk::full(shape, mua, {fk::DType::F64})).to_vector<double>();
  const double h = len / nz;
  double worst = 0;
  for (int64_t i = 0; i < nz; ++i) {
    const double z = (i + 0.5) * h;
    worst = std::max(worst, std::abs(phi[i] - exact(z)) / exact(z));
  }
  EXPECT_LT(worst, 1e-4);  // 1.5e-5 measured
  const auto j = op.apply(fk::full(shape, mua, {fk::DType::F64})).to_vector<double>();
  ASSERT_EQ(j.size(), 4u);
  for (double v : j) EXPECT_NEAR(v, exact(0) / (2 * a), 1e-4 * exact(0) / (2 * a));
}

TEST(NefiDiffuseOptical, BadInputsAreErrors) {
  const nefi::dot::Geometry g = small();
  const fk::Dims shape{4, 4, 3};
  nefi::DiffuseOpticalOptions o;
  o.elliptic.boundary = "neumann";
  const nefi::Domain domain(shape, {10, 8, 6});
  auto rhs = [g](const nefi::Domain& dm) {
    const fk::Dims s = dm.shape();
    return fk::from_vector(nefi::dot::source_rhs(g, s), {g.sources(), s[0], s[1], s[2]});
  };
  auto sink = [g](const nefi::Domain& dm) {
    return fk::from_vector(nefi::dot::robin_sink(g, dm.shape()), dm.shape());
  };
  auto bad_sink = [](const nefi::Domain&) { return fk::zeros({4, 4}, {fk::DType::F64}); };
  auto observe = [g](const nefi::Domain& dm) {
    return fk::from_vector(nefi::dot::detector_matrix(g, dm.shape()),
                           {g.detectors(), dm.shape().numel()});
  };
  EXPECT_THROW(nefi::DiffuseOpticalOperator(domain, rhs, bad_sink, observe, o), fk::Error);
  EXPECT_THROW(nefi::DiffuseOpticalOperator(domain, rhs, sink, {}, o), fk::Error);
  o.detector_shape = {2, 2};  // 9 detectors
  EXPECT_THROW(nefi::DiffuseOpticalOperator(domain, rhs, sink, observe, o), fk::Error);
  o.detector_shape = {3, 3};
  EXPECT_EQ(nefi::DiffuseOpticalOperator(domain, rhs, sink, observe, o).output_shape(shape),
            fk::Dims({4, 3, 3}));
  o.diffusion = 0;
  EXPECT_THROW(nefi::DiffuseOpticalOperator(domain, rhs, sink, observe, o), fk::Error);
  o.diffusion = 0.3;
  const nefi::DiffuseOpticalOperator op(domain, rhs, sink, observe, o);
  EXPECT_THROW(op.apply(fk::full({4, 4, 4}, 0.01, {fk::DType::F64})), fk::Error);
}

}  // namespace
