#include "nefi/operators/poisson_dst.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>

#include "fk/factory.h"
#include "fk/random.h"
#include "fk/testing.h"
#include "nefi/instances/poisson_source_data.h"
#include "nefi/operators/operator_checks.h"
#include "nefi/operators/poisson_dst_device.h"

namespace {

using nefi::test::dot;
using nefi::test::rnd;

TEST(NefiPoissonDST, MatrixIsOrthonormal) {
  for (int64_t n : {1, 5, 8}) {
    const auto S = nefi::dst2_matrix(n);
    for (int64_t a = 0; a < n; ++a)
      for (int64_t b = 0; b < n; ++b) {
        double s = 0;
        for (int64_t i = 0; i < n; ++i) s += S[a * n + i] * S[b * n + i];
        EXPECT_NEAR(s, a == b ? 1.0 : 0.0, 1e-14) << n;
      }
  }
}

// sin(m pi x / Lx) sin(l pi y / Ly) at the cell centres is an eigenfunction of
// the continuous Laplacian with eigenvalue (m pi/Lx)^2 + (l pi/Ly)^2.
TEST(NefiPoissonDST, ContinuousSpectrumSolvesEigenfunctionsExactly) {
  const double Lx = 1.3, Ly = 0.7, kappa = 2.5;
  nefi::Domain d({12, 10}, {Lx, Ly});
  nefi::PoissonOperator op(d, nefi::PoissonSpectrum::kContinuous, kappa);
  for (auto [m, l] : {std::pair{1, 1}, {3, 2}, {12, 10}}) {
    std::vector<double> f(120);
    for (int i = 0; i < 12; ++i)
      for (int j = 0; j < 10; ++j)
        f[i * 10 + j] = std::sin(m * std::numbers::pi * (i + 0.5) / 12) *
                        std::sin(l * std::numbers::pi * (j + 0.5) / 10);
    const double lambda =
        kappa * (std::pow(m * std::numbers::pi / Lx, 2) + std::pow(l * std::numbers::pi / Ly, 2));
    auto u = op.apply(fk::from_vector(f, {12, 10})).to_vector<double>();
    for (int p = 0; p < 120; ++p) EXPECT_NEAR(u[p] * lambda, f[p], 1e-13) << m << "," << l;
  }
}

// The fd spectrum is the 5-point solve: against the data generator's CG
// (an independent stencil code) and against a dense 1-D tridiagonal solve.
TEST(NefiPoissonDST, FiniteDifferenceSpectrumMatchesTheStencilSolve) {
  const int64_t m = 16;
  nefi::Domain d({m, m}, {2.0, 2.0});
  nefi::PoissonOperator op(d, nefi::PoissonSpectrum::kFiniteDifference, 0.5);
  const fk::Tensor f = rnd({m, m}, 3);
  const auto u = op.apply(f).to_vector<double>();
  const auto ref = nefi::poisson::solve_dirichlet_fd(f.to_vector<double>(), m, 2.0 / m, 0.5, 1e-14);
  double err = 0, scale = 0;
  for (size_t i = 0; i < u.size(); ++i) {
    err = std::max(err, std::abs(u[i] - ref[i]));
    scale = std::max(scale, std::abs(ref[i]));
  }
  EXPECT_LT(err, 1e-10 * scale);
  // 1-D: tridiagonal (3, -1) at the ends (ghost -u), (2, -1) inside, by Thomas.
  const int64_t n = 7;
  const double h = 1.0 / n;
  nefi::PoissonOperator op1(nefi::Domain({n}), nefi::PoissonSpectrum::kFiniteDifference);
  const auto f1 = rnd({n}, 4).to_vector<double>();
  std::vector<double> diag(n, 2.0), rhs(f1);
  diag[0] = diag[n - 1] = 3.0;
  for (double& r : rhs) r *= h * h;
  for (int64_t i = 1; i < n; ++i) {  // forward elimination, off-diagonals -1
    const double w = -1.0 / diag[i - 1];
    diag[i] += w;
    rhs[i] -= w * rhs[i - 1];
  }
  std::vector<double> x(n);
  x[n - 1] = rhs[n - 1] / diag[n - 1];
  for (int64_t i = n - 2; i >= 0; --i) x[i] = (rhs[i] + x[i + 1]) / diag[i];
  const auto u1 = op1.apply(fk::from_vector(f1, {n})).to_vector<double>();
  for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(u1[i], x[i], 1e-14);
}

// Continuous vs fd converge at second order under refinement (smooth source).
TEST(NefiPoissonDST, ContinuousAndFdAgreeToSecondOrder) {
  std::vector<double> gaps;
  for (int64_t m : {16, 32, 64}) {
    nefi::Domain d({m, m});
    std::vector<double> f(m * m);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < m; ++j) {
        const double x = (i + 0.5) / m, y = (j + 0.5) / m;
        f[i * m + j] = std::exp(-((x - 0.4) * (x - 0.4) + (y - 0.55) * (y - 0.55)) / 0.02);
      }
    const fk::Tensor ft = fk::from_vector(f, {m, m});
    auto a = nefi::PoissonOperator(d).apply(ft).to_vector<double>();
    auto b = nefi::PoissonOperator(d, nefi::PoissonSpectrum::kFiniteDifference)
                 .apply(ft)
                 .to_vector<double>();
    double gap = 0, scale = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      gap = std::max(gap, std::abs(a[i] - b[i]));
      scale = std::max(scale, std::abs(a[i]));
    }
    gaps.push_back(gap / scale);
  }
  EXPECT_NEAR(gaps[0] / gaps[1], 4.0, 0.6);
  EXPECT_NEAR(gaps[1] / gaps[2], 4.0, 0.6);
}

