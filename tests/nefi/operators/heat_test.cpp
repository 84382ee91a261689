// HeatOperator's configuration and forward against independent references:
// bad keys, shapes and the device settings, erf cell averages against
// quadrature, the discrete implicit-Euler decay of Fourier and cosine modes,
// the system against its definition, and the flat stencil against the roll
// reference (gradients and iterations: heat_gradient_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/knobs.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/profile.h"
#include "fk/random.h"
#include "fk/testing.h"
#include "fk/thread_count.h"
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
  EXPECT_EQ(max_abs_diff(out.select(0, 1), sim.select(0, 5).select(2, 0)), 0.0);
}

// On the CPU a bad diffusivity (zero, negative, NaN, infinite) in apply,
// simulate or jacobi_bound is an error naming the first bad cell, in f32 and
// f64 (a device alpha carries the check as NaN frames instead:
// tests/nefi/cuda/heat_step_graph_test.cpp).
TEST(HeatOperator, ABadAlphaIsAnErrorNamingTheCell) {
  const HeatOperator op(small_config(), {6, 5, 4});
  for (fk::DType dt : {fk::DType::F32, fk::DType::F64})
    for (double bad : {0.0, -0.5, std::nan(""), HUGE_VAL}) {
      std::vector<double> a(120, 0.1);
      a[37] = bad;
      a[80] = bad;
      const fk::Tensor alpha = fk::from_vector(a, fk::Dims{6, 5, 4}).to(dt);
      for (int call = 0; call < 3; ++call) {
        std::string what;
        try {
          if (call == 0) op.apply(alpha);
          if (call == 1) op.simulate(alpha);
          if (call == 2) op.jacobi_bound(alpha);
        } catch (const fk::Error& e) {
          what = e.what();
        }
        EXPECT_NE(what.find("at flat index 37"), std::string::npos)
            << fk::name(dt) << " " << bad << " call " << call << ": " << what;
      }
    }
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

// A refused capture names the setting, what in it reads the host, and the
// setting a capture needs; a capturable configuration gives no reason.
TEST(HeatOperator, NotCapturableReasonNamesTheSettingAndItsHostWork) {
  auto reason = [](const HeatConfig& c) {
    return HeatOperator(c, {4, 4, 3}).not_capturable_reason();
  };
  HeatConfig cg = small_config(), roll = small_config(), ckpt = small_config(),
             unrolled = small_config();
  cg.solver = "cg";
  cg.check_every = 3;
  roll.stencil = "roll";
  ckpt.grad_mode = "checkpoint";
  unrolled.grad_mode = "autograd";
  EXPECT_EQ(reason(small_config()), "");
  EXPECT_EQ(reason(cg),
            "solver cg reads its residual norm back to the host every check_every = 3 "
            "iteration(s) to test convergence (a captured step needs solver jacobi or chebyshev)");
  EXPECT_EQ(reason(roll),
            "stencil roll builds every sweep from fk::roll on host vectors (a captured step needs "
            "stencil flat or auto)");
  EXPECT_NE(reason(ckpt).find("grad_mode checkpoint recomputes"), std::string::npos);
  EXPECT_NE(reason(ckpt).find("needs grad_mode adjoint"), std::string::npos);
  EXPECT_NE(reason(unrolled).find("grad_mode autograd records"), std::string::npos);
  // What a device solve's note says (step_graph_refusal).
  EXPECT_EQ(nefi::step_graph_refusal(HeatOperator(cg, {4, 4, 3}), fk::cuda_device(0)),
            "operator heat is not graph-capturable: " + reason(cg));
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
        EXPECT_LT(max_abs_diff(x, fk::mul(b, factor)), tol) << o.solver << " flat=" << flat;
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
    EXPECT_LT(max_abs_diff(x, fk::mul(b, factor)), 1e-11);
    x = one_step(alpha, g, b, flat, {"jacobi", 400, 0, 1, 1});
    EXPECT_LT(max_abs_diff(x, fk::mul(b, factor)), 1e-9);
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
  EXPECT_LT(max_abs_diff(a.weights, b.weights), 1e-15);
  EXPECT_LT(max_abs_diff(a.diag, b.diag), 1e-14);
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
    EXPECT_LT(max_abs_diff(yr, yf), tol * max_abs(yr));
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
    EXPECT_LT(max_abs_diff(xs, xr), tol * max_abs(xr));
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
  const fk::test::ThreadCount count(1);
  for (int threads : {1, 2}) {
    count.set(threads);
    auto& cnt = fk::profile::counters();
    const int64_t launches = cnt.launches;
    x[threads - 1] = one_step(alpha, g, b, true, {"chebyshev", 6, 0, 1, 1});
    if (threads == 2) {
      EXPECT_GE(cnt.launches - launches, 6);  // every sweep split
    }
  }
  EXPECT_EQ(max_abs_diff(x[0], x[1]), 0.0);
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
    EXPECT_LT(max_abs_diff(x, ref), tol * max_abs(ref));
    // Converged to the tolerance: ‖b − A x‖ ≤ 1e-5 ‖b‖.
    fk::Tensor res =
        fk::sub(rhs, heat::apply_system(sys, heat::make_sweep(true, sys.weights, g), x));
    EXPECT_LE(l2(res), 1e-5 * l2(rhs) * (dtype == fk::DType::F64 ? 1.0 : 1.5));
  }
}

