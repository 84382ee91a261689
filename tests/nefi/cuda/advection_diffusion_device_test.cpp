// The advection-diffusion operator's release unknowns on a CUDA device
// against the CPU: observations and release gradients of 1-D, 2-D and 3-D
// operators (upwind and split Lax-Wendroff, closed, open and periodic axes,
// a per-cell flow, sensors, an initial release and a source, batches) equal
// the CPU's to the bit, in f64 and f32 (the kernels repeat transport_steps'
// f64 roundings); the adjoint dot test from device results; the tables'
// cache; the diffusivity unknown's observations and gradients equal to the
// CPU's bits and a diffusivity fit following the CPU's; and a grid field's
// source identification solved on the device, its stage captured as one
// CUDA graph, following the CPU solve. Without a usable device the tests skip
// (scripts/gpu-check runs them on one).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "fk/factory.h"
#include "fk/random.h"
#include "fk/test_util.h"
#include "nefi/cuda/device_follows_cpu.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/cuda/operator_parity.h"
#include "nefi/field/heads.h"
#include "nefi/operators/advection_diffusion.h"
#include "nefi/operators/transport_steps.h"
#include "nefi/solve/solver.h"

namespace {

using nefi::AdvectionDiffusionOperator;
using nefi::AdvectionDiffusionOptions;
using nefi::TransportBoundary;
using nefi::TransportScheme;
using nefi::TransportUnknown;
using nefi::cuda_test::expect_adjoint_on_device;
using nefi::cuda_test::expect_device_matches_cpu;
using nefi::cuda_test::expect_same_values;
using nefi::cuda_test::host;
using nefi::cuda_test::kGpu;

fk::Tensor scalar(double v) {
  return fk::from_vector(std::vector<double>{v}, {1});
}

struct Case {
  std::string name;
  fk::Dims grid;
  fk::Dims lead;  // leading (batch) dims of the releases
  AdvectionDiffusionOptions options;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  {  // 1-D upwind, closed, an initial release, a batch of 3
    AdvectionDiffusionOptions o;
    o.velocity = {scalar(0.6)};
    o.diffusivity = 0.01;
    o.times = {0.1, 0.25};
    o.scheme = TransportScheme::kUpwind;
    out.push_back({"1-D upwind closed initial", {16}, {3}, o});
  }
  {  // 1-D Lax-Wendroff (one factor, per-substep part), periodic, sensors, a
     // batch past the CPU's block of 8 rows
    std::vector<double> mask(20, 0.0);
    for (int64_t i : {0, 7, 19}) mask[i] = 1;
    AdvectionDiffusionOptions o;
    o.velocity = {scalar(-0.8)};
    o.diffusivity = 0.004;
    o.times = {0.3, 0.45};
    o.boundary = {TransportBoundary::kPeriodic};
    o.sensors = fk::from_vector(mask, {20});
    out.push_back({"1-D Lax-Wendroff periodic sensors", {20}, {10}, o});
  }
  {  // 2-D upwind (one factor over both axes), periodic, a source, (2, 3) rows
    AdvectionDiffusionOptions o;
    o.velocity = {scalar(0.5), scalar(0.7)};
    o.diffusivity = 0.01;
    o.times = {0.2, 0.3};
    o.unknown = TransportUnknown::kSource;
    o.boundary = {TransportBoundary::kPeriodic};
    o.scheme = TransportScheme::kUpwind;
    out.push_back({"2-D upwind periodic source", {7, 6}, {2, 3}, o});
  }
  {  // 2-D split Lax-Wendroff, a per-cell swirl, periodic and open, a source, sensors
    const fk::Dims grid{10, 8};
    std::vector<double> u(grid.numel()), w(grid.numel()), mask(grid.numel(), 0.0);
    for (int64_t i = 0; i < grid[0]; ++i)
      for (int64_t j = 0; j < grid[1]; ++j) {
        u[i * grid[1] + j] = 0.3 + 0.05 * static_cast<double>(j);
        w[i * grid[1] + j] = -0.2 + 0.04 * static_cast<double>(i);
      }
    for (int64_t i : {3, 17, 30, 44, 62, 71}) mask[i] = 1;
    AdvectionDiffusionOptions o;
    o.velocity = {fk::from_vector(u, grid), fk::from_vector(w, grid)};
    o.diffusivity = 0.005;
    o.times = {0.2, 0.4, 0.5};
    o.unknown = TransportUnknown::kSource;
    o.boundary = {TransportBoundary::kPeriodic, TransportBoundary::kOpen};
    o.sensors = fk::from_vector(mask, grid);
    out.push_back({"2-D Lax-Wendroff source at sensors", grid, {2}, o});
  }
  {  // 3-D split Lax-Wendroff, open, an initial release, no batch, several
     // substeps per interval
    AdvectionDiffusionOptions o;
    o.velocity = {scalar(0.4), scalar(-0.3), scalar(0.2)};
    o.diffusivity = 0.08;
    o.times = {0.3, 0.6};
    o.boundary = {TransportBoundary::kOpen};
    out.push_back({"3-D Lax-Wendroff open initial", {6, 5, 4}, {}, o});
  }
  {  // no rows at all
    AdvectionDiffusionOptions o;
    o.velocity = {scalar(0.6)};
    o.times = {0.1};
    out.push_back({"1-D zero rows", {16}, {0}, o});
  }
  return out;
}

AdvectionDiffusionOperator op_for(const Case& c) {
  return AdvectionDiffusionOperator(nefi::Domain(c.grid, std::vector<double>(c.grid.size(), 1.0)),
                                    c.options);
}

fk::Dims input_shape(const Case& c) {
  fk::Dims s = c.lead;
  for (int64_t n : c.grid) s.push_back(n);
  return s;
}

TEST(NefiAdvectionDiffusionDevice, ObservationsAndGradientsEqualTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  for (const Case& c : cases()) {
    const AdvectionDiffusionOperator op = op_for(c);
    ASSERT_TRUE(op.host_only_reason().empty()) << c.name;
    int64_t substeps = 0;
    for (int64_t n : op.substeps()) substeps = std::max(substeps, n);
    if (c.name.starts_with("3-D")) {
      EXPECT_GE(substeps, 3) << c.name;  // what the case is for
    }
    fk::Generator gen(5);
    const fk::Tensor x = fk::randn(input_shape(c), {fk::DType::F64}, &gen);
    const fk::Tensor g = fk::randn(op.apply(x).shape(), {fk::DType::F64}, &gen);
    for (fk::DType dt : {fk::DType::F64, fk::DType::F32}) {
      SCOPED_TRACE(c.name + " " + fk::name(dt));
      expect_device_matches_cpu(op, x, g, dt, expect_same_values);
    }
  }
}

TEST(NefiAdvectionDiffusionDevice, AdjointDotTestOnTheDevice) {
  NEFI_SKIP_WITHOUT_GPU();
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    if (input_shape(c).numel() == 0) continue;
    const AdvectionDiffusionOperator op = op_for(c);
    fk::Generator gen(11);
    const fk::Tensor x = fk::randn(input_shape(c), {fk::DType::F64}, &gen).to(kGpu);
    const fk::Tensor y = fk::randn(op.apply(x).shape(), {fk::DType::F64}, &gen).to(kGpu);
    expect_adjoint_on_device(op, x, y);
  }
}

