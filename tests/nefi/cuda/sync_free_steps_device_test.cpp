// Step paths that used to read the host or upload from it, on a CUDA device:
// the support-masked head (its thresholds stay on the device), the batched
// relative MSE (its stacked observations and their energies made once) and
// the batched MSE with per-row noise scales (uploaded once). Each runs once
// eagerly (the warm-up that makes the constants), then again under
// FK_SYNC_DEBUG=error inside a marked device step (a host read throws), then
// recorded in a stream capture (a host read or upload fails it) and replayed:
// the replay gives the eager bits. Constants made inside a capture are not
// kept. Without a usable device the tests skip (scripts/gpu-check runs them
// on one).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "fk/cuda/graph.h"
#include "fk/cuda/runtime.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/random.h"
#include "fk/sync_debug.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/field/heads.h"
#include "nefi/losses/data_losses.h"
#include "nefi/losses/loss.h"
#include "nefi/losses/observation_constants.h"

namespace {

using nefi::cuda_test::host;
using nefi::cuda_test::kGpu;
using nefi::cuda_test::KnobOverride;

// run() writes its results into `outs` (made before): eager, then under
// FK_SYNC_DEBUG=error in a marked step, then captured and replayed; returns
// the three results' host values, outs in turn (empty where a stage failed),
// and the failure.
struct Runs {
  std::vector<double> eager, marked, replay;
  std::string failure;
};

std::vector<double> host_all(const std::vector<fk::Tensor>& outs) {
  std::vector<double> v;
  for (const fk::Tensor& t : outs) {
    const std::vector<double> h = host(t);
    v.insert(v.end(), h.begin(), h.end());
  }
  return v;
}

Runs eager_marked_and_captured(const std::function<void()>& run,
                               const std::vector<fk::Tensor>& outs) {
  Runs r;
  fk::cuda::synchronize(0);  // the inputs' uploads ran on the previous stream
  void* const before = fk::cuda::current_stream(0);
  void* const stream = fk::cuda::create_stream(0);
  fk::cuda::set_current_stream(0, stream);
  run();
  r.eager = host_all(outs);
  try {
    const KnobOverride error("FK_SYNC_DEBUG", "error");
    const fk::DeviceStepScope step;
    run();
  } catch (const std::exception& e) {
    r.failure = std::string("marked step: ") + e.what();
  }
  r.marked = host_all(outs);
  for (fk::Tensor t : outs) t.copy_(fk::zeros(t.shape(), {t.dtype(), t.device()}));
  fk::cuda::synchronize(0);
  fk::cuda::GraphExec graph;
  bool captured = false;
  fk::cuda::begin_capture(0);
  try {
    run();
    graph = fk::cuda::end_capture(0);
    captured = true;
  } catch (const std::exception& e) {
    fk::cuda::abort_capture(0);
    r.failure += std::string(" capture: ") + e.what();
  }
  if (captured) {
    fk::cuda::launch_graph(graph);
    fk::cuda::synchronize(0);
    fk::cuda::destroy_graph(graph);
    r.replay = host_all(outs);
  }
  fk::cuda::set_current_stream(0, before);
  fk::cuda::destroy_stream(0, stream);
  return r;
}

void expect_same_bits(const Runs& r) {
  EXPECT_EQ(r.failure, "");
  EXPECT_EQ(r.marked, r.eager);
  EXPECT_EQ(r.replay, r.eager);
}

TEST(NefiSyncFreeStepsDevice, SupportMaskedHeadReadsNothingBack) {
  NEFI_SKIP_WITHOUT_GPU();
  const std::vector<nefi::HeadPtr> heads{
      nefi::softplus_head("rho", 0.2),
      nefi::support_masked_head(nefi::identity_head("x"), "rho", 0.4, 0.25)};
  for (fk::DType dt : {fk::DType::F32, fk::DType::F64}) {
    SCOPED_TRACE(fk::name(dt));
    fk::Generator gen(5);
    const fk::Tensor raw = fk::uniform({60, 2}, -2.0, 2.0, {dt}, &gen).to(kGpu);
    const fk::Dims one{12, 5}, rows{3, 4, 5};
    fk::Tensor out_one = fk::empty(one, {dt, kGpu});
    fk::Tensor out_rows = fk::empty(rows, {dt, kGpu});
    const Runs a = eager_marked_and_captured(
        [&] { out_one.copy_(nefi::apply_heads(heads, raw, one).at("x")); }, {out_one});
    const Runs b = eager_marked_and_captured(
        [&] { out_rows.copy_(nefi::apply_heads_rows(heads, raw, rows).at("x")); }, {out_rows});
    expect_same_bits(a);
    expect_same_bits(b);
    // Against the CPU: the mask compares exact values with one rounded threshold.
    EXPECT_EQ(a.eager, host(nefi::apply_heads(heads, raw.to(fk::kCPU), one).at("x")));
    EXPECT_EQ(b.eager, host(nefi::apply_heads_rows(heads, raw.to(fk::kCPU), rows).at("x")));
  }
}

// Host observations and mask, a device prediction.
struct RowsInputs {
  fk::Tensor pred, obs, mask;
};

RowsInputs rows_inputs(fk::DType dt) {
  fk::Generator g(11);
  RowsInputs s;
  s.obs = fk::uniform({3, 6, 5}, 0.2, 1.5, {dt}, &g);
  s.pred = fk::uniform({3, 6, 5}, 0.1, 2.0, {dt}, &g).to(kGpu);
  std::vector<double> w(90, 1.0);
  for (int64_t i = 0; i < 5; ++i) w[static_cast<size_t>(40 + i)] = 0;
  s.mask = fk::from_vector(w, fk::Dims{3, 6, 5}).to(dt);
  s.pred.set_requires_grad(true);
  return s;
}

TEST(NefiSyncFreeStepsDevice, BatchedRelativeMseAndScaledMseUploadOnce) {
  NEFI_SKIP_WITHOUT_GPU();
  const nefi::LossPtr rel = nefi::relative_mse_loss();
  const nefi::LossPtr mse = nefi::mse_loss(true);
  for (fk::DType dt : {fk::DType::F32, fk::DType::F64}) {
    SCOPED_TRACE(fk::name(dt));
    RowsInputs s = rows_inputs(dt);
    for (const nefi::LossPtr& loss : {rel, mse}) {
      SCOPED_TRACE(loss->name());
      nefi::BatchLossContext ctx;
      ctx.pred = s.pred;
      // The relative MSE takes host observations (as batch_invert stacks
      // them) and keeps their device copies; the MSE's rows take device ones
      // (what it uploads once is its per-row scales).
      const bool host_obs = loss == rel;
      ctx.obs = host_obs ? s.obs : s.obs.to(kGpu);
      ctx.mask = host_obs ? s.mask : s.mask.to(kGpu);
      ctx.noise_std = {0.5, 2.0, 0.25};  // scales that differ by row
      fk::Tensor value = fk::empty({3}, {dt, kGpu});
      fk::Tensor grad = fk::empty(s.pred.shape(), {dt, kGpu});
      // The gradient is dropped at the end of each run, not at the start of
      // the next: the captured run must not free the marked run's gradient
      // (cudaFreeAsync inside a capture takes graph allocations only; an
      // allocation from before the capture fails it), and what the capture
      // allocates dies inside it.
      const auto run = [&] {
        const fk::Tensor v = loss->forward_rows(ctx);
        v.backward(fk::ones(v.shape(), {v.dtype(), v.device()}));
        value.copy_(v.detach());
        grad.copy_(s.pred.grad());
        s.pred.set_grad(fk::Tensor());
      };
      const Runs r = eager_marked_and_captured(run, {value, grad});
      expect_same_bits(r);
      // The CPU's rows, within the device's summation order (30 cells a row).
      nefi::BatchLossContext on_cpu = ctx;
      on_cpu.pred = s.pred.detach().to(fk::kCPU);
      on_cpu.obs = s.obs;
      on_cpu.mask = s.mask;
      const std::vector<double> cpu = host(loss->forward_rows(on_cpu));
      nefi::cuda_test::expect_close(std::vector<double>(r.eager.begin(), r.eager.begin() + 3), cpu,
                                    dt == fk::DType::F64 ? 1e-13 : 1e-5, loss->name());
    }
  }
}

// The constant sum(t * t) of a device observation, made by device work alone
// (nothing uploaded, so a capture does not refuse it).
nefi::ObservationConstants::Make sum_of_squares(const fk::Tensor& t) {
  return [t] { return std::vector<fk::Tensor>{fk::sum(fk::mul(t, t))}; };
}

// Constants made while a capture runs are that capture's graph memory. A
// capture that fails (aborted here, as StepGraph aborts one after an
// exception in its step) never makes them real: none is kept, and the eager
// step after it makes them anew and reads their values. One made in a
// capture that makes a graph is freed inside it: the graph keeps no block
// (so it may replay) and its launch writes the constant's value.
TEST(NefiSyncFreeStepsDevice, ConstantsMadeInACaptureAreNotKept) {
  NEFI_SKIP_WITHOUT_GPU();
  const fk::DType f64 = fk::DType::F64;
  const fk::Tensor y = fk::from_vector(std::vector<double>{1, 2, 3, 4}, fk::Dims{4}).to(kGpu);
  const fk::Tensor y2 = fk::from_vector(std::vector<double>{2, 4, 6, 8}, fk::Dims{4}).to(kGpu);
  const nefi::ObservationConstants k;
  fk::Tensor out = fk::zeros(fk::Dims{}, {f64, kGpu});
  fk::cuda::synchronize(0);  // the uploads ran on the previous stream
  void* const before = fk::cuda::current_stream(0);
  void* const stream = fk::cuda::create_stream(0);
  fk::cuda::set_current_stream(0, stream);

  fk::cuda::begin_capture(0);
  out.copy_(k.get(y, {}, f64, kGpu, sum_of_squares(y))[0]);
  const size_t kept_in_capture = k.size();
  fk::cuda::abort_capture(0);
  EXPECT_EQ(kept_in_capture, 0u);
  EXPECT_EQ(host(k.get(y, {}, f64, kGpu, sum_of_squares(y))[0]), std::vector<double>{30.0});
  EXPECT_EQ(k.size(), 1u);
  EXPECT_EQ(k.makes(), 2);

  fk::cuda::synchronize(0);
  fk::cuda::begin_capture(0);
  out.copy_(k.get(y2, {}, f64, kGpu, sum_of_squares(y2))[0]);
  fk::cuda::GraphExec graph = fk::cuda::end_capture(0);
  EXPECT_EQ(fk::cuda::kept_blocks(graph), 0);
  EXPECT_EQ(k.size(), 1u);
  fk::cuda::launch_graph(graph);
  fk::cuda::synchronize(0);
  fk::cuda::destroy_graph(graph);
  EXPECT_EQ(host(out), std::vector<double>{120.0});

  fk::cuda::set_current_stream(0, before);
  fk::cuda::destroy_stream(0, stream);
}

}  // namespace
