// FusedOptimizer on a CUDA device against FusedOptimizer on the CPU: 50 AdamW steps
// on the same random gradients, with weight decay, clipping by global norm
// that engages on some steps and not others, a parameter left without a
// gradient on some steps, in f32 and f64. Without a usable device the tests
// skip (scripts/gpu-check runs them on one).
//
// Tolerance: the kernel performs the CPU loop's operations in its order, each
// rounded once (no contraction), from the same T-rounded scalars, so only the
// global norm differs (f64 sums in another order: relative 1e-15), and with it
// the clip factor by at most one T rounding. Per step that moves a parameter
// by at most an ulp or two of its size; over 50 steps we allow
// 50 · 2 ulps: 1.2e-5 (f32) and 2.2e-14 (f64) relative to max(1, |x|).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "fk/cuda/runtime.h"
#include "fk/factory.h"
#include "fk/random.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/solve/fused_optimizer.h"

namespace {

const fk::Device kGpu = fk::cuda_device(0);

template <typename T>
void expect_close(const fk::Tensor& cpu, const fk::Tensor& gpu, double rel,
                  const std::string& what) {
  const fk::Tensor back = gpu.to(fk::kCPU);
  const T* a = cpu.data<T>();
  const T* b = back.data<T>();
  double worst = 0;
  for (int64_t i = 0; i < cpu.numel(); ++i) {
    const double scale = std::max(1.0, std::abs(static_cast<double>(a[i])));
    worst = nefi::cuda_test::nan_max(worst, std::abs(static_cast<double>(a[i]) - b[i]) / scale);
  }
  EXPECT_LE(worst, rel) << what;
}

template <typename T>
void run_parity(fk::DType dtype, double rel) {
  NEFI_SKIP_WITHOUT_GPU();
  fk::Generator gen(17);
  const std::vector<fk::Dims> shapes = {{1000}, {37, 3}, {1}};
  std::vector<fk::Tensor> host, device;
  for (const fk::Dims& s : shapes) {
    host.push_back(fk::randn(s, {dtype}, &gen));
    device.push_back(host.back().to(kGpu));
  }
  nefi::OptimizerOptions o;
  o.weight_decay = 0.05;
  o.grad_clip = 40.0;  // the gradients' norm is ~33 · scale: clips on the large-scale steps
  nefi::FusedOptimizer cpu(host, o), gpu(device, o);
  int clipped = 0;
  for (int step = 0; step < 50; ++step) {
    const double scale = step % 3 == 0 ? 4.0 : 0.5;
    for (size_t i = 0; i < shapes.size(); ++i) {
      // The last parameter has no gradient on odd steps (left alone by both).
      if (i + 1 == shapes.size() && step % 2 == 1) {
        host[i].set_grad(fk::Tensor());
        device[i].set_grad(fk::Tensor());
        continue;
      }
      const fk::Tensor g = fk::normal(shapes[i], 0.0, scale, {dtype}, &gen);
      host[i].set_grad(g);
      device[i].set_grad(g.to(kGpu));
    }
    const double lr = 1e-2 * (1.0 + 0.01 * step);
    const double n_cpu = cpu.step(lr), n_gpu = gpu.step(lr);
    EXPECT_NEAR(n_gpu, n_cpu, 1e-12 * n_cpu) << "step " << step;
    clipped += n_cpu > o.grad_clip;
  }
  EXPECT_GT(clipped, 5);
  EXPECT_LT(clipped, 45);
  EXPECT_EQ(gpu.steps(), cpu.steps());
  for (size_t i = 0; i < shapes.size(); ++i) {
    const std::string p = "parameter " + std::to_string(i);
    expect_close<T>(host[i], device[i], rel, p);
    expect_close<T>(cpu.first_moments()[i], gpu.first_moments()[i], rel, p + " m");
    expect_close<T>(cpu.second_moments()[i], gpu.second_moments()[i], rel, p + " v");
    EXPECT_TRUE(gpu.first_moments()[i].device() == kGpu);
  }
}

TEST(NefiAdamDevice, AdamWMatchesCpuF32) {
  run_parity<float>(fk::DType::F32, 1.2e-5);
}

TEST(NefiAdamDevice, AdamWMatchesCpuF64) {
  run_parity<double>(fk::DType::F64, 2.2e-14);
}

TEST(NefiAdamDevice, MixedDevicesAreRefused) {
  NEFI_SKIP_WITHOUT_GPU();
  const std::vector<fk::Tensor> params = {fk::zeros({3}), fk::zeros({3}, {fk::DType::F32, kGpu})};
  EXPECT_THROW(nefi::FusedOptimizer(params, nefi::OptimizerOptions{}), fk::Error);
  // A gradient left on the host is refused, not copied.
  fk::Tensor p = fk::zeros({4}, {fk::DType::F32, kGpu});
  nefi::FusedOptimizer adam({p}, nefi::OptimizerOptions{});
  EXPECT_THROW(
      {
        p.set_grad(fk::ones({4}));
        adam.step(1e-3);
      },
      fk::Error);
}

}  // namespace
