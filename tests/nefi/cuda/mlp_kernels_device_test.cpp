// The MLP layer's kernels (nefi/cuda/mlp_kernels.cu) on a layer wider than
// gridDim.y's limit: the activation gradient runs a layer's columns in runs
// of 128 threads along gridDim.y, at most 65535 runs, and the columns past
// them by a stride (a grid of 65538 runs was an invalid configuration).
// dense_device with x = (1, 2, 3) (3 rows, 1 input) and 65537 x 128 + 3
// outputs, no activation, L = the sum of y: dL/dy = 1, so db = 3 and dW = 6
// in every column, and y[r, c] = x_r w_c + b_c, all small integers exact in
// f32 (TF32 off). Without a usable device the test skips (scripts/gpu-check
// runs it on one).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/reduce.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/field/dense_device.h"

namespace {

using nefi::cuda_test::kGpu;
using nefi::cuda_test::NoTf32;

TEST(NefiMlpKernelsDevice, ColumnsPastGridYAreEachSummed) {
  NEFI_SKIP_WITHOUT_GPU();
  NoTf32 exact;
  const int64_t out = 65537 * int64_t{128} + 3;
  std::vector<float> w(static_cast<size_t>(out)), b(static_cast<size_t>(out));
  for (int64_t c = 0; c < out; ++c) {
    w[static_cast<size_t>(c)] = static_cast<float>(c % 5 - 2);
    b[static_cast<size_t>(c)] = static_cast<float>(c % 3);
  }
  const fk::Tensor x = fk::from_vector(std::vector<float>{1, 2, 3}, fk::Dims{3, 1}).to(kGpu);
  fk::Tensor wd = fk::from_vector(w, fk::Dims{out, 1}).to(kGpu);
  fk::Tensor bd = fk::from_vector(b, fk::Dims{out}).to(kGpu);
  wd.set_requires_grad(true);
  bd.set_requires_grad(true);
  const fk::Tensor y = nefi::dense_device(x, wd, bd, nefi::DeviceActivation::None);
  fk::sum(y).backward();
  const std::vector<float> yv = y.to_vector<float>();
  const std::vector<float> db = bd.grad().to_vector<float>(), dw = wd.grad().to_vector<float>();
  ASSERT_EQ(yv.size(), static_cast<size_t>(3 * out));
  ASSERT_EQ(db.size(), static_cast<size_t>(out));
  for (int64_t c = 0; c < out; ++c) {
    const size_t k = static_cast<size_t>(c);
    ASSERT_EQ(db[k], 3.0f) << "column " << c;
    ASSERT_EQ(dw[k], 6.0f) << "column " << c;
    for (int64_t r = 0; r < 3; ++r)
      ASSERT_EQ(yv[static_cast<size_t>(r * out + c)], static_cast<float>(r + 1) * w[k] + b[k])
          << "row " << r << ", column " << c;
  }
}

}  // namespace