// One upload per operator and device, shared by copies; a finer grid (a
// uniform flow, every cell observed) gets its own.
TEST(NefiAdvectionDiffusionDevice, TablesAreCachedPerOperatorAndDevice) {
  NEFI_SKIP_WITHOUT_GPU();
  const Case c = cases().front();
  const AdvectionDiffusionOperator op = op_for(c);
  const nefi::TransportTablesOnDevice a = op.tables_on(kGpu), b = op.tables_on(kGpu);
  ASSERT_EQ(a.forward.size(), 1u);
  EXPECT_EQ(a.forward[0].weight.data_ptr(), b.forward[0].weight.data_ptr());
  const AdvectionDiffusionOperator copy = op;
  EXPECT_EQ(copy.tables_on(kGpu).transposed[0].col.data_ptr(), a.transposed[0].col.data_ptr());
  EXPECT_EQ(host(a.forward[0].weight), op.stencil(0).weight);
  EXPECT_FALSE(a.forward[0].per_tau.defined());  // upwind has no per-substep part
  EXPECT_FALSE(a.sensors.defined());
  const auto fine = op.at_resolution({32});
  EXPECT_NE(static_cast<const AdvectionDiffusionOperator&>(*fine)
                .tables_on(kGpu)
                .forward[0]
                .weight.data_ptr(),
            a.forward[0].weight.data_ptr());
}

