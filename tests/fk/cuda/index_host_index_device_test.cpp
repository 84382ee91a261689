// index_select's host-index form on a device: inside a device step under
// FK_SYNC_DEBUG=error its forward and backward read nothing back (nor, since
// its check moved into the kernel, does the tensor form's), and its values
// and gradient equal the CPU's bit for bit (a gather, and the deterministic
// sort-based scatter that adds each target's rows in the CPU's order).
// thermal pinn_soft's residual interpolates α this way in every device step.
// Skips without a usable device (scripts/gpu-check runs it on one); the host
// side is tests/fk/ops/index/select_host_index_test.cpp.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/knobs.h"
#include "fk/ops/binary.h"
#include "fk/ops/index/select.h"
#include "fk/ops/reduce.h"
#include "fk/sync_debug.h"
#include "fk/test_util.h"
#include "parity.h"

namespace fk {
namespace {

using cuda_parity::kGpu;
using test::error_of;

const std::vector<int64_t> kRows = {5, 0, 5, 2, 7, 5};

struct Outcome {
  std::vector<double> value, grad;
};

Outcome select_and_backward(Device d, const Tensor& base, const Tensor& w) {
  Tensor t = base.detach().to(d);  // a fresh leaf: base.to(kCPU) is base itself
  t.set_requires_grad(true);
  Tensor out, g;
  {
    const KnobOverride error("FK_SYNC_DEBUG", "error");
    const DeviceStepScope step;
    out = index_select(t, 0, kRows);
    sum(mul(out, w.to(d))).backward();
    g = t.grad();
  }
  return {out.to_vector<double>(), g.to_vector<double>()};
}

TEST(IndexSelectHostIndexDevice, ReadsNothingBackAndEqualsTheCpu) {
  FK_SKIP_WITHOUT_GPU();
  for (DType dt : {DType::F32, DType::F64}) {
    SCOPED_TRACE(name(dt));
    const Tensor base = test::random_tensor({8, 3}, dt, -1, 1, 7);
    const Tensor w = test::random_tensor({6, 3}, dt, -1, 1, 8);
    const Outcome cpu = select_and_backward(kCPU, base, w);
    Outcome gpu;
    EXPECT_EQ(error_of([&] { gpu = select_and_backward(kGpu, base, w); }), "");
    EXPECT_EQ(gpu.value, cpu.value);
    EXPECT_EQ(gpu.grad, cpu.grad);
  }
}

// The tensor form checks its index in its kernel now (fk/cuda/index_errors.h):
// it reads nothing back either; the two differ in when a bad index is
// reported (the host form at the call, the tensor form at the next
// synchronization), which tests/fk/cuda/index_errors_test.cpp pins.
TEST(IndexSelectHostIndexDevice, TheTensorIndexFormReadsNothingBackEither) {
  FK_SKIP_WITHOUT_GPU();
  const Tensor t = zeros({8}, {DType::F32, kGpu});
  const Tensor idx = from_vector(kRows, Dims{6}, kGpu);
  const KnobOverride error("FK_SYNC_DEBUG", "error");
  const DeviceStepScope step;
  EXPECT_EQ(error_of([&] { index_select(t, 0, idx); }), "");
  EXPECT_EQ(error_of([&] { index_select(t, 0, kRows); }), "");
}

}  // namespace
}  // namespace fk
