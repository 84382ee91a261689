// Every data loss and regulariser (losses/every_loss.h) on a CUDA device
// against its CPU path: the value and the gradient, in f32 and f64, with and
// without a mask, on 1-, 2- and 3-D grids, one problem and three stacked
// (forward_rows, one row's gradient zero); each device result bitwise the
// same on a second run, and the same again when the loss is recorded in a
// CUDA graph and replayed (no loss reads the host). Without a usable device the tests skip
// (scripts/gpu-check runs them on one).
//
// Tolerances (u = 2^-24 for f32, 2^-53 for f64). The device sums in f64 in
// its own fixed order and rounds the value to T once; the CPU sums n terms in
// its order (in T for the fk-op compositions), each term a few T operations.
// A recursive sum of n terms of one sign is within n u of the exact sum
// (Higham, Accuracy and Stability, Eq. 4.4), each term within a few u
// (Laplacian: 8 u, four operations per axis with cancellation of O(1)
// neighbours), and NormalizedMSE's terms also carry its two means (n u
// each): values agree to (4 n + 64) u relative. Gradients are elementwise, a
// handful of T operations on each side plus those means: (2 n + 256) u of
// the largest gradient entry. Neither is taken below 1e-12 (f64's ~1e-12).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fk/cuda/graph.h"
#include "fk/cuda/runtime.h"
#include "fk/factory.h"
#include "fk/ops/join.h"
#include "fk/ops/reduce.h"
#include "fk/test_util.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/losses/data_losses.h"
#include "nefi/losses/every_loss.h"
#include "nefi/losses/loss.h"
#include "nefi/losses/loss_device.h"
#include "nefi/losses/regularizers.h"

namespace {

using fk::test::max_abs;

using nefi_test::every_loss;
using nefi_test::LossCase;

const fk::Device kGpu = fk::cuda_device(0);

// The value and the field's gradient of one evaluation.
struct Evaluation {
  std::vector<double> value, grad;
};

// One problem (rows = 0) or `rows` stacked ones, on `device`, in dt.
struct Setup {
  nefi::FieldMap fields;
  nefi::Measurement obs;
  nefi::Domain domain;
  fk::Tensor obs_rows, mask_rows;
  std::vector<double> noise;
};

Setup setup(const LossCase& c, const fk::Dims& shape, fk::DType dt, bool masked, int rows,
            fk::Device device) {
  Setup s;
  s.domain = nefi_test::loss_domain(shape);
  std::vector<fk::Tensor> xs, ys, ws;
  for (int b = 0; b < std::max(rows, 1); ++b) {
    const nefi_test::LossInputs in = nefi_test::loss_inputs(shape, c.positive, 40 + b);
    xs.push_back(in.x);
    ys.push_back(in.obs);
    ws.push_back(in.mask);
    s.noise.push_back(in.noise_std);
  }
  auto place = [&](const std::vector<fk::Tensor>& ts) {
    return (rows ? fk::stack(ts, 0) : ts[0]).to(dt).to(device);
  };
  s.fields["x"] = place(xs).set_requires_grad(true);
  s.obs.noise_std = s.noise[0];
  if (rows) {
    s.obs_rows = place(ys);
    if (masked) s.mask_rows = place(ws);
  } else {
    s.obs.data = place(ys);
    if (masked) s.obs.mask = place(ws);
  }
  return s;
}

// The upstream gradient of the loss's value: for rows one row frozen (its
// gradient 0), the others weighted; otherwise 1.
fk::Tensor seed_for(int rows, fk::DType dt, fk::Device device) {
  if (!rows) return fk::ones(fk::Dims{}, {dt, device});
  std::vector<double> g(rows, 0.5);
  g[1] = 0;
  if (rows > 2) g[2] = 2;
  return fk::from_vector(g, fk::Dims{rows}).to(dt).to(device);
}

// The loss's value (forward or forward_rows) with backward run from seed.
fk::Tensor forward_backward(const LossCase& c, Setup& s, int rows, const fk::Tensor& seed) {
  const fk::Tensor x = s.fields["x"];
  fk::Tensor v;
  if (rows) {
    nefi::BatchLossContext bc;
    bc.fields = &s.fields;
    bc.pred = x;
    bc.obs = s.obs_rows;
    bc.mask = s.mask_rows;
    bc.noise_std = s.noise;
    bc.domain = &s.domain;
    v = c.loss->forward_rows(bc);
  } else {
    nefi::LossContext ctx{&s.fields, x, &s.obs, &s.domain, nullptr, 0, 0, 1.0};
    v = c.loss->forward(ctx);
  }
  v.backward(rows ? seed : seed.reshape(v.shape()));
  return v;
}

Evaluation evaluate(const LossCase& c, const fk::Dims& shape, fk::DType dt, bool masked, int rows,
                    fk::Device device) {
  Setup s = setup(c, shape, dt, masked, rows, device);
  const fk::Tensor x = s.fields["x"];
  const fk::Tensor v = forward_backward(c, s, rows, seed_for(rows, dt, device));
  EXPECT_EQ(v.device(), device);
  EXPECT_EQ(v.dtype(), dt);
  EXPECT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().device(), device);
  return {v.to(fk::kCPU).to_vector<double>(), x.grad().to(fk::kCPU).to_vector<double>()};
}

