// A device solve's step as one CUDA graph (solve/step_graph.h) against the
// same solve run eagerly: neural toy1d (FFT convolution, MSE + L1), graph
// replays give bitwise the history and final field of eager steps, with the
// annealing gate rewritten in place (anneal over the whole stage) and after
// annealing ends; toy1d with its default TV, with masked, relative,
// normalized and log data terms added, and with the per-layer cuBLAS MLP,
// captures too (no device loss reads the host) and replays bitwise; a loss
// that reads the host makes the capture fail, the stage finishes eagerly
// with the reason in its note, again bitwise equal; the knob off runs
// eagerly; an index error of the last replay, first met by the
// StepGraph's destructor, is announced once on stderr and thrown by the next
// synchronization (not swallowed); a step keeping a block of its graph runs it
// once, then eagerly. Without a usable device the tests skip (scripts/gpu-check
// runs them on one).
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/index.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"
#include "nefi/cuda/device_run.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/instances/instance.h"
#include "nefi/losses/data_losses.h"
#include "nefi/solve/solver.h"
#include "nefi/solve/step_block_mirror.h"
#include "nefi/solve/step_graph.h"
#include "nefi/solve/toy1d_smoke.h"

namespace {

using nefi::cuda_test::DeviceRun;
using nefi::cuda_test::expect_bitwise_equal;
using nefi::cuda_test::solve_on_gpu;

constexpr int kSteps = 24;

nefi::Params toy1d_params(double anneal_fraction, double tv = 0.0) {
  nefi::Params p = nefi::toy1d_test::toy1d_smoke_params();
  p.set_value("anneal_fraction", anneal_fraction);
  p.set_value("tv", tv);
  p.set_value("l1", 1e-3);
  p.set_value("steps", std::vector<double>{kSteps});
  return p;
}

// A regularizer that reads a device sum back to the host every step: eager
// steps allow it, a captured step cannot hold it.
struct HostReadingLoss : nefi::Loss {
  HostReadingLoss() : Loss("host_reading") {}
  fk::Tensor forward(const nefi::LossContext& c) const override {
    const double peak = fk::amax(fk::abs(c.pred.detach())).item();  // the host read
    (void)peak;
    return fk::mul(fk::mean(fk::square(c.pred)), 1e-3);
  }
};

DeviceRun solve(const nefi::Params& p, bool graph, bool host_reading_loss = false,
                bool normalised_losses = false) {
  auto su = nefi::find_instance("toy1d")->setup(p, "neural", 3);
  if (host_reading_loss) su->problem.losses.add(std::make_shared<HostReadingLoss>(), 1.0);
  if (normalised_losses) {
    // Every data loss whose normalisation is data-dependent: each used to
    // read a device sum back per call. A mask drops every third cell.
    nefi::Measurement& m = su->problem.measurement;
    std::vector<double> w(static_cast<size_t>(m.data.numel()), 1.0);
    for (size_t i = 0; i < w.size(); i += 3) w[i] = 0;
    m.mask = fk::from_vector(w, m.data.shape()).to(m.data.dtype());
    su->problem.losses.add(nefi::relative_mse_loss(), 0.1);
    su->problem.losses.add(nefi::normalized_mse_loss(), 0.1);
    su->problem.losses.add(nefi::log_mse_loss("max", 1e-6), 0.01);
  }
  return solve_on_gpu(su->problem, su->curriculum, graph);
}

class StepGraphAnnealing : public ::testing::TestWithParam<double> {};

TEST_P(StepGraphAnnealing, ReplaysGiveBitwiseTheEagerSolve) {
  NEFI_SKIP_WITHOUT_GPU();
  const nefi::Params p = toy1d_params(GetParam());
  const DeviceRun eager = solve(p, false);
  const DeviceRun graph = solve(p, true);
  ASSERT_EQ(eager.result.history.rows.size(), static_cast<size_t>(kSteps));
  expect_bitwise_equal(eager.result, graph.result, "x");
  // The run learned something.
  EXPECT_LT(graph.result.history.rows.back()[5], 0.5 * graph.result.history.rows.front()[5]);
  const nefi::StageResult& st = graph.result.stages.at(0);
  EXPECT_EQ(eager.result.stages.at(0).graph_steps, 0);
  // Annealing to the end keeps one shape (the gate is rewritten in place):
  // one warm-up step, then graph launches. Annealing over 30% re-warms once
  // when the last band opens.
  EXPECT_GE(st.graph_steps, kSteps - 4) << st.device_note;
  EXPECT_NE(st.device_note.find("replayed"), std::string::npos) << st.device_note;
  // A replayed step is one graph launch (plus the gate row's upload while
  // bands still open) where an eager one is dozens.
  EXPECT_LE(graph.launches.back(), 2);
  EXPECT_GT(eager.launches.back(), 10);
  // Each step says whether it replayed: every graph launch but the captures'
  // own (one, or two with the re-warm), and no eager step.
  const int captures = GetParam() < 1.0 ? 2 : 1;
  int64_t replays = 0;
  for (size_t i = 0; i < graph.replayed.size(); ++i) {
    EXPECT_FALSE(eager.replayed[i]) << "step " << i;
    if (!graph.replayed[i]) continue;
    ++replays;
    EXPECT_LE(graph.launches[i], 2) << "replayed step " << i;
  }
  EXPECT_EQ(replays, st.graph_steps - captures) << st.device_note;
}

INSTANTIATE_TEST_SUITE_P(AnnealFraction, StepGraphAnnealing, ::testing::Values(1.0, 0.3));

// A captured step holds every device loss: the default TV regulariser, and a
// mask with relative, normalized and log-MSE terms, replay bitwise the eager
// solve with (almost) every step a graph launch.
void expect_captured_and_bitwise(const nefi::Params& p, bool normalised_losses) {
  const DeviceRun eager = solve(p, false, false, normalised_losses);
  const DeviceRun graph = solve(p, true, false, normalised_losses);
  ASSERT_EQ(eager.result.history.rows.size(), static_cast<size_t>(kSteps));
  expect_bitwise_equal(eager.result, graph.result, "x");
  const nefi::StageResult& st = graph.result.stages.at(0);
  EXPECT_GE(st.graph_steps, kSteps - 4) << st.device_note;
  EXPECT_EQ(st.device_note.find("capture failed"), std::string::npos) << st.device_note;
  EXPECT_LE(graph.launches.back(), 2);
}

TEST(NefiStepGraph, Toy1dWithItsDefaultTvIsCaptured) {
  NEFI_SKIP_WITHOUT_GPU();
  const double tv = nefi::find_instance("toy1d")->default_config().d("tv");
  ASSERT_GT(tv, 0.0);
  expect_captured_and_bitwise(toy1d_params(1.0, tv), false);
}

TEST(NefiStepGraph, MaskedAndNormalisedDataLossesAreCaptured) {
  NEFI_SKIP_WITHOUT_GPU();
  expect_captured_and_bitwise(toy1d_params(1.0, 1e-4), true);
}

// With NEFI_FUSED_MLP=0 the field's layers are cuBLAS GEMMs with their
// epilogue kernels, the path every field wider than 128 takes: cuBLAS, bound
// to the stream by the warm-up step, is captured with them and the replays
// are bitwise the eager solve. More launches per eager step than the fused
// kernel's show that the path was taken.
TEST(NefiStepGraph, TheCuBlasMlpIsCapturedToo) {
  NEFI_SKIP_WITHOUT_GPU();
  const nefi::Params p = toy1d_params(1.0, 1e-4);
  const int64_t fused_launches = solve(p, false).launches.back();
  fk::KnobOverride per_layer("NEFI_FUSED_MLP", "0");
  EXPECT_GT(solve(p, false).launches.back(), fused_launches + 4);
  expect_captured_and_bitwise(p, false);
}

TEST(NefiStepGraph, AFailedCaptureFinishesTheStageEagerly) {
  NEFI_SKIP_WITHOUT_GPU();
  const nefi::Params p = toy1d_params(0.3);
  const DeviceRun eager = solve(p, false, true);
  const DeviceRun fallback = solve(p, true, true);
  expect_bitwise_equal(eager.result, fallback.result, "x");
  const nefi::StageResult& st = fallback.result.stages.at(0);
  EXPECT_EQ(st.graph_steps, 0);
  EXPECT_NE(st.device_note.find("capture failed"), std::string::npos) << st.device_note;
  EXPECT_NE(st.device_note.find("host"), std::string::npos) << st.device_note;
}

TEST(NefiStepGraph, TheKnobOffRunsEveryStepEagerly) {
  NEFI_SKIP_WITHOUT_GPU();
  const DeviceRun eager = solve(toy1d_params(1.0), false);
  const nefi::StageResult& st = eager.result.stages.at(0);
  EXPECT_EQ(st.graph_steps, 0);
  EXPECT_NE(st.device_note.find("CUDA graph off"), std::string::npos) << st.device_note;
  EXPECT_NE(st.device_note.find("NEFI_CUDA_GRAPH=0"), std::string::npos) << st.device_note;
}

// A step with a device index (a gather into a buffer made before the graph):
// eager, captured, then replayed after the index was overwritten with a bad
// value. Nothing reads the device after the replay: the StepGraph's
// destructor is the first to wait for it. It cannot throw, so it announces the
// error on stderr (once: the StepBlockMirror destroyed after it adds nothing)
// and leaves it pending for the next synchronization, which throws it.
TEST(NefiStepGraph, AnIndexErrorMetByTheDestructorIsReportedNotSwallowed) {
  NEFI_SKIP_WITHOUT_GPU();
  const fk::Device gpu = fk::cuda_device(0);
  const fk::Tensor t = fk::from_vector(std::vector<float>{10, 11, 12, 13}, fk::Dims{4}).to(gpu);
  fk::Tensor idx = fk::from_vector(std::vector<int64_t>{3, 0, 2}, fk::Dims{3}).to(gpu);
  fk::Tensor out = fk::empty(fk::Dims{3}, {fk::DType::F32, gpu});
  fk::cuda::synchronize(0);
  ::testing::internal::CaptureStderr();
  {
    nefi::StepBlockMirror mirror(gpu, 4);  // destroyed after the graph
    nefi::StepGraph graph(gpu, "");
    const auto step = [&] { out.copy_(fk::gather(t, 0, idx)); };
    for (int i = 0; i < 3; ++i) graph.run(step, 3);
    EXPECT_EQ(graph.captures(), 1);
    EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{13, 10, 12}));
    idx.copy_(fk::from_vector(std::vector<int64_t>{1, 9, 2}, fk::Dims{3}).to(gpu));
    graph.run(step, 3);  // a replay: nothing waits for it
    EXPECT_EQ(graph.graph_steps(), 3);
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("fk: nefi::StepGraph's destructor found a device-side index error on cuda:0"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("gather (device-side index check on cuda:0"), std::string::npos) << err;
  EXPECT_NE(err.find("index 9"), std::string::npos) << err;
  EXPECT_EQ(err.find("StepBlockMirror"), std::string::npos) << err;
  std::string msg;
  try {
    fk::cuda::synchronize(0);
  } catch (const fk::Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("gather (device-side index check on cuda:0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[0, 4)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("index 9"), std::string::npos) << msg;
  EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{11, 0, 12}));  // the bad one skipped
}

// A step that swaps a held tensor for a new one of the same size frees as many
// bytes as it allocates, yet keeps a block of its graph: the graph runs that
// step once, and the later steps run eagerly, with the reason in the note
// (a relaunch would be refused while the tensor holds the block).
TEST(NefiStepGraph, AStepKeepingABlockRunsItsGraphOnceThenEagerly) {
  NEFI_SKIP_WITHOUT_GPU();
  const fk::Device gpu = fk::cuda_device(0);
  fk::Tensor held = fk::zeros(fk::Dims{16}, {fk::DType::F32, gpu});
  fk::cuda::synchronize(0);
  nefi::StepGraph graph(gpu, "");
  const auto step = [&] { held = fk::add(held, fk::ones_like(held)); };
  for (int i = 0; i < 5; ++i) graph.run(step, 1);  // warm-up, capture + launch, 3 eager
  EXPECT_EQ(graph.captures(), 1);
  EXPECT_EQ(graph.graph_steps(), 1);
  EXPECT_NE(graph.note().find("keeps 1 block(s)"), std::string::npos) << graph.note();
  EXPECT_EQ(held.to_vector<float>(), std::vector<float>(16, 5.0f));
}

}  // namespace
