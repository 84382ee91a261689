// HeatOperator against independent references: the discrete implicit-Euler
// decay of Fourier and cosine modes, erf cell averages against quadrature,
// finite differences (gradcheck, f64) and an adjoint dot test, the unrolled
// autograd mode, flat against the roll reference, Chebyshev against Jacobi at
// the smoke and paper spacings, heat balance with adiabatic and Robin back
// faces, and the saved-bytes accounting of each gradient mode.
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
#include "nefi/solve/step_graph.h"

namespace {

using nefi::HeatConfig;
using nefi::HeatOperator;
namespace heat = nefi::heat;

double dot(const fk::Tensor& a, const fk::Tensor& b) {
  auto x = a.to_vector<double>(), y = b.to_vector<double>();
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}

double max_abs(const fk::Tensor& t) {
  double m = 0;
  for (double v : t.to_vector<double>()) m = std::max(m, std::abs(v));
  return m;
}

double max_diff(const fk::Tensor& a, const fk::Tensor& b) {
  auto x = a.to_vector<double>(), y = b.to_vector<double>();
  EXPECT_EQ(x.size(), y.size());
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

double l2(const fk::Tensor& t) {
  return std::sqrt(dot(t, t));
}

// A smooth positive diffusivity with a low-α inclusion, (nx, ny, nz).
fk::Tensor test_alpha(const fk::Dims& s, fk::DType dt, uint64_t seed = 3) {
  fk::Generator g(seed);
  return fk::uniform(s, 0.08, 0.2, {dt}, &g);
}

HeatConfig small_config() {
  HeatConfig c;
  c.extent = {2.0, 2.0, 1.0};
  c.dt = 0.05;
  c.n_frames = 4;
  c.flash.width_xy = 0.5;
  c.flash.width_z = 0.3;
  return c;
}

heat::StepGeometry geometry(int64_t nx, int64_t ny, int64_t nz, std::vector<double> extent,
                            double dt, double sink = 0) {
  return {nx, ny, nz, extent[0] / nx, extent[1] / ny, extent[2] / nz, dt, sink};
}

// One implicit step A x = b warm-started from b, by the named backend and solver.
fk::Tensor one_step(const fk::Tensor& alpha, const heat::StepGeometry& g, const fk::Tensor& b,
                    bool flat, heat::SolverOptions o) {
  auto s = heat::make_step_solver(alpha, g, flat, o);
  s->start(b);
  s->solve(b);
  fk::Tensor x = fk::empty(g.shape(), {alpha.dtype()});
  s->result(x);
  return x;
}

// --- configuration ---------------------------------------------------------

void expect_config_error(const std::function<void(HeatConfig&)>& edit, const std::string& key) {
  HeatConfig c;
  edit(c);
  try {
    c.validate();
    FAIL() << "no error for " << key;
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
  }
}

TEST(HeatConfig, BadValuesNameTheirKey) {
  HeatConfig().validate();
  expect_config_error([](HeatConfig& c) { c.dt = -0.1; }, "dt");
  expect_config_error([](HeatConfig& c) { c.extent = {1.0, -1.0, 1.0}; }, "extent");
  expect_config_error([](HeatConfig& c) { c.extent = {1.0, 1.0}; }, "extent");
  expect_config_error([](HeatConfig& c) { c.n_frames = 0; }, "n_frames");
  expect_config_error([](HeatConfig& c) { c.implicit_substeps = 0; }, "implicit_substeps");
  expect_config_error([](HeatConfig& c) { c.first_frame = 101; }, "first_frame");
  expect_config_error([](HeatConfig& c) { c.first_frame = -1; }, "first_frame");
  expect_config_error([](HeatConfig& c) { c.frame_stride = 0; }, "frame_stride");
  expect_config_error([](HeatConfig& c) { c.stencil = "fft"; }, "stencil");
  expect_config_error([](HeatConfig& c) { c.solver = "gmres"; }, "solver");
  expect_config_error([](HeatConfig& c) { c.jacobi_iters = 0; }, "jacobi_iters");
  expect_config_error([](HeatConfig& c) { c.cg_tol = -1; }, "cg_tol");
  expect_config_error([](HeatConfig& c) { c.cg_max_iter = 0; }, "cg_max_iter");
  expect_config_error([](HeatConfig& c) { c.check_every = 0; }, "check_every");
  expect_config_error([](HeatConfig& c) { c.grad_mode = "backprop"; }, "grad_mode");
  expect_config_error([](HeatConfig& c) { c.back_bc = "dirichlet"; }, "back_bc");
  expect_config_error([](HeatConfig& c) { c.robin_h = -1; }, "robin_h");
  expect_config_error([](HeatConfig& c) { c.flash.width_xy = 0; }, "flash.width_xy");
  try {
    HeatOperator op(HeatConfig{}, {16, 2, 6});
    FAIL() << "a grid axis < 3 was accepted";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find(">= 3"), std::string::npos) << e.what();
  }
  HeatOperator op(small_config(), {4, 4, 3});
  EXPECT_THROW(op.apply(fk::ones({4, 4, 4}, {fk::DType::F64})), fk::Error);
  EXPECT_THROW(op.apply(fk::ones({4, 4, 3}, {fk::DType::I64})), fk::Error);
  fk::Tensor bad = fk::full({4, 4, 3}, 0.1, {fk::DType::F32});
  fk::Tensor cell = bad.select(0, 2).select(0, 1).select(0, 0);
  fk::fill_(cell, 0.0);
  EXPECT_THROW(op.apply(bad), fk::Error);
  EXPECT_THROW(op.simulate(bad), fk::Error);
}

TEST(HeatOperator, FramesShapesAndResolution) {
  HeatConfig c = small_config();
  c.n_frames = 10;
  c.first_frame = 2;
  c.frame_stride = 3;
  HeatOperator op(c, {6, 5, 4});
  EXPECT_EQ(op.observed_frames(), (std::vector<int64_t>{2, 5, 8}));
  EXPECT_EQ(op.output_shape({6, 5, 4}), fk::Dims({3, 6, 5}));
  EXPECT_EQ(op.fidelity_tag(), "implicit-euler-jacobi");
  EXPECT_EQ(op.kind(), "heat");
  EXPECT_FALSE(op.batchable());
  auto coarse = op.at_resolution({3, 3, 3});
  EXPECT_EQ(coarse->output_shape({3, 3, 3}), fk::Dims({3, 3, 3}));
  auto y = coarse->apply(fk::full({3, 3, 3}, 0.1, {fk::DType::F64}));
  EXPECT_EQ(y.shape(), fk::Dims({3, 3, 3}));
  auto sim = op.simulate(fk::full({6, 5, 4}, 0.1, {fk::DType::F32}));
  EXPECT_EQ(sim.shape(), fk::Dims({11, 6, 5, 4}));
  EXPECT_EQ(sim.dtype(), fk::DType::F32);
  // apply's rows are simulate's front surfaces at the observed frames.
  auto out = op.apply(fk::full({6, 5, 4}, 0.1, {fk::DType::F32}));
  EXPECT_EQ(max_diff(out.select(0, 1), sim.select(0, 5).select(2, 0)), 0.0);
}

// A solver step through the operator is captured as a CUDA graph exactly when
// its configuration runs on a device without a host read.
TEST(HeatOperator, GraphCapturableOnlyWithoutHostReads) {
  auto refusal = [](const HeatConfig& c) {
    return nefi::step_graph_refusal(HeatOperator(c, {4, 4, 3}), fk::cuda_device(0));
  };
  for (const char* solver : {"jacobi", "chebyshev"})
    for (const char* stencil : {"flat", "auto"}) {
      HeatConfig c = small_config();
      c.solver = solver;
      c.stencil = stencil;
      EXPECT_TRUE(HeatOperator(c, {4, 4, 3}).graph_capturable()) << solver << " " << stencil;
      EXPECT_EQ(refusal(c), "") << solver << " " << stencil;
    }
  HeatConfig cg = small_config(), roll = small_config(), ckpt = small_config();
  cg.solver = "cg";
  roll.stencil = "roll";
  ckpt.grad_mode = "checkpoint";
  for (const HeatConfig& c : {cg, roll, ckpt}) {
    EXPECT_FALSE(HeatOperator(c, {4, 4, 3}).graph_capturable());
    EXPECT_NE(refusal(c).find("heat is not graph-capturable"), std::string::npos) << refusal(c);
  }
}

// A device solve through a host-only heat setting is refused before its
// first step, naming the setting; the device-resident ones are accepted.
TEST(HeatOperator, DeviceSolveRefusalNamesTheHostOnlySetting) {
  const fk::Device gpu = fk::cuda_device(0);
  auto refusal = [&](const HeatConfig& c) {
    return nefi::device_solve_refusal(HeatOperator(c, {4, 4, 3}), gpu);
  };
  HeatConfig ok = small_config(), cg = small_config(), roll = small_config(), ckpt = small_config();
  ok.solver = "chebyshev";
  ok.stencil = "flat";
  cg.solver = "cg";
  roll.stencil = "roll";
  ckpt.grad_mode = "checkpoint";
  EXPECT_EQ(refusal(ok), "");
  EXPECT_EQ(nefi::device_solve_refusal(HeatOperator(cg, {4, 4, 3}), fk::kCPU), "");
  EXPECT_NE(refusal(cg).find("solver cg"), std::string::npos) << refusal(cg);
  EXPECT_NE(refusal(roll).find("stencil roll"), std::string::npos) << refusal(roll);
  EXPECT_NE(refusal(ckpt).find("grad_mode checkpoint"), std::string::npos) << refusal(ckpt);
  EXPECT_NE(refusal(roll).find("operator heat on cuda:0"), std::string::npos) << refusal(roll);
}

// --- the flash ----------------------------------------------------------------

TEST(HeatFlash, CellAveragesMatchQuadratureAndTotalHeat) {
  nefi::GaussianFlash f;
  f.amplitude = 3.0;
  f.width_xy = 1.5;
  f.width_z = 0.2;
  f.center = std::array<double, 2>{0.7, 2.0};  // near the edge: the images matter
  const std::vector<double> extent{4.0, 5.0, 1.0};
  const fk::Dims s{8, 10, 6};
  auto t = nefi::flash_cell_averages(f, s, extent).to_vector<double>();
  // Total heat: each periodised lateral axis integrates to w √(2π) over a period.
  double total = 0;
  for (double v : t) total += v;
  const double cell = (4.0 / 8) * (5.0 / 10) * (1.0 / 6);
  const double expect = f.amplitude * 2 * std::numbers::pi * f.width_xy * f.width_xy * f.width_z *
                        std::sqrt(std::numbers::pi / 2) *
                        std::erf(1.0 / (std::sqrt(2.0) * f.width_z));
  EXPECT_NEAR(total * cell, expect, 1e-9 * expect);
  // One cell against a midpoint rule over the periodised Gaussian.
  const int64_t i = 0, j = 7, k = 1;
  const double hx = 0.5, hy = 0.5, hz = 1.0 / 6;
  const int q = 60;
  double acc = 0;
  for (int a = 0; a < q; ++a)
    for (int b = 0; b < q; ++b)
      for (int c = 0; c < q; ++c) {
        const double x = (i + (a + 0.5) / q) * hx, y = (j + (b + 0.5) / q) * hy,
                     z = (k + (c + 0.5) / q) * hz;
        double gx = 0, gy = 0;
        for (int m = -4; m <= 4; ++m) {
          gx += std::exp(-std::pow(x - 0.7 + 4.0 * m, 2) / (2 * 1.5 * 1.5));
          gy += std::exp(-std::pow(y - 2.0 + 5.0 * m, 2) / (2 * 1.5 * 1.5));
        }
        acc += f.amplitude * gx * gy * std::exp(-z * z / (2 * 0.2 * 0.2));
      }
  acc /= double(q) * q * q;
  EXPECT_NEAR(t[(i * 10 + j) * 6 + k], acc, 1e-4 * acc);
}

// initial: flash (the reference's UniformFlash): A times the depth profile's
// cell averages, the same in every column.
TEST(HeatFlash, UniformFlashIsTheDepthProfileInEveryColumn) {
  nefi::GaussianFlash f;
  f.amplitude = 2.0;
  f.width_z = 0.25;
  f.uniform = true;
  const std::vector<double> extent{3.0, 2.0, 1.0};
  const fk::Dims s{3, 4, 5};
  const auto t = nefi::flash_cell_averages(f, s, extent).to_vector<double>();
  for (int64_t k = 0; k < 5; ++k) {
    const double a = k * 0.2, b = (k + 1) * 0.2, sq = std::sqrt(2.0) * 0.25;
    const double expect =
        2.0 * 0.25 * std::sqrt(std::numbers::pi / 2) * (std::erf(b / sq) - std::erf(a / sq)) / 0.2;
    for (int64_t p = 0; p < 12; ++p) {
      EXPECT_NEAR(t[p * 5 + k], expect, 1e-12 * expect) << p << " " << k;
    }
  }
}

// --- analytic decay ------------------------------------------------------------

// cos(2π k x / Lx), uniform in y and z, decays by 1 / (1 + Δt α λ_k) per step,
// λ_k = (4 / Δx²) sin²(π k / nx), for every backend and solver.
TEST(HeatAnalytic, LateralFourierModeDecaysAtTheDiscreteRate) {
  const int64_t nx = 12, ny = 4, nz = 3, k = 2;
  const double alpha0 = 0.3, dt = 0.2;
  const auto g = geometry(nx, ny, nz, {3.0, 1.0, 0.6}, dt);
  for (fk::DType dtype : {fk::DType::F64, fk::DType::F32}) {
    fk::Tensor alpha = fk::full(g.shape(), alpha0, {dtype});
    std::vector<double> mode(g.numel());
    for (int64_t x = 0; x < nx; ++x)
      for (int64_t i = 0; i < ny * nz; ++i)
        mode[x * ny * nz + i] = std::cos(2 * std::numbers::pi * k * (x + 0.5) / nx);
    fk::Tensor b = fk::from_vector(mode, g.shape()).to(dtype);
    const double lambda = 4 / (g.hx * g.hx) * std::pow(std::sin(std::numbers::pi * k / nx), 2);
    const double factor = 1 / (1 + dt * alpha0 * lambda);
    const double tol = dtype == fk::DType::F64 ? 1e-11 : 2e-6;
    for (bool flat : {true, false}) {
      heat::SolverOptions cg{"cg", 1, dtype == fk::DType::F64 ? 1e-13 : 1e-6, 200, 1};
      heat::SolverOptions jac{"jacobi", 300, 0, 1, 1};
      heat::SolverOptions cheb{"chebyshev", 60, 0, 1, 1};
      for (const auto& o : {cg, jac, cheb}) {
        fk::Tensor x = one_step(alpha, g, b, flat, o);
        EXPECT_LT(max_diff(x, fk::mul(b, factor)), tol) << o.solver << " flat=" << flat;
      }
    }
  }
}

// cos(π k (z + ½) / nz) with adiabatic front and back is an eigenvector of the
// depth Laplacian with λ_k = (4 / Δz²) sin²(π k / 2 nz).
TEST(HeatAnalytic, DepthCosineModeDecaysAtTheDiscreteRate) {
  const int64_t nx = 3, ny = 3, nz = 10, k = 3;
  const double alpha0 = 0.05, dt = 0.1;
  const auto g = geometry(nx, ny, nz, {1.0, 1.0, 1.0}, dt);
  fk::Tensor alpha = fk::full(g.shape(), alpha0, {fk::DType::F64});
  std::vector<double> mode(g.numel());
  for (int64_t i = 0; i < nx * ny; ++i)
    for (int64_t z = 0; z < nz; ++z)
      mode[i * nz + z] = std::cos(std::numbers::pi * k * (z + 0.5) / nz);
  fk::Tensor b = fk::from_vector(mode, g.shape());
  const double lambda =
      4 / (g.hz * g.hz) * std::pow(std::sin(std::numbers::pi * k / (2.0 * nz)), 2);
  const double factor = 1 / (1 + dt * alpha0 * lambda);
  for (bool flat : {true, false}) {
    fk::Tensor x = one_step(alpha, g, b, flat, {"cg", 1, 1e-13, 400, 1});
    EXPECT_LT(max_diff(x, fk::mul(b, factor)), 1e-11);
    x = one_step(alpha, g, b, flat, {"jacobi", 400, 0, 1, 1});
    EXPECT_LT(max_diff(x, fk::mul(b, factor)), 1e-9);
  }
}

void dense_matrix_matches_the_definition(bool arithmetic);

// A = I − Δt L(α) as a dense matrix (columns from unit vectors through both
// backends) against its definition: −Δt 2 α_i α_j / (α_i + α_j) / h² (or
// −Δt (α_i + α_j) / 2 / h² with arithmetic faces) between
// face neighbours (x and y wrapped, no z wrap), rows summing to 1 (+ Δt β on
// the back layer); hence symmetric and strictly diagonally dominant.
TEST(HeatSystem, DenseMatrixMatchesTheDefinition) {
  for (bool arithmetic : {false, true}) dense_matrix_matches_the_definition(arithmetic);
}

void dense_matrix_matches_the_definition(bool arithmetic) {
  auto g = geometry(3, 4, 3, {1.5, 2.0, 0.9}, 0.2, 0.7);
  g.arithmetic_faces = arithmetic;
  const int64_t n = g.numel();
  fk::Tensor alpha = test_alpha(g.shape(), fk::DType::F64);
  const auto a = alpha.to_vector<double>();
  std::vector<double> expect(n * n, 0.0);
  const double h[3] = {g.hx, g.hy, g.hz};
  auto index = [&](int64_t x, int64_t y, int64_t z) { return (x * g.ny + y) * g.nz + z; };
  for (int64_t x = 0; x < g.nx; ++x)
    for (int64_t y = 0; y < g.ny; ++y)
      for (int64_t z = 0; z < g.nz; ++z) {
        const int64_t i = index(x, y, z);
        const int64_t nb[3] = {index((x + 1) % g.nx, y, z), index(x, (y + 1) % g.ny, z),
                               z + 1 < g.nz ? index(x, y, z + 1) : -1};
        for (int axis = 0; axis < 3; ++axis) {
          const int64_t j = nb[axis];
          if (j < 0) continue;
          const double mean = arithmetic ? (a[i] + a[j]) / 2 : 2 * a[i] * a[j] / (a[i] + a[j]);
          const double c = g.dt * mean / (h[axis] * h[axis]);
          expect[i * n + j] -= c;
          expect[j * n + i] -= c;
          expect[i * n + i] += c;
          expect[j * n + j] += c;
        }
        expect[i * n + i] += 1 + (z + 1 == g.nz ? g.dt * g.sink : 0.0);
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
  for (int64_t i = 0; i < n; ++i) {
    double off = 0;
    for (int64_t j = 0; j < n; ++j) {
      EXPECT_EQ(expect[i * n + j], expect[j * n + i]);
      if (j != i) off += std::abs(expect[i * n + j]);
    }
    EXPECT_GT(expect[i * n + i], off);
  }
}

TEST(HeatSystem, FusedBuilderMatchesTheFkOpReference) {
  const auto g = geometry(5, 4, 6, {2.0, 1.5, 1.0}, 0.07, 0.8);
  fk::Tensor alpha = test_alpha(g.shape(), fk::DType::F64);
  auto a = heat::build_system(alpha, g);
  auto b = heat::build_system_ops(alpha, g);
  EXPECT_LT(max_diff(a.weights, b.weights), 1e-15);
  EXPECT_LT(max_diff(a.diag, b.diag), 1e-14);
  // Row sums: D (1 − Σ_j W_j) = 1 + Δt β (the sink on the back layer only).
  auto w = a.weights.to_vector<double>(), d = a.diag.to_vector<double>();
  for (int64_t i = 0; i < g.numel(); ++i) {
    double s = 0;
    for (int j = 0; j < 6; ++j) s += w[j * g.numel() + i];
    const double expect = 1 + (i % g.nz == g.nz - 1 ? g.dt * g.sink : 0.0);
    EXPECT_NEAR(d[i] * (1 - s), expect, 1e-12);
  }
  // Gershgorin bound: the largest row sum of the weights.
  double rho = 0;
  auto ws = fk::sum(b.weights, {0}).to_vector<double>();
  for (double v : ws) rho = std::max(rho, v);
  EXPECT_NEAR(heat::gershgorin_bound(a).item(), rho, 1e-15);
}

// --- flat against the roll reference -------------------------------------------

TEST(HeatStencil, FlatEqualsRollAndCountsOneOpPerSweep) {
  const auto g = geometry(7, 6, 5, {3.0, 2.0, 1.0}, 0.1);
  for (fk::DType dtype : {fk::DType::F64, fk::DType::F32}) {
    fk::Tensor alpha = test_alpha(g.shape(), dtype);
    fk::Generator gen(5);
    fk::Tensor x = fk::randn(g.shape(), {dtype}, &gen);
    fk::Tensor c = fk::randn(g.shape(), {dtype}, &gen);
    auto sys = heat::build_system(alpha, g);
    auto& cnt = fk::profile::counters();
    int64_t ops0 = cnt.ops;
    fk::Tensor yr = heat::roll_sweep(x, c, sys.weights);
    const int64_t roll_ops = cnt.ops - ops0;
    ops0 = cnt.ops;
    fk::Tensor yf = heat::flat_sweep(x, c, sys.weights, g);
    const int64_t flat_ops = cnt.ops - ops0;
    EXPECT_EQ(roll_ops, 12);
    EXPECT_EQ(flat_ops, 1);
    const double tol = dtype == fk::DType::F64 ? 1e-12 : 1e-6;
    EXPECT_LT(max_diff(yr, yf), tol * max_abs(yr));
    // The graph-free sweeper: one op per sweep, Jacobi and Chebyshev alike.
    heat::FlatSweeper sw(sys, g);
    sw.load(x);
    sw.set_rhs(c);
    ops0 = cnt.ops;
    sw.jacobi(5);
    EXPECT_EQ(cnt.ops - ops0, 5);
    fk::Tensor omega = heat::chebyshev_weights(heat::gershgorin_bound(sys), 4);
    ops0 = cnt.ops;
    sw.chebyshev(omega);
    EXPECT_EQ(cnt.ops - ops0, 4);
    fk::Tensor xs = fk::empty(g.shape(), {dtype});
    sw.store(xs);
    fk::Tensor xr = heat::chebyshev_solve(
        heat::make_sweep(false, sys.weights, g), fk::mul(c, sys.inv_diag),
        heat::jacobi_solve(heat::make_sweep(false, sys.weights, g), fk::mul(c, sys.inv_diag), x, 5),
        omega);
    EXPECT_LT(max_diff(xs, xr), tol * max_abs(xr));
  }
}

// The symmetric scaling (what the CPU sweeper pads and the CUDA one uploads):
// the + face weight of cell i, W_+[i] √(D_i / D_j), equals the − face weight
// of its neighbour j seen from j, W_−[j] √(D_j / D_i) (one weight per face);
// z faces past the back and closed side faces are 0; root_d holds D^±½.
TEST(HeatStencil, SymmetricFacesAreSharedByBothCells) {
  for (bool closed : {false, true}) {
    auto g = geometry(5, 4, 3, {2.0, 2.0, 1.0}, 0.1, 0.3);
    g.lateral_neumann = closed;
    const auto sys = heat::build_system(test_alpha(g.shape(), fk::DType::F64), g);
    const auto sym = heat::symmetric_faces(sys, g);
    ASSERT_EQ(sym.faces.shape(), fk::Dims({3, 5, 4, 3}));
    const auto w = sys.weights.to_vector<double>(), d = sys.diag.to_vector<double>();
    const auto f = sym.faces.to_vector<double>(), r = sym.root_d.to_vector<double>();
    const int64_t n = g.numel();
    for (int64_t x = 0; x < 5; ++x)
      for (int64_t y = 0; y < 4; ++y)
        for (int64_t z = 0; z < 3; ++z) {
          const int64_t i = (x * 4 + y) * 3 + z;
          const int64_t j[3] = {(((x + 1) % 5) * 4 + y) * 3 + z, (x * 4 + (y + 1) % 4) * 3 + z,
                                i + 1};
          const bool open[3] = {!closed || x + 1 < 5, !closed || y + 1 < 4, z + 1 < 3};
          for (int a = 0; a < 3; ++a) {
            const double got = f[a * n + i];
            if (!open[a]) {
              EXPECT_EQ(got, 0.0) << a << " " << i;
              continue;
            }
            const double from_i = w[(2 * a + 1) * n + i] * std::sqrt(d[i] / d[j[a]]);
            const double from_j = w[(2 * a) * n + j[a]] * std::sqrt(d[j[a]] / d[i]);
            EXPECT_NEAR(got, from_i, 1e-15) << a << " " << i;
            EXPECT_NEAR(got, from_j, 1e-15) << a << " " << i;
            EXPECT_GT(got, 0.0);
          }
          EXPECT_NEAR(r[i] * r[i], d[i], 1e-14);
          EXPECT_NEAR(r[i] * r[n + i], 1.0, 1e-15);
        }
  }
}

// Large enough for the sweep to split x-planes over two threads: bitwise the
// same iterates (each plane is computed by one thread in one order).
TEST(HeatStencil, TwoThreadSweepsEqualOneThread) {
  const auto g = geometry(64, 64, 16, {10, 10, 1}, 0.05);
  fk::Tensor alpha = test_alpha(g.shape(), fk::DType::F32);
  fk::Tensor b = test_alpha(g.shape(), fk::DType::F32, 6);
  fk::Tensor x[2];
  for (int threads : {1, 2}) {
    fk::set_num_threads(threads);
    auto& cnt = fk::profile::counters();
    const int64_t launches = cnt.launches;
    x[threads - 1] = one_step(alpha, g, b, true, {"chebyshev", 6, 0, 1, 1});
    if (threads == 2) {
      EXPECT_GE(cnt.launches - launches, 6);  // every sweep split
    }
  }
  fk::set_num_threads(1);
  EXPECT_EQ(max_diff(x[0], x[1]), 0.0);
}

TEST(HeatCG, FusedFlatSolverFollowsTheFkOpSolver) {
  const auto g = geometry(6, 5, 7, {2.0, 2.0, 1.0}, 0.1, 0.4);
  for (fk::DType dtype : {fk::DType::F64, fk::DType::F32}) {
    fk::Tensor alpha = test_alpha(g.shape(), dtype);
    fk::Tensor b = test_alpha(g.shape(), dtype, 12);
    fk::Generator gen(2);
    fk::Tensor s = fk::randn({g.nx, g.ny}, {dtype}, &gen);
    auto sys = heat::build_system(alpha, g);
    heat::FlatCG cg(sys, g);
    fk::Tensor x = b.clone();
    auto& cnt = fk::profile::counters();
    const int64_t ops0 = cnt.ops;
    const int64_t it = cg.solve(x, b, s, 1e-5, 200, 2);
    EXPECT_LE(cnt.ops - ops0, 1 + 3 * it);  // three fused passes per iteration
    fk::Tensor rhs = b.clone();
    fk::Tensor front = rhs.select(2, 0);
    fk::add_(front, s);
    int64_t it_ref = 0;
    fk::Tensor ref =
        heat::cg_solve(heat::make_sweep(false, sys.weights, g), sys, rhs, b, 1e-5, 200, 2, &it_ref);
    EXPECT_EQ(it, it_ref);
    EXPECT_EQ(it % 2, 0);
    const double tol = dtype == fk::DType::F64 ? 1e-12 : 1e-5;
    EXPECT_LT(max_diff(x, ref), tol * max_abs(ref));
    // Converged to the tolerance: ‖b − A x‖ ≤ 1e-5 ‖b‖.
    fk::Tensor res =
        fk::sub(rhs, heat::apply_system(sys, heat::make_sweep(true, sys.weights, g), x));
    EXPECT_LE(l2(res), 1e-5 * l2(rhs) * (dtype == fk::DType::F64 ? 1.0 : 1.5));
  }
}

// Gradient of ℓ = <apply(α), w> in `mode`.
fk::Tensor loss_gradient(const HeatOperator& op, const fk::Tensor& alpha, const fk::Tensor& w) {
  fk::Tensor a = alpha.detach().clone();
  a.set_requires_grad(true);
  fk::Tensor loss = fk::sum(fk::mul(op.apply(a), w));
  loss.backward();
  return a.grad();
}

TEST(HeatOperator, FlatEqualsRollThroughWholeSolves) {
  // The flat sweep's AVX2 and generic builds alike (FK_CPU_ISA).
  for (const char* isa : {"auto", "generic"}) {
    fk::mutable_knob("FK_CPU_ISA").set_override(isa);
    for (fk::DType dtype : {fk::DType::F64, fk::DType::F32}) {
      for (const char* solver : {"jacobi", "chebyshev", "cg"}) {
        HeatConfig c = small_config();
        c.solver = solver;
        c.jacobi_iters = 12;
        c.implicit_substeps = 2;
        c.back_bc = "robin";
        c.robin_h = 0.5;
        HeatConfig r = c;
        c.stencil = "flat";
        r.stencil = "roll";
        HeatOperator flat(c, {6, 5, 4}), roll(r, {6, 5, 4});
        fk::Tensor alpha = test_alpha({6, 5, 4}, dtype);
        fk::Tensor yf = flat.apply(alpha), yr = roll.apply(alpha);
        const double tol = dtype == fk::DType::F64 ? 1e-12 : 1e-6;
        EXPECT_LT(max_diff(yf, yr), tol * max_abs(yr)) << solver;
        EXPECT_EQ(yf.dtype(), dtype);
        // The adjoint's backward solves too (flat sweeper against the fk-op solvers).
        fk::Tensor w = fk::ones(yf.shape(), {dtype});
        fk::Tensor gf = loss_gradient(flat, alpha, w), gr = loss_gradient(roll, alpha, w);
        EXPECT_LT(max_diff(gf, gr), 10 * tol * max_abs(gr)) << solver << " " << isa;
      }
    }
  }
  fk::mutable_knob("FK_CPU_ISA").set_override(std::nullopt);
}

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
    EXPECT_LT(max_diff(gc, gu), 1e-12 * max_abs(gu)) << "K = " << k;
    const double rel = max_diff(ga, gu) / max_abs(gu);
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
  EXPECT_LT(max_diff(loss_gradient(ckpt, alpha, w), gu), 1e-12 * max_abs(gu));
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
  EXPECT_LT(max_diff(g32, g64), 1e-4 * max_abs(g64));
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
  EXPECT_LT(max_diff(zero.simulate(alpha), sim), 1e-12 * q0);
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
