// The heads on a CUDA device against the CPU: the support-masked head's
// per-row thresholds (transform_rows) must be on the field's device (they
// once stayed on the host, a mixed-device error in the comparison; they are
// made there now, with no host read: sync_free_steps_device_test.cpp).
// Without a usable device the test skips (scripts/gpu-check runs it on one).
#include <gtest/gtest.h>

#include <vector>

#include "fk/factory.h"
#include "fk/random.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/field/heads.h"

namespace {

using nefi::cuda_test::kGpu;

TEST(NefiHeadsDevice, SupportMaskedRowsMatchTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  const std::vector<nefi::HeadPtr> heads{
      nefi::softplus_head("rho", 0.2),
      nefi::support_masked_head(nefi::identity_head("x"), "rho", 0.4, 0.25)};
  const fk::Dims batch{3, 5, 4};
  fk::Generator gen(3);
  const fk::Tensor raw = fk::uniform({60, 2}, -2.0, 2.0, {fk::DType::F32}, &gen);
  const nefi::FieldMap host = nefi::apply_heads_rows(heads, raw, batch);
  const nefi::FieldMap dev = nefi::apply_heads_rows(heads, raw.to(kGpu), batch);
  ASSERT_EQ(dev.at("x").device(), kGpu);
  // x is the raw channel where rho clears tau max(rho), else the fill: exact
  // either way, so only a cell within a rounding of the threshold could differ
  // (none in this draw).
  EXPECT_EQ(dev.at("x").to(fk::kCPU).to_vector<float>(), host.at("x").to_vector<float>());
}

}  // namespace