TEST(NefiPoissonDST, AdjointGradcheckBatchAndErrors) {
  for (const fk::Dims& s : {fk::Dims{9}, fk::Dims{6, 5}, fk::Dims{4, 3, 5}}) {
    nefi::PoissonOperator op(nefi::Domain(s), nefi::PoissonSpectrum::kFiniteDifference, 1.7);
    const fk::Tensor x = rnd(s, 1), y = rnd(s, 2);
    const double lhs = dot(op.apply(x), y), rhs = dot(x, op.vjp(x, y));
    EXPECT_NEAR(lhs, rhs, 1e-14 * (1 + std::abs(lhs))) << s.str();
    fk::Tensor a = rnd(s, 5);
    a.set_requires_grad(true);
    auto fn = [&](const std::vector<fk::Tensor>& in) { return op.apply(in[0]); };
    EXPECT_EQ(fk::testing::gradcheck(fn, {a}), "") << s.str();
  }
  nefi::Domain d({6, 5});
  nefi::PoissonOperator op(d);
  const fk::Tensor xb = rnd({3, 6, 5}, 7);  // a batch of 3 equals 3 applies
  const auto yb = op.apply(xb).to_vector<double>();
  for (int64_t b = 0; b < 3; ++b) {
    const auto yi = op.apply(xb.select(0, b).contiguous()).to_vector<double>();
    for (int64_t p = 0; p < 30; ++p) EXPECT_NEAR(yb[b * 30 + p], yi[p], 1e-15);
  }
  EXPECT_EQ(op.apply(rnd({6, 5}, 1).to(fk::DType::F32)).dtype(), fk::DType::F32);
  EXPECT_EQ(*op.homogeneity(), 1.0);
  EXPECT_TRUE(op.batchable());
  auto coarse = std::static_pointer_cast<nefi::PoissonOperator>(op.at_resolution({3, 5}));
  EXPECT_EQ(coarse->eigenvalues().size(), 15u);
  EXPECT_THROW(op.apply(rnd({5, 6}, 1)), fk::Error);
  EXPECT_THROW(nefi::PoissonOperator(d, nefi::PoissonSpectrum::kContinuous, 0.0), fk::Error);
  EXPECT_THROW(nefi::PoissonOperator(nefi::Domain({2, 2, 2, 2})), fk::Error);
}

// The device solve refuses a host field, naming its device: the CUDA build's
// operand check and the CPU-only build's stub alike.
TEST(NefiPoissonDST, DeviceSolveRefusesAHostField) {
  const nefi::PoissonOperator op(nefi::Domain({6, 5}));
  try {
    nefi::poisson_solve_device(op, rnd({6, 5}, 1));
    ADD_FAILURE() << "no error for a field on the CPU";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cpu"), std::string::npos) << e.what();
  }
}

}  // namespace
