// FusedOptimizer's sync-free device step (begin_device_step + enqueue_device_step,
// its scalars and clip threshold in a device step block) against
// FusedOptimizer::step on the same device, which reads the norm back and clips on
// the host: 30 AdamW steps on the same gradients, clipping on some steps and
// not others, give bitwise the same parameters and moments in f32 and f64
// (same norm passes, the same clip arithmetic in f64, the same kernel body);
// and a block whose loss total is not finite leaves parameters and moments
// untouched (the NaN guard's skip). Skips without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "fk/cuda/runtime.h"
#include "fk/factory.h"
#include "fk/random.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/solve/adam_device.h"
#include "nefi/solve/device_step_block.h"
#include "nefi/solve/device_step_slots.h"
#include "nefi/solve/fused_optimizer.h"

namespace {

const fk::Device kGpu = fk::cuda_device(0);

// Runs one gated step: inputs uploaded, total written, update enqueued, outputs read.
void gated_step(nefi::FusedOptimizer& adam, nefi::DeviceStepBlock& block, double lr, double clip,
                double total) {
  block.set_inputs(adam.begin_device_step(lr), clip);
  block.enqueue_upload();
  fk::Tensor t = fk::full(fk::Dims{}, total, {fk::DType::F64, kGpu});
  nefi::enqueue_gather_scalars({t}, block.device_block() + nefi::kSlotGathered);
  adam.enqueue_device_step(block.device_block());
  block.enqueue_download();
  block.read();
}

template <typename T>
void run_bitwise(fk::DType dtype) {
  NEFI_SKIP_WITHOUT_GPU();
  fk::Generator gen(5);
  const std::vector<fk::Dims> shapes = {{700}, {13, 5}};
  std::vector<fk::Tensor> a, b;
  for (const fk::Dims& s : shapes) {
    a.push_back(fk::randn(s, {dtype}, &gen).to(kGpu));
    b.push_back(a.back().clone());
  }
  nefi::OptimizerOptions o;
  o.weight_decay = 0.05;
  o.grad_clip = 30.0;
  nefi::FusedOptimizer host_clip(a, o), gated(b, o);
  nefi::DeviceStepBlock block(kGpu, 1);
  int clipped = 0;
  for (int step = 0; step < 30; ++step) {
    const double scale = step % 3 == 0 ? 4.0 : 0.5;
    for (size_t i = 0; i < shapes.size(); ++i) {
      const fk::Tensor g = fk::normal(shapes[i], 0.0, scale, {dtype}, &gen).to(kGpu);
      a[i].set_grad(g);
      b[i].set_grad(g.clone());
    }
    const double lr = 1e-2 * (1.0 + 0.01 * step);
    clipped += host_clip.step(lr) > o.grad_clip;
    gated_step(gated, block, lr, o.grad_clip, 1.0);
  }
  EXPECT_GT(clipped, 3);
  EXPECT_LT(clipped, 27);
  EXPECT_EQ(gated.steps(), host_clip.steps());
  for (size_t i = 0; i < shapes.size(); ++i) {
    const std::string p = "parameter " + std::to_string(i);
    EXPECT_EQ(a[i].to_vector<T>(), b[i].to_vector<T>()) << p;
    EXPECT_EQ(host_clip.first_moments()[i].to_vector<T>(), gated.first_moments()[i].to_vector<T>())
        << p;
    EXPECT_EQ(host_clip.second_moments()[i].to_vector<T>(),
              gated.second_moments()[i].to_vector<T>())
        << p;
  }
}

TEST(NefiAdamGatedDevice, MatchesTheHostClippedStepBitwiseF32) {
  run_bitwise<float>(fk::DType::F32);
}

TEST(NefiAdamGatedDevice, MatchesTheHostClippedStepBitwiseF64) {
  run_bitwise<double>(fk::DType::F64);
}

TEST(NefiAdamGatedDevice, ANonFiniteTotalChangesNothing) {
  NEFI_SKIP_WITHOUT_GPU();
  fk::Generator gen(9);
  fk::Tensor p = fk::randn({64}, {fk::DType::F32, fk::kCPU}, &gen).to(kGpu);
  nefi::FusedOptimizer adam({p}, nefi::OptimizerOptions{});
  nefi::DeviceStepBlock block(kGpu, 1);
  p.set_grad(fk::randn({64}, {fk::DType::F32, fk::kCPU}, &gen).to(kGpu));
  gated_step(adam, block, 1e-2, 1.0, 1.0);  // moments become non-zero
  const std::vector<float> x = p.to_vector<float>();
  const std::vector<float> m = adam.first_moments()[0].to_vector<float>();
  const std::vector<float> v = adam.second_moments()[0].to_vector<float>();
  for (double bad :
       {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    gated_step(adam, block, 1e-2, 1.0, bad);
    EXPECT_EQ(p.to_vector<float>(), x) << bad;
    EXPECT_EQ(adam.first_moments()[0].to_vector<float>(), m) << bad;
    EXPECT_EQ(adam.second_moments()[0].to_vector<float>(), v) << bad;
  }
}

}  // namespace