// The diffusivity unknown: observations and gradients in D equal the CPU's
// to the bit, in f64 and f32, over maps with zero cells, equal neighbours
// (the harmonic mean's a == b branch) and a spread of 40x (several
// checkpointed runs per interval); 1-D, 2-D and 3-D, both schemes, every
// boundary (a periodic axis of two cells, whose two faces join one pair), a
// uniform flow and one per cell, sensors, an initial release and a source.
// The stencils are built on the device; their tables are compared with the
// CPU's in tests/cuda_emu/nefi/transport_test.cpp.
struct DiffusivityCase {
  std::string name;
  fk::Dims grid;
  AdvectionDiffusionOptions options;
};

std::vector<DiffusivityCase> diffusivity_cases() {
  auto with = [](fk::Dims grid, std::vector<double> v, double t1, double t2) {
    AdvectionDiffusionOptions o;
    for (double c : v) o.velocity.push_back(scalar(c));
    o.times = {t1, t2};
    o.unknown = TransportUnknown::kDiffusivity;
    std::vector<double> r(grid.numel());
    for (int64_t i = 0; i < grid.numel(); ++i) r[i] = std::exp(-0.1 * static_cast<double>(i)) + 0.2;
    o.release = fk::from_vector(r, grid);
    return o;
  };
  std::vector<DiffusivityCase> out;
  {
    AdvectionDiffusionOptions o = with({24}, {0.5}, 0.2, 0.5);
    o.boundary = {TransportBoundary::kPeriodic};
    std::vector<double> mask(24, 0.0);
    for (int64_t i : {1, 9, 17, 23}) mask[i] = 1;
    o.sensors = fk::from_vector(mask, {24});
    out.push_back({"1-D Lax-Wendroff periodic sensors", {24}, o});
  }
  {  // a flow per cell that reverses along both axes
    AdvectionDiffusionOptions o = with({9, 7}, {}, 0.1, 0.3);
    std::vector<double> u(63), w(63);
    for (int64_t i = 0; i < 63; ++i) {
      u[i] = 0.4 * std::sin(0.9 * static_cast<double>(i));
      w[i] = -0.3 * std::cos(0.4 * static_cast<double>(i));
    }
    o.velocity = {fk::from_vector(u, {9, 7}), fk::from_vector(w, {9, 7})};
    o.scheme = TransportScheme::kUpwind;
    o.boundary = {TransportBoundary::kOpen, TransportBoundary::kPeriodic};
    o.release_is_source = true;
    out.push_back({"2-D upwind, a flow per cell, open periodic source", {9, 7}, o});
  }
  {  // one factor over three axes (rows of seven)
    AdvectionDiffusionOptions o = with({4, 3, 5}, {-0.2, 0.3, 0.1}, 0.1, 0.2);
    o.scheme = TransportScheme::kUpwind;
    o.boundary = {TransportBoundary::kPeriodic, TransportBoundary::kOpen,
                  TransportBoundary::kClosed};
    out.push_back({"3-D upwind periodic open closed initial", {4, 3, 5}, o});
  }
  {
    AdvectionDiffusionOptions o = with({8, 6}, {0.3, 0.2}, 0.2, 0.6);
    o.boundary = {TransportBoundary::kClosed};
    out.push_back({"2-D Lax-Wendroff closed initial", {8, 6}, o});
  }
  {
    AdvectionDiffusionOptions o = with({5, 4, 2}, {0.2, -0.1, 0.3}, 0.1, 0.25);
    o.boundary = {TransportBoundary::kOpen, TransportBoundary::kClosed,
                  TransportBoundary::kPeriodic};
    o.release_is_source = true;
    out.push_back({"3-D Lax-Wendroff, a periodic axis of two cells, source", {5, 4, 2}, o});
  }
  return out;
}

