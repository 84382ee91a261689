// Insulated lateral sides (lateral_bc neumann) against independent
// references: cos(π k (x + ½) / nx) is an eigenvector of the closed-side
// discrete Laplacian (not of the periodic one) for the implicit operator's
// every backend and solver and for the explicit data generator; the dense
// matrix has no wrap-around faces; the adjoint passes finite differences; an
// insulated box conserves heat.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/random.h"
#include "fk/test_util.h"
#include "fk/testing.h"
#include "nefi/instances/thermal/explicit_simulator.h"
#include "nefi/operators/heat/heat_operator.h"
#include "nefi/operators/heat/heat_system.h"
#include "nefi/operators/heat/inner_solvers.h"
#include "nefi/operators/heat/step_solver.h"

namespace {

using fk::test::max_abs_diff;

namespace heat = nefi::heat;

double total(const fk::Tensor& t) {
  double s = 0;
  for (double v : t.to_vector<double>()) s += v;
  return s;
}

heat::StepGeometry closed_sides(int64_t nx, int64_t ny, int64_t nz, std::vector<double> e,
                                double dt) {
  heat::StepGeometry g{nx, ny, nz, e[0] / nx, e[1] / ny, e[2] / nz, dt, 0.0};
  g.lateral_neumann = true;
  return g;
}

fk::Tensor one_step(const fk::Tensor& alpha, const heat::StepGeometry& g, const fk::Tensor& b,
                    bool flat, heat::SolverOptions o) {
  auto s = heat::make_step_solver(alpha, g, flat, o);
  s->start(b);
  s->solve(b);
  fk::Tensor x = fk::empty(g.shape(), {alpha.dtype()});
  s->result(x);
  return x;
}

// cos(π k (i + ½) / n) along `axis` (0: x, 1: y), constant along the others.
fk::Tensor cosine_mode(const heat::StepGeometry& g, int axis, int k) {
  std::vector<double> v(g.numel());
  const int64_t n = axis == 0 ? g.nx : g.ny;
  for (int64_t x = 0; x < g.nx; ++x)
    for (int64_t y = 0; y < g.ny; ++y)
      for (int64_t z = 0; z < g.nz; ++z)
        v[(x * g.ny + y) * g.nz + z] =
            std::cos(std::numbers::pi * k * ((axis == 0 ? x : y) + 0.5) / static_cast<double>(n));
  return fk::from_vector(v, g.shape());
}

TEST(HeatNeumann, LateralCosineModeDecaysAtTheDiscreteRate) {
  const double alpha0 = 0.3, dt = 0.2;
  auto g = closed_sides(9, 7, 3, {3.0, 2.0, 0.6}, dt);
  const fk::Tensor alpha = fk::full(g.shape(), alpha0, {fk::DType::F64});
  for (int axis : {0, 1}) {
    const int k = 3;  // odd: not a mode of the periodic grid
    const fk::Tensor b = cosine_mode(g, axis, k);
    const double h = axis == 0 ? g.hx : g.hy;
    const int64_t n = axis == 0 ? g.nx : g.ny;
    const double lambda = 4 / (h * h) * std::pow(std::sin(std::numbers::pi * k / (2.0 * n)), 2);
    const fk::Tensor want = fk::mul(b, 1 / (1 + dt * alpha0 * lambda));
    for (bool flat : {true, false}) {
      const heat::SolverOptions cg{"cg", 1, 1e-13, 400, 1}, jac{"jacobi", 400, 0, 1, 1},
          cheb{"chebyshev", 80, 0, 1, 1};
      for (const auto& o : {cg, jac, cheb})
        EXPECT_LT(max_abs_diff(one_step(alpha, g, b, flat, o), want), 1e-10)
            << o.solver << " axis " << axis << " flat=" << flat;
    }
    heat::StepGeometry periodic = g;
    periodic.lateral_neumann = false;  // the same mode leaks through the wrapped faces
    EXPECT_GT(max_abs_diff(one_step(alpha, periodic, b, true, {"cg", 1, 1e-13, 400, 1}), want),
              1e-2);
  }
}

// A = I − Δt L(α) column by column from both builders against its definition
// with faces only between cells inside the box.
TEST(HeatNeumann, DenseMatrixHasNoWrapAroundFaces) {
  const auto g = closed_sides(3, 4, 3, {1.5, 2.0, 0.9}, 0.2);
  const int64_t n = g.numel();
  fk::Generator gen(3);
  const fk::Tensor alpha = fk::uniform(g.shape(), 0.08, 0.2, {fk::DType::F64}, &gen);
  const auto a = alpha.to_vector<double>();
  std::vector<double> expect(n * n, 0.0);
  const double h[3] = {g.hx, g.hy, g.hz};
  auto index = [&](int64_t x, int64_t y, int64_t z) { return (x * g.ny + y) * g.nz + z; };
  for (int64_t x = 0; x < g.nx; ++x)
    for (int64_t y = 0; y < g.ny; ++y)
      for (int64_t z = 0; z < g.nz; ++z) {
        const int64_t i = index(x, y, z);
        const int64_t nb[3] = {x + 1 < g.nx ? index(x + 1, y, z) : -1,
                               y + 1 < g.ny ? index(x, y + 1, z) : -1,
                               z + 1 < g.nz ? index(x, y, z + 1) : -1};
        for (int axis = 0; axis < 3; ++axis) {
          const int64_t j = nb[axis];
          if (j < 0) continue;
          const double c = g.dt * 2 * a[i] * a[j] / (a[i] + a[j]) / (h[axis] * h[axis]);
          expect[i * n + j] -= c;
          expect[j * n + i] -= c;
          expect[i * n + i] += c;
          expect[j * n + j] += c;
        }
        expect[i * n + i] += 1;
      }
  for (bool flat : {true, false}) {
    const auto sys = flat ? heat::build_system(alpha, g) : heat::build_system_ops(alpha, g);
    const auto sweep = heat::make_sweep(flat, sys.weights, g);
    for (int64_t j = 0; j < n; ++j) {
      std::vector<double> e(n, 0.0);
      e[j] = 1;
      auto col = heat::apply_system(sys, sweep, fk::from_vector(e, g.shape())).to_vector<double>();
      for (int64_t i = 0; i < n; ++i)
        ASSERT_NEAR(col[i], expect[i * n + j], 1e-13) << "A[" << i << "," << j << "] flat=" << flat;
    }
  }
}

nefi::HeatConfig insulated_config() {
  nefi::HeatConfig c;
  c.extent = {2.0, 2.0, 1.0};
  c.dt = 0.05;
  c.n_frames = 3;
  c.flash.width_xy = 0.5;
  c.flash.width_z = 0.3;
  c.flash.periodic = false;
  c.lateral_bc = "neumann";
  c.solver = "cg";
  c.cg_tol = 1e-14;
  c.cg_max_iter = 400;
  return c;
}

// The adjoint (fused face sums) and the unrolled autograd mode against
// central differences, element by element, in f64.
TEST(HeatNeumann, GradientsPassGradcheck) {
  for (const char* mode : {"adjoint", "autograd"}) {
    nefi::HeatConfig c = insulated_config();
    c.grad_mode = mode;
    c.first_frame = 0;
    const fk::Dims s{4, 3, 4};
    nefi::HeatOperator op(c, s);
    fk::Generator gen(5);
    fk::Tensor a = fk::uniform(s, 0.08, 0.2, {fk::DType::F64}, &gen);
    a.set_requires_grad(true);
    auto fn = [&](const std::vector<fk::Tensor>& in) { return op.apply(in[0]); };
    EXPECT_EQ(fk::testing::gradcheck(fn, {a}, {1e-6, 1e-7, 1e-5}), "") << mode;
  }
}

// Closed sides, front and back: the heat content stays that of the flash,
// while the periodic operator on the same flash gives other frames.
TEST(HeatNeumann, InsulatedBoxConservesHeat) {
  nefi::HeatConfig c = insulated_config();
  c.n_frames = 6;
  c.flash.center = std::array<double, 2>{0.4, 0.7};  // off-centre: the sides matter
  const fk::Dims s{6, 6, 5};
  fk::Generator gen(3);
  const fk::Tensor alpha = fk::uniform(s, 0.08, 0.2, {fk::DType::F64}, &gen);
  const fk::Tensor sim = nefi::HeatOperator(c, s).simulate(alpha);
  const double q0 = total(sim.select(0, 0));
  for (int64_t f = 1; f <= c.n_frames; ++f) EXPECT_NEAR(total(sim.select(0, f)), q0, 1e-10 * q0);
  nefi::HeatConfig p = c;
  p.lateral_bc = "periodic";
  const fk::Tensor sp = nefi::HeatOperator(p, s).simulate(alpha);
  EXPECT_GT(max_abs_diff(sp.select(0, c.n_frames), sim.select(0, c.n_frames)), 1e-3);
  c.lateral_bc = "insulated";
  EXPECT_THROW(nefi::HeatOperator(c, s), fk::Error);
}

// The data generator's own closed sides: forward Euler multiplies the
// cosine mode by (1 − Δt_sub α λ) per substep.
TEST(HeatNeumann, ExplicitSimulatorCosineModeDecaysAtTheForwardEulerRate) {
  nefi::thermal::ExplicitHeatConfig c;
  c.extent = {3.0, 2.0, 1.0};
  c.dt = 0.05;
  c.n_frames = 3;
  c.lateral_bc = "neumann";
  c.flash.periodic = false;
  const auto g = closed_sides(9, 7, 4, c.extent, c.dt);
  const double alpha = 0.12;
  nefi::thermal::ExplicitHeatSimulator sim(c);
  const int64_t nsub = sim.substeps(g.shape(), alpha);
  for (int axis : {0, 1}) {
    const auto t0 = cosine_mode(g, axis, 3).to_vector<double>();
    const auto frames = sim.trajectory(std::vector<double>(g.numel(), alpha), g.shape(), t0);
    const double h = axis == 0 ? g.hx : g.hy;
    const int64_t n = axis == 0 ? g.nx : g.ny;
    const double lambda = 4 / (h * h) * std::pow(std::sin(std::numbers::pi * 3 / (2.0 * n)), 2);
    const double per_frame = std::pow(1 - c.dt / nsub * alpha * lambda, static_cast<double>(nsub));
    for (int64_t f = 1; f <= c.n_frames; ++f)
      for (int64_t i = 0; i < g.numel(); ++i)
        ASSERT_NEAR(frames[f][i], t0[i] * std::pow(per_frame, f), 1e-12) << axis << " " << f;
  }
  c.lateral_bc = "open";
  EXPECT_THROW(c.validate(), fk::Error);
}

}  // namespace
