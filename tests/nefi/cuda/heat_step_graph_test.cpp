// The heat operator's device rollout and discrete adjoint inside a CUDA graph:
// a forward + backward through HeatOperator recorded by a StepGraph (jacobi
// and chebyshev, f32 and f64) replays bitwise the same step run eagerly, for
// new α written into the step's input between replays; fk refuses any host
// read or pageable copy inside a capture, so a capture that succeeds shows
// the rollout and adjoint read nothing back. Then a whole thermal_tomography
// nefty solve (neural field, heat operator, MSE + TV, Adam) with its steps
// captured and replayed gives bitwise the history and field of the same solve
// run eagerly (which configurations are capturable: tests/nefi/operators/heat_test.cpp);
// its eager steps under FK_SYNC_DEBUG=error read nothing back (α's check is
// a device reduction: a zero cell gives non-finite frames, no host read).
// Without a usable device the tests skip (scripts/gpu-check runs them on one).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/random.h"
#include "nefi/cuda/device_run.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/instances/instance.h"
#include "nefi/operators/heat/heat_operator.h"
#include "nefi/solve/solver.h"
#include "nefi/solve/step_graph.h"

namespace {

const fk::Device kGpu = fk::cuda_device(0);

using nefi::cuda_test::DeviceRun;
using nefi::cuda_test::expect_bitwise_equal;
using nefi::cuda_test::host;
using nefi::cuda_test::solve_on_gpu;

nefi::HeatConfig small_config(const char* solver) {
  nefi::HeatConfig c;
  c.extent = {2.0, 2.0, 1.0};
  c.n_frames = 5;
  c.implicit_substeps = 2;
  c.first_frame = 0;
  c.frame_stride = 2;
  c.back_bc = "robin";
  c.robin_h = 0.5;
  c.flash.width_xy = 0.5;
  c.flash.width_z = 0.3;
  c.solver = solver;
  c.jacobi_iters = 12;
  return c;
}

TEST(HeatStepGraph, CapturedForwardAndAdjointReplayTheEagerBits) {
  NEFI_SKIP_WITHOUT_GPU();
  const fk::Dims s{7, 6, 5};
  for (fk::DType dt : {fk::DType::F32, fk::DType::F64})
    for (const char* solver : {"jacobi", "chebyshev"}) {
      const std::string tag = std::string(fk::name(dt)) + " " + solver;
      const nefi::HeatOperator op(small_config(solver), s);
      ASSERT_TRUE(op.graph_capturable()) << tag;
      std::vector<fk::Tensor> alphas;
      for (uint64_t seed : {3, 4, 5}) {
        fk::Generator g(seed);
        alphas.push_back(fk::uniform(s, 0.05, 0.25, {dt}, &g).to(kGpu));
      }
      fk::Generator gw(11);
      const fk::Tensor w = fk::uniform(op.output_shape(s), -1, 1, {dt}, &gw).to(kGpu);
      // The eager reference of each α, before any graph exists.
      std::vector<std::vector<double>> want_y, want_g;
      for (const fk::Tensor& alpha : alphas) {
        fk::Tensor a = alpha.detach().clone();
        a.set_requires_grad(true);
        const fk::Tensor y = op.apply(a);
        fk::sum(fk::mul(y, w)).backward();
        want_y.push_back(host(y));
        want_g.push_back(host(a.grad()));
      }
      fk::Tensor input = fk::empty(s, {dt, kGpu});
      fk::Tensor y_out = fk::empty(op.output_shape(s), {dt, kGpu});
      fk::Tensor g_out = fk::empty(s, {dt, kGpu});
      {
        nefi::StepGraph graph(kGpu, "");
        auto step = [&] {
          fk::Tensor a = input.detach();
          a.set_requires_grad(true);
          const fk::Tensor y = op.apply(a);
          fk::sum(fk::mul(y, w)).backward();
          y_out.copy_(y.detach());
          g_out.copy_(a.grad());
        };
        // Step 0 warms up eagerly, step 1 is captured and launched, 2..5 replay.
        for (size_t k = 0; k < 6; ++k) {
          input.copy_(alphas[k % alphas.size()]);
          graph.run(step, 0);
          EXPECT_EQ(host(y_out), want_y[k % alphas.size()]) << tag << " step " << k;
          EXPECT_EQ(host(g_out), want_g[k % alphas.size()]) << tag << " step " << k;
        }
        EXPECT_FALSE(graph.refused()) << tag << ": " << graph.note();
        EXPECT_EQ(graph.captures(), 1) << tag << ": " << graph.note();
        EXPECT_EQ(graph.graph_steps(), 5) << tag << ": " << graph.note();
        EXPECT_GT(graph.nodes(), 10) << tag;
      }
    }
}

constexpr int kSteps = 10;

nefi::Params thermal_params(const char* solver) {
  nefi::Params p = nefi::find_instance("thermal_tomography")->default_config();
  p.set_value("extent", std::vector<double>{4, 4, 1});
  p.set_value("grid", std::vector<double>{8, 8, 4});
  p.set("n_frames", "6");
  p.set("solver", solver);
  p.set("jacobi_iters", "10");
  p.set("flash_width_xy", "1.0");
  p.set("hidden", "32");
  p.set("depth", "2");
  p.set("skip_at", "0");
  p.set("n_octaves", "3");
  p.set("lr", "1e-3");
  p.set("lr_schedule", "constant");
  p.set("anneal_steps", "0");
  p.set("steps", std::to_string(kSteps));
  return p;
}

DeviceRun solve(const nefi::Params& p, bool graph) {
  auto su = nefi::find_instance("thermal_tomography")->setup(p, "nefty", 3);
  return solve_on_gpu(su->problem, su->curriculum, graph);
}

TEST(HeatStepGraph, ThermalSolveStepsAreCapturedAndReplayTheEagerSolve) {
  NEFI_SKIP_WITHOUT_GPU();
  for (const char* solver : {"jacobi", "chebyshev"}) {
    const nefi::Params p = thermal_params(solver);
    const DeviceRun eager_run = solve(p, false), graph_run = solve(p, true);
    const nefi::Result& eager = eager_run.result;
    const nefi::Result& graph = graph_run.result;
    ASSERT_EQ(eager.history.rows.size(), static_cast<size_t>(kSteps)) << solver;
    expect_bitwise_equal(eager, graph, "alpha");
    const nefi::StageResult& st = graph.stages.at(0);
    EXPECT_EQ(eager.stages.at(0).graph_steps, 0) << solver;
    // A replayed step is one graph launch where an eager one is the rollout's
    // and the adjoint's launches (more than 4 per frame) and the field's.
    ASSERT_FALSE(graph_run.launches.empty());
    EXPECT_LE(graph_run.launches.back(), 2) << solver;
    EXPECT_GT(eager_run.launches.back(), 24) << solver;
    EXPECT_GE(st.graph_steps, kSteps - 2) << solver << ": " << st.device_note;
    EXPECT_EQ(st.device_note.find("capture failed"), std::string::npos) << st.device_note;
    EXPECT_NE(st.device_note.find("replayed"), std::string::npos) << st.device_note;
  }
}

TEST(HeatStepGraph, EagerThermalStepsReadNothingBackUnderSyncDebugError) {
  NEFI_SKIP_WITHOUT_GPU();
  const nefi::cuda_test::KnobOverride error("FK_SYNC_DEBUG", "error");
  const nefi::Params p = thermal_params("chebyshev");
  const DeviceRun eager = solve(p, false);
  ASSERT_EQ(eager.result.history.rows.size(), static_cast<size_t>(kSteps));
  const DeviceRun graph = solve(p, true);
  expect_bitwise_equal(eager.result, graph.result, "alpha");
  EXPECT_GE(graph.result.stages.at(0).graph_steps, kSteps - 2)
      << graph.result.stages.at(0).device_note;
}

// A device α with a zero cell (or a NaN, or an infinite one): the CPU names
// the cell (heat_test.cpp); on the device every frame comes out NaN, which the
// step's loss read-back meets; a valid α's frames are finite.
TEST(HeatStepGraph, ABadDeviceAlphaGivesNonFiniteFrames) {
  NEFI_SKIP_WITHOUT_GPU();
  const fk::Dims s{7, 6, 5};
  for (fk::DType dt : {fk::DType::F32, fk::DType::F64}) {
    const nefi::HeatOperator op(small_config("jacobi"), s);
    fk::Generator gen(7);
    const fk::Tensor good = fk::uniform(s, 0.5, 1.5, {dt}, &gen);
    for (double v : host(op.apply(good.to(kGpu)))) ASSERT_TRUE(std::isfinite(v)) << fk::name(dt);
    for (double bad : {0.0, -1.0, std::nan(""), HUGE_VAL}) {
      std::vector<double> a = host(good);
      a[17] = bad;
      const fk::Tensor alpha = fk::from_vector(a, s).to(dt);
      EXPECT_THROW(op.apply(alpha), fk::Error) << bad;
      for (double v : host(op.apply(alpha.to(kGpu))))
        ASSERT_TRUE(std::isnan(v)) << fk::name(dt) << " alpha " << bad;
    }
  }
}

}  // namespace