// Cells 0.1, 0.125 and 0.15 wide along axes 0, 1 and 2: with the map
// below, 4 to 8 substeps an interval.
AdvectionDiffusionOperator diffusivity_op(const DiffusivityCase& c) {
  std::vector<double> extent;
  for (int64_t n : c.grid)
    extent.push_back((0.1 + 0.025 * static_cast<double>(extent.size())) * static_cast<double>(n));
  return AdvectionDiffusionOperator(nefi::Domain(c.grid, extent), c.options);
}

// Between 2e-3 and 8e-2 (x40), equal neighbours in every fifth pair, and
// cells 2 and 3 at zero (a face blocked on both sides).
fk::Tensor diffusivity_map(const fk::Dims& grid) {
  std::vector<double> d(grid.numel());
  for (int64_t i = 0; i < grid.numel(); ++i)
    d[i] = i == 2       ? 0.0
           : i % 5 == 3 ? d[i - 1]
                        : 2e-3 + 7.8e-2 * (0.5 + 0.5 * std::sin(1.3 * static_cast<double>(i)));
  return fk::from_vector(d, grid);
}

// Each case's operator applied to field(grid) on the device and the CPU,
// forward and back, f64 and f32: the same bits; never captured as a graph.
template <typename Field>
void expect_coefficient_cases_equal_the_cpu(const std::vector<DiffusivityCase>& cases,
                                            Field&& field) {
  for (const DiffusivityCase& c : cases) {
    const AdvectionDiffusionOperator op = diffusivity_op(c);
    EXPECT_EQ(nefi::device_solve_refusal(op, kGpu), "") << c.name;
    EXPECT_FALSE(op.graph_capturable()) << c.name;
    const fk::Tensor x = field(c.grid);
    fk::Generator gen(7);
    const fk::Tensor g = fk::randn(op.apply(x).shape(), {fk::DType::F64}, &gen);
    for (fk::DType dt : {fk::DType::F64, fk::DType::F32}) {
      SCOPED_TRACE(c.name + " " + fk::name(dt));
      expect_device_matches_cpu(op, x, g, dt, expect_same_values);
    }
  }
}

TEST(NefiAdvectionDiffusionDevice, TheDiffusivityUnknownEqualsTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  expect_coefficient_cases_equal_the_cpu(diffusivity_cases(), diffusivity_map);
  // What the map is for: checkpointed runs (the last interval's S = 8
  // substeps recomputed in runs of ceil(sqrt(S)) = 3).
  const AdvectionDiffusionOperator op = diffusivity_op(diffusivity_cases()[3]);
  const nefi::transport::Plan plan = nefi::transport::diffusivity_plan(
      op.plan(), op.domain(), op.options(), host(diffusivity_map(op.domain().shape())));
  EXPECT_EQ(plan.substeps, (std::vector<int64_t>{4, 8}));
}

