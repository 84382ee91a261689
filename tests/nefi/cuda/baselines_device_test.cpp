// The baseline fields on a CUDA device: a deep decoder (2-D and 3-D) and
// Gaussian splats fitted through a blur on the device follow the same fit
// on the CPU (f32 round-off apart: 1e-3 on the losses over 20 steps), their
// steps replay a captured graph, and the fields come back to the CPU.
// Without a usable device the tests skip (scripts/gpu-check runs them).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/random.h"
#include "nefi/baselines/deep_decoder.h"
#include "nefi/baselines/gaussian_splat.h"
#include "nefi/cuda/device_follows_cpu.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/losses/data_losses.h"
#include "nefi/operators/fft_convolution.h"
#include "nefi/solve/solver.h"

namespace {

using nefi::cuda_test::kGpu;

// A blurred square (or cube) and a field of `kind` to fit it.
nefi::InverseProblem blurred(const fk::Dims& shape, const std::string& kind) {
  const nefi::Domain d(shape);
  std::vector<double> x(static_cast<size_t>(shape.numel()), 0.1);
  for (int64_t i = 0; i < shape.numel(); ++i) {
    bool inside = true;
    for (int64_t a = shape.size() - 1, r = i; a >= 0; r /= shape[a], --a) {
      const int64_t c = r % shape[a];
      inside = inside && c >= shape[a] / 4 && c < 3 * shape[a] / 4;
    }
    if (inside) x[static_cast<size_t>(i)] = 0.8;
  }
  auto blur = std::make_shared<nefi::FFTConvolution>(nefi::gaussian_psf(0.08), d);
  nefi::InverseProblem p;
  p.domain = d;
  p.op = blur;
  const nefi::HeadPtr head = nefi::softplus_head("x", 0.3);
  if (kind == "deep_decoder")
    p.field = std::make_shared<nefi::DeepDecoderField>(head, shape.size(), 8, 3, 1);
  else
    p.field = std::make_shared<nefi::GaussianSplatField>(shape.size(), head, 16, 1);
  p.losses.add(nefi::mse_loss(), 1.0);
  fk::Generator g(2);
  p.measurement.data = fk::add(blur->apply(fk::from_vector(x, shape)),
                               fk::mul(fk::randn(shape, {fk::DType::F64}, &g), 0.01))
                           .to(fk::DType::F32);
  p.measurement.noise_std = 0.01;
  return p;
}

TEST(NefiBaselinesDevice, TheBaselineFieldsFitOnTheDeviceAsOnTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  nefi::cuda_test::NoTf32 no_tf32;
  struct Case {
    std::string kind;
    fk::Dims shape;
  };
  for (const Case& c : {Case{"deep_decoder", fk::Dims{20, 16}}, Case{"deep_decoder", {8, 9, 10}},
                        Case{"gaussian_splat", {20, 16}}}) {
    SCOPED_TRACE(c.kind + " " + c.shape.str());
    const nefi::Curriculum cur = nefi::Curriculum::single(c.shape, 20, 1e-2);
    const nefi::Result cpu = nefi::cuda_test::solve_on(blurred(c.shape, c.kind), cur, fk::kCPU, 3);
    const nefi::InverseProblem on_gpu = blurred(c.shape, c.kind);
    const nefi::Result gpu = nefi::cuda_test::solve_on(on_gpu, cur, kGpu, 3);
    EXPECT_EQ(gpu.device, kGpu.str());
    nefi::cuda_test::expect_losses_follow(gpu, cpu, 1e-3, 1e-12);
    ASSERT_FALSE(gpu.stages.empty());
    EXPECT_GE(gpu.stages.back().graph_steps, 18) << gpu.stages.back().device_note;
    EXPECT_TRUE(on_gpu.field->params().flat().device().is_cpu());
    EXPECT_LT(gpu.history.rows.back()[6], gpu.history.rows.front()[6]);  // it learned
  }
}

}  // namespace