TEST(HeatOperator, FlatEqualsRollThroughWholeSolves) {
  // The flat sweep's AVX2 and generic builds alike (FK_CPU_ISA).
  for (const char* isa : {"auto", "generic"}) {
    fk::KnobOverride cap("FK_CPU_ISA", isa);
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
        EXPECT_LT(max_abs_diff(yf, yr), tol * max_abs(yr)) << solver;
        EXPECT_EQ(yf.dtype(), dtype);
        // The adjoint's backward solves too (flat sweeper against the fk-op solvers).
        fk::Tensor w = fk::ones(yf.shape(), {dtype});
        fk::Tensor gf = loss_gradient(flat, alpha, w), gr = loss_gradient(roll, alpha, w);
        EXPECT_LT(max_abs_diff(gf, gr), 10 * tol * max_abs(gr)) << solver << " " << isa;
      }
    }
  }
}

// cg_tol = 0 ran every one of cg_max_iter iterations: past convergence r.z
// and p.q underflowed to 0, whose 0 / 0 made the field NaN on grids with
// fewer cells than iterations. The tolerance is floored at 8 eps: both
// stencils, the adjoint's backward solves and autograd through the fk-op
// solver give the converged answer. Checked every 300 iterations, CG ran
// past convergence between checks at any tolerance: a zero denominator
// makes a zero step.
TEST(HeatCG, ZeroToleranceRunsPastConvergenceWithoutNaN) {
  for (const char* stencil : {"flat", "roll"}) {
    for (const char* grad_mode : {"adjoint", "autograd"})
      for (int64_t every : {1, 300}) {
        SCOPED_TRACE(std::string(stencil) + " " + grad_mode + " every " + std::to_string(every));
        HeatConfig c = small_config();
        c.solver = "cg";
        c.stencil = stencil;
        c.grad_mode = grad_mode;
        HeatConfig tight = c;
        c.cg_tol = 0;
        c.cg_max_iter = 300;
        c.check_every = every;
        tight.cg_tol = 1e-13;
        tight.cg_max_iter = 300;
        const fk::Dims shape{5, 3, 7};
        HeatOperator op(c, shape), ref(tight, shape);
        const fk::Tensor alpha = test_alpha(shape, fk::DType::F64);
        const fk::Tensor y = op.apply(alpha), yr = ref.apply(alpha);
        EXPECT_LT(max_abs_diff(y, yr), 1e-11 * max_abs(yr));
        const fk::Tensor w = fk::ones(y.shape(), {fk::DType::F64});
        const fk::Tensor g = loss_gradient(op, alpha, w), gr = loss_gradient(ref, alpha, w);
        EXPECT_LT(max_abs_diff(g, gr), 1e-9 * max_abs(gr));
      }
  }
}

}  // namespace