// The same evaluation recorded in a stream capture (graph.h) and replayed
// once: the capture fails (throws) on any host read or synchronization in
// the loss's forward or backward. One eager call on the capture's stream
// comes first, as a solver's warm-up step does: it makes the constants a
// loss derives from the observations alone (observation_constants.h), which
// outlive any one step. The value and gradient are copied into buffers made
// before the capture; everything the capture allocates dies in it.
Evaluation evaluate_captured(const LossCase& c, const fk::Dims& shape, fk::DType dt, bool masked,
                             int rows) {
  Setup s = setup(c, shape, dt, masked, rows, kGpu);
  const fk::Tensor x = s.fields["x"];
  const fk::Tensor seed = seed_for(rows, dt, kGpu);
  fk::Tensor value = fk::empty(rows ? fk::Dims{rows} : fk::Dims{}, {dt, kGpu});
  fk::Tensor grad = fk::empty(x.shape(), {dt, kGpu});
  fk::cuda::synchronize(0);  // the uploads above ran on the previous stream
  void* const before = fk::cuda::current_stream(0);
  void* const stream = fk::cuda::create_stream(0);
  fk::cuda::set_current_stream(0, stream);
  forward_backward(c, s, rows, seed);  // the warm-up
  x.set_grad(fk::Tensor());
  fk::cuda::synchronize(0);
  fk::cuda::GraphExec graph;
  std::string failure;
  fk::cuda::begin_capture(0);
  try {
    {
      const fk::Tensor v = forward_backward(c, s, rows, seed);
      value.copy_(v.detach().reshape(value.shape()));
      grad.copy_(x.grad());
      x.set_grad(fk::Tensor());
    }
    graph = fk::cuda::end_capture(0);
  } catch (const std::exception& e) {
    fk::cuda::abort_capture(0);
    failure = e.what();
  }
  if (failure.empty()) {
    fk::cuda::launch_graph(graph);
    fk::cuda::synchronize(0);
    fk::cuda::destroy_graph(graph);
  }
  fk::cuda::set_current_stream(0, before);
  fk::cuda::destroy_stream(0, stream);
  EXPECT_EQ(failure, "") << "the capture failed";
  if (!failure.empty()) return {};
  return {value.to(fk::kCPU).to_vector<double>(), grad.to(fk::kCPU).to_vector<double>()};
}

void expect_parity(const LossCase& c, const fk::Dims& shape, fk::DType dt, bool masked, int rows) {
  SCOPED_TRACE(c.label + " " + fk::name(dt) + (masked ? " masked " : " ") + shape.str() +
               (rows ? " rows" : ""));
  const Evaluation cpu = evaluate(c, shape, dt, masked, rows, fk::kCPU);
  const Evaluation gpu = evaluate(c, shape, dt, masked, rows, kGpu);
  const double u = dt == fk::DType::F64 ? 0x1p-53 : 0x1p-24;
  const double n = static_cast<double>(shape.numel());
  const double value_rel = std::max(1e-12, (4 * n + 64) * u);
  ASSERT_EQ(gpu.value.size(), cpu.value.size());
  for (size_t r = 0; r < cpu.value.size(); ++r)
    EXPECT_NEAR(gpu.value[r], cpu.value[r], value_rel * std::abs(cpu.value[r]) + 1e-300)
        << "row " << r;
  ASSERT_EQ(gpu.grad.size(), cpu.grad.size());
  const double grad_abs = std::max(1e-12, (2 * n + 256) * u) * max_abs(cpu.grad);
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < cpu.grad.size(); ++i)
    if (!(std::abs(gpu.grad[i] - cpu.grad[i]) <= worst)) {  // a NaN stays the worst
      worst = std::abs(gpu.grad[i] - cpu.grad[i]);
      at = i;
      if (std::isnan(worst)) break;
    }
  EXPECT_LE(worst, grad_abs) << "cell " << at << ": " << gpu.grad[at] << " vs " << cpu.grad[at];
  if (rows > 1) {  // the frozen row's gradient is exactly zero on both
    const size_t cells = cpu.grad.size() / rows;
    for (size_t i = cells; i < 2 * cells; ++i) ASSERT_EQ(gpu.grad[i], 0.0) << "cell " << i;
  }
}