// A negative or non-finite D on the device is refused by name, as on the CPU,
// and so is a batch of maps.
TEST(NefiAdvectionDiffusionDevice, ABadDiffusivityOnTheDeviceIsRefusedByName) {
  NEFI_SKIP_WITHOUT_GPU();
  const DiffusivityCase c = diffusivity_cases()[0];
  const AdvectionDiffusionOperator op = diffusivity_op(c);
  std::vector<double> d(24, 0.01);
  d[5] = -0.5;
  const std::string e = fk::test::error_of([&] { op.apply(fk::from_vector(d, c.grid).to(kGpu)); });
  EXPECT_NE(e.find("a diffusivity >= 0 in every cell"), std::string::npos) << e;
  EXPECT_NE(e.find("-0.5 at cell 5"), std::string::npos) << e;
  for (double v : {std::nan(""), std::numeric_limits<double>::infinity()}) {
    d[5] = v;
    const std::string e2 =
        fk::test::error_of([&] { op.apply(fk::from_vector(d, c.grid).to(kGpu)); });
    EXPECT_NE(e2.find("a diffusivity >= 0 in every cell"), std::string::npos) << e2;
    EXPECT_NE(e2.find("at cell 5"), std::string::npos) << e2;
  }
  const std::string batch = fk::test::error_of([&] {
    op.apply(fk::full({2, 24}, 0.01, {fk::DType::F64}).to(kGpu));
  });
  EXPECT_NE(batch.find("(no batch)"), std::string::npos) << batch;
}

// Diffusivity identification with a grid field through a softplus head: the
// device solve follows the CPU's, eagerly (each apply reads its bounds back), and
// its stage says why it was not captured.
TEST(NefiAdvectionDiffusionDevice, ADiffusivityFitOnTheDeviceFollowsTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  const DiffusivityCase c = diffusivity_cases()[3];
  auto op = std::make_shared<AdvectionDiffusionOperator>(diffusivity_op(c));
  const nefi::InverseProblem problem = nefi::cuda_test::grid_mse_problem(
      "advection_diffusion diffusivity", op->domain(), op,
      op->apply(diffusivity_map(c.grid)).to(fk::DType::F32), nefi::softplus_head("x", 0.02));
  const nefi::Curriculum cur = nefi::cuda_test::one_adam_stage(15, 0.02);
  const nefi::Result cpu = nefi::cuda_test::solve_on(problem, cur, fk::kCPU, 0);
  const nefi::Result gpu = nefi::cuda_test::solve_on(problem, cur, kGpu, 0);
  nefi::cuda_test::expect_losses_follow(gpu, cpu, 1e-3, 1e-12);
  ASSERT_EQ(gpu.stages.size(), 1u);
  EXPECT_EQ(gpu.stages[0].graph_steps, 0);
  EXPECT_NE(gpu.stages[0].device_note.find("back to the host"), std::string::npos)
      << gpu.stages[0].device_note;
  EXPECT_LT(gpu.history.rows.back()[6], gpu.history.rows.front()[6]);
}

// The velocity unknown: observations and gradients in v equal the CPU's to
// the bit, in f64 and f32: 1-D, 2-D and 3-D, both schemes, open faces'
// outflow, periodic axes, sensors, an initial release and a source, a flow
// that reverses between cells.
std::vector<DiffusivityCase> velocity_cases() {
  std::vector<DiffusivityCase> out;
  for (const DiffusivityCase& c : diffusivity_cases()) {
    DiffusivityCase v = c;
    v.name = "velocity: " + c.name;
    v.options.unknown = TransportUnknown::kVelocity;
    v.options.velocity.clear();
    v.options.diffusivity = 3e-3;
    out.push_back(v);
  }
  return out;
}

// One component per axis, per cell, reversing between cells.
fk::Tensor velocity_field(const fk::Dims& grid) {
  const int64_t n = grid.numel(), nd = grid.size();
  std::vector<double> v(nd * n);
  for (int64_t a = 0; a < nd; ++a)
    for (int64_t i = 0; i < n; ++i)
      v[a * n + i] = 0.4 * std::sin(0.8 * static_cast<double>(i) + static_cast<double>(a));
  fk::Dims shape{nd};
  for (int64_t d : grid) shape.push_back(d);
  return fk::from_vector(v, shape);
}

TEST(NefiAdvectionDiffusionDevice, TheVelocityUnknownEqualsTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  expect_coefficient_cases_equal_the_cpu(velocity_cases(), velocity_field);
}

TEST(NefiAdvectionDiffusionDevice, ABadVelocityOnTheDeviceIsRefusedByName) {
  NEFI_SKIP_WITHOUT_GPU();
  const DiffusivityCase c = velocity_cases()[1];  // 2-D
  const AdvectionDiffusionOperator op = diffusivity_op(c);
  std::vector<double> v = host(velocity_field(c.grid));
  v[63 + 4] = std::numeric_limits<double>::infinity();
  const std::string e =
      fk::test::error_of([&] { op.apply(fk::from_vector(v, op.field_shape()).to(kGpu)); });
  EXPECT_NE(e.find("a finite velocity in every cell"), std::string::npos) << e;
  EXPECT_NE(e.find("in component 1 at cell 4"), std::string::npos) << e;
}

// Flow identification with a grid field of shape (2, *grid): the device
// solve follows the CPU's, eagerly, and says why.
TEST(NefiAdvectionDiffusionDevice, AVelocityFitOnTheDeviceFollowsTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  const DiffusivityCase c = velocity_cases()[3];  // 2-D Lax-Wendroff, closed
  auto op = std::make_shared<AdvectionDiffusionOperator>(diffusivity_op(c));
  const nefi::Domain field_domain(op->field_shape());
  const nefi::InverseProblem problem = nefi::cuda_test::grid_mse_problem(
      "advection_diffusion velocity", field_domain, op,
      op->apply(velocity_field(c.grid)).to(fk::DType::F32), nefi::identity_head("x"));
  const nefi::Curriculum cur = nefi::cuda_test::one_adam_stage(15, 0.02);
  const nefi::Result cpu = nefi::cuda_test::solve_on(problem, cur, fk::kCPU, 0);
  const nefi::Result gpu = nefi::cuda_test::solve_on(problem, cur, kGpu, 0);
  nefi::cuda_test::expect_losses_follow(gpu, cpu, 1e-3, 1e-12);
  ASSERT_EQ(gpu.stages.size(), 1u);
  EXPECT_EQ(gpu.stages[0].graph_steps, 0);
  EXPECT_NE(gpu.stages[0].device_note.find("back to the host"), std::string::npos)
      << gpu.stages[0].device_note;
  EXPECT_LT(gpu.history.rows.back()[6], gpu.history.rows.front()[6]);
}

// Source identification with a grid field: the 2-D case's sensors see a
// source at two cells; the device solve (grid values, operator, MSE and
// Adam on the device) follows the CPU's and replays one captured graph.
TEST(NefiAdvectionDiffusionDevice, AGridSourceFitOnTheDeviceFollowsTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  const std::vector<Case> all = cases();
  const Case c = *std::find_if(all.begin(), all.end(), [](const Case& k) {
    return k.name == "2-D Lax-Wendroff source at sensors";
  });
  auto op = std::make_shared<AdvectionDiffusionOperator>(op_for(c));
  fk::Tensor truth = fk::zeros(c.grid, {fk::DType::F64});
  truth.data<double>()[23] = 2.0;
  truth.data<double>()[56] = 1.0;
  const nefi::InverseProblem problem = nefi::cuda_test::grid_mse_problem(
      "advection_diffusion source", op->domain(), op, op->apply(truth).to(fk::DType::F32),
      nefi::identity_head("x"));
  const nefi::Curriculum cur = nefi::cuda_test::one_adam_stage(25, 0.05);
  const nefi::Result cpu = nefi::cuda_test::solve_on(problem, cur, fk::kCPU, 0);
  const nefi::Result gpu = nefi::cuda_test::solve_on(problem, cur, kGpu, 0);
  nefi::cuda_test::expect_losses_follow(gpu, cpu, 1e-3, 1e-12);
  ASSERT_EQ(gpu.stages.size(), 1u);
  EXPECT_GE(gpu.stages[0].graph_steps, 23) << gpu.stages[0].device_note;
  // The data loss (2.1e-4 -> 5.8e-6 here).
  EXPECT_LT(gpu.history.rows.back()[6], 0.1 * gpu.history.rows.front()[6]);
}

}  // namespace