TEST(NefiLossDevice, EveryLossMatchesTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  for (const LossCase& c : every_loss())
    for (fk::DType dt : {fk::DType::F64, fk::DType::F32})
      for (bool masked : {false, true})
        for (const fk::Dims& shape : nefi_test::loss_grids())
          expect_parity(c, shape, dt, masked, 0);
}

TEST(NefiLossDevice, EveryRowLossMatchesTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  for (const LossCase& c : every_loss()) {
    if (!c.has_rows) continue;
    for (fk::DType dt : {fk::DType::F64, fk::DType::F32})
      for (bool masked : {false, true})
        for (const fk::Dims& shape : nefi_test::loss_grids())
          expect_parity(c, shape, dt, masked, 3);
  }
}

// Fixed-order sums: a second run gives the same bits (a larger grid, so the
// sums span several blocks).
TEST(NefiLossDevice, ResultsAreBitwiseReproducible) {
  NEFI_SKIP_WITHOUT_GPU();
  for (const LossCase& c : every_loss())
    for (fk::DType dt : {fk::DType::F64, fk::DType::F32}) {
      SCOPED_TRACE(c.label + " " + fk::name(dt));
      const Evaluation a = evaluate(c, {160, 170}, dt, true, 0, kGpu);
      const Evaluation b = evaluate(c, {160, 170}, dt, true, 0, kGpu);
      EXPECT_EQ(a.value, b.value);
      EXPECT_EQ(a.grad, b.grad);
    }
}

// No device loss reads the host: each records into a CUDA graph whose replay
// gives bitwise the eager value and gradient (so a solver step with any of
// them can be captured whole).
TEST(NefiLossDevice, EveryLossIsCapturableAndReplaysBitwise) {
  NEFI_SKIP_WITHOUT_GPU();
  for (const LossCase& c : every_loss())
    for (fk::DType dt : {fk::DType::F64, fk::DType::F32})
      for (int rows : {0, 3}) {
        if (rows && !c.has_rows) continue;
        SCOPED_TRACE(c.label + " " + fk::name(dt) + " rows " + std::to_string(rows));
        const Evaluation eager = evaluate(c, {40, 33}, dt, true, rows, kGpu);
        const Evaluation replay = evaluate_captured(c, {40, 33}, dt, true, rows);
        EXPECT_EQ(eager.value, replay.value);
        EXPECT_EQ(eager.grad, replay.grad);
      }
}

// An empty batch (0 rows of a 3 x 4 grid): each row loss gives the empty (0)
// values and the empty gradient, as the CPU's row losses do (the device path
// divided the cells by the row count: an integer division by zero).
TEST(NefiLossDevice, AnEmptyBatchGivesEmptyValuesAndGradientsAsOnTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  using RowLoss = std::function<fk::Tensor(const fk::Tensor&)>;
  auto expect_empty = [](const RowLoss& loss, fk::DType dt, fk::Device d, const std::string& what) {
    SCOPED_TRACE(what + " " + fk::name(dt) + " on " + d.str());
    fk::Tensor x = fk::zeros({0, 3, 4}, {dt, d});
    x.set_requires_grad(true);
    const fk::Tensor v = loss(x);
    EXPECT_EQ(v.shape(), fk::Dims{0});
    EXPECT_EQ(v.device(), d);
    fk::sum(v).backward();
    ASSERT_TRUE(x.grad().defined());
    EXPECT_EQ(x.grad().shape(), (fk::Dims{0, 3, 4}));
    EXPECT_EQ(x.grad().device(), d);
  };
  const RowLoss mse = [](const fk::Tensor& x) {
    return nefi::masked_mse_rows(x, fk::zeros(x.shape(), {x.dtype(), x.device()}), fk::Tensor(),
                                 {});
  };
  const RowLoss tv = [](const fk::Tensor& x) {
    return nefi::total_variation_rows(x, {1.0, 1.0}, {});
  };
  const RowLoss square = [](const fk::Tensor& x) {
    return nefi::cellwise_loss_device({nefi::CellTerm::Square}, x, {}, {}, true, {});
  };
  const RowLoss laplacian = [](const fk::Tensor& x) {
    return nefi::laplacian_loss_device(x, {1.0, 1.0}, true);
  };
  for (fk::DType dt : {fk::DType::F64, fk::DType::F32}) {
    for (fk::Device d : {fk::kCPU, kGpu}) {
      expect_empty(mse, dt, d, "masked_mse_rows");
      expect_empty(tv, dt, d, "total_variation_rows");
    }
    expect_empty(square, dt, kGpu, "cellwise square rows");
    expect_empty(laplacian, dt, kGpu, "laplacian rows");
  }
}

// A CPU prediction with its observations (data, mask) on the device: the
// host loops read them after a copy to the host (they read the device
// pointers before), the value sum w d^2 / sum w and gradient 2 w d / sum w
// of d = p - y written out here; one row and the same as a stacked row.
TEST(NefiLossDevice, AHostPredictionTakesDeviceObservations) {
  NEFI_SKIP_WITHOUT_GPU();
  const std::vector<double> p{1, 2, 3, 4}, y{0, 2, 5, 4}, w{1, 0.5, 1, 1};
  const double wsum = 3.5, value = (1 * 1 + 0.5 * 0 + 1 * 4 + 1 * 0) / wsum;
  const std::vector<double> grad{2 * 1 / wsum, 0, 2 * -2 / wsum, 0};
  for (bool rows : {false, true}) {
    SCOPED_TRACE(rows ? "masked_mse_rows" : "masked_mse");
    const fk::Dims shape = rows ? fk::Dims{1, 4} : fk::Dims{4};
    fk::Tensor x = fk::from_vector(p, shape);
    x.set_requires_grad(true);
    const fk::Tensor yd = fk::from_vector(y, shape, kGpu), wd = fk::from_vector(w, shape, kGpu);
    const fk::Tensor v =
        rows ? nefi::masked_mse_rows(x, yd, wd, {1.0}) : nefi::masked_mse(x, yd, wd, 1.0);
    EXPECT_EQ(v.device(), fk::kCPU);
    fk::test::expect_close(v, {value}, 1e-15);
    fk::sum(v).backward();
    fk::test::expect_close(x.grad(), grad, 1e-15);
  }
}

// A large grid against the CPU in f64: many blocks per row, partials summed.
TEST(NefiLossDevice, ManyBlocksMatchTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  for (const LossCase& c : every_loss()) expect_parity(c, {300, 257}, fk::DType::F64, true, 0);
}

// More rows than the row sums' grid (2^20 blocks): the rows past it are
// taken by the blocks' stride. One cell a row, x_r = r mod 7 - 3, so the
// mean square of row r is x_r^2 and its gradient 2 x_r, exact in f64.
TEST(NefiLossDevice, RowsPastTheSumGridAreEachSummed) {
  NEFI_SKIP_WITHOUT_GPU();
  const int64_t rows = (int64_t{1} << 20) + 5;
  std::vector<double> x(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) x[static_cast<size_t>(r)] = static_cast<double>(r % 7 - 3);
  fk::Tensor p = fk::from_vector(x, fk::Dims{rows, 1}).to(kGpu);
  p.set_requires_grad(true);
  const fk::Tensor v = nefi::cellwise_loss_device({nefi::CellTerm::Square}, p, {}, {}, true, {});
  ASSERT_EQ(v.shape(), fk::Dims{rows});
  fk::sum(v).backward();
  const std::vector<double> value = v.to_vector<double>(), grad = p.grad().to_vector<double>();
  for (int64_t r = 0; r < rows; ++r) {
    const double xr = x[static_cast<size_t>(r)];
    ASSERT_EQ(value[static_cast<size_t>(r)], xr * xr) << "row " << r;
    ASSERT_EQ(grad[static_cast<size_t>(r)], 2 * xr) << "row " << r;
  }
}

}  // namespace
